"""Rules about GPU drivers: one several years old, and an NVIDIA driver older than the CUDA
build of torch needs (each CUDA stack's ``driver_min`` in the support table, per system)."""

from __future__ import annotations

import datetime
import re
from typing import Iterable

from .. import nvidia
from ..driver_age import driver_age, nvidia_branch, version_fields
from ..findings import UPDATES_DRIVER, WARN, Finding
from ..gpus import AMD, INTEL, NVIDIA, QUALCOMM, Gpu
from ..os_info import OsInfo
from ..project import Project

CODES = {
    "DRIVER-OLD": "A GPU driver several years old.",
    "DRIVER-TOO-OLD-FOR-CUDA": "An NVIDIA driver older than the CUDA build of torch needs.",
}

# The oldest NVIDIA driver branch each CUDA major version runs on (minor-version compatibility).
CUDA_MIN_DRIVER = {11: 450, 12: 525, 13: 580}
DRIVER_DOWNLOADS = {
    AMD: "AMD Software: Adrenalin Edition from amd.com/support",
    INTEL: "Intel Driver & Support Assistant from intel.com/support (or the laptop maker's site)",
    NVIDIA: "the NVIDIA App or nvidia.com/drivers",
    QUALCOMM: "Windows Update (Settings > Windows Update > Advanced options > Optional updates)",
}


def old_drivers(gpus: Iterable[Gpu], today: datetime.date) -> list[Finding]:
    findings = []
    for gpu in gpus:
        age = driver_age(gpu)
        if age is None or not age.is_old(today):
            continue
        version = f" {gpu.driver_version}" if gpu.driver_version else ""
        where = DRIVER_DOWNLOADS.get(gpu.vendor_id or -1, "the GPU maker's website")
        findings.append(
            Finding(
                "Driver",
                WARN,
                f"{gpu.name}: driver{version} ({age.basis}) is about "
                f"{age.years(today):.0f} years old.",
                f"Install the current driver with {where}. If the maker no longer updates this "
                "GPU, the old driver is the last one; DirectML may then fail on some operators.",
                code="DRIVER-OLD",
                role=UPDATES_DRIVER,
                brief=f"{gpu.vendor} driver about {age.years(today):.0f} years old.",
            )
        )
    return findings


def _cuda_version(project: Project, info: OsInfo) -> str | None:
    """'13.0' for the cu130 build, '12.6' for cu126; None when torch has no CUDA build."""
    match = re.search(r"/cu(\d+)\b", project.index_url or "")
    if match:
        digits = match.group(1)
        return f"{digits[:-1]}.{digits[-1]}"
    if project.accelerator == "directml" and info.is_linux:
        return "12.1"  # PyPI's torch 2.4.1 for Linux x86_64 is built with CUDA 12.1
    return None


def driver_minimum(project: Project, info: OsInfo) -> tuple[str, str] | None:
    """(the oldest NVIDIA driver, the CUDA version that needs it) for the active stack on this
    system: the stack's ``driver_min`` for Windows or Linux (WSL2 runs the Windows driver),
    else the CUDA major's branch (minor version compatibility)."""
    cuda = _cuda_version(project, info)
    if cuda is None:
        return None
    windows = info.is_windows or info.wsl == 2
    minimums = project.stacks.get(project.accelerator, {}).get("driver_min") or {}
    oldest = minimums.get("Windows" if windows else "Linux")
    if not oldest and int(cuda.split(".")[0]) in CUDA_MIN_DRIVER:
        oldest = str(CUDA_MIN_DRIVER[int(cuda.split(".")[0])])
    return (oldest, cuda) if oldest else None


def _stack_for_driver(project: Project, gpu: Gpu, best: str) -> str | None:
    """The stack whose CUDA build the driver must run: the active one when its build runs the
    GPU; else (or when the active stack is not a CUDA one) the recommended CUDA stack when that
    one does; None when no CUDA build runs it
    (Kepler, Fermi: no driver update helps)."""
    active = project.accelerator
    if active not in nvidia.CUDA_STACKS:
        # Advice to create the recommended CUDA environment needs a driver that starts it.
        return best if best in nvidia.CUDA_STACKS and best in project.stacks else active
    capability = nvidia.capability_of(gpu)
    if not capability or nvidia.runs_on(capability, nvidia.CUDA_ARCHS[active]):
        return active
    known = best in nvidia.CUDA_STACKS and best in project.stacks
    return best if known and nvidia.runs_on(capability, nvidia.CUDA_ARCHS[best]) else None


def too_old_for_cuda(
    project: Project, info: OsInfo, gpus: Iterable[Gpu], best: str = ""
) -> list[Finding]:
    """An NVIDIA driver older than the CUDA build needs: the active stack's, or the recommended
    CUDA stack's (``best``) when only that one runs the GPU."""
    findings = []
    for gpu in gpus:
        branch = nvidia_branch(gpu.driver_version) if gpu.vendor_id == NVIDIA else None
        stack = _stack_for_driver(project, gpu, best) if branch is not None else None
        minimum = driver_minimum(project.for_stack(stack), info) if stack else None
        if branch is None or minimum is None:
            continue
        oldest, cuda = minimum
        if version_fields(branch[1]) >= version_fields(oldest):
            continue
        whose = "this project's" if stack == project.accelerator else f"the {stack} environment's"
        findings.append(
            Finding(
                "Driver",
                WARN,
                f"{gpu.name}: NVIDIA driver {branch[1]} is older than {oldest}, the oldest "
                f"that runs {whose} CUDA {cuda} build of torch.",
                f"Install NVIDIA driver {oldest} or newer "
                f"({DRIVER_DOWNLOADS[NVIDIA]}; on Linux the distribution's packages).",
                code="DRIVER-TOO-OLD-FOR-CUDA",
                role=UPDATES_DRIVER,
            )
        )
    return findings
