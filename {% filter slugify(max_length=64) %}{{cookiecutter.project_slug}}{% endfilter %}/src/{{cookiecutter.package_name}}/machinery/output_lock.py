"""One training run per output folder, and no leftovers from runs that died.

Two runs writing ``last.pt``, ``best.pt`` and the metrics of one folder would each replace the
other's files and both report success. A run therefore holds an operating-system lock on
``.training.lock`` in its folder for as long as it runs (the ``filelock`` library: ``flock`` on
Linux and macOS, ``LockFileEx`` on Windows), and says who it is in ``.training.holder.json``
(process id, machine, start time), so that a second run into the folder is refused with a
sentence that says who holds it.

The operating system releases the lock when its process ends in any way (a crash, ``kill -9``,
a closed laptop lid), so a lock file that nobody holds never blocks, whatever the files say:
the next run takes the folder over. Only where the file system has no locks at all does the
process id in the holder's file decide, as a fallback.

Temporary files of interrupted saves (``.last.pt.<pid>.tmp``) are removed by their exact
names, only when the process that wrote them is gone (or they are old), and only once the run
holds the folder: a run that fails before (a wrong --device) removes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import time
from pathlib import Path
from typing import Iterator

import filelock  # installed with torch (a dependency of every torch release here)

from . import checkpoints, metrics, plots
from .stopping import TrainError
from .terminal_text import printable

LOCK_NAME = ".training.lock"  # the operating-system lock; its content means nothing
HOLDER_NAME = ".training.holder.json"  # who holds the lock, for the refusal's sentence
# Every file the project writes into an output folder through a temporary file.
OWN_FILES = (
    checkpoints.LAST,
    checkpoints.BEST,
    metrics.METRICS_CSV,
    metrics.METRICS_JSON,
    plots.CURVES_PNG,
    plots.CONFUSION_PNG,
    "test_metrics.json",  # evaluate's
)
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]{1,10})\.tmp$")
LEFTOVER_AGE_S = 3600  # a save takes seconds: an hour-old temporary file is a leftover
_HOLDER_BYTES = 4096  # what is read of a holder's file: ours are about 80 bytes


class OutputFolderInUse(TrainError):
    """Another live run writes to the same output folder."""


# -------------------------------------------------------------------------------- processes


def process_alive(pid: object) -> bool:
    """Whether a process with this id runs on this machine (never signals it)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 2**31:
        return False  # process ids are positive 32-bit numbers on every system
    if sys.platform == "win32":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, but belongs to another user
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


def _windows_process_alive(pid: int) -> bool:
    # os.kill on Windows terminates the process whatever the signal: ask the kernel instead.
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    query_limited_information, still_active, access_denied = 0x1000, 259, 5
    handle = kernel32.OpenProcess(query_limited_information, False, pid)
    if not handle:
        return ctypes.get_last_error() == access_denied
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


# ------------------------------------------------------------------------ who holds a folder


def _holder(folder: Path) -> dict:
    """What the holder's file says about its run; {} when it is missing or unreadable."""
    try:
        with open(folder / HOLDER_NAME, "rb") as handle:
            holder = json.loads(handle.read(_HOLDER_BYTES).decode("utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return {}
    return holder if isinstance(holder, dict) else {}


def _write_holder(folder: Path) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with contextlib.suppress(OSError):  # only the refusal's sentence would miss it
        (folder / HOLDER_NAME).write_text(json.dumps(holder), encoding="utf-8")


def _in_use(folder: Path, chosen: bool) -> OutputFolderInUse:
    holder = _holder(folder)
    pid, host = (printable(holder.get(key, "?"), 100) for key in ("pid", "host"))
    who = f"process {pid} on {host}"
    if "started" in holder:
        who += f", started {printable(holder['started'], 100)}"
    other = "or choose another --output-dir" if chosen else "then run this command again"
    return OutputFolderInUse(
        f"Another training run ({who}) is writing to {folder}. Wait for it to finish, "
        f"{other}. If no such run exists any more, delete {folder / LOCK_NAME}."
    )


def _alive_here(holder: dict) -> bool:
    """For file systems without locks: whether the holder is a live process on this machine
    (a run on another machine cannot be checked: assume it is alive)."""
    if not holder:
        return False  # empty or garbled: no run wrote it completely
    if holder.get("host") != socket.gethostname():
        return True
    return process_alive(holder.get("pid"))


def _acquire(folder: Path, chosen: bool) -> filelock.BaseFileLock | None:
    """The folder's lock, held; None on a file system without locks, where the holder's
    process id decides instead. OutputFolderInUse when a live run holds it."""
    path = folder / LOCK_NAME
    for _ in range(5):
        lock = filelock.FileLock(str(path))
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            raise _in_use(folder, chosen) from None
        except NotImplementedError:  # older filelock versions on a file system without flock
            if _alive_here(_holder(folder)):
                raise _in_use(folder, chosen) from None
            return None
        if path.exists():
            return lock
        lock.release()  # a run that just ended removed the file locked here: lock the new one
    raise _in_use(folder, chosen)


# ------------------------------------------------------------------ leftovers of dead runs


def remove_leftovers(folder: Path) -> list[Path]:
    """Delete temporary files of interrupted saves: ``.<name>.<pid>.tmp`` where ``name`` is a
    file this project writes and the process ``pid`` is gone (or the file is an hour old).
    Anything else, a user's own ``.notes.tmp`` included, stays. Returns what was deleted."""
    removed = []
    try:
        candidates = list(Path(folder).iterdir())
    except OSError:
        return removed
    for path in candidates:
        match = _LEFTOVER.match(path.name)
        if not match or match["name"] not in OWN_FILES or not _stale(path, int(match["pid"])):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def _stale(path: Path, pid: int) -> bool:
    if pid == os.getpid():
        return False  # this run's own save in progress
    if not process_alive(pid):
        return True
    try:  # a live process with this id: a save in progress (evaluate), or a reused id
        return time.time() - path.stat().st_mtime > LEFTOVER_AGE_S
    except OSError:
        return False


# ------------------------------------------------------------------------------- the claim


@contextlib.contextmanager
def claim(folder: Path, chosen: bool = True, fix: str = "") -> Iterator[None]:
    """Hold ``folder`` for this run: create it if needed, refuse it if another live run holds
    it, take it over from a dead one. TrainError when the folder cannot be written. ``chosen``:
    the user named it with --output-dir (else it is a run folder in runs/), which the refusal
    says accordingly; ``fix``, when given, is what a folder that cannot be written needs."""
    folder = Path(folder)
    new_folder = False
    try:
        new_folder = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        lock = _acquire(folder, chosen)
    except OSError as error:  # a name too long, a folder the user may not enter, read-only
        if new_folder:
            _remove(folder)
        reason = error.strerror or str(error)
        advice = fix or (
            "Choose another one with --output-dir."
            if chosen
            else "Run from a folder you can write to, or name one with --output-dir."
        )
        raise TrainError(
            f"Cannot write to the output directory {printable(folder, 300)} ({reason}). {advice}"
        ) from error
    _write_holder(folder)
    remove_leftovers(folder)  # the folder is this run's now: what dead runs left can go
    try:
        yield
    finally:
        # The files go while the lock is still held, so that no other run locks a file that
        # is about to go (Windows cannot remove an open file: filelock removes it, unlocked).
        for name in (HOLDER_NAME, LOCK_NAME):
            with contextlib.suppress(OSError):
                (folder / name).unlink()
        if lock is not None:
            lock.release()
        if new_folder:  # a run that failed before writing anything leaves no empty folder
            _remove(folder)


def _remove(folder: Path) -> None:
    """Remove a folder this run created, if nothing but its lock file is in it."""
    with contextlib.suppress(OSError):
        (folder / LOCK_NAME).unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
