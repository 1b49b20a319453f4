"""Debian packages a test tier needs, installed with apt-get once per machine, and the host
commands the tiers run (`run`: a command that must succeed, its failure one sentence).

The one place where the template's tools install system packages: the Windows tier
(`wine_python.py`: wine, xvfb), the DirectML tier (`wine_directml.py`: MinGW-w64, Mesa's
lavapipe) and the draw page's browser test (`chromium.py`). As root apt-get runs directly,
otherwise through `sudo -n` (never a password prompt: CI has no terminal); with neither, the
error says the command to run as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

TIMEOUT = 1200  # seconds for one apt-get call: an update and a 700 MB install on a slow mirror
# apt-get refuses to start while another holds dpkg's lock: the test lanes (dev.py) take
# turns on this lock instead (two installs, each up to TIMEOUT).
APT_TURN = Path(tempfile.gettempdir()) / "lenet-template-apt.lock"
# How the setup step installs: apt's history shows this line, which tools/fresh_machine.py undoes.
INSTALL = ("apt-get", "install", "-y", "-qq", "--no-install-recommends")


class AptError(RuntimeError):
    """The packages could not be installed; the message says why and what to do instead."""


def available() -> bool:
    """True on a Linux machine with apt-get (Debian, Ubuntu and their kin)."""
    return sys.platform.startswith("linux") and shutil.which("apt-get") is not None


def privileged_prefix(by_hand: str) -> list[str]:
    """[] as root, ["sudo", "-n"] otherwise; with no sudo, an AptError saying to run
    ``by_hand`` as root."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") is None:
        raise AptError(f"install them as root: {by_hand}")
    return ["sudo", "-n"]


def run(command: list[str], timeout: float = TIMEOUT, **kwargs) -> subprocess.CompletedProcess:
    """A host command that must succeed; a failure becomes one AptError sentence with the end
    of its output."""
    try:
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=None if "input" in kwargs else subprocess.DEVNULL,
            **kwargs,
        )
    except subprocess.TimeoutExpired as error:
        raise AptError(f"{' '.join(command[:4])} did not finish within {timeout:.0f} s") from error
    except OSError as error:
        raise AptError(f"could not start {command[0]}: {error}") from error
    if completed.returncode != 0:
        tail = (completed.stdout[-1500:] + completed.stderr[-1500:]).strip()
        raise AptError(f"{' '.join(command[:5])} ... exited {completed.returncode}: {tail}")
    return completed


def install(
    packages: list[str],
    *,
    size: str | None = None,
    log: Callable[[str], None],
    suite: str | None = None,
    by_hand: str | None = None,
) -> None:
    """``apt-get update``, then ``apt-get install`` of ``packages`` without their recommends
    (from ``suite``, such as bookworm-backports, when given). ``size`` is what the log line
    tells the person waiting ("about 300 MB"); ``by_hand`` the command a non-root user without
    sudo is told to run."""
    target = ["-t", suite] if suite else []
    by_hand = by_hand or " ".join(["apt-get install -y", *target, *packages])
    prefix = privileged_prefix(by_hand)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    source = f" from {suite}" if suite else ""
    once = f"{size}, once" if size else "once"
    log(f"installing {' '.join(packages)}{source} with apt-get ({once}) ...")
    from filelock import FileLock  # here: the module also runs where filelock is not installed

    with FileLock(APT_TURN, timeout=4 * TIMEOUT):
        run([*prefix, "apt-get", "update", "-qq"], env=env)
        run([*prefix, *INSTALL, *target, *packages], env=env)
