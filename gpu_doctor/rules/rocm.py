"""Rules about ROCm on Linux: whether the pinned ROCm build runs an AMD GPU's gfx target (the
facts, with the table of close targets, are ``amd_linux.support_of``'s), the
HSA_OVERRIDE_GFX_VERSION that lets a close target's kernels run it, the same rule when a kernel
fails at run time ("invalid device function"), and the device files ROCm must open.

ROCm runs a GPU only when torch was built for its gfx target (cookiecutter's support table,
``gfx_targets`` of the rocm stack). Otherwise the first kernel fails with "HIP error: invalid
device function". A GPU of the same family can borrow a close target's kernels through
``HSA_OVERRIDE_GFX_VERSION``: widely used for RDNA2 (RX 6600/6700, gfx1031/gfx1032) and the
RDNA3 iGPUs (Radeon 780M, gfx1103), but not supported by AMD, so the advice says so.
Standard library only.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from ..amd_linux import OVERRIDE, SUPPORTED, UNSUPPORTED, Access, RocmSupport, support_of
from ..findings import OK, WARN, Finding
from ..gpus import Gpu, GpuScan
from ..project import Project
from .environment import stack_files

CODES = {
    "GPU-AMD-ROCM-SUPPORTED": "The AMD GPU's gfx target is among the ROCm build's targets.",
    "GPU-AMD-ROCM-OVERRIDE": "The gfx target is not supported; a close one runs it (unofficial).",
    "GPU-AMD-ROCM-UNSUPPORTED": "The gfx target is not supported, and no close target is.",
    "GPU-AMD-NO-ACCESS": "This user cannot open /dev/kfd or the GPU's render node.",
    "ROCM-INVALID-DEVICE-FUNCTION": "ROCm has no kernels for this GPU's gfx target.",
}


def override_fix(support: RocmSupport) -> str:
    """The one fix for a target that runs on a close one's kernels (the GPU line and a kernel
    failure say it in the same words, so the fixes list shows it once)."""
    return (
        f"In the rocm environment, before training: `export HSA_OVERRIDE_GFX_VERSION="
        f"{support.override}` (add the line to ~/.bashrc, or set it in the run configuration's "
        "environment variables), then run verify_install again. Unofficial: AMD does not "
        "support it; if the smoke test still fails, train with `--device cpu`."
    )


def target_findings(project: Project, gpu: Gpu, support: RocmSupport) -> list[Finding]:
    """Whether the pinned ROCm build runs this GPU's gfx target, and the override if one does."""
    rocm = project.stacks.get("rocm", {}).get("label", "PyTorch's ROCm build")
    if support.status == SUPPORTED:
        return [
            Finding(
                "GPU",
                OK,
                f"{gpu.name}: {gpu.gfx_target} is one of the GPU targets of {rocm}.",
                code="GPU-AMD-ROCM-SUPPORTED",
            )
        ]
    if support.status == OVERRIDE:
        return [
            Finding(
                "GPU",
                WARN if project.accelerator != "cpu" else OK,
                f"{gpu.name}: {gpu.gfx_target} is not one of the GPU targets of {rocm}; without "
                "an override the first kernel fails with 'HIP error: invalid device function'. "
                f"Its close relative {support.close} runs it: unofficial, AMD does not support it.",
                override_fix(support),
                code="GPU-AMD-ROCM-OVERRIDE",
                brief=f"{gpu.gfx_target} needs an override to run ROCm.",
            )
        ]
    if support.status == UNSUPPORTED:
        return [
            Finding(
                "GPU",
                WARN if project.accelerator == "rocm" else OK,
                f"{gpu.name}: {gpu.gfx_target} is not one of the GPU targets of {rocm}, and no "
                "close supported target runs it: ROCm fails at the first kernel ('invalid device "
                "function'), so this GPU cannot train.",
                f"Train on the CPU: the cpu environment runs here ({stack_files('cpu')})."
                if project.accelerator == "rocm"
                else "",
                code="GPU-AMD-ROCM-UNSUPPORTED",
            )
        ]
    return []


def access_findings(project: Project, scan: GpuScan) -> list[Finding]:
    """/dev/kfd and the render nodes: ROCm sees no GPU where this user cannot open them."""
    if project.accelerator == "cpu" or not scan.denied:
        return []
    missing = [access.path for access in scan.denied if access.missing]
    denied = [access for access in scan.denied if not access.missing]
    findings = []
    if denied:
        names = ", ".join(
            f"{access.path} (group {access.group})" if access.group else access.path
            for access in denied
        )
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"This user cannot open {names}: ROCm then finds no GPU and torch trains on the "
                "CPU.",
                join_groups_fix(denied),
                code="GPU-AMD-NO-ACCESS",
            )
        )
    if missing:
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"{' and '.join(missing)} does not exist: the amdgpu driver's compute interface "
                "is not there, so ROCm finds no GPU.",
                "Use the distribution's kernel with the amdgpu driver (not a virtual machine); in "
                "a container, pass `--device=/dev/kfd --device=/dev/dri`.",
                code="GPU-AMD-NO-ACCESS",
            )
        )
    return findings


def invalid_device_function(
    error: str, recommendation: dict[str, Any] | None, project: Project | None = None
) -> tuple[str, str] | None:
    """ROCm's "HIP error: invalid device function": the build has no kernels for this GPU's
    gfx target. (what was seen, the fix) naming the target and its override, else None.
    ``recommendation``: the report's, whose "gpus" name the gfx targets."""
    if "invalid device function" not in error.lower():
        return None
    gpus = (recommendation or {}).get("gpus") or []
    targets = [gpu["gfx_target"] for gpu in gpus if gpu.get("gfx_target")]
    if not targets:
        return (
            "Likely cause: ROCm has no kernels for this GPU's gfx target.",
            "Find the GPU's target with `rocminfo | grep gfx`; if it is a variant of a supported "
            "one (gfx1031/gfx1032 -> 10.3.0, gfx1103 -> 11.0.0), `export "
            "HSA_OVERRIDE_GFX_VERSION=<that>` and run verify_install again (unofficial); "
            "otherwise train with `--device cpu`.",
        )
    support = support_of(project, targets[0])
    seen = f"Likely cause: this ROCm build has no kernels for the GPU's {targets[0]}."
    if support.status == OVERRIDE and os.environ.get("HSA_OVERRIDE_GFX_VERSION"):
        return (
            f"{seen} HSA_OVERRIDE_GFX_VERSION is set ("
            f"{os.environ['HSA_OVERRIDE_GFX_VERSION']}), yet the kernels still fail.",
            f"Check the value: {targets[0]} needs {support.override}. If that is what is set, "
            "the unofficial override does not work on this GPU: train with `--device cpu`.",
        )
    if support.status == OVERRIDE:
        return (
            f"{seen} The close target {support.close} runs it (unofficial).",
            override_fix(support),
        )
    return (
        f"{seen} No close supported target runs it.",
        "This GPU cannot train with ROCm: use the cpu environment (environments/cpu.txt or "
        "environments/cpu.yml), or train with `--device cpu`.",
    )


def join_groups_fix(denied: Iterable[Access]) -> str:
    groups = sorted({access.group for access in denied if access.group} or {"render"})
    groups = sorted(set(groups) | {"video"}) if "render" in groups else groups
    return (
        f"Add yourself to the group{'s' if len(groups) > 1 else ''} that may open the GPU: "
        f"`sudo usermod -aG {','.join(groups)} $USER`, then log out and in again (or "
        "restart); `groups` then lists it."
    )
