"""A stand-in for PyTorch's CPU index where the directml stack takes torch on Linux x86_64
(WSL2): ``torch==2.4.1+cpu`` and ``torchvision==0.19.1+cpu``, which only that index serves and
this machine cannot reach.

The stand-ins here are PyPI's real torch 2.4.1 and torchvision 0.19.1 for this Python on Linux
x86_64, relabeled ``+cpu`` (the dist-info folder, METADATA's Version and RECORD; nothing else
changes), so the tests that train, probe DirectML's import failure or run the project's suite
on the directml stack still run real PyTorch, installed through the same ``+cpu`` pins and
index options a WSL2 laptop uses. PyPI's build still pulls its CUDA libraries: the real
``+cpu`` build does not, which ``tests/test_wsl_directml.py`` checks with stand-ins shaped like
it. For other Pythons the index gets small stand-ins of the same version with the same
requirements (uv locks every Python of the group's range). Cached in
TEMPLATE_TEST_CACHE/cpu-build-mirror.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from filelock import FileLock

PYPI_BUILDS = {"torch": "2.4.1", "torchvision": "0.19.1"}
LABEL = "+cpu"


def cache_root() -> Path:
    default = Path.home() / ".cache" / "lenet-directml-template"
    return Path(os.environ.get("TEMPLATE_TEST_CACHE", default)) / "cpu-build-mirror"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def relabel(wheel: Path, folder: Path) -> Path:
    """``wheel`` (name-version-tags.whl) rewritten as version+cpu into ``folder``."""
    name, version, *tags = wheel.name[: -len(".whl")].split("-")
    old_info, new_info = f"{name}-{version}.dist-info/", f"{name}-{version}{LABEL}.dist-info/"
    target = folder / ("-".join([name, version + LABEL, *tags]) + ".whl")
    partial = target.with_suffix(".partial")
    with (
        zipfile.ZipFile(wheel) as source,
        zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out,
    ):
        record = []
        for info in source.infolist():
            path = info.filename.replace(old_info, new_info, 1)
            if path == f"{new_info}RECORD":
                continue
            if path == f"{new_info}METADATA":
                text = source.read(info).decode("utf-8")
                data = text.replace(f"\nVersion: {version}\n", f"\nVersion: {version}{LABEL}\n", 1)
                out.writestr(path, data)
                record.append(_record_line(path, data.encode("utf-8")))
                continue
            with source.open(info) as reader, out.open(path, "w", force_zip64=True) as writer:
                digest, size = hashlib.sha256(), 0
                while chunk := reader.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
                    writer.write(chunk)
            encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={encoded},{size}")
        record.append(f"{new_info}RECORD,,")
        out.writestr(f"{new_info}RECORD", "\n".join(record) + "\n")
    partial.replace(target)
    return target


def relabeled_wheels() -> list[Path]:
    """This Python's PyPI torch and torchvision for Linux x86_64, relabeled +cpu (cached)."""
    folder = cache_root() / f"cp{sys.version_info[0]}{sys.version_info[1]}"
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder.with_suffix(".lock")):  # dev.py's two lanes may both ask at once
        return _relabeled_wheels(folder)


def _relabeled_wheels(folder: Path) -> list[Path]:
    done = sorted(folder.glob(f"*{LABEL}-*.whl"))
    if len(done) == len(PYPI_BUILDS):
        return done
    downloads = folder / "pypi"
    pins = [f"{name}=={version}" for name, version in PYPI_BUILDS.items()]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
         ":all:", "--platform", "manylinux1_x86_64", "--platform", "manylinux2014_x86_64",
         "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}",
         "--dest", str(downloads), *pins],
        check=True, timeout=1800,
    )  # fmt: skip
    wheels = [relabel(wheel, folder) for wheel in sorted(downloads.glob("*.whl"))]
    shutil.rmtree(downloads)
    return wheels


def requirement_lines(wheel: Path) -> tuple[str, ...]:
    """The Requires-Dist lines of ``wheel``'s METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode("utf-8")
    return tuple(
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    )
