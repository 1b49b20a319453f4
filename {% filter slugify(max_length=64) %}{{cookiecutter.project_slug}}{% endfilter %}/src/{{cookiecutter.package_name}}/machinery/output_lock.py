"""One training run per output folder, and no leftovers from runs that died.

Two runs writing ``last.pt``, ``best.pt`` and the metrics of one folder would each replace the
other's files and both report success. A run therefore claims its folder with a lock file,
``.training.lock``, created atomically (``O_CREAT | O_EXCL``) and holding the process id, the
machine's name and the start time. A second run into a claimed folder is refused with a
sentence that says who holds it. A lock whose process is gone (a crash, ``kill -9``, a closed
laptop lid) is stale: the next run takes the folder over. While a run holds the lock, no other
live process writes there, so temporary files of interrupted saves (``.last.pt.<pid>.tmp``)
are leftovers of dead runs and are deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Iterator

from .stopping import TrainError

LOCK_NAME = ".training.lock"


class OutputFolderInUse(TrainError):
    """Another live run writes to the same output folder."""


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (never signals it)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, but belongs to another user
        return True
    except OSError:
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


def _holder(lock: Path) -> dict:
    """What the lock file says about its run; {} when it is unreadable (being written)."""
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _stale(holder: dict) -> bool:
    if holder.get("host") != socket.gethostname():
        return False  # a run on another machine (a shared folder): cannot tell, assume alive
    pid = holder.get("pid")
    return isinstance(pid, int) and not process_alive(pid)


def _in_use(folder: Path, lock: Path, holder: dict) -> OutputFolderInUse:
    who = f"process {holder.get('pid', '?')} on {holder.get('host', '?')}"
    if "started" in holder:
        who += f", started {holder['started']}"
    return OutputFolderInUse(
        f"Another training run ({who}) is writing to {folder}. Wait for it to finish, or "
        f"choose another --output-dir. If no such run exists any more, delete {lock}."
    )


def _create(lock: Path) -> bool:
    """Create the lock file atomically; False when it exists already."""
    try:
        fd = os.open(str(lock), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(holder, handle)
    return True


def remove_leftovers(folder: Path) -> list[Path]:
    """Delete temporary files of interrupted saves (``.<name>.<pid>.tmp``); returns them."""
    removed = []
    for path in folder.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


@contextlib.contextmanager
def claim(folder: Path) -> Iterator[None]:
    """Hold ``folder`` for this run: create it if needed, refuse it if another live run holds
    it, take it over from a dead one, and clear leftovers of dead runs. TrainError when the
    folder cannot be written."""
    folder = Path(folder)
    lock = folder / LOCK_NAME
    new_folder = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        created = _create(lock)
        if not created:
            holder = _holder(lock)
            if not _stale(holder):
                raise _in_use(folder, lock, holder)
            lock.unlink()  # the run that held it is gone
            created = _create(lock)
            if not created:  # another run took it over in between
                raise _in_use(folder, lock, _holder(lock))
    except OSError as error:
        reason = error.strerror or str(error)
        raise TrainError(
            f"Cannot write to the output directory {folder} ({reason}). "
            "Choose another one with --output-dir."
        ) from error
    try:
        remove_leftovers(folder)
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()
        if new_folder:  # a run that failed before writing anything leaves no empty folder
            with contextlib.suppress(OSError):
                folder.rmdir()
