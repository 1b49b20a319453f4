"""Which operating system runs this Python: Windows build, WSL 1 or 2, Linux, macOS; on Windows
also the machine's own architecture beside this Python's, which differ under emulation.

Standard library only. ``detect()`` takes every input as an argument so tests can describe any
machine: a Windows build, a WSL2 kernel string, a file tree with /dev/dxg in a temporary folder.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import sys
import sysconfig
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from .bounded import run_command
from .safe_text import clean_name

WSL_DXG = "dev/dxg"  # the GPU paravirtualization device of WSL2
WSL_D3D12 = "usr/lib/wsl/lib/libd3d12.so"  # Direct3D 12 for Linux, shared in from Windows
WINDOWS_11_BUILD = 22000
DIRECTML_MIN_BUILD = 16299  # Windows 10 1709

# IMAGE_FILE_MACHINE_* values IsWow64Process2 reports for the machine itself.
IMAGE_FILE_MACHINES = {0xAA64: "ARM64", 0x8664: "AMD64", 0x014C: "x86"}
# sysconfig.get_platform() of a Windows Python: what it was built for, so what pip installs.
INTERPRETER_ARCHITECTURES = {"win-arm64": "ARM64", "win-amd64": "AMD64", "win32": "x86"}
ARCHITECTURE_NAMES = {"AMD64": "x64"}  # what Windows' own settings call it


@dataclass(frozen=True)
class OsInfo:
    system: str  # platform.system(): "Windows", "Linux", "Darwin", ...
    release: str
    version: str
    # platform.machine(): AMD64, x86_64, arm64. Under x64 emulation on Windows ARM64 it names
    # either architecture, by Python version (cpython #98962): see python_architecture.
    machine: str
    windows_build: int | None = None  # on Windows, in WSL1, or asked from WSL2 via cmd.exe
    wsl: int = 0  # 0 when not in WSL, else 1 or 2
    dxg: bool = False
    d3d12: bool = False
    # Windows only, "" when unknown: the machine's own architecture (IsWow64Process2), and
    # sysconfig.get_platform() of this Python ("win-arm64", "win-amd64", "win32").
    native_machine: str = ""
    interpreter_platform: str = ""

    def __post_init__(self) -> None:
        # platform's strings come from the system (uname, the registry): no NULs past here.
        texts = (
            "system",
            "release",
            "version",
            "machine",
            "native_machine",
            "interpreter_platform",
        )
        for name in texts:
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

    @property
    def python_architecture(self) -> str:
        """What this Python was built for: "ARM64", "AMD64", "x86"; platform.machine() when
        sysconfig did not say (platform.machine() can name the machine under emulation)."""
        return INTERPRETER_ARCHITECTURES.get(self.interpreter_platform.lower(), self.machine)

    @property
    def arm64_python(self) -> bool:
        return self.python_architecture.upper() in ("ARM64", "AARCH64")

    @property
    def arm64_machine(self) -> bool:
        """Windows on ARM (a Snapdragon laptop), whatever this Python was built for: only CPU
        builds of PyTorch exist for it."""
        machine = self.native_machine.upper() or self.python_architecture.upper()
        return self.is_windows and machine == "ARM64"

    @property
    def emulated(self) -> bool:
        """An x64 (or x86) Python that Windows on ARM translates as it runs."""
        return self.is_windows and self.native_machine == "ARM64" and not self.arm64_python

    def _windows_architecture(self) -> str:
        python = self.python_architecture
        if not self.native_machine or self.native_machine.upper() == python.upper():
            return self.machine
        names = [ARCHITECTURE_NAMES.get(arch, arch) for arch in (self.native_machine, python)]
        emulation = " under emulation" if self.emulated else ""
        return f"{names[0]} machine, {names[1]} Python{emulation}"

    def describe(self) -> str:
        if self.is_windows:
            architecture = self._windows_architecture()
            if self.windows_build is None:
                return f"Windows {self.release} ({architecture})"
            name = "Windows 11" if self.windows_build >= WINDOWS_11_BUILD else "Windows 10"
            if self.windows_build < 10240:
                name = f"Windows {self.release}"
            return f"{name} build {self.windows_build} ({architecture})"
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


def windows_native_machine(kernel32: Any = None) -> str:
    """The machine's own architecture ("ARM64", "AMD64", "x86") from IsWow64Process2, whatever
    this Python was built for; "" off Windows, before Windows 10 1709 (no such function) or
    when the call fails. ``kernel32``: a stand-in for tests."""
    if kernel32 is None:
        if sys.platform != "win32":
            return ""
        try:
            kernel32 = ctypes.WinDLL("kernel32")
        except OSError:
            return ""
    try:
        is_wow64_process2 = kernel32.IsWow64Process2
        current_process = kernel32.GetCurrentProcess
    except AttributeError:
        return ""
    current_process.restype = ctypes.c_void_p  # a pseudo-handle, pointer-sized
    process, native = ctypes.c_ushort(0), ctypes.c_ushort(0)
    try:
        done = is_wow64_process2(
            ctypes.c_void_p(current_process()), ctypes.pointer(process), ctypes.pointer(native)
        )
    except OSError:
        return ""
    if not done:
        return ""
    return IMAGE_FILE_MACHINES.get(native.value, f"0x{native.value:04X}")


def interpreter_platform() -> str:
    """sysconfig.get_platform() of this Python on Windows ("win-arm64"), else ""."""
    return sysconfig.get_platform() if sys.platform == "win32" else ""


def detect(
    system: str | None = None,
    release: str | None = None,
    version: str | None = None,
    machine: str | None = None,
    root: Path = Path("/"),
    environ: Mapping[str, str] | None = None,
    ask_windows_build: Callable[[], int | None] | None = None,
    native_machine: str | None = None,
    python_platform: str | None = None,
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
        return OsInfo(
            system,
            release,
            version,
            machine,
            windows_build=build,
            native_machine=windows_native_machine() if native_machine is None else native_machine,
            interpreter_platform=(
                interpreter_platform() if python_platform is None else python_platform
            ),
        )
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
