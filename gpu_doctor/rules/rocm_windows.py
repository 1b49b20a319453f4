"""Rules about AMD's ROCm build for Windows (the rocm-windows stack): whether each AMD GPU's gfx
target is one it runs, whether the installed torch is a HIP build, whether the GPU kernels
installed (the device package, ``torch[device-gfx1100]``) are this GPU's, and what
``hipErrorInvalidImage`` means (ROCm/TheRock #7839: every kernel fails without the right ones).
Every fix that installs kernels is the one command ``amd_windows.device_command`` prints.
Standard library only.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .. import amd_windows
from ..findings import FAIL, OK, REPAIRS_ENVIRONMENT, WARN, Finding
from ..gpus import AMD, Gpu
from ..install_commands import kernels, reinstall
from ..project import Project

CODES = {
    "GPU-AMD-WINDOWS-TARGET": "An AMD GPU on Windows: its gfx target, and whether AMD's ROCm "
    "build for Windows runs it.",
    "ROCM-WINDOWS-HIP": "Whether the installed torch is a HIP (ROCm) build, and its HIP version.",
    "ROCM-WINDOWS-KERNELS-OK": "The GPU kernels installed are this GPU's gfx target.",
    "ROCM-WINDOWS-KERNELS-MISSING": "No GPU kernels (device package) are installed.",
    "ROCM-WINDOWS-KERNELS-WRONG": "The GPU kernels installed are another GPU's gfx target.",
    "ROCM-WINDOWS-INVALID-IMAGE": "hipErrorInvalidImage: the kernels installed do not fit "
    "this GPU.",
}


def target_findings(project: Project, gpus: Iterable[Gpu]) -> list[Finding]:
    """One line per AMD GPU whose target is known: the target, where it came from, and
    whether AMD's ROCm build for Windows runs it (only information: the Environment line
    recommends)."""
    findings = []
    for gpu in gpus:
        if gpu.vendor_id != AMD or not gpu.gfx_target:
            continue
        runs = amd_windows.supported(gpu.gfx_target, project.stacks)
        verdict = "runs" if runs else "has no kernels for"
        findings.append(
            Finding(
                "GPU",
                OK,
                f"{gpu.name}: {gpu.gfx_target} (from the {gpu.target_source or 'driver'}); "
                f"AMD's ROCm build for Windows {verdict} it.",
                code="GPU-AMD-WINDOWS-TARGET",
            )
        )
    return findings


def gpu_target(recommendation: dict[str, Any] | None, project: Project) -> str:
    """The gfx target of the GPU this environment should train on: the recommended GPU's, else
    the first AMD GPU's that the build runs; '' when none is known."""
    recommendation = recommendation or {}
    chosen = recommendation.get("gpu") or {}
    if amd_windows.supported(chosen.get("gfx_target", ""), project.stacks):
        return chosen["gfx_target"]
    for gpu in recommendation.get("gpus") or []:
        if amd_windows.supported(gpu.get("gfx_target", ""), project.stacks):
            return gpu["gfx_target"]
    return ""


def kernel_findings(
    project: Project,
    recommendation: dict[str, Any] | None,
    distributions: Callable[[], Iterable[str]],
) -> list[Finding]:
    """Whether the device package installed is this GPU's (rocm-windows environments only)."""
    if project.accelerator != amd_windows.STACK:
        return []
    target = gpu_target(recommendation, project)
    installed = amd_windows.installed_targets(distributions())
    shown = ", ".join(f"device-{name}" for name in installed)
    if not target:
        if not installed:
            return []
        return [
            Finding(
                "GPU kernels",
                OK,
                f"GPU kernels installed: {shown}; this GPU's target could not be read to compare.",
                code="ROCM-WINDOWS-KERNELS-OK",
            )
        ]
    fix = f"`{kernels(project, target, amd_windows.device_arguments(target, project.stacks))}`"
    if target in installed:
        return [
            Finding(
                "GPU kernels",
                OK,
                f"The GPU kernels installed (device-{target}) are this GPU's ({target}).",
                code="ROCM-WINDOWS-KERNELS-OK",
            )
        ]
    if installed:
        return [
            Finding(
                "GPU kernels",
                FAIL,
                f"The GPU kernels installed ({shown}) are not this GPU's {target}: every "
                "operation on it fails with hipErrorInvalidImage.",
                f"Install this GPU's kernels in this environment: {fix}",
                code="ROCM-WINDOWS-KERNELS-WRONG",
                brief=f"The GPU kernels installed are not this GPU's {target}.",
                role=REPAIRS_ENVIRONMENT,
            )
        ]
    return [
        Finding(
            "GPU kernels",
            FAIL,
            f"No GPU kernels are installed for this GPU's {target}: every operation on it fails "
            "with hipErrorInvalidImage.",
            f"Install this GPU's kernels in this environment: {fix}",
            code="ROCM-WINDOWS-KERNELS-MISSING",
            brief=f"No GPU kernels are installed for this GPU's {target}.",
            role=REPAIRS_ENVIRONMENT,
        )
    ]


def hip_finding(project: Project, torch: Any, installed: str | None = None) -> list[Finding]:
    """torch.version.hip: the build of AMD's index has one. ``installed``: torch's version as
    pip installed it; another build's tag is the torch build rule's to name, with its fix."""
    if project.accelerator != amd_windows.STACK:
        return []
    hip = getattr(getattr(torch, "version", None), "hip", None)
    tag = amd_windows.stack_of(project.stacks).get("local_version", "")
    if not hip and installed and not installed.endswith(tag):
        return []
    if hip:
        return [
            Finding(
                "torch build",
                OK,
                f"This torch is a ROCm build: HIP {hip} (torch.version.hip).",
                code="ROCM-WINDOWS-HIP",
            )
        ]
    stack = project.stacks.get(amd_windows.STACK, {})
    return [
        Finding(
            "torch build",
            WARN,
            "This torch is no ROCm build (torch.version.hip is None): it cannot use the AMD GPU.",
            "Reinstall torch from AMD's index: "
            f"`{reinstall(project, f'-r environments/{amd_windows.STACK}.txt')}` "
            f"(index {stack.get('index_url', '?')}).",
            code="ROCM-WINDOWS-HIP",
            role=REPAIRS_ENVIRONMENT,
        )
    ]


def _kernels_command(target: str, project: Project | None) -> str:
    """The command that installs ``target``'s kernels, in the project's words where known."""
    if project is None:
        return amd_windows.device_command(target)
    return kernels(project, target, amd_windows.device_arguments(target, project.stacks))


def invalid_image(
    error: str, recommendation: dict[str, Any] | None, project: Project | None
) -> tuple[str, str] | None:
    """(what was seen, the fix) for hipErrorInvalidImage, else None."""
    lowered = error.lower()
    if "invalidimage" not in lowered.replace(" ", "") and "invalid device image" not in lowered:
        return None
    target = gpu_target(recommendation, project) if project is not None else ""
    if not target:
        return (
            "Likely cause: the GPU kernels installed (device package) are not this GPU's.",
            "Find the GPU's gfx target (`hipInfo.exe`, or verify_install on the latest Adrenalin "
            f"driver), then `{_kernels_command('<target>', project)}` with it.",
        )
    command = _kernels_command(target, project)
    return (
        f"Likely cause: the GPU kernels installed are not this GPU's {target}.",
        f"Install this GPU's kernels in this environment: `{command}`",
    )
