"""One make at a time per stick: a lock file in the stick, held with the operating system's own
file lock, so that a make that was killed (its lock file left behind) never blocks the next one:
the system lets go of a dead process's lock. The file says who holds it, for the refusal."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = ".make.lock"

if os.name == "nt":  # pragma: no cover (Windows)
    import msvcrt

    def _try_lock(descriptor: int) -> bool:
        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(descriptor: int) -> None:
        os.lseek(descriptor, 0, os.SEEK_SET)
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(descriptor: int) -> bool:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as error:  # a file system without locks (some network shares): go on
            if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL):
                raise
        return True

    def _unlock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)


class StickBusy(Exception):
    """Another make is writing to this stick: the message says which and what to do."""


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "another make"
    except (OSError, ValueError):
        return "another make"


@contextlib.contextmanager
def stick_lock(stick: Path) -> Iterator[None]:
    """Hold the stick's lock while the block runs; StickBusy when another make holds it."""
    path = stick / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    # the lock file of a make that ended may be removed between open and lock: then this process
    # would hold a lock nobody else sees
    if not _try_lock(descriptor) or not _still_there(descriptor, path):
        os.close(descriptor)
        raise StickBusy(
            f"{stick} is being written by {_holder(path)}: wait until it ends (a make that was "
            f"stopped lets go by itself; if none is running, delete {path}), then run this again."
        )
    try:
        os.ftruncate(descriptor, 0)
        holder = f"process {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M')}"
        os.write(descriptor, holder.encode())
        yield
    finally:
        _release(descriptor, path)


def _still_there(descriptor: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(descriptor), os.stat(path))
    except OSError:
        return False


def _release(descriptor: int, path: Path) -> None:
    if os.name != "nt":
        path.unlink(missing_ok=True)  # while still locked: nobody takes this file meanwhile
    with contextlib.suppress(OSError):
        _unlock(descriptor)
    os.close(descriptor)
    if os.name == "nt":  # pragma: no cover (Windows deletes no open file: after closing it)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
