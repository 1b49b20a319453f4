"""A uv project on Windows CPython (3.11, under Wine): uv.exe, the Windows build from PyPI,
makes the project's .venv and syncs the directml stack's real Windows wheels into it, then
verify_install runs in that .venv.

Wine 8 cannot start uv.exe as shipped (no bcryptprimitives.dll: see tools/uv_wine.py); the
first test holds that symptom, the others run uv.exe next to a one-function stand-in for that
DLL. PyTorch's own indexes are stand-ins here too (tests/test_uv.py's standin_copy); PyPI
serves the directml stack. uv's cache: $TEMPLATE_TEST_CACHE/windows/uv-cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEMPLATE_DIR
from test_uv import standin_copy

sys.path.insert(0, str(TEMPLATE_DIR / "tools"))
import uv_wine  # noqa: E402
import wine_python  # noqa: E402

pytestmark = [pytest.mark.windows, pytest.mark.slow, pytest.mark.uv]

SYNC_TIMEOUT = 1800  # a cold cache downloads about 400 MB of Windows wheels
VERIFY_TIMEOUT = 900  # a cold `import torch` under Wine alone takes 25-45 s


@pytest.fixture(scope="module")
def windows_uv(winpy) -> uv_wine.WindowsUv:
    return uv_wine.setup()


def run_exe(winpy, exe: Path, *args: str, cwd: Path, env=None, timeout=600, display=False):
    """Run a Windows program (not python.exe) under Wine with pipes, as winpy.run does."""
    waiter = 'wine "$@"; status=$?; wineserver -w; exit $status'
    command = ["sh", "-c", waiter, "sh", str(exe), *args]
    if display:
        command = ["xvfb-run", "-a", "-s", "-screen 0 1024x768x24", *command]
    try:
        return subprocess.run(
            command, cwd=cwd, env=winpy.environment(extra=env), capture_output=True,
            text=True, encoding="utf-8", errors="replace", timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        winpy.wait_for_wineserver()


def uv_env(winpy) -> dict:
    return {
        "UV_CACHE_DIR": wine_python.winpath(winpy.root / "uv-cache"),
        "UV_LINK_MODE": "copy",  # Wine's prefix and the cache are different folders to Windows
        "UV_NO_PROGRESS": "1",
        "UV_PYTHON_DOWNLOADS": "never",  # the tier's own CPython, never a download
    }


def wine_major() -> int:
    digits = "".join(c if c.isdigit() else " " for c in wine_python.wine_version()).split()
    return int(digits[0]) if digits else 0


def test_uv_exe_as_shipped_needs_bcryptprimitives_which_wine_8_lacks(winpy, windows_uv, tmp_path):
    result = run_exe(
        winpy, windows_uv.plain, "--version", cwd=tmp_path, env={"WINEDEBUG": "-all,err+module"}
    )

    if wine_major() >= 9:  # Wine 9 has the DLL: uv.exe starts as on Windows
        assert result.returncode == 0 and f"uv {windows_uv.version}" in result.stdout
        return
    assert result.returncode == 53, result.stdout + result.stderr
    assert "Library bcryptprimitives.dll (which is needed by" in result.stderr
    assert "uv.exe" in result.stderr and "not found" in result.stderr
    assert result.stdout == ""


@pytest.fixture(scope="module")
def synced_on_windows(winpy, windows_uv, bake_once, tmp_path_factory):
    """A uv project's .venv made and synced by uv.exe with the tier's Windows CPython 3.11: the
    project's stack by name (the default group is dev alone)."""
    baked = bake_once(env_manager="uv", accelerator="directml", python_version="3.11")
    base = winpy.home.parent / "base"
    python = wine_python.winpath((base if base.exists() else winpy.home) / "python.exe")
    with standin_copy(baked.path, tmp_path_factory.mktemp("windows-uv")) as (project, _):
        result = run_exe(
            winpy, windows_uv.shimmed, "sync", "--group", "directml", "--python", python,
            cwd=project, env=uv_env(winpy), timeout=SYNC_TIMEOUT,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        # Wine's limit, not the project's: numpy 2.1 and later crash under Wine 8 with this
        # torch (ucrtbase.dll.crealf); the tier's other environments pin 2.0.2 for the same.
        pinned = run_exe(
            winpy, windows_uv.shimmed, "pip", "install", "--python",
            ".venv\\Scripts\\python.exe", "numpy==2.0.2",
            cwd=project, env=uv_env(winpy), timeout=SYNC_TIMEOUT,
        )  # fmt: skip
        assert pinned.returncode == 0, pinned.stderr[-3000:]
        yield baked, project, result


def test_uv_exe_makes_the_venv_and_syncs_the_real_windows_directml_wheels(synced_on_windows):
    _, project, result = synced_on_windows
    config = (project / ".venv" / "pyvenv.cfg").read_text(encoding="utf-8")

    assert "uv = " in config and "version_info = 3.11" in config
    assert (project / ".venv" / "Scripts" / "python.exe").is_file()
    output = result.stdout + result.stderr
    for line in ("+ torch==2.4.1", "+ torch-directml==0.2.5.dev240914", "+ torchvision==0.19.1"):
        assert line in output, output[-3000:]
    assert "+ onnxruntime-directml==" in output  # the Windows-only package
    site = project / ".venv" / "Lib" / "site-packages"
    assert any(site.glob("torch_directml-0.2.5.dev240914.dist-info"))
    assert (site / "torch" / "lib" / "torch_cpu.dll").is_file()  # the Windows wheel's


def test_verify_install_runs_in_the_uv_venv_and_explains_the_directml_failure(
    winpy, synced_on_windows
):
    baked, project, _ = synced_on_windows
    python = project / ".venv" / "Scripts" / "python.exe"
    result = run_exe(
        winpy, python, "-m", f"{baked.package}.verify_install", "--json",
        cwd=project, env={"PYTHONDONTWRITEBYTECODE": "1"}, timeout=VERIFY_TIMEOUT, display=True,
    )  # fmt: skip
    report = json.loads(result.stdout[result.stdout.index("{") :])

    assert "Traceback" not in result.stderr
    assert result.returncode == 3, result.stderr[-3000:]  # the CPU fallback
    assert report["environment"] == "uv"
    assert report["platform"].startswith("Windows")
    assert report["executable"].endswith(".venv\\Scripts\\python.exe")
    assert report["packages"]["torch-directml"]["installed"] == "0.2.5.dev240914"
    directml = next(u for u in report["unavailable"] if u["kind"] == "directml")
    assert "torch_directml_native" in directml["reason"]  # Wine has no DXCore
