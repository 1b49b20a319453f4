"""Writing a workshop stick: the wheels of every environment asked for, a hashed requirements file
per environment, MNIST, the manifest, install.py and a README for the room. A second run
downloads only what is missing or damaged."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import install
from .fetch import FetchError, download, free_bytes, size_of
from .platforms import TARGETS
from .readme import room_readme
from .resolve import Wheel, project_requirements, read_environment_file, resolve, with_extras

MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)


class BundleError(Exception):
    """The stick cannot be made as asked: one sentence that says what to do."""


@dataclass
class Part:
    stack: str
    target: str
    python: str
    wheels: list[Wheel] = field(default_factory=list)

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
    extras: dict[str, list[str]],
    say=print,
) -> Plan:
    """What the stick needs for ``wanted`` ([(stack, [platform, ...])]) and what it lacks."""
    needs = project_requirements(project / "pyproject.toml")
    parts = []
    for stack, targets in wanted:
        environment_file = project / "environments" / f"{stack}.txt"
        if not environment_file.is_file():
            raise BundleError(f"{environment_file} is missing: name a stack of environments/.")
        read = read_environment_file(environment_file)
        lines = [with_extras(line, extras) for line in read.requirements] + needs
        options = read.index_options
        if stack in indexes:  # a mirror of the stack's index, in place of the file's own
            options = [
                "--index-url",
                indexes[stack],
                "--extra-index-url",
                "https://pypi.org/simple",
            ]
        for target in targets:
            say(f"Resolving {stack} for {TARGETS[target].label}, Python {python}...")
            part = Part(stack, target, python)
            part.wheels = resolve(lines, TARGETS[target], python, options)
            parts.append(part)
    unique = {wheel.filename: wheel for part in parts for wheel in part.wheels}
    sizes = {name: size_of(wheel.url) for name, wheel in unique.items()}
    known = _known_files(stick)
    missing = [
        wheel
        for name, wheel in sorted(unique.items())
        if known.get(f"wheels/{name}", {}).get("sha256") != wheel.sha256
        or not _whole(stick / "wheels" / name, known.get(f"wheels/{name}", {}))
    ]
    return Plan(parts, sizes, missing)


def _known(stick: Path) -> dict:
    """The stick's manifest so far; an unreadable one counts as none (its files are checked)."""
    try:
        return install.read_manifest(stick)
    except install.StickProblem:
        return {"files": {}, "parts": {}}


def _known_files(stick: Path) -> dict:
    return _known(stick)["files"]


def _whole(path: Path, entry: dict) -> bool:
    """A file the manifest lists is kept when its size still matches (the full hash check is
    install.py's and ``check``'s job: hashing gigabytes twice per run is too slow)."""
    return path.is_file() and path.stat().st_size == entry.get("size")


def make(project: Path, stick: Path, bundle: Plan, package: str = "", say=print) -> dict:
    """Download what ``bundle`` lacks, then write the requirement files, MNIST and the manifest."""
    needed = bundle.bytes_to_download()
    free = free_bytes(stick)
    if needed > free:
        raise BundleError(
            f"{stick} has {free / 1e9:.1f} GB free but the bundle needs {needed / 1e9:.1f} GB "
            f"more: use a bigger stick or name fewer stacks and platforms."
        )
    (stick / "wheels").mkdir(parents=True, exist_ok=True)
    (stick / "requirements").mkdir(exist_ok=True)
    started = time.monotonic()
    for number, wheel in enumerate(bundle.missing, 1):
        say(f"[{number}/{len(bundle.missing)}] {wheel.filename}")
        try:
            download(wheel, stick / "wheels" / wheel.filename, bundle.sizes[wheel.filename])
        except FetchError as error:
            raise BundleError(str(error)) from None
    files = _known_files(stick)
    for wheel in {w.filename: w for part in bundle.parts for w in part.wheels}.values():
        path = stick / "wheels" / wheel.filename
        files[f"wheels/{wheel.filename}"] = {
            "size": path.stat().st_size,
            "sha256": wheel.sha256 or install.sha256_of(path),
        }
    parts = _known(stick)["parts"]
    for part in bundle.parts:
        requirements = f"requirements/{part.name}.txt"
        (stick / requirements).write_text(_hashed(part, files), encoding="utf-8")
        parts[part.name] = {
            "stack": part.stack,
            "platform": part.target,
            "python": part.python,
            "requirements": requirements,
            "wheels": sorted(wheel.filename for wheel in part.wheels),
            "bytes": sum(files[f"wheels/{w.filename}"]["size"] for w in part.wheels),
        }
    files.update(copy_mnist(project / "data", stick, say))
    shutil.copyfile(Path(install.__file__), stick / "install.py")
    manifest = {
        "format": 1,
        "project": project.name,
        "package": package,
        "files": files,
        "parts": parts,
    }
    (stick / "README.txt").write_text(room_readme(manifest), encoding="utf-8")
    (stick / install.MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    say(
        f"Downloaded {len(bundle.missing)} files ({needed / 1e9:.2f} GB) in "
        f"{time.monotonic() - started:.0f} s."
    )
    return manifest


def _hashed(part: Part, files: dict) -> str:
    lines = [
        f"# {part.stack} for {TARGETS[part.target].label}, Python {part.python}: "
        f"python install.py {part.stack} (in the project folder) checks the stick, then installs "
        "these with pip --no-index --require-hashes."
    ]
    for wheel in part.wheels:
        digest = files[f"wheels/{wheel.filename}"]["sha256"]
        lines.append(f"{wheel.name}=={wheel.version} --hash=sha256:{digest}  # {wheel.filename}")
    return "\n".join(lines) + "\n"


def copy_mnist(data: Path, stick: Path, say=print) -> dict:
    """MNIST's files from the project's data folder (downloaded there first with torchvision when
    it is installed) into data/MNIST/raw on the stick: ``train --data-dir E:\\data`` reads them."""
    raw = data / "MNIST" / "raw"
    if not any((raw / f"{name}.gz").is_file() for name in MNIST_FILES):
        try:
            from torchvision.datasets import MNIST

            say("Downloading MNIST with torchvision...")
            MNIST(str(data), train=True, download=True)
        except Exception as error:  # no torchvision, or no network: the stick still installs
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            say(f"MNIST left out ({reason}): the room trains with --dataset synthetic.")
            return {}
    target = stick / "data" / "MNIST" / "raw"
    target.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in MNIST_FILES:
        for file_name in (f"{name}.gz", name):  # the .gz files and torchvision's unpacked ones
            source = raw / file_name
            if not source.is_file():
                continue
            if not (target / file_name).is_file() or (
                (target / file_name).stat().st_size != source.stat().st_size
            ):
                shutil.copyfile(source, target / file_name)
            files[f"data/MNIST/raw/{file_name}"] = {
                "size": source.stat().st_size,
                "sha256": install.sha256_of(target / file_name),
            }
    return files
