"""Downloading the wheels onto the stick: their sizes first (from the index's answer to a HEAD
request), then each file through a part file that is renamed only once its SHA-256 matches the
index's, so an interrupted run leaves no half file that a later run would take for a whole one."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlparse

from .install import plausible_size
from .resolve import Wheel

try:  # a progress bar where tqdm is installed (every stack has it); plain lines otherwise
    from tqdm import tqdm
except ImportError:  # pragma: no cover (depends on the environment)
    tqdm = None


class FetchError(Exception):
    """A download failed or arrived damaged: the message names the file."""


def _local(url: str) -> Path | None:
    parsed = urlparse(url)
    return (
        Path(unquote(parsed.path.lstrip("/") if os.name == "nt" else parsed.path))
        if (parsed.scheme == "file")
        else None
    )


def size_of(url: str) -> int:
    """The file's size in bytes as its index tells it (0 when the index does not say)."""
    local = _local(url)
    if local is not None:
        return local.stat().st_size if local.is_file() else 0
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            size = int(answer.headers.get("Content-Length") or 0)
    except (OSError, ValueError):
        return 0
    return size if plausible_size(size) else 0  # 10**400 is no file's size: unknown


def human_size(size: int, decimals: int = 0) -> str:
    """'3.46 GB', '112.4 MB': megabytes below a gigabyte, so that small sizes do not read 0.0."""
    if size >= 10**9:
        return f"{size / 1e9:.{2 + decimals}f} GB"
    return f"{size / 1e6:.{1 + decimals}f} MB"


def two_sizes(smaller: int, larger: int) -> tuple[str, str]:
    """Both sizes in words, with as many decimals as it takes for them to read differently."""
    for decimals in range(8):
        pair = human_size(smaller, decimals), human_size(larger, decimals)
        if pair[0] != pair[1]:
            return pair
    return f"{smaller} bytes", f"{larger} bytes"


def free_bytes(folder: Path) -> int:
    """Free space where ``folder`` is (or would be created)."""
    while not folder.exists():
        folder = folder.parent
    return shutil.disk_usage(folder).free


def download(wheel: Wheel, destination: Path, size: int) -> None:
    """``wheel`` into ``destination``, checked against the index's SHA-256."""
    part = destination.with_name(destination.name + ".part")
    digest = hashlib.sha256()
    bar = None
    if tqdm is not None:
        bar = tqdm(total=size or None, unit="B", unit_scale=True, desc=wheel.filename[:40])
    else:
        print(f"  {wheel.filename} ({human_size(size)})", flush=True)
    try:
        local = _local(wheel.url)
        source = open(local, "rb") if local else urllib.request.urlopen(wheel.url, timeout=120)  # noqa: SIM115
        with source, open(part, "wb") as out:
            for block in iter(lambda: source.read(1 << 20), b""):
                out.write(block)
                digest.update(block)
                if bar is not None:
                    bar.update(len(block))
    except OSError as error:
        part.unlink(missing_ok=True)
        raise FetchError(
            f"Downloading {wheel.filename} failed ({error}): run again to go on."
        ) from None
    except BaseException:  # Ctrl+C: the files already finished stay, this half one goes
        part.unlink(missing_ok=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    if wheel.sha256 and digest.hexdigest() != wheel.sha256:
        part.unlink(missing_ok=True)
        raise FetchError(
            f"{wheel.filename} arrived damaged (its SHA-256 is not the index's): run again."
        )
    os.replace(part, destination)
    sys.stdout.flush()
