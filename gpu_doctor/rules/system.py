"""Rules about the operating system: the Windows build DirectML needs, WSL 1 and WSL2's GPU
paravirtualization, macOS (MPS) and the systems PyTorch has no wheels for."""

from __future__ import annotations

import sys

from ..findings import FAIL, NO_ACTION, OK, WARN, Finding
from ..nvidia import CUDA_STACKS
from ..os_info import DIRECTML_MIN_BUILD, WINDOWS_11_BUILD, OsInfo
from ..project import Project, parse_version
from ..recommend import ARM64_TORCH_PYTHONS
from .environment import OTHER_BEST

# torch's macOS wheels are macosx_14_0_arm64 only since this release.
MACOS_14_TORCH = (2, 12)

CODES = {
    "OS-OK": "The operating system runs the active stack.",
    "OS-WSL1": "WSL 1 has no GPU access.",
    "OS-WSL2-NO-GPU": "WSL2 without /dev/dxg or libd3d12.so: no GPU reaches the stack.",
    "OS-LINUX-NO-DIRECTML": "Plain Linux: DirectML needs Windows or WSL2.",
    "OS-WINDOWS-BUILD-UNKNOWN": "The Windows build number could not be read.",
    "OS-WINDOWS-TOO-OLD": "Windows older than DirectML's minimum build.",
    "OS-ARM64-PYTHON": "An ARM64 Python on Windows: torch-directml has x64 wheels only.",
    "OS-X64-PYTHON-EMULATED": "An x64 Python on a Windows ARM64 machine, running emulated.",
    "OS-ARM64-NO-TORCH-WHEEL": "An ARM64 Python on Windows that PyTorch has no wheel for.",
    "OS-INTEL-MAC": "An Intel Mac (or x86_64 Python on a Mac): no current PyTorch wheels.",
    "OS-MACOS-MPS": "macOS: the project trains through MPS instead of its GPU stack.",
    "OS-MACOS-TOO-OLD": "macOS older than the pinned torch's wheels need (14 for torch 2.12+).",
    "OS-UNSUPPORTED": "An operating system PyTorch publishes no wheels for.",
}


def _fallback_on_linux(project: Project, machine: str) -> str:
    if project.accelerator == "cpu":
        return "the CPU"
    if machine.lower() in ("x86_64", "amd64") and project.accelerator == "directml":
        # The directml file installs PyTorch's CPU build on Linux x86_64 (no CUDA libraries)
        return "the CPU (an NVIDIA GPU needs the cuda environment)"
    if machine.lower() in ("x86_64", "amd64"):
        return "CUDA on an NVIDIA GPU (PyPI's torch for Linux includes it) or else the CPU"
    return "the CPU"


def check_os(
    project: Project, info: OsInfo, python: tuple[int, ...] | None = None
) -> list[Finding]:
    """Windows build, WSL version and GPU paravirtualization, or which backend instead.
    ``python``: the version of the Python that runs (default: this one)."""
    what = info.describe()
    directml = project.accelerator == "directml"
    if info.is_windows:
        python = tuple(sys.version_info[:3]) if python is None else python
        return _check_windows(project, info) + _check_windows_arm(project, info, python)
    if info.is_macos:
        return _check_macos(project, info)
    if info.wsl == 1:
        if project.accelerator == "cpu":
            return [Finding("OS", OK, f"{what}: the CPU build runs here.", code="OS-OK")]
        return [
            Finding(
                "OS",
                WARN,
                f"{what}: WSL 1 has no GPU access, so {project.accelerator} falls back to the CPU.",
                "Convert the distribution to WSL 2: in Windows PowerShell `wsl -l -v`, then "
                "`wsl --set-version <name> 2`.",
                code="OS-WSL1",
            )
        ]
    if info.wsl == 2:
        return _check_wsl2(project, info)
    if info.is_linux:
        if not directml:
            return [Finding("OS", OK, f"{what}.", code="OS-OK")]
        return [
            Finding(
                "OS",
                WARN,
                f"{what}: DirectML runs only on Windows 10/11 and in WSL2. Here the project "
                f"uses {_fallback_on_linux(project, info.machine)}.",
                "For DirectML, run the project on Windows or in WSL2. On this machine, train "
                "in the environment the Environment line names.",
                code="OS-LINUX-NO-DIRECTML",
                brief="Linux: DirectML runs only on Windows 10/11 and in WSL2.",
                follows=OTHER_BEST,
            )
        ]
    return [
        Finding(
            "OS",
            WARN,
            f"{what}: PyTorch publishes wheels for Windows, Linux and macOS only.",
            "Use Windows, Linux (or WSL2) or macOS on Apple Silicon.",
            code="OS-UNSUPPORTED",
        )
    ]


def _check_windows(project: Project, info: OsInfo) -> list[Finding]:
    what = info.describe()
    build = info.windows_build
    findings = []
    if project.accelerator != "directml":
        findings.append(Finding("OS", OK, f"{what}.", code="OS-OK"))
    elif build is None:
        findings.append(
            Finding(
                "OS",
                WARN,
                f"{what}: the Windows build number could not be read.",
                "Check it with `winver`: DirectML needs Windows 10 version 1709 (build 16299) "
                "or later.",
                code="OS-WINDOWS-BUILD-UNKNOWN",
            )
        )
    elif build < DIRECTML_MIN_BUILD:
        findings.append(
            Finding(
                "OS",
                FAIL,
                f"{what}: DirectML needs Windows 10 version 1709 (build {DIRECTML_MIN_BUILD}) or "
                "later.",
                "Update Windows (Settings > Windows Update) to Windows 10 22H2 or Windows 11.",
                code="OS-WINDOWS-TOO-OLD",
            )
        )
    else:
        findings.append(
            Finding(
                "OS",
                OK,
                f"{what}: DirectML runs here (build {DIRECTML_MIN_BUILD}+).",
                code="OS-OK",
                brief=f"{what}: DirectML runs here.",
            )
        )
    if project.accelerator == "directml" and info.arm64_python:
        findings.append(
            Finding(
                "OS",
                FAIL,
                "This Python is ARM64; torch-directml publishes win_amd64 wheels only.",
                "On Windows on ARM the cpu environment trains natively on this Python (3.11 to "
                "3.13). For DirectML (experimental there), install the x64 (AMD64) Python from "
                "python.org, which Windows runs emulated, and recreate the environment with it.",
                code="OS-ARM64-PYTHON",
            )
        )
    return findings


def _check_windows_arm(project: Project, info: OsInfo, python: tuple[int, ...]) -> list[Finding]:
    """A Windows ARM64 machine: an emulated x64 Python, or an ARM64 one PyTorch has no wheel
    for. (torch-directml on an ARM64 Python is OS-ARM64-PYTHON, in _check_windows.)"""
    if info.emulated:
        return [_emulated_python(project, info)]
    if not info.arm64_python or project.accelerator == "directml":
        return []
    low, high = ARM64_TORCH_PYTHONS
    if project.accelerator != "cpu":
        reason = (
            f"PyTorch publishes no {project.accelerator} build for Windows ARM64, only CPU "
            "builds on its CPU index"
        )
        fix = "Create the cpu environment (environment-cpu.yml or requirements-cpu.txt) instead."
    elif not low <= tuple(python[:2]) <= high:
        reason = (
            f"PyTorch publishes Windows ARM64 wheels for Python {_dotted(low)} to "
            f"{_dotted(high)} only, and this is Python {_dotted(python[:2])}"
        )
        fix = (
            f"Install the ARM64 Python {_dotted(high)} ({_arm64_python_ways(high)}) and create "
            "the environment with it."
        )
    else:
        return []
    return [
        Finding("OS", FAIL, f"{info.describe()}: {reason}.", fix, code="OS-ARM64-NO-TORCH-WHEEL")
    ]


def _emulated_python(project: Project, info: OsInfo) -> Finding:
    low, high = ARM64_TORCH_PYTHONS
    found = (
        f"{info.describe()}: Windows translates every instruction of this Python as it runs, "
        "so training is slower than it needs to be."
    )
    if project.accelerator == "directml":
        found += " torch-directml has no ARM64 wheel: DirectML here runs only emulated."
    fix = (
        f"Install the ARM64 Python ({_arm64_python_ways(high)}) and create the environment with "
        "it. PyTorch publishes native Windows ARM64 CPU wheels on its CPU index for Python "
        f"{_dotted(low)} to {_dotted(high)}: use the cpu environment."
    )
    return Finding("OS", WARN, found, fix, code="OS-X64-PYTHON-EMULATED")


def _arm64_python_ways(version: tuple[int, ...]) -> str:
    """How to get an ARM64 Python and start it by name: the py launcher and uv both prefer an
    x64 Python on Windows on ARM unless asked (cpython #130470, uv #13724)."""
    dotted = _dotted(version)
    return (
        f"python.org's Windows ARM64 installer, then `py -V:{dotted}-arm64` starts it; or `uv "
        f"python install cpython-{dotted}-windows-aarch64-none`, since plain `uv python install` "
        "picks x64 there"
    )


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def _check_wsl2(project: Project, info: OsInfo) -> list[Finding]:
    what = info.describe()
    if project.accelerator == "cpu":
        return [
            Finding(
                "OS",
                OK,
                f"{what}: the CPU build runs here.",
                code="OS-OK",
                brief="WSL2: the CPU build runs here.",
            )
        ]
    missing = [
        path
        for path, present in (("/dev/dxg", info.dxg), ("/usr/lib/wsl/lib/libd3d12.so", info.d3d12))
        if not present
    ]
    if project.accelerator in CUDA_STACKS and info.dxg:
        missing = []  # CUDA in WSL2 needs /dev/dxg, not Direct3D
    if not missing:
        return [
            Finding(
                "OS",
                OK,
                f"{what}: GPU access through /dev/dxg"
                + (" and /usr/lib/wsl/lib/libd3d12.so." if info.d3d12 else "."),
                code="OS-OK",
                brief="WSL2: GPU access through /dev/dxg.",
            )
        ]
    if info.windows_build is not None and info.windows_build < WINDOWS_11_BUILD:
        fix = (
            f"GPU access in WSL2 for {project.accelerator} needs Windows 11 (build "
            f"{WINDOWS_11_BUILD}+); this Windows is build {info.windows_build}. Upgrade Windows, "
            "or run the project on Windows itself."
        )
    else:
        fix = (
            "In Windows, install the GPU vendor's current Windows driver (never a Linux GPU "
            "driver inside WSL), run `wsl --update`, then `wsl --shutdown` and reopen the "
            f"distribution. WSL2 GPU access needs Windows 11 (build {WINDOWS_11_BUILD}+)."
        )
    return [
        Finding(
            "OS",
            WARN,
            f"{what}: {' and '.join(missing)} missing, so {project.accelerator} cannot reach the "
            "GPU and falls back to the CPU.",
            fix,
            code="OS-WSL2-NO-GPU",
            brief="WSL2 has no GPU access here: training runs on the CPU.",
        )
    ]


def _macos_minimum(project: Project) -> tuple[int, ...] | None:
    """The macOS the pinned torch's wheels need, when it is newer than MPS's 12.3."""
    torch = parse_version(project.pins.get("torch", ""))
    return (14,) if torch >= MACOS_14_TORCH else None


def _check_macos(project: Project, info: OsInfo) -> list[Finding]:
    what = info.describe()
    minimum = _macos_minimum(project)
    macos = parse_version(info.version)
    if info.machine.lower() not in ("arm64", "aarch64"):
        return [
            Finding(
                "OS",
                FAIL,
                f"{what}: PyTorch publishes no wheels for Intel Macs since 2.3, and this project "
                f"pins torch {project.pins.get('torch', '')}.",
                "On an Apple Silicon Mac, install a native arm64 Python (python.org installer or "
                "Miniforge) instead of an x86_64 one under Rosetta. On an Intel Mac, use Windows, "
                "Linux or a hosted notebook instead.",
                code="OS-INTEL-MAC",
            )
        ]
    if minimum and macos and macos < minimum:
        return [
            Finding(
                "OS",
                FAIL,
                f"{what}: torch {project.pins.get('torch', '')}'s macOS wheels need macOS "
                f"{_dotted(minimum)} or later, so pip finds no torch for this Mac.",
                f"Update macOS to {_dotted(minimum)} or later (System Settings > General > "
                "Software Update), or use another machine.",
                code="OS-MACOS-TOO-OLD",
            )
        ]
    if project.accelerator == "cpu":
        return [
            Finding(
                "OS",
                OK,
                f"{what}: the CPU build runs here; `--device mps` uses the GPU.",
                code="OS-OK",
            )
        ]
    return [
        Finding(
            "OS",
            WARN,
            f"{what}: {'DirectML' if project.accelerator == 'directml' else 'CUDA'} does not "
            "exist on macOS; this project uses Apple's MPS backend (the Apple GPU) instead.",
            "Nothing to install: PyPI's torch for macOS includes MPS (macOS "
            f"{_dotted(minimum) if minimum else '12.3'} or later).",
            code="OS-MACOS-MPS",
            role=NO_ACTION,
        )
    ]
