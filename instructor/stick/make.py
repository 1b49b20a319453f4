"""Writing a workshop stick: the wheels of every environment asked for, a hashed requirements file
per environment, MNIST, the manifest, install.py and a README for the room.

A run can be stopped and run again: each wheel is recorded in the manifest as soon as it is
whole, and a wheel the manifest does not list (a damaged manifest) is kept when its SHA-256 is
the index's, so a second run downloads only what is missing or damaged. make writes only inside
the stick's folder, never through a link, and never over a file it did not write itself."""

from __future__ import annotations

import importlib.util
import json
import os
import pkgutil
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import install
from .fetch import FetchError, download, free_bytes, human_size, size_of, two_sizes
from .lock import LOCK_FILE
from .platforms import TARGETS
from .readme import README_FIRST_LINE, room_readme
from .resolve import (
    Wheel,
    mirror_options,
    project_requirements,
    read_environment_file,
    resolve,
    with_extras,
)

MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
# MNIST's four files, gzipped and unpacked, as torchvision downloads them: the room a stick
# needs for MNIST before the project has it
MNIST_BYTES = 66_544_770
TEXT_BYTES = 1 << 20  # room for the requirement files, the manifest, the README and install.py
PART = ".part"  # a file being written; renamed once whole
HASHED_HEADER = "python install.py"  # in the first line of each requirements file make writes
INSTALLER_DOC = "Install one environment from a workshop stick"  # install.py's first words


class BundleError(Exception):
    """The stick cannot be made as asked: one sentence that says what to do."""


@dataclass
class Part:
    stack: str
    target: str
    python: str
    wheels: list[Wheel] = field(default_factory=list)
    gpu_targets: list[str] = field(default_factory=list)  # the GPUs its kernels are for

    @property
    def name(self) -> str:
        return install.part_name(self.stack, self.target, self.python)


@dataclass
class Plan:
    parts: list[Part]
    sizes: dict[str, int]  # wheel file name -> bytes, from the index
    missing: list[Wheel]  # not on the stick yet (or damaged there)

    def bytes_to_download(self) -> int:
        return sum(self.sizes[wheel.filename] for wheel in self.missing)


def plan(
    project: Path,
    stick: Path,
    wanted: list[tuple[str, list[str]]],
    python: str,
    indexes: dict[str, str],
    extras: dict[str, dict[str, list[str]]],
    gpu_targets: dict[str, list[str]] | None = None,
    say=print,
) -> Plan:
    """What the stick needs for ``wanted`` ([(stack, [platform, ...])]) and what it lacks;
    ``extras`` and ``gpu_targets`` per stack ({'rocm-windows': {'torch': ['device-gfx1100']}})."""
    needs = project_requirements(project / "pyproject.toml")
    parts = []
    for stack, targets in wanted:
        environment_file = project / "environments" / f"{stack}.txt"
        if not environment_file.is_file():
            raise BundleError(f"{environment_file} is missing: name a stack of environments/.")
        read = read_environment_file(environment_file)
        lines = [with_extras(line, extras.get(stack, {})) for line in read.requirements] + needs
        # a mirror of the stack's index, in place of the file's own
        options = mirror_options(indexes[stack]) if stack in indexes else read.index_options
        for target in targets:
            say(f"Resolving {stack} for {TARGETS[target].label}, Python {python}...")
            part = Part(stack, target, python, gpu_targets=(gpu_targets or {}).get(stack, []))
            part.wheels = resolve(lines, TARGETS[target], python, options)
            parts.append(part)
    unique = {wheel.filename: wheel for part in parts for wheel in part.wheels}
    for name in unique:
        _check_file_name(name)
    sizes = {name: size_of(wheel.url) for name, wheel in unique.items()}
    files = _known(stick)["files"]
    missing = [
        wheel
        for name, wheel in sorted(unique.items())
        if not _on_stick(stick / "wheels" / name, wheel, sizes[name], files.get(f"wheels/{name}"))
    ]
    return Plan(parts, sizes, missing)


def _check_file_name(name: str) -> None:
    """A wheel's name from the index's URL becomes a file in wheels/: a plain name only."""
    if not name.endswith(".whl") or "/" in name or "\\" in name or name.startswith("."):
        raise BundleError(f"The index names a wheel {name!r}, which is no wheel's file name: "
                          "check the index (or --index) of that stack.")  # fmt: skip


def _on_stick(path: Path, wheel: Wheel, size: int, entry: dict | None) -> bool:
    """Whether ``wheel`` is whole on the stick: as the manifest lists it (its size, since hashing
    gigabytes on every run is too slow: install.py and ``check`` hash), or, where the manifest
    does not list it (a run that was stopped, a damaged manifest), by its SHA-256."""
    if path.is_symlink() or not path.is_file():
        return False
    actual = path.stat().st_size
    if entry is not None and wheel.sha256 and entry["sha256"] == wheel.sha256:
        return actual == entry["size"]
    return (
        bool(wheel.sha256)
        and actual == (size or actual)
        and install.sha256_of(path) == wheel.sha256
    )


def _empty_manifest() -> dict:
    return {"files": {}, "parts": {}}


def _known(stick: Path) -> dict:
    """The stick's manifest so far; an unreadable or malformed one counts as none (its files are
    then checked by their hashes)."""
    try:
        return install.read_manifest(stick)  # its shape checked: StickProblem for any other
    except (install.StickProblem, OSError, RecursionError, MemoryError):  # in case it ever lets
        return _empty_manifest()  # one through: make goes on with a new manifest


# ------------------------------------------------------------------ writing only what is make's


def writable(stick: Path, relative: str) -> Path:
    """``stick / relative``, once sure that writing there stays inside the stick: no folder on
    the way, nor the file itself, is a link (a link could lead anywhere on the machine)."""
    path = stick
    for name in Path(relative).parts:
        path = path / name
        if path.is_symlink() or _is_junction(path):
            raise BundleError(
                f"{path} is a link: make writes only into {stick} itself, never through a link, "
                "so remove the link, then run this again."
            )
        if path != stick / relative and path.exists() and not path.is_dir():
            raise BundleError(
                f"{path} is a file where the stick keeps a folder: move it out of {stick}, then "
                "run this again."
            )
    return path


def _is_junction(path: Path) -> bool:
    """A Windows directory junction, which is_symlink does not tell (Python 3.12 has
    os.path.isjunction)."""
    isjunction = getattr(os.path, "isjunction", None)
    return bool(isjunction and isjunction(path))


def _refuse_if_not_ours(path: Path, stick: Path) -> None:
    if path.exists() or path.is_symlink():
        raise BundleError(
            f"{path} is already there and make did not write it: move it out of {stick} (or "
            "name an empty folder as the stick), then run this again."
        )


def _written_by_make(path: Path, first_words: str) -> bool:
    """Whether a text file make writes on every run is make's own: it starts as make writes it."""
    try:
        with open(path, encoding="utf-8") as text:
            return first_words in text.read(4096)
    except (OSError, ValueError):
        return False


def _another_programs_json(path: Path) -> bool:
    """A manifest.json that is JSON of another shape than a stick's (no files, parts nor
    format): another program's, which make leaves alone. A damaged stick manifest is make's."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(found, dict) and not {"files", "parts", "format"} & set(found)


def check_what_make_writes(
    stick: Path, bundle: Plan, known: dict, mnist: dict[str, Path] | None = None
) -> None:
    """Refuse (one sentence) when a file that make would write is a link, or is there and was
    not written by make: the stick folder may hold the instructor's own files."""
    listed = known["files"]
    for wheel in bundle.missing:
        relative = f"wheels/{wheel.filename}"
        path = writable(stick, relative)
        writable(stick, relative + PART)
        if relative not in listed:  # the manifest's: a damaged copy make downloads again
            _refuse_if_not_ours(path, stick)
    for part in bundle.parts:
        path = writable(stick, f"requirements/{part.name}.txt")
        if path.exists() and not _written_by_make(path, HASHED_HEADER):
            _refuse_if_not_ours(path, stick)
    for relative, source in (mnist or {}).items():
        path = writable(stick, relative)
        writable(stick, relative + PART)
        same = path.is_file() and path.stat().st_size == source.stat().st_size
        if relative not in listed and not same:
            _refuse_if_not_ours(path, stick)
    for relative, first_words in (("README.txt", README_FIRST_LINE), ("install.py", INSTALLER_DOC)):
        path = writable(stick, relative)
        writable(stick, relative + PART)
        if path.exists() and not _written_by_make(path, first_words):
            _refuse_if_not_ours(path, stick)
    if _another_programs_json(writable(stick, install.MANIFEST)):
        _refuse_if_not_ours(stick / install.MANIFEST, stick)
    writable(stick, install.MANIFEST + PART)
    writable(stick, LOCK_FILE)


def _write_bytes(stick: Path, relative: str, data: bytes) -> None:
    """A whole file or none: written under another name, then renamed."""
    path = writable(stick, relative)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = writable(stick, relative + PART)
    try:
        part.write_bytes(data)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _write_manifest(stick: Path, manifest: dict) -> None:
    _write_bytes(stick, install.MANIFEST, json.dumps(manifest, indent=1).encode("utf-8"))


# ------------------------------------------------------------------ make


def make(
    project: Path,
    stick: Path,
    bundle: Plan,
    package: str = "",
    say=print,
    python_ranges: dict[str, list[str]] | None = None,
) -> dict:
    """Download what ``bundle`` lacks, then write the requirement files, MNIST and the manifest.
    Each wheel goes into the manifest as soon as it is whole: a run that is stopped keeps them.
    ``python_ranges`` ({stack: [lowest, highest]}) go into the manifest, so that install.py
    advises a remake only for a Python the stack runs on."""
    known = _known(stick)
    check_what_make_writes(stick, bundle, known, mnist_sources(project / "data"))
    needed = bundle.bytes_to_download() + mnist_bytes(project / "data", stick) + TEXT_BYTES
    free = free_bytes(stick)
    if needed > free:
        has, needs = two_sizes(free, needed)
        raise BundleError(
            f"{stick} has {has} free but the bundle needs {needs} more: use a bigger stick or "
            "name fewer stacks and platforms."
        )
    manifest = {
        "format": 1,
        "project": project.name,
        "package": package,
        "files": known["files"],
        "parts": known["parts"],
    }
    started = time.monotonic()
    _download_missing(stick, bundle, manifest, say)
    files = manifest["files"]
    for wheel in {w.filename: w for part in bundle.parts for w in part.wheels}.values():
        path = stick / "wheels" / wheel.filename
        files[f"wheels/{wheel.filename}"] = {
            "size": path.stat().st_size,
            "sha256": wheel.sha256 or install.sha256_of(path),
        }
    for part in bundle.parts:
        requirements = f"requirements/{part.name}.txt"
        _write_bytes(stick, requirements, _hashed(part, files).encode("utf-8"))
        manifest["parts"][part.name] = {
            "stack": part.stack,
            "platform": part.target,
            "python": part.python,
            "requirements": requirements,
            "wheels": sorted(wheel.filename for wheel in part.wheels),
            "bytes": sum(files[f"wheels/{w.filename}"]["size"] for w in part.wheels),
            "gpu_targets": sorted(part.gpu_targets),
        }
        if python_ranges and part.stack in python_ranges:
            manifest["parts"][part.name]["python_range"] = list(python_ranges[part.stack])
    files.update(copy_mnist(project / "data", stick, say))
    # read as package data: from the folder, or from inside instructor.pyz
    _write_bytes(stick, "install.py", pkgutil.get_data(__package__, "install.py"))
    _write_bytes(stick, "README.txt", room_readme(manifest).encode("utf-8"))
    _write_manifest(stick, manifest)
    say(
        f"Downloaded {len(bundle.missing)} files ({human_size(bundle.bytes_to_download())}) in "
        f"{time.monotonic() - started:.0f} s."
    )
    return manifest


def _download_missing(stick: Path, bundle: Plan, manifest: dict, say) -> None:
    """Each missing wheel, recorded in the manifest once whole, so that a run stopped halfway
    (Ctrl+C, a lost connection) goes on where it stopped."""
    for number, wheel in enumerate(bundle.missing, 1):
        say(f"[{number}/{len(bundle.missing)}] {wheel.filename}")
        relative = f"wheels/{wheel.filename}"
        path = writable(stick, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            download(wheel, path, bundle.sizes[wheel.filename])
        except FetchError as error:
            raise BundleError(str(error)) from None
        manifest["files"][relative] = {
            "size": path.stat().st_size,
            "sha256": wheel.sha256 or install.sha256_of(path),
        }
        _write_manifest(stick, manifest)


def _hashed(part: Part, files: dict) -> str:
    lines = [
        f"# {part.stack} for {TARGETS[part.target].label}, Python {part.python}: "
        f"{HASHED_HEADER} {part.stack} (in the project folder) checks the stick, then installs "
        "these with pip --no-index --require-hashes."
    ]
    for wheel in part.wheels:
        digest = files[f"wheels/{wheel.filename}"]["sha256"]
        lines.append(f"{wheel.name}=={wheel.version} --hash=sha256:{digest}  # {wheel.filename}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ MNIST


def mnist_sources(data: Path) -> dict[str, Path]:
    """{path on the stick: file in the project's data folder} for the MNIST files there."""
    raw = data / "MNIST" / "raw"
    found = {}
    for name in MNIST_FILES:
        for file_name in (f"{name}.gz", name):  # the .gz files and torchvision's unpacked ones
            if (raw / file_name).is_file():
                found[f"data/MNIST/raw/{file_name}"] = raw / file_name
    return found


def mnist_bytes(data: Path, stick: Path) -> int:
    """The room MNIST still needs on the stick: the project's files that the stick lacks, or all
    of MNIST when torchvision will download it first."""
    sources = mnist_sources(data)
    if not sources:
        return MNIST_BYTES if importlib.util.find_spec("torchvision") else 0
    return sum(
        source.stat().st_size
        for relative, source in sources.items()
        if not (stick / relative).is_file()
        or (stick / relative).stat().st_size != source.stat().st_size
    )


def copy_mnist(data: Path, stick: Path, say=print) -> dict:
    """MNIST's files from the project's data folder (downloaded there first with torchvision when
    it is installed) into data/MNIST/raw on the stick: ``train --data-dir E:\\data`` reads them."""
    if not mnist_sources(data):
        try:
            from torchvision.datasets import MNIST

            say("Downloading MNIST with torchvision...")
            MNIST(str(data), train=True, download=True)
        except Exception as error:  # no torchvision, or no network: the stick still installs
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            say(f"MNIST left out ({reason}): the room trains with --dataset synthetic.")
            return {}
    files = {}
    for relative, source in mnist_sources(data).items():
        target = writable(stick, relative)
        if not target.is_file() or target.stat().st_size != source.stat().st_size:
            target.parent.mkdir(parents=True, exist_ok=True)
            part = writable(stick, relative + PART)
            try:
                shutil.copyfile(source, part)
                os.replace(part, target)
            except BaseException:
                part.unlink(missing_ok=True)
                raise
        files[relative] = {"size": source.stat().st_size, "sha256": install.sha256_of(target)}
    return files
