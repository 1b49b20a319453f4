"""Rules about the GPUs of a Linux machine (sysfs, lspci): NVIDIA and its kernel driver, AMD
and ROCm (the gfx target and device access are ``rocm``'s), Intel and the XPU build, WSL2's
shared GPUs, no GPU at all."""

from __future__ import annotations

from .. import amd_linux, nvidia
from ..findings import INSTALLS_BACKEND, NO_ACTION, OK, WARN, Finding
from ..gpus import AMD, INTEL, NVIDIA, Gpu, GpuScan, is_intel_arc
from ..os_info import OsInfo
from ..project import Project
from . import cuda, rocm
from .environment import OTHER_BEST, stack_files

CODES = {
    "GPU-CUDA-OK": "An NVIDIA GPU that CUDA trains on.",
    "GPU-NVIDIA-NO-DRIVER": "An NVIDIA GPU without NVIDIA's kernel driver (nouveau or none).",
    "GPU-AMD-LEGACY-DRIVER": "An AMD GPU on the legacy 'radeon' driver: no ROCm.",
    "GPU-AMD-NO-ROCM-BUILD": "An AMD GPU on Linux, but the installed torch is no ROCm build.",
    "GPU-INTEL-NO-XPU-BUILD": "An Intel GPU on Linux, but the installed torch is no XPU build.",
    "GPU-WSL2-SHARED": "WSL2 shares the Windows driver's GPUs through /dev/dxg.",
}


def _backend_fix(project: Project, stack: str, best: str) -> str:
    """The fix of an AMD or Intel GPU line whose stack (rocm, xpu) this torch is not: the
    environment of that stack, the same one the Environment line recommends."""
    pins = project.stacks.get(stack, {}).get("pins", {})
    torch = f" torch {pins['torch']}" if "torch" in pins else ""
    what = {"rocm": "ROCm", "xpu": "XPU"}[stack]
    if best == stack:
        return (
            f"Use the {stack} environment, as the Environment fix says: it installs PyTorch's "
            f"{what} build{torch} ({stack_files(stack)})."
        )
    return ""


def _no_backend(found: str, brief: str, fix: str, code: str, gpu_stack: bool) -> Finding:
    """A GPU whose stack this environment's torch is not: a warning where there is a fix, which
    installs that stack by following the Environment fix (it creates that environment)."""
    return Finding(
        "GPU",
        WARN if gpu_stack and fix else OK,
        found,
        fix,
        code=code,
        brief=brief + (": the CPU trains." if gpu_stack else "."),
        role=INSTALLS_BACKEND if fix else "",
        follows=OTHER_BEST if fix else "",
    )


def check(project: Project, info: OsInfo, scan: GpuScan, best: str) -> list[Finding]:
    """After the list of GPUs: per GPU, the stack that trains on it and whether this
    environment's torch is that stack; then no GPU at all. ``best``: the recommended stack."""
    hardware = scan.hardware
    findings: list[Finding] = []
    accelerator = project.accelerator
    gpu_stack = accelerator != "cpu"
    x86 = info.machine.lower() in ("x86_64", "amd64")
    amdgpu = False
    for gpu in hardware:
        if gpu.vendor_id == NVIDIA:
            findings += _linux_nvidia(project, gpu, x86)
        elif gpu.vendor_id == AMD and gpu.driver == "radeon":
            findings.append(
                Finding(
                    "GPU",
                    WARN if gpu_stack else OK,
                    f"{gpu.name} runs on the legacy 'radeon' kernel driver: ROCm needs 'amdgpu', "
                    "so training runs on the CPU.",
                    "Nothing to install: this older GPU is not supported by ROCm."
                    if gpu_stack and best == accelerator
                    else "",
                    code="GPU-AMD-LEGACY-DRIVER",
                    role=NO_ACTION,
                )
            )
        elif gpu.vendor_id == AMD:
            amdgpu = True
            support = amd_linux.support_of(project, gpu.gfx_target)
            findings += rocm.target_findings(project, gpu, support)
            if accelerator != "rocm" and support.status != amd_linux.UNSUPPORTED:
                fix = _backend_fix(project, "rocm", best)
                found = (
                    f"{gpu.name}: AMD GPUs on Linux train through ROCm, which this "
                    "environment's torch does not include"
                    + (", so training runs on the CPU." if gpu_stack else ".")
                )
                brief = "AMD GPU, but this torch has no ROCm"
                findings.append(_no_backend(found, brief, fix, "GPU-AMD-NO-ROCM-BUILD", gpu_stack))
        elif gpu.vendor_id == INTEL and accelerator != "xpu":
            fix = _backend_fix(project, "xpu", best) if is_intel_arc(gpu) else ""
            found = (
                f"{gpu.name}: Intel GPUs on Linux train through PyTorch's XPU build, which "
                "this environment's torch is not"
                + (", so training runs on the CPU." if gpu_stack else ".")
                + (
                    ""
                    if is_intel_arc(gpu)
                    else " The XPU build supports Arc and Core Ultra graphics, not this one."
                )
            )
            brief = "Intel GPU, but this torch is no XPU build"
            findings.append(_no_backend(found, brief, fix, "GPU-INTEL-NO-XPU-BUILD", gpu_stack))
    if amdgpu and (accelerator == "rocm" or best == "rocm"):
        findings += rocm.access_findings(project, scan)
    if not hardware and not scan.problems:
        if info.wsl == 2 and info.dxg:
            findings.append(
                Finding(
                    "GPU",
                    OK,
                    "WSL2 shares the Windows driver's GPUs through /dev/dxg; they have no "
                    "/sys/class/drm entry. verify_install lists what PyTorch finds.",
                    code="GPU-WSL2-SHARED",
                )
            )
        else:
            display = [gpu.name for gpu in scan.gpus if gpu not in hardware]
            seen = f" (display only: {', '.join(display)})" if display else ""
            fix, role, follows = "", "", ""
            if not gpu_stack:
                pass
            elif best != accelerator:
                fix = (
                    f"Train on the CPU with the {best} environment, as the Environment fix says. "
                    "For GPU training, use a machine with an NVIDIA GPU (the cuda environment), "
                    "or Windows with any DirectX 12 GPU (the directml environment)."
                )
                follows = OTHER_BEST
            else:
                fix = (
                    "Nothing to install: the CPU trains, only slower. For GPU training use a "
                    "machine with an NVIDIA GPU (the cuda environment), or Windows with any "
                    "DirectX 12 GPU (the directml environment)."
                )
                role = NO_ACTION
            findings.append(
                Finding(
                    "GPU",
                    WARN if gpu_stack else OK,
                    f"No GPU for compute found{seen}: training runs on the CPU.",
                    fix,
                    code="GPU-NONE",
                    brief="No GPU for compute found: training runs on the CPU.",
                    role=role,
                    follows=follows,
                )
            )
    return findings


def _linux_nvidia(project: Project, gpu: Gpu, x86: bool) -> list[Finding]:
    if gpu.driver not in ("nvidia", ""):
        return [
            Finding(
                "GPU",
                WARN,
                f"{gpu.name} runs on the '{gpu.driver}' kernel driver: CUDA needs NVIDIA's "
                "driver, so training runs on the CPU.",
                "Install NVIDIA's driver (Ubuntu: `sudo ubuntu-drivers install`), reboot, and "
                "check that `nvidia-smi` lists the GPU.",
                code="GPU-NVIDIA-NO-DRIVER",
                brief=f"NVIDIA GPU on the '{gpu.driver}' driver: CUDA needs NVIDIA's.",
            )
        ]
    if gpu.driver == "" and gpu.source.startswith("/sys"):
        return [
            Finding(
                "GPU",
                WARN,
                f"{gpu.name} has no kernel driver loaded: CUDA cannot use it.",
                "Install NVIDIA's driver (Ubuntu: `sudo ubuntu-drivers install`) and reboot.",
                code="GPU-NVIDIA-NO-DRIVER",
                brief="NVIDIA GPU with no kernel driver: CUDA cannot use it.",
            )
        ]
    if project.accelerator in nvidia.CUDA_STACKS:
        if not cuda.runs(project, gpu):
            return []  # the compute capability's warning (rules/cuda.py) says it
        capability = nvidia.capability_of(gpu)
        said = f" (compute capability {capability})" if capability else ""
        return [Finding("GPU", OK, f"{gpu.name}: CUDA trains on it{said}.", code="GPU-CUDA-OK")]
    if project.accelerator == "directml" and x86:
        torch = project.pins.get("torch", "")
        return [
            Finding(
                "GPU",
                OK,
                f"{gpu.name}: PyPI's torch {torch} for Linux includes CUDA, so this project "
                "trains on it through CUDA instead of DirectML.",
                code="GPU-CUDA-OK",
            )
        ]
    return [
        Finding(
            "GPU",
            OK,
            f"The {project.accelerator} environment leaves {gpu.name} unused; the cuda "
            f"environment ({stack_files('cuda')}) trains on it.",
            code="GPU-UNUSED",
        )
    ]
