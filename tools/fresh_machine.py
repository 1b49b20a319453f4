"""CI as it runs on a fresh machine, emulated on this one (Debian, as root).

    python tools/fresh_machine.py [--burn N] [--keep-packages] [--repo PATH]

1. Undoes the setup step: purges every package that apt's history shows an install of
   tools/system_packages.py's packages brought in (each with the dependencies it pulled), and
   the bookworm-backports source it added. Packages the machine had before stay.
2. Empties the caches the suite fills: ~/.cache/lenet-directml-template (its environments,
   Windows CPython, the DirectML stack, the stick), pip's, uv's and npm's caches, the test lanes'
   temporary folders.
3. Clones the repository's committed main into a new folder and runs `CI=true bash .ci/run`
   there with no standard input, as CI does; with --burn N, N processes spin on the CPU beside
   it (a student's busy laptop; the machine has 2 cores). Prints the run's time and exit code.

Everything removed is what the run installs again: this checks that it does.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import apt_install  # noqa: E402
import system_packages  # noqa: E402

APT_HISTORY = Path("/var/log/apt/history.log")
HOME_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
CACHES = (
    HOME_CACHE / "lenet-directml-template",
    HOME_CACHE / "pip",
    HOME_CACHE / "uv",
    Path.home() / ".npm",
    Path(tempfile.gettempdir()) / "lenet-template-tests",
)


def installed_by_setup(history: str) -> list[str]:
    """The packages (with the dependencies they pulled in) of every install in ``history`` that
    the setup step made: its own command line (apt_install.INSTALL), naming only packages of
    its groups. An install of the same package by anyone else (the machine's image) stays."""
    ours = {package for group in system_packages.GROUPS for package in group.packages}
    prefix = "Commandline: " + " ".join(apt_install.INSTALL) + " "
    found: list[str] = []
    for entry in history.split("\n\n"):
        lines = entry.strip().splitlines()
        command = next((line for line in lines if line.startswith("Commandline: ")), "")
        installed = next((line for line in lines if line.startswith("Install: ")), "")
        if not (command.startswith(prefix) and installed):
            continue
        named = [word for word in command[len(prefix) :].split() if not word.startswith("-")]
        named = [word for word in named if word != system_packages.BACKPORTS_SUITE]
        if not named or not set(named) <= ours:
            continue
        # "Install: wine:amd64 (8.0~repack-4), libwine:amd64 (8.0~repack-4, automatic), ..."
        found += re.findall(r"([^\s,()]+):[a-z0-9]+ \(", installed)
    return sorted(set(found))


def remove_setup_packages() -> None:
    history = APT_HISTORY.read_text(errors="replace") if APT_HISTORY.exists() else ""
    packages = [p for p in installed_by_setup(history) if _installed(p)]
    if packages:
        print(f"purging {len(packages)} packages the setup step installed ...", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "purge", "-y", "-qq", *packages], check=True, env=env)
    else:
        print("no package of the setup step is installed", flush=True)
    if system_packages.BACKPORTS_SOURCES.exists():
        system_packages.BACKPORTS_SOURCES.unlink()
        subprocess.run(["apt-get", "update", "-qq"], check=True)
    missing = [group.name for group in system_packages.GROUPS if group.missing()]
    print(f"groups now missing: {', '.join(missing) or 'none'}", flush=True)


def _installed(package: str) -> bool:
    query = ["dpkg-query", "-W", "-f", "${Status}", package]
    result = subprocess.run(query, capture_output=True, text=True)
    return result.stdout.startswith("install ok installed")


def empty_caches() -> None:
    for cache in CACHES:
        if cache.exists():
            print(f"removing {cache}", flush=True)
            shutil.rmtree(cache, ignore_errors=True)


def burn() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burn", type=int, default=0, metavar="N", help="CPU burners beside")
    parser.add_argument("--keep-packages", action="store_true", help="remove no package")
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="the repository to clone")
    parser.add_argument("--branch", default="main")
    arguments = parser.parse_args(argv)
    if os.name == "nt" or os.geteuid() != 0:
        parser.error("run it as root on a Debian machine: it removes system packages")
    if not arguments.keep_packages:
        remove_setup_packages()
    empty_caches()
    folder = Path(tempfile.mkdtemp(prefix="fresh-ci-"))
    clone = ["git", "clone", "-q", "--branch", arguments.branch, str(arguments.repo)]
    subprocess.run([*clone, str(folder / "repo")], check=True)
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(arguments.burn)]
    for process in burners:
        process.start()
    print(f"running .ci/run in {folder / 'repo'} (CPU burners: {arguments.burn}) ...", flush=True)
    started = time.monotonic()
    env = {**os.environ, "CI": "true"}
    code = subprocess.run(
        ["bash", ".ci/run"], cwd=folder / "repo", stdin=subprocess.DEVNULL, env=env
    ).returncode
    seconds = int(time.monotonic() - started)
    for process in burners:
        process.terminate()
    print(f"fresh-machine CI: exit {code} after {seconds // 60} min {seconds % 60} s", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
