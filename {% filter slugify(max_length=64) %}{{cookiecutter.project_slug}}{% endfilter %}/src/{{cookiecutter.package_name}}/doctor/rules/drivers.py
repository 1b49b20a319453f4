"""Rules about GPU drivers: one several years old, and an NVIDIA driver older than the CUDA
build of torch needs."""

from __future__ import annotations

import datetime
import re
from typing import Iterable

from ...machinery.project import Project
from ..drivers import driver_age, nvidia_branch
from ..findings import UPDATES_DRIVER, WARN, Finding
from ..gpus import AMD, INTEL, NVIDIA, QUALCOMM, Gpu
from ..os_info import OsInfo

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
            )
        )
    return findings


def _cuda_major(project: Project, info: OsInfo) -> int | None:
    match = re.search(r"/cu(\d+)\b", project.index_url or "")
    if match:
        return int(match.group(1)[:-1])
    if project.accelerator == "directml" and info.is_linux:
        return 12  # PyPI's torch 2.4.1 for Linux x86_64 is built with CUDA 12.1
    return None


def too_old_for_cuda(project: Project, info: OsInfo, gpus: Iterable[Gpu]) -> list[Finding]:
    cuda = _cuda_major(project, info)
    if cuda is None or cuda not in CUDA_MIN_DRIVER:
        return []
    findings = []
    for gpu in gpus:
        branch = nvidia_branch(gpu.driver_version) if gpu.vendor_id == NVIDIA else None
        if branch is not None and branch[0] < CUDA_MIN_DRIVER[cuda]:
            findings.append(
                Finding(
                    "Driver",
                    WARN,
                    f"{gpu.name}: NVIDIA driver {branch[1]} is older than {CUDA_MIN_DRIVER[cuda]}, "
                    f"the oldest that runs this project's CUDA {cuda} build of torch.",
                    f"Install NVIDIA driver {CUDA_MIN_DRIVER[cuda]} or newer "
                    f"({DRIVER_DOWNLOADS[NVIDIA]}; on Linux the distribution's packages).",
                    code="DRIVER-TOO-OLD-FOR-CUDA",
                    role=UPDATES_DRIVER,
                )
            )
    return findings
