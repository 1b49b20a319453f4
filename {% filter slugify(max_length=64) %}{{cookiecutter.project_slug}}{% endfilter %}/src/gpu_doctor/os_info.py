"""Which operating system runs this Python: Windows build, WSL 1 or 2, Linux, macOS.

Standard library only. ``detect()`` takes every input as an argument so tests can describe any
machine: a Windows build, a WSL2 kernel string, a file tree with /dev/dxg in a temporary folder.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping

from .bounded import run_command
from .safe_text import clean_name

WSL_DXG = "dev/dxg"  # the GPU paravirtualization device of WSL2
WSL_D3D12 = "usr/lib/wsl/lib/libd3d12.so"  # Direct3D 12 for Linux, shared in from Windows
WINDOWS_11_BUILD = 22000
DIRECTML_MIN_BUILD = 16299  # Windows 10 1709


@dataclass(frozen=True)
class OsInfo:
    system: str  # platform.system(): "Windows", "Linux", "Darwin", ...
    release: str
    version: str
    machine: str  # this interpreter's architecture as the OS reports it: AMD64, x86_64, arm64
    windows_build: int | None = None  # on Windows, in WSL1, or asked from WSL2 via cmd.exe
    wsl: int = 0  # 0 when not in WSL, else 1 or 2
    dxg: bool = False
    d3d12: bool = False

    def __post_init__(self) -> None:
        # platform's strings come from the system (uname, the registry): no NULs past here.
        for name in ("system", "release", "version", "machine"):
            object.__setattr__(self, name, clean_name(getattr(self, name)))

    @property
    def is_windows(self) -> bool:
        return self.system == "Windows"

    @property
    def is_macos(self) -> bool:
        return self.system == "Darwin"

    @property
    def is_linux(self) -> bool:
        return self.system == "Linux"

    def describe(self) -> str:
        if self.is_windows:
            if self.windows_build is None:
                return f"Windows {self.release} ({self.machine})"
            name = "Windows 11" if self.windows_build >= WINDOWS_11_BUILD else "Windows 10"
            if self.windows_build < 10240:
                name = f"Windows {self.release}"
            return f"{name} build {self.windows_build} ({self.machine})"
        if self.is_macos:
            return f"macOS {self.version or self.release} ({self.machine})"
        if self.wsl:
            build = f", Windows build {self.windows_build}" if self.windows_build else ""
            return f"WSL{self.wsl} (Linux {self.release}{build}, {self.machine})"
        return f"{self.system} {self.release} ({self.machine})"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["description"] = self.describe()
        return data


def build_from_version(text: str) -> int | None:
    """'10.0.22631' or 'Microsoft Windows [Version 10.0.22631.4037]' -> 22631."""
    match = re.search(r"\b\d+\.\d+\.(\d{4,6})\b", text or "")
    return int(match.group(1)) if match else None


def wsl_version(release: str, root: Path, environ: Mapping[str, str]) -> int:
    """2 for a WSL2 kernel ('5.15.153.1-microsoft-standard-WSL2'), 1 for WSL1, 0 otherwise."""
    lowered = release.lower()
    inside = (
        "microsoft" in lowered
        or bool(environ.get("WSL_DISTRO_NAME"))
        or (root / "proc/sys/fs/binfmt_misc/WSLInterop").exists()
    )
    if not inside:
        return 0
    if "wsl2" in lowered or "microsoft-standard" in lowered or (root / WSL_DXG).exists():
        return 2
    return 1


def windows_build_from_wsl(timeout: float = 3.0) -> int | None:
    """Ask Windows for its build through WSL interop (cmd.exe ver); None when that is off."""
    result = run_command(["cmd.exe", "/c", "ver"], timeout)
    return build_from_version(result.stdout) if result.ok else None


def _windows_build() -> int | None:
    getter = getattr(sys, "getwindowsversion", None)  # exists on Windows only
    if getter is not None:
        try:
            return int(getter().build)
        except (AttributeError, OSError, ValueError):
            pass
    return build_from_version(platform.version())


def detect(
    system: str | None = None,
    release: str | None = None,
    version: str | None = None,
    machine: str | None = None,
    root: Path = Path("/"),
    environ: Mapping[str, str] | None = None,
    ask_windows_build: Callable[[], int | None] | None = None,
) -> OsInfo:
    """This machine, or the one the arguments describe (for tests)."""
    system = platform.system() if system is None else system
    release = platform.release() if release is None else release
    machine = platform.machine() if machine is None else machine
    environ = os.environ if environ is None else environ
    if system == "Windows":
        if version is None:
            version = platform.version()
            build = _windows_build()
        else:
            build = build_from_version(version)
        return OsInfo(system, release, version, machine, windows_build=build)
    if system == "Darwin":
        if version is None:
            version = platform.mac_ver()[0]
        return OsInfo(system, release, version, machine)
    version = platform.version() if version is None else version
    wsl = wsl_version(release, root, environ) if system == "Linux" else 0
    dxg = (root / WSL_DXG).exists() if wsl else False
    d3d12 = (root / WSL_D3D12).exists() if wsl else False
    build = None
    if wsl == 1:
        match = re.search(r"-(\d{5})-microsoft", release.lower())  # '4.4.0-19041-Microsoft'
        build = int(match.group(1)) if match else None
    elif wsl == 2 and not (dxg and d3d12):
        # Asked only when the missing GPU needs explaining: cmd.exe may be slow or disabled.
        build = (ask_windows_build or windows_build_from_wsl)()
    return OsInfo(system, release, version, machine, build, wsl, dxg, d3d12)
