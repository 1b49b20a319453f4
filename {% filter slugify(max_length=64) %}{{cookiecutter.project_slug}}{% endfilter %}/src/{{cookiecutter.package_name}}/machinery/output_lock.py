"""One training run per output folder, and no leftovers from runs that died.

Two runs writing ``last.pt``, ``best.pt`` and the metrics of one folder would each replace the
other's files and both report success. A run therefore claims its folder with a lock file,
``.training.lock``, and holds an operating-system lock on it for as long as it runs (``flock``
on Linux and macOS, a byte-range lock on Windows). The file also holds the process id, the
machine's name and the start time, so that a second run into the folder is refused with a
sentence that says who holds it.

The operating system releases the lock when its process ends in any way (a crash, ``kill -9``,
a closed laptop lid), so a lock file that nobody holds is stale, whatever it contains: empty or
garbled (written on a full disk), or naming a process id that an unrelated program has by now.
The next run takes the folder over. Only on a file system without locks does the process id
decide, as a fallback.

Temporary files of interrupted saves (``.last.pt.<pid>.tmp``) are removed by their exact
names, only when the process that wrote them is gone (or they are old), and only once the run
writes into the folder: a run that fails at once removes nothing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import sys
import time
from pathlib import Path
from typing import Iterator

from gpu_doctor.safe_text import printable

from . import checkpoints, reporting
from .stopping import TrainError

LOCK_NAME = ".training.lock"
# Every file the project writes into an output folder through a temporary file.
OWN_FILES = (
    checkpoints.LAST,
    checkpoints.BEST,
    reporting.METRICS_CSV,
    reporting.METRICS_JSON,
    reporting.CURVES_PNG,
    reporting.CONFUSION_PNG,
    "test_metrics.json",  # evaluate's
)
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]{1,10})\.tmp$")
LEFTOVER_AGE_S = 3600  # a save takes seconds: an hour-old temporary file is a leftover
_WINDOWS_LOCK_OFFSET = 1 << 20  # locked byte far past the text, which others still read
_HOLDER_BYTES = 4096  # what is read of a lock file: ours are about 80 bytes


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


# ------------------------------------------------------------------ the operating-system lock


def _try_lock(fd: int) -> bool | None:
    """Lock ``fd`` exclusively without waiting: True, False (another process holds it), or
    None where the file system has no locks."""
    try:
        if sys.platform == "win32":
            import msvcrt

            os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        busy = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES, getattr(errno, "EDEADLOCK", 0))
        # Windows: a C runtime may fail a held 1-byte lock without saying why (errno 0, as
        # Wine's does); on an open local file that can only be another process's lock.
        unsaid = sys.platform == "win32" and not error.errno
        return False if error.errno in busy or unsaid else None
    return True


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        if sys.platform == "win32":
            import msvcrt

            os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a run that just ended removes
    its lock file; a lock on the removed file would hold nothing)."""
    try:
        here, there = os.fstat(fd), os.stat(str(path))
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _write_holder(fd: int) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(holder).encode("utf-8"))


# -------------------------------------------------------------------- what a lock file says


def _holder(lock: Path) -> dict:
    """What the lock file says about its run; {} when it is unreadable (empty, garbled)."""
    try:
        with open(lock, "rb") as handle:
            holder = json.loads(handle.read(_HOLDER_BYTES).decode("utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return {}
    return holder if isinstance(holder, dict) else {}


def _in_use(folder: Path, lock: Path, holder: dict, chosen: bool) -> OutputFolderInUse:
    pid, host = (printable(holder.get(key, "?"), 100) for key in ("pid", "host"))
    who = f"process {pid} on {host}"
    if "started" in holder:
        who += f", started {printable(holder['started'], 100)}"
    other = "or choose another --output-dir" if chosen else "then run this command again"
    return OutputFolderInUse(
        f"Another training run ({who}) is writing to {folder}. Wait for it to finish, "
        f"{other}. If no such run exists any more, delete {lock}."
    )


def _alive_here(holder: dict) -> bool:
    """For file systems without locks: whether the holder is a live process on this machine
    (a run on another machine cannot be checked: assume it is alive)."""
    if not holder:
        return False  # empty or garbled: no run wrote it completely
    if holder.get("host") != socket.gethostname():
        return True
    return process_alive(holder.get("pid"))


# ------------------------------------------------------------------------------- the claim


def _acquire(folder: Path, lock: Path, chosen: bool) -> int:
    """Open and lock ``lock``; the open descriptor, or OutputFolderInUse."""
    for _ in range(5):
        fd = os.open(str(lock), os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            locked = _try_lock(fd)
            if locked is False:
                raise _in_use(folder, lock, _holder(lock), chosen)
            if locked is None and _alive_here(_holder(lock)):
                raise _in_use(folder, lock, _holder(lock), chosen)
            if _same_file(fd, lock):
                _write_holder(fd)
                return fd
            _unlock(fd)  # the file was removed by a run that just ended: open the new one
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise _in_use(folder, lock, _holder(lock), chosen)


def _release(fd: int, lock: Path) -> None:
    # POSIX removes the file first, while it is still locked, so that no other run locks a
    # file that is about to go; Windows cannot remove an open file, so it closes it first.
    removed = False
    with contextlib.suppress(OSError):
        lock.unlink()
        removed = True
    _unlock(fd)
    with contextlib.suppress(OSError):
        os.close(fd)
    if not removed:
        with contextlib.suppress(OSError):
            lock.unlink()


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


@contextlib.contextmanager
def claim(folder: Path, chosen: bool = True) -> Iterator[None]:
    """Hold ``folder`` for this run: create it if needed, refuse it if another live run holds
    it, take it over from a dead one. TrainError when the folder cannot be written. ``chosen``:
    the user named it with --output-dir (else it is a run folder in runs/), which the refusal
    says accordingly."""
    folder = Path(folder)
    lock = folder / LOCK_NAME
    new_folder = False
    try:
        new_folder = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        fd = _acquire(folder, lock, chosen)
    except OSError as error:  # a name too long, a folder the user may not enter, read-only
        if new_folder:
            with contextlib.suppress(OSError):
                folder.rmdir()
        reason = error.strerror or str(error)
        advice = (
            "Choose another one with --output-dir."
            if chosen
            else "Run from a folder you can write to, or name one with --output-dir."
        )
        raise TrainError(
            f"Cannot write to the output directory {printable(folder, 300)} ({reason}). {advice}"
        ) from error
    try:
        yield
    finally:
        _release(fd, lock)
        if new_folder:  # a run that failed before writing anything leaves no empty folder
            with contextlib.suppress(OSError):
                folder.rmdir()
