"""uv.exe (the Windows build, from uv's win_amd64 wheel on PyPI) for the Windows tier under Wine.

    python tools/uv_wine.py            prepare it and print where it is

Wine 8 (Debian 12) cannot start uv.exe: Rust's standard library takes its random numbers from
ProcessPrng in bcryptprimitives.dll, a DLL Wine 8 does not have (Wine 9 added it). The loader
then prints `Library bcryptprimitives.dll (which is needed by ...uv.exe) not found` and the
process exits 53. `plain` is the unchanged uv.exe; `shimmed` is the same uv.exe in a folder
with a one-function bcryptprimitives.dll (ProcessPrng on RtlGenRandom, built with MinGW-w64),
which Windows' loader finds next to the program. The shim stands in for Wine's gap only: a
real Windows has the DLL. All cached in $TEMPLATE_TEST_CACHE/windows/uv-<version>-<key>.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import system_packages
import wine_python

ROOT = Path(__file__).resolve().parents[1]
MINGW_GCC = system_packages.MINGW_GCC
SHIM_SOURCE = r"""
#include <windows.h>
#include <ntsecapi.h>

/* Rust's std (1.78 and later) asks ProcessPrng for random bytes; RtlGenRandom gives them. */
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size)
{
    while (size) {
        ULONG chunk = size > 0x10000000 ? 0x10000000 : (ULONG)size;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
"""
SHIM_EXPORTS = "LIBRARY bcryptprimitives\nEXPORTS\n    ProcessPrng\n"


class UvSetupError(RuntimeError):
    """uv.exe could not be prepared; the message says why."""


@dataclass(frozen=True)
class WindowsUv:
    version: str
    plain: Path  # uv.exe as the wheel ships it
    shimmed: Path  # the same uv.exe next to the ProcessPrng shim


def pinned_version() -> str:
    """The uv of requirements-dev.txt: the tier runs the same release on both systems."""
    for line in (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("uv=="):
            return line.split("==", 1)[1].strip()
    raise UvSetupError("requirements-dev.txt pins no uv (a line uv==<version>)")


def _extract_uv(wheel: Path, folder: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/scripts/uv.exe"))
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "uv.exe"
        target.write_bytes(archive.read(name))
    return target


def _build_shim(folder: Path) -> Path:
    try:
        system_packages.ensure("mingw")
    except system_packages.SystemPackagesError as error:
        raise UvSetupError(str(error)) from error
    (folder / "shim.c").write_text(SHIM_SOURCE, encoding="utf-8")
    (folder / "shim.def").write_text(SHIM_EXPORTS, encoding="utf-8")
    dll = folder / "bcryptprimitives.dll"
    subprocess.run(
        [MINGW_GCC, "-shared", "-O2", "-o", str(dll), "shim.c", "shim.def", "-ladvapi32"],
        cwd=folder, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return dll


def setup(version: str | None = None) -> WindowsUv:
    """uv.exe of ``version`` (requirements-dev.txt's by default), plain and shimmed, cached."""
    version = version or pinned_version()
    key = hashlib.sha256((version + SHIM_SOURCE + SHIM_EXPORTS).encode()).hexdigest()[:12]
    root = wine_python.cache_root() / f"uv-{version}-{key}"
    plain, shimmed = root / "plain" / "uv.exe", root / "shimmed" / "uv.exe"
    if plain.exists() and shimmed.exists() and (shimmed.parent / "bcryptprimitives.dll").exists():
        return WindowsUv(version, plain, shimmed)
    downloads = root / "wheel"
    result = wine_python.pip(
        "download", f"uv=={version}", "--only-binary=:all:", "--platform", "win_amd64",
        "--no-deps", "-d", str(downloads),
    )  # fmt: skip
    if result.returncode != 0:
        raise UvSetupError(f"pip could not download uv {version} for Windows: {result.stderr}")
    wheel = next(downloads.glob("uv-*.whl"))
    _extract_uv(wheel, plain.parent)
    _extract_uv(wheel, shimmed.parent)
    _build_shim(shimmed.parent)
    return WindowsUv(version, plain, shimmed)


def main() -> int:
    try:
        uv = setup()
    except (UvSetupError, wine_python.WineSetupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"uv {uv.version} for Windows: {uv.plain} (as shipped), {uv.shimmed} (with the shim)")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
