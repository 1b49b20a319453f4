"""Rules about CUDA builds and NVIDIA compute capability: a CUDA stack whose build has no
kernels for a GPU (before torch runs: from the GPU's capability), and the same seen at run time
("no kernel image is available for execution on the device", or torch's warning that the GPU
"is not compatible with the current PyTorch installation"). The facts are ``nvidia``'s.
Standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from .. import nvidia
from ..findings import WARN, Finding
from ..gpus import NVIDIA, Gpu
from ..project import Project
from .environment import OTHER_BEST, stack_files

CODES = {
    "GPU-CUDA-CAPABILITY-UNSUPPORTED": "The CUDA build of this environment cannot run this "
    "NVIDIA GPU's compute capability.",
    "CUDA-NO-KERNEL-IMAGE": "CUDA has no kernels for this GPU ('no kernel image is available').",
}

_SIGNS = (
    "no kernel image is available",
    "not compatible with the current pytorch installation",
    "no longer supports this gpu because it is too old",
)
# torch's own warnings: "NVIDIA GeForce GTX 1060 with CUDA capability sm_61 is not compatible"
# and "Found GPU0 GeForce GTX 970 which is of cuda capability 5.2."
_SM = re.compile(r"(?:Found GPU\d+ )?([^\n.]*?) with CUDA capability sm_(\d+?)(\d)\b", re.I)
_OLD = re.compile(r"Found GPU\d+ (.+?) which is of cuda capability (\d+)\.(\d+)", re.I)


def stack_for(capability: str, system: str) -> str:
    """The environment for a GPU of this capability: a CUDA stack whose build runs it, else
    DirectML where DirectX 12 reaches it (Windows, WSL2), else the CPU."""
    running = nvidia.stacks_running(capability)
    if running:
        return running[0]
    return "directml" if system in ("Windows", "WSL2") else "cpu"


def builds_text(capability: str) -> str:
    """'PyTorch 2.14.1+cu126 (final; the cuda-legacy environment)', or that none does."""
    running = nvidia.stacks_running(capability)
    if not running:
        return "no current PyTorch build (CUDA builds need compute capability 5.0 or newer)"
    return " and ".join(
        f"PyTorch {nvidia.CUDA_BUILDS[stack]} (the {stack} environment"
        + (f"; {nvidia.FINAL[stack]})" if stack in nvidia.FINAL else ")")
        for stack in running
    )


def _use(stack: str, best: str) -> str:
    said = ", as the Environment fix says" if stack == best else ""
    return f"Use the {stack} environment{said}: {stack_files(stack)}."


def capability_findings(
    project: Project, gpus: Iterable[Gpu], system: str, best: str
) -> list[Finding]:
    """One warning per NVIDIA GPU whose compute capability the active CUDA stack's build
    cannot run (it would fail at the first kernel). ``best``: the recommended stack."""
    active = project.accelerator
    if active not in nvidia.CUDA_STACKS:
        return []
    findings = []
    for gpu in gpus:
        capability = nvidia.capability_of(gpu)
        if gpu.vendor_id != NVIDIA or not capability:
            continue
        if nvidia.runs_on(capability, nvidia.CUDA_ARCHS[active]):
            continue
        fits = stack_for(capability, system)
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"{gpu.name} has compute capability {capability} "
                f"({nvidia.family_of(capability)}); this {active} environment's torch "
                f"({nvidia.CUDA_BUILDS[active]}) has no kernels for it, so CUDA fails at the "
                f"first kernel. Builds that run it: {builds_text(capability)}.",
                _use(fits, best) if fits == best else "",
                code="GPU-CUDA-CAPABILITY-UNSUPPORTED",
                brief=f"This torch lacks kernels for capability {capability}.",
                follows=OTHER_BEST if fits == best else "",
            )
        )
    return findings


def runs(project: Project, gpu: Gpu) -> bool:
    """False when the active CUDA stack's build is known not to run this GPU."""
    capability = nvidia.capability_of(gpu)
    archs = nvidia.CUDA_ARCHS.get(project.accelerator)
    return not (capability and archs) or nvidia.runs_on(capability, archs)


def _seen_gpu(text: str, gpus: Sequence[dict], measured: Sequence[tuple[str, str]]) -> tuple:
    """(name, capability) of the GPU the failure is about: the report's NVIDIA GPU with a
    capability, torch's own words, or torch's get_device_capability."""
    for gpu in gpus:
        if gpu.get("vendor") == "NVIDIA" and gpu.get("compute_capability"):
            return gpu["name"], gpu["compute_capability"]
    match = _SM.search(text)
    if match:
        return match.group(1).strip() or "This GPU", f"{match.group(2)}.{match.group(3)}"
    match = _OLD.search(text)
    if match:
        return match.group(1).strip(), f"{match.group(2)}.{match.group(3)}"
    for name, capability in measured:
        return name, capability
    return "", ""


def no_kernel_image(
    error: str,
    recommendation: dict[str, Any] | None,
    project: Project | None = None,
    measured: Sequence[tuple[str, str]] = (),
) -> tuple[str, str, str] | None:
    """CUDA's "no kernel image is available" or torch's incompatibility warning: (one sentence
    naming the GPU, its capability, the builds that run it; the environment to use; the code
    of the fix that one follows, or ""), else None. ``measured``: (name, capability) from
    torch's get_device_capability, if it ran."""
    if not any(sign in error.lower() for sign in _SIGNS):
        return None
    recommendation = recommendation or {}
    name, capability = _seen_gpu(error, recommendation.get("gpus") or [], measured)
    build = ""
    if project is not None and project.accelerator in nvidia.CUDA_BUILDS:
        build = f" ({nvidia.CUDA_BUILDS[project.accelerator]})"
    if not capability:
        return (
            f"Likely cause: this torch{build} has no CUDA kernels for the GPU's compute "
            "capability.",
            "Read it with `nvidia-smi --query-gpu=name,compute_cap --format=csv`: 7.5 and newer "
            "take the cuda environment, 5.0 to 7.0 the cuda-legacy one "
            f"({stack_files('cuda-legacy')}); below 5.0 no CUDA build runs it.",
            "",
        )
    system = recommendation.get("system", "")
    fits = stack_for(capability, system)
    best = recommendation.get("stack", "")
    found = (
        f"{name or 'The GPU'} has compute capability {capability} "
        f"({nvidia.family_of(capability)}); this torch{build} has no kernels for it. Builds "
        f"that run it: {builds_text(capability)}."
    )
    return found, _use(fits, best), OTHER_BEST if fits == best else ""
