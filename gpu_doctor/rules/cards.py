"""Rules about the GPUs, for every system: each GPU found, a query that failed, then the rules
of the system (``cards_windows``, ``cards_linux``) and of the drivers (``drivers``)."""

from __future__ import annotations

import datetime
from typing import Iterable

from .. import recommend
from ..findings import OK, WARN, Finding
from ..gpus import NVIDIA, QUALCOMM, Gpu, GpuScan
from ..os_info import OsInfo
from ..project import Project
from . import cards_linux, cards_windows, cuda, drivers

CODES = {
    "GPU-FOUND": "A GPU, as the system reports it.",
    "GPU-QUERY-FAILED": "The GPUs could not be listed.",
    "GPU-QUERY-PARTLY-FAILED": "Part of the GPU query failed.",
    # given by the rules of both systems (cards_windows, cards_linux)
    "GPU-NONE": "No GPU for compute.",
    "GPU-UNUSED": "The active stack leaves this GPU unused.",
}


def check_gpus(
    project: Project,
    info: OsInfo,
    scan: GpuScan,
    best: recommend.Recommendation,
    today: datetime.date | None = None,
) -> list[Finding]:
    """``best``: the machine's recommendation, computed once (facts.Facts)."""
    today = today or datetime.date.today()
    if not (info.is_windows or info.is_linux):
        return []
    hardware = scan.hardware
    findings = _list_findings(hardware)
    findings += _problem_findings(scan, bool(hardware))
    findings += cuda.capability_findings(project, hardware, recommend.system_of(info), best.stack)
    if info.is_windows:
        findings += cards_windows.check(project, scan, best.stack)
        if not hardware:
            return findings
        aged = hardware
    else:
        findings += cards_linux.check(project, info, scan, best.stack)
        aged = [gpu for gpu in hardware if gpu.vendor_id == NVIDIA]
    findings += drivers.old_drivers(aged, today)
    findings += drivers.too_old_for_cuda(project, info, hardware, best.stack)
    return findings


def _list_findings(gpus: Iterable[Gpu]) -> list[Finding]:
    return [Finding("GPU", OK, gpu.describe(), code="GPU-FOUND", brief=_brief(gpu)) for gpu in gpus]


def _brief(gpu: Gpu) -> str:
    """The GPU's line in the summary; an Adreno's says what it is for (cards_windows'
    GPU-ADRENO says why)."""
    if gpu.vendor_id == QUALCOMM:
        return f"{gpu.name}: no training on it; the NPU runs exported models."
    return f"{gpu.name} ({gpu.kind})."


# The system's GPU tools whose problem a scan names first ("nvidia-smi: ... did not answer").
GPU_TOOLS = ("nvidia-smi", "rocm-smi", "rocminfo")


def _problem_findings(scan: GpuScan, have_gpus: bool) -> list[Finding]:
    if not scan.problems:
        return []
    seen = "; ".join(scan.problems)
    if have_gpus:
        tools = [tool for tool in GPU_TOOLS if any(p.startswith(tool + ":") for p in scan.problems)]
        named = f" ({', '.join(tools)})" if tools else ""
        first = "Restart the machine"
        if tools:
            first = f"Run `{'` and `'.join(tools)}` yourself; if it hangs or fails too, restart"
            first += " the machine"
        return [
            Finding(
                "GPU",
                WARN,
                f"Part of the GPU query failed: {seen}.",
                f"{first} (a driver update may wait for a restart, or the GPU stopped answering) "
                "and run this check again; if it still fails, reinstall the GPU driver from the "
                "GPU maker's website. Until then the GPUs are listed without what that query "
                "adds.",
                code="GPU-QUERY-PARTLY-FAILED",
                brief=f"Part of the GPU query failed{named}.",
            )
        ]
    return [
        Finding(
            "GPU",
            WARN,
            f"The GPUs could not be listed: {seen}.",
            "Look in Device Manager > Display adapters (Windows) or run `lspci | grep -i vga` "
            "(Linux); verify_install lists the devices PyTorch itself finds.",
            code="GPU-QUERY-FAILED",
        )
    ]
