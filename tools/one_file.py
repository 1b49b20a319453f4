"""Build the tools a generated project carries as one file each: PEP 441 zip applications,
as pip ships itself in pip.pyz and virtualenv in virtualenv.pyz.

    python tools/one_file.py            build every tool into the template's project folder
    python tools/one_file.py --check    exit 1 when a committed file differs from its source

Each tool is developed and tested here as a package of its own (standard library only) and
reaches a project as one file, `python doctor.pyz` on any CPython 3.8 or later; updating a
project's tool is replacing that file. The build is reproducible (sorted entries, a fixed
date, no bytecode), so the committed file can be compared with a fresh build in a test.
"""

from __future__ import annotations

import argparse
import io
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT_FOLDER = next(ROOT.glob("{*cookiecutter.project_slug*}"))
FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can hold
OLDEST_PYTHON = (3, 8)

# The file's own __main__.py: it must parse and run on any Python 3 (3.6's and 3.7's users
# get one sentence, not a traceback from the package's newer syntax), so nothing newer here.
MAIN = """\
import sys

if sys.version_info < {oldest}:
    sys.stderr.write(
        "{file} needs Python {oldest_text} or later; this is Python %d.%d. "
        "Run it with a newer Python (py -3.11 {file} on Windows, python3.11 {file} elsewhere).\\n"
        % sys.version_info[:2]
    )
    sys.exit(1)

from {module} import {function}  # noqa: E402 (after the version check)

sys.exit({function}())
"""


@dataclass(frozen=True)
class Tool:
    file: str  # the file's name in the generated project's root folder
    package: str  # the package's folder at the top of this repository
    entry: str  # "module:function" run by `python <file>`; its return value is the exit code


TOOLS = (
    Tool("doctor.pyz", "gpu_doctor", "gpu_doctor.first_look:main"),
    Tool("instructor.pyz", "instructor", "instructor.__main__:main"),
)


def archive_bytes(tool: Tool) -> bytes:
    """The zip application of ``tool``, the same bytes for the same sources."""
    package = ROOT / tool.package
    module, function = tool.entry.split(":")
    main = MAIN.format(
        oldest=OLDEST_PYTHON,
        oldest_text=".".join(map(str, OLDEST_PYTHON)),
        file=tool.file,
        module=module,
        function=function,
    )
    sources = sorted(
        path
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )
    buffer = io.BytesIO()
    buffer.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        entries = [("__main__.py", main.encode("utf-8"))]
        entries += [(path.relative_to(ROOT).as_posix(), path.read_bytes()) for path in sources]
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def stale_files() -> list[str]:
    """The committed tool files that differ from a build of their sources (or are missing)."""
    stale = []
    for tool in TOOLS:
        target = PROJECT_FOLDER / tool.file
        if not (ROOT / tool.package).is_dir():
            continue
        if not target.exists() or target.read_bytes() != archive_bytes(tool):
            stale.append(tool.file)
    return stale


def build() -> list[Path]:
    """Write every tool whose package is here; returns the files written."""
    written = []
    for tool in TOOLS:
        if not (ROOT / tool.package).is_dir():
            continue
        target = PROJECT_FOLDER / tool.file
        target.write_bytes(archive_bytes(tool))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    arguments = parser.parse_args(argv)
    if arguments.check:
        stale = stale_files()
        for name in stale:
            print(f"{name} differs from its source: run python tools/one_file.py")
        return 1 if stale else 0
    for path in build():
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
