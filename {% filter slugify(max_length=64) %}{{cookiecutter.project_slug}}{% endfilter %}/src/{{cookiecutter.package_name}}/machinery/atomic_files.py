"""Files written whole or not at all: a temporary file beside the target, renamed over it in one
step (``os.replace``). A crash, a Ctrl+C or a full disk while writing leaves the previous file
as it was, and ``WriteError`` says why in one sentence (with the free space, when a disk is
full). Checkpoints, metrics, pictures and exported models are all written this way."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Iterator


class WriteError(OSError):
    """Writing failed (disk full, no permission, ...); the previous file is unchanged."""


def _replace(source: Path, target: Path) -> None:
    # On Windows a virus scanner or indexer may hold the target for a moment: retry briefly.
    for attempt in range(5):
        try:
            os.replace(str(source), str(target))
            return
        except PermissionError:
            if attempt == 4:
                raise
            time.sleep(0.1 * (attempt + 1))


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one step."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, content: bytes) -> None:
    try:
        with atomic_path(path) as tmp:
            tmp.write_bytes(content)
    except OSError as error:
        raise WriteError(write_failure(path, error)) from error


def copy_atomic(source: Path, target: Path) -> None:
    """Copy ``source`` over ``target`` in one step (WriteError when it fails)."""
    try:
        with atomic_path(target) as tmp:
            shutil.copyfile(source, tmp)
    except OSError as error:
        raise WriteError(write_failure(target, error)) from error


def write_failure(path: Path, error: Exception) -> str:
    """What WriteError says: the file, why, and that the previous one is unchanged."""
    if isinstance(error, OSError):
        reason = error.strerror or str(error) or type(error).__name__
    else:  # torch.save's zip writer reports a full disk as RuntimeError("... unexpected pos ...")
        reason = f"the file could not be completed ({_one_line(error)}){_free_space(path)}"
    return (
        f"Could not write {path}: {reason}. The previous {Path(path).name} (if any) is unchanged."
    )


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _free_space(path: Path) -> str:
    try:
        free = shutil.disk_usage(Path(path).parent).free
    except OSError:
        return ""
    return f"; {free / 2**20:.1f} MB free there: is the disk full?"
