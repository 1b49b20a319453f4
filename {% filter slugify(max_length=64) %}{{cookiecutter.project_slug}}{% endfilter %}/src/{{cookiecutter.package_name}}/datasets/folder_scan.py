"""Finding the pictures in a folder of your own, and checking each one before training.

A folder copied from a phone, a Mac, a zip file or a notebook holds more than pictures:
macOS's ``__MACOSX/`` and ``._photo.png`` copies, ``.ipynb_checkpoints/``, a damaged or
half-downloaded file, a link back to the folder itself, a named pipe. Each of these used to end
training in the middle of an epoch, hang it, or count the same picture many times. So:

- the classes are the subfolders of the folder, leaving out hidden ones (``.name``) and known
  system folders (``__MACOSX``, ``$RECYCLE.BIN``...), which are named in a note;
- links are never followed (a link out of the folder, or back into it, would add pictures
  that are not there or count them twice), nor anything that is not a regular file; a file
  reachable twice (a hard link) counts once;
- every picture is opened and decoded once, before the first epoch; what cannot be used is
  skipped, and the reason is said per file;
- each picture's bytes are hashed: the hash decides its part (training, validation, test) in
  ``datasets/folder_split.py``, so the split does not move when pictures are added or removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import stat
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..machinery.terminal_text import printable

# What torchvision's ImageFolder took for a picture (its IMG_EXTENSIONS).
PICTURE_SUFFIXES = frozenset(
    {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}
)
# Folders that systems and tools put beside your own (compared in lower case); hidden folders
# (a leading ".") are left out too.
SYSTEM_FOLDERS = frozenset(
    {"__macosx", "$recycle.bin", "system volume information", "__pycache__", "thumbs"}
)
SKIPPED_SHOWN = 5  # skipped files named one per line; the rest are counted
MAX_FILE_BYTES = 256 * 1024 * 1024  # a bigger file is no photo this model could use
_HIDDEN_OR_SYSTEM = 0x2 | 0x4  # Windows' FILE_ATTRIBUTE_HIDDEN and FILE_ATTRIBUTE_SYSTEM
_REPARSE_POINT = 0x400  # Windows' FILE_ATTRIBUTE_REPARSE_POINT: a link, a junction, a cloud file
_NAME_SURROGATE = 0x20000000  # a reparse tag with this bit names another file: links, junctions


@dataclass(frozen=True)
class Picture:
    path: Path
    label: int  # index of its class
    digest: str  # hex hash of its bytes


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


@dataclass
class Scan:
    root: Path
    classes: list[str]
    pictures: list[Picture] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # hidden and system folders at the top


def is_left_out(name: str, info: os.stat_result) -> bool:
    """Hidden (a leading dot, or Windows' hidden/system flag) or a known system folder."""
    attributes = getattr(info, "st_file_attributes", 0)
    return (
        name.startswith(".")
        or name.lower() in SYSTEM_FOLDERS
        or bool(attributes & _HIDDEN_OR_SYSTEM)
    )


def is_link(info: os.stat_result) -> bool:
    """A symbolic link, or on Windows a junction or another link to a name elsewhere. Not
    OneDrive's placeholders: they are reparse points too, but of the files themselves."""
    attributes = getattr(info, "st_file_attributes", 0)
    surrogate = getattr(info, "st_reparse_tag", 0) & _NAME_SURROGATE
    return stat.S_ISLNK(info.st_mode) or bool(attributes & _REPARSE_POINT and surrogate)


def _entries(folder: Path) -> list[tuple[str, os.stat_result]]:
    """(name, lstat) of each entry of ``folder``, sorted by name; links are not followed."""
    found = []
    with os.scandir(folder) as listing:
        for entry in listing:
            try:
                found.append((entry.name, entry.stat(follow_symlinks=False)))
            except OSError:  # removed meanwhile
                continue
    return sorted(found, key=lambda pair: pair[0])


def find_classes(root: Path) -> tuple[list[str], list[str]]:
    """(class folders, left-out folders) among the subfolders of ``root``, sorted."""
    classes, left_out = [], []
    for name, info in _entries(root):
        if is_link(info):
            if (root / name).is_dir():
                left_out.append(f"{name} (a link: links are not followed)")
            continue
        if not stat.S_ISDIR(info.st_mode):
            continue  # a file beside the class folders belongs to no class
        if is_left_out(name, info):
            left_out.append(name)
        else:
            classes.append(name)
    return classes, left_out


def _files(root: Path, folder: Path, skipped: list[Skipped]) -> list[tuple[Path, os.stat_result]]:
    """The regular picture files under ``folder`` (its subfolders too), links not followed."""
    found, pending = [], [folder]
    while pending:
        current = pending.pop()
        try:
            entries = _entries(current)
        except OSError as error:
            skipped.append(Skipped(current.relative_to(root), _why(error, "cannot be listed")))
            continue
        for name, info in entries:
            path = current / name
            where = path.relative_to(root)
            if is_link(info):
                skipped.append(Skipped(where, "a link (links are not followed)"))
            elif stat.S_ISDIR(info.st_mode):
                if is_left_out(name, info):
                    skipped.append(Skipped(where, "a hidden or system folder"))
                else:
                    pending.append(path)
            elif not stat.S_ISREG(info.st_mode):
                skipped.append(Skipped(where, "not a regular file (a pipe, socket or device)"))
            elif name.startswith("."):
                skipped.append(Skipped(where, "a hidden file (e.g. macOS's ._ copies)"))
            elif Path(name).suffix.lower() not in PICTURE_SUFFIXES:
                skipped.append(Skipped(where, "not a picture file by its name"))
            else:
                found.append((path, info))
    return sorted(found, key=lambda pair: pair[0])


def _why(error: BaseException, what: str) -> str:
    text = getattr(error, "strerror", None) or str(error) or type(error).__name__
    return f"{what} ({text.strip().rstrip('.')})"


def check_picture(path: Path) -> str:
    """The hex hash of the picture's bytes, once it has been decoded in full; ValueError with
    the reason when it cannot be used."""
    from PIL import Image  # Pillow comes with torchvision

    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"too large ({size / 2**20:.0f} MB)")
        content = path.read_bytes()
    except OSError as error:
        raise ValueError(_why(error, "cannot be read")) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a big photo's DecompressionBombWarning
            with Image.open(io.BytesIO(content)) as image:
                image.draft("L", (28, 28))  # JPEG decodes at a fraction of its size
                image.load()  # a truncated or damaged file fails here, not mid-epoch
    except Image.UnidentifiedImageError:
        raise ValueError("cannot be read as a picture (damaged, or not a picture)") from None
    except Image.DecompressionBombError as error:
        raise ValueError(f"too large to decode safely ({str(error).split(' pixels')[0]})") from None
    except Exception as error:  # Pillow says damage with OSError, SyntaxError, ValueError...
        raise ValueError(_why(error, "cannot be read as a picture")) from None
    return hashlib.sha256(content).hexdigest()


def _identity(path: Path, info: os.stat_result) -> tuple[int, int]:
    """(device, file number): the same pair for a file reached by two names. A Windows folder
    listing leaves both 0; os.stat reads them there (one more call per picture)."""
    if info.st_ino == 0:
        with contextlib.suppress(OSError):
            info = os.stat(path, follow_symlinks=False)
    return info.st_dev, info.st_ino


def scan(root: Path, threads: int | None = None) -> Scan:
    """Every usable picture in the class folders of ``root``, each checked; what was skipped,
    and why. ``root`` itself may be a link (the user named it)."""
    classes, left_out = find_classes(root)
    result = Scan(root, classes, left_out=left_out)
    candidates: list[tuple[Path, int]] = []
    seen: dict[tuple[int, int], Path] = {}
    for label, name in enumerate(classes):
        for path, info in _files(root, root / name, result.skipped):
            key = _identity(path, info)
            if key[1] and key in seen:  # a hard link: one file in two places
                first = seen[key].relative_to(root).as_posix()
                result.skipped.append(Skipped(path.relative_to(root), f"the same file as {first}"))
                continue
            seen[key] = path
            candidates.append((path, label))
    # Pillow decodes without holding the GIL: threads check several pictures at once.
    workers = threads or min(8, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        checked = list(pool.map(lambda c: _checked(c[0]), candidates))
    for (path, label), (digest, reason) in zip(candidates, checked):
        if digest is None:
            result.skipped.append(Skipped(path.relative_to(root), reason))
        else:
            result.pictures.append(Picture(path, label, digest))
    result.skipped.sort(key=lambda skipped: skipped.path)
    return result


def _checked(path: Path) -> tuple[str | None, str]:
    try:
        return check_picture(path), ""
    except ValueError as error:
        return None, str(error)


def scan_notes(found: Scan, shown: int = SKIPPED_SHOWN) -> list[str]:
    """What the user should know about the folder's files: one line per folder left out and
    per file skipped (at most ``shown`` of them, then a count), paths escaped."""
    notes = []
    if found.left_out:
        names = ", ".join(printable(name, 80) for name in found.left_out)
        notes.append(f"left out (hidden or system folders, not classes): {names}")
    for skipped in found.skipped[:shown]:
        notes.append(f"skipped {printable(skipped.path.as_posix())}: {printable(skipped.reason)}")
    if len(found.skipped) > shown:
        notes.append(f"... and {len(found.skipped) - shown} more ({len(found.skipped)} skipped)")
    return notes
