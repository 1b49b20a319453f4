"""Developer tasks for this template, the same on Windows, Linux and macOS.

    python dev.py demo     generate the default project into build/demo and run it
    python dev.py setup    install the Debian packages the whole suite uses (Wine, Xvfb,
                           MinGW-w64, Mesa's lavapipe, Chromium, Node.js): tools/system_packages.py
    python dev.py quick    the test suite without the Windows and DirectML tiers (Wine) and
                           the exact DirectML stack: pytest -m "{markers}"
    python dev.py test     run the template's whole test suite (extra arguments go to pytest)

All create a virtual environment with requirements-dev.txt on first use: .venv in this
folder, or the folder named by the TEMPLATE_VENV environment variable. On Linux it takes
about 5.6 GB (PyPI's torch for Linux brings its CUDA libraries); on Windows and macOS, where
PyPI's torch is CPU-only, much less.

What the tests cost, measured on a quiet 2-core Linux machine: `test` about 30 minutes, the
first time too, and 25 GB of disk: the first time it also installs the exact DirectML stack
(with pip and with uv), Windows CPython under Wine and a workshop stick (cached for later
runs), mostly while its other lane runs, and it runs baked projects on them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REQUIREMENTS = ROOT / "requirements-dev.txt"
DEMO_DIR = ROOT / "build" / "demo"
# What quick leaves out (pytest.ini's markers): the Windows tier and the DirectML tier, which
# install wine with apt and cache about 2.5 GB, the exact DirectML stack (about 3 GB) and the
# draw page's browser test, which installs Chromium with apt.
# What the whole suite takes on a quiet 2-core machine, the first time included (the README's
# development table gives the measurement behind it).
WHOLE_SUITE_MINUTES = 30
QUICK_MARKERS = "not dml_stack and not windows and not directml and not browser and not uv"
# The whole suite runs in two lanes at once: the tests under Wine, which spend most of their
# time in Wine's own processes (and the one that reads the wheels their cache holds), beside
# the others. Caches that both lanes build are taken under a lock (tests/cpu_build_mirror.py,
# tools/apt_install.py).
WINE_LANE = [
    "tests/test_windows_tier.py",
    "tests/test_windows_uv.py",
    "tests/test_amd_windows_tier.py",
    "tests/test_directml_tier.py",
    "tests/test_workshop_bundle.py",
    "tests/test_directml_op_list.py",
]
WINE_LANE_LOG = ROOT / "build" / "wine-lane.log"
QUICK_SKIPS = (
    "the Windows tier (tests/test_windows_tier.py), the DirectML tier "
    "(tests/test_directml_tier.py), the exact DirectML stack (tests/test_dml_stack.py), uv's "
    "installs (the slow tests of tests/test_uv.py, and tests/test_windows_uv.py) and the "
    "browser test of the draw page (tests/test_draw_page.py)"
)


def venv_dir() -> Path:
    return Path(os.environ.get("TEMPLATE_VENV", ROOT / ".venv"))


def venv_python(directory: Path) -> Path:
    scripts = "Scripts" if os.name == "nt" else "bin"
    return directory / scripts / ("python.exe" if os.name == "nt" else "python")


def ensure_environment() -> Path:
    """Create or update the virtual environment when requirements-dev.txt changed."""
    directory = venv_dir()
    python = venv_python(directory)
    stamp = directory / "requirements.sha256"
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text().strip() == wanted:
        return python
    if not python.exists():
        print(f"Creating a virtual environment in {directory} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(directory)
    started = time.monotonic()
    print(
        f"Installing requirements-dev.txt into {directory} (PyTorch is large: a few minutes, "
        "about 5.6 GB on Linux) ...",
        flush=True,
    )
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    # pip's own lines ("Collecting torch ...", "Installing collected packages") are the progress
    run([str(python), "-m", "pip", "install", "--progress-bar", "off", "-r", str(REQUIREMENTS)])
    stamp.write_text(wanted)
    print(f"The environment is ready ({elapsed(started)}).", flush=True)
    return python


def elapsed(started: float) -> str:
    seconds = int(time.monotonic() - started)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def run(command: list, **kwargs) -> None:
    completed = subprocess.run(command, **kwargs)
    if completed.returncode != 0:
        raise SystemExit(completed.returncode)


def demo(python: Path) -> None:
    """Generate the default project and run its install check and a short training run."""
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    DEMO_DIR.mkdir(parents=True)
    run([str(python), "-m", "cookiecutter", "--no-input", "-o", str(DEMO_DIR), str(ROOT)])
    project = next(p for p in DEMO_DIR.iterdir() if p.is_dir())
    package = next(p.name for p in (project / "src").iterdir() if p.is_dir())
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    print(f"\n== {project.name}: verify_install ==", flush=True)
    # A broken install (exit 4) is reported by verify_install itself; the demo goes on.
    command = [str(python), "-m", f"{package}.verify_install", "--cpu-fallback-ok"]
    subprocess.run(command, cwd=project, env=env)
    print(f"\n== {project.name}: one epoch on synthetic digits ==", flush=True)
    run(
        [str(python), "-m", f"{package}.train", "--dataset", "synthetic", "--epochs", "1"],
        cwd=project,
        env=env,
    )
    print(f"\nThe generated project is in {project}")


def test(python: Path, arguments: list) -> int:
    """pytest with ``arguments``; without any, the whole suite in its two lanes."""
    started = time.monotonic()
    if arguments:
        code = subprocess.run([str(python), "-m", "pytest", *arguments], cwd=ROOT).returncode
    else:
        setup(python)
        print(
            f"Running the whole test suite: about {WHOLE_SUITE_MINUTES} minutes on a 2-core "
            "machine, and the first time about 19 GB more for the DirectML stack (pip's and "
            "uv's), Windows CPython under Wine and a workshop stick. The fast path without "
            "them: python dev.py quick",
            flush=True,
        )
        code = whole_suite(python)
    print(f"Tests took {elapsed(started)}.", flush=True)
    return code


def setup(python: Path) -> None:
    """Every system package the suite uses, before its first test (none installs one itself)."""
    print("Checking the system packages the suite uses (tools/system_packages.py) ...", flush=True)
    run([str(python), str(ROOT / "tools" / "system_packages.py"), "install"])


def whole_suite(python: Path) -> int:
    """The Wine lane in the background (its output in WINE_LANE_LOG, printed when it ends)
    beside the other tests in the foreground: 0 when both pass."""
    temporary = Path(tempfile.gettempdir()) / "lenet-template-tests"
    temporary.mkdir(exist_ok=True)  # pytest makes each lane's --basetemp, not its parent
    pytest = [str(python), "-m", "pytest"]
    WINE_LANE_LOG.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"Two lanes at once: the tests under Wine ({', '.join(WINE_LANE)}) write to "
        f"{WINE_LANE_LOG}, shown here when they end; the other tests follow below.",
        flush=True,
    )
    with WINE_LANE_LOG.open("w", encoding="utf-8") as log:
        wine = subprocess.Popen(
            [*pytest, "-p", "no:cacheprovider", "--basetemp", str(temporary / "wine"), *WINE_LANE],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            others = [f"--ignore={path}" for path in WINE_LANE]
            rest = subprocess.run(
                [*pytest, "--basetemp", str(temporary / "rest"), *others], cwd=ROOT
            ).returncode
            wine_code = wine.wait()
        finally:
            if wine.poll() is None:  # Ctrl+C: the background lane stops too
                wine.terminate()
                wine.wait()
    print(f"\n== the Wine lane ({WINE_LANE_LOG}) ==", flush=True)
    print(WINE_LANE_LOG.read_text(encoding="utf-8", errors="replace"), flush=True)
    for name, code in (("the Wine lane", wine_code), ("the other tests", rest)):
        print(f"{name}: {'passed' if code == 0 else f'FAILED (pytest exit {code})'}", flush=True)
    return rest or wine_code


def main(argv: list) -> int:
    if not argv or argv[0] not in ("demo", "quick", "setup", "test"):
        print(__doc__.format(markers=QUICK_MARKERS))
        return 2
    python = ensure_environment()
    if argv[0] == "demo":
        demo(python)
        return 0
    if argv[0] == "setup":
        setup(python)
        return 0
    if argv[0] == "quick":
        print(f"Running the tests without {QUICK_SKIPS}: python dev.py test runs them.", flush=True)
        return test(python, ["-m", QUICK_MARKERS, *argv[1:]])
    return test(python, argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
