"""Stand-in wheels in a package index of their own: packages named like PyTorch's (torch,
torchvision, ...) with the exact version and local tag of a stack ("2.14.1+cu130"), small and
empty, for tests that resolve or install a stack whose real index cannot be reached.

    wheels = [Standin("torch", "2.14.1+cu130"), Standin("torchvision", "0.29.1+cu130",
              requires=("torch==2.14.1",))]
    root = write_index(tmp / "cu130", wheels)          # PEP 503 simple index: root/<name>/
    flat = write_index(tmp / "flat", wheels, flat=True) # every wheel in one folder (find-links)
    with serve(tmp) as url:                             # http://127.0.0.1:<port>/ over tmp
        ...                                             # f"{url}cu130/" is the index URL

An installed stand-in imports: its module has ``__version__`` and ``STANDIN = True``, nothing
else, so a test can tell from the module which index a package came from. Standard library
only.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import html
import http.server
import io
import json
import re
import shutil
import tarfile
import threading
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote


@dataclass(frozen=True)
class Standin:
    """One wheel: ``name`` and ``version`` as the real one ("torch", "2.14.1+cu130");
    ``tag``: its wheel tag (python-abi-platform); ``requires``: Requires-Dist lines;
    ``module``: the import name (the name with dashes as underscores by default); ``extras``:
    the pip extras it declares (``torch[device-gfx1151]`` resolves against it)."""

    name: str
    version: str
    tag: str = "py3-none-any"
    requires: tuple[str, ...] = ()
    module: str | None = None
    extras: tuple[str, ...] = ()  # Provides-Extra names ("device-gfx1151"), each empty
    sdist: bool = False  # a source distribution (.tar.gz, setuptools) in place of a wheel

    @property
    def normalized(self) -> str:
        """The PEP 503 name: the index folder."""
        return re.sub(r"[-_.]+", "-", self.name).lower()

    @property
    def filename(self) -> str:
        distribution = re.sub(r"[-_.]+", "_", self.name).lower()
        if self.sdist:
            return f"{distribution}-{self.version}.tar.gz"
        return f"{distribution}-{self.version}-{self.tag}.whl"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_sdist(folder: Path, package: Standin) -> Path:
    """Write ``package`` into ``folder`` as a source distribution whose metadata is static
    (PKG-INFO 2.2 and pyproject.toml's [project]), built by setuptools as the real ``rocm``
    is; returns the .tar.gz file."""
    folder.mkdir(parents=True, exist_ok=True)
    module = package.module or package.name.replace("-", "_")
    top = package.filename.removesuffix(".tar.gz")
    requires = "".join(f"    {json.dumps(line)},\n" for line in package.requires)
    extras = "".join(f"{json.dumps(extra)} = []\n" for extra in package.extras)
    files = {
        "PKG-INFO": "".join(
            [
                f"Metadata-Version: 2.2\nName: {package.name}\nVersion: {package.version}\n",
                *(f"Requires-Dist: {line}\n" for line in package.requires),
                *(f"Provides-Extra: {extra}\n" for extra in package.extras),
            ]
        ),
        "pyproject.toml": (
            '[build-system]\nrequires = ["setuptools>=70.2.0"]\n'
            'build-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{package.name}"\nversion = "{package.version}"\n'
            f"dependencies = [\n{requires}]\n\n[project.optional-dependencies]\n{extras}"
        ),
        f"{module}/__init__.py": f'__version__ = "{package.version}"\nSTANDIN = True\n',
    }
    path = folder / package.filename
    # gzip's own header time fixed too: the same stand-in is the same file, byte for byte.
    with (
        path.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), 1767225600, 0o644  # 2026-01-01
            archive.addfile(info, io.BytesIO(data))
    return path


def build_wheel(folder: Path, wheel: Standin) -> Path:
    """Write ``wheel`` into ``folder``; returns the .whl file (the .tar.gz of an sdist)."""
    if wheel.sdist:
        return build_sdist(folder, wheel)
    folder.mkdir(parents=True, exist_ok=True)
    module = wheel.module or wheel.name.replace("-", "_")
    dist_info = f"{wheel.filename.split('-')[0]}-{wheel.version}.dist-info"
    metadata = "".join(
        [
            "Metadata-Version: 2.1\n",
            f"Name: {wheel.name}\n",
            f"Version: {wheel.version}\n",
            "Summary: A stand-in for tests: the name and version of the real package, no code\n",
            *(f"Requires-Dist: {line}\n" for line in wheel.requires),
            *(f"Provides-Extra: {extra}\n" for extra in wheel.extras),
        ]
    )
    files = {
        f"{module}/__init__.py": f'__version__ = "{wheel.version}"\nSTANDIN = True\n',
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: standin_index\nRoot-Is-Purelib: true\n"
            f"Tag: {wheel.tag}\n"
        ),
    }
    record = [_record_line(path, text.encode()) for path, text in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    path = folder / wheel.filename
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            # A fixed date: the same stand-in is the same file, byte for byte, every run.
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), text)
    return path


def _sha256(path: Path) -> str:
    with path.open("rb") as stream:  # a real torch wheel is 0.8 GB: read it in chunks
        return hashlib.file_digest(stream, "sha256").hexdigest()


def place_wheel(folder: Path, wheel: Path) -> Path:
    """A wheel file that exists already, linked into ``folder`` (copied where links fail)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / wheel.name
    if not target.exists():
        try:
            target.hardlink_to(wheel)
        except OSError:
            shutil.copy2(wheel, target)
    return target


def write_index(root: Path, wheels: Iterable[Standin | Path], flat: bool = False) -> Path:
    """Build ``wheels`` into ``root``: a PEP 503 simple index (``root/index.html`` and
    ``root/<name>/index.html`` next to the wheel files) or, with ``flat``, all wheels in
    ``root`` itself (pip's --find-links, uv's ``format = "flat"``). A wheel may also be a real
    wheel file (a Path), served as it is. Returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    by_name: dict[str, list[Path]] = {}
    for wheel in wheels:
        if isinstance(wheel, Path):
            normalized = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
            folder = root if flat else root / normalized
            by_name.setdefault(normalized, []).append(place_wheel(folder, wheel))
            continue
        folder = root if flat else root / wheel.normalized
        by_name.setdefault(wheel.normalized, []).append(build_wheel(folder, wheel))
    if flat:
        return root
    for name, paths in by_name.items():
        links = "".join(
            f'<a href="{quote(p.name)}#sha256={_sha256(p)}">{html.escape(p.name)}</a><br>\n'
            for p in sorted(paths)
        )
        (root / name / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    names = "".join(f'<a href="{n}/">{n}</a><br>\n' for n in sorted(by_name))
    (root / "index.html").write_text(f"<html><body>\n{names}</body></html>\n")
    return root


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on 127.0.0.1 while the block runs; yields the base URL
    ("http://127.0.0.1:<port>/"), so ``write_index(folder / "cu130", ...)`` is at
    ``<url>cu130/``."""

    def handler(*args, **kwargs):
        return _QuietHandler(*args, directory=str(folder), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
