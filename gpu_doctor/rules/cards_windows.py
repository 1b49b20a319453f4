"""Rules about the GPUs of a Windows machine (DXGI's list): a GPU without its driver, only the
software adapter, an integrated GPU for DirectML, no NVIDIA GPU for CUDA, an AMD GPU's gfx
target (``rocm_windows``), a Qualcomm Adreno (Windows on ARM: the CPU trains, the NPU runs the
exported model)."""

from __future__ import annotations

from ..findings import NO_ACTION, OK, WARN, Finding
from ..gpus import INTEGRATED, NVIDIA, QUALCOMM, Gpu, GpuScan
from ..nvidia import CUDA_STACKS
from ..project import Project
from .drivers import DRIVER_DOWNLOADS
from .environment import stack_files
from .rocm_windows import target_findings

CODES = {
    "GPU-NO-DRIVER": "A GPU runs on Windows' basic display driver: its driver is missing.",
    "GPU-SOFTWARE-ONLY": "Only a software adapter: no DirectX 12 GPU driver is active.",
    "GPU-INTEGRATED-ONLY": "Only an integrated GPU for DirectML.",
    "GPU-INTEGRATED-AND-DISCRETE": "Integrated and discrete GPUs side by side.",
    "GPU-NO-NVIDIA": "A CUDA stack on a machine without an NVIDIA GPU.",
    "GPU-ADRENO": "A Qualcomm Adreno: training runs on the CPU; the NPU runs exported models.",
}


def check(project: Project, scan: GpuScan, best: str = "") -> list[Finding]:
    """After the list of GPUs: missing drivers, no GPU, and which GPU the stack uses.
    ``best``: the recommended stack; when it is another, the Environment line is the advice."""
    hardware = scan.hardware
    findings = []
    no_driver = [gpu for gpu in scan.software if gpu.vendor_id in DRIVER_DOWNLOADS]
    for gpu in no_driver:
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"A {gpu.vendor} GPU (PCI id 0x{gpu.device_id or 0:04x}) runs on '{gpu.name}': "
                "its driver is not installed, so DirectX 12 cannot use it.",
                f"Install the driver with {DRIVER_DOWNLOADS[gpu.vendor_id or -1]}, then restart.",
                code="GPU-NO-DRIVER",
            )
        )
    accelerator = project.accelerator
    findings += target_findings(project, hardware)
    if not hardware:
        software = [gpu.name for gpu in scan.software if gpu not in no_driver]
        if software:
            findings.append(
                Finding(
                    "GPU",
                    WARN if accelerator != "cpu" else OK,
                    f"Only the software adapter ({', '.join(software)}) was found: no DirectX 12 "
                    "GPU driver is active, so training runs on the CPU.",
                    "Install the GPU maker's driver (Windows Update > Optional updates, or the "
                    "maker's site). In a virtual machine or a Remote Desktop session there is "
                    "usually no GPU: run on the machine itself."
                    if accelerator != "cpu"
                    else "",
                    code="GPU-SOFTWARE-ONLY",
                    brief="Only the software adapter: no GPU driver is active.",
                )
            )
        elif not scan.problems and not no_driver:
            findings.append(
                Finding(
                    "GPU",
                    WARN if accelerator != "cpu" else OK,
                    "No display adapter found.",
                    code="GPU-NONE",
                )
            )
        return findings
    adreno = [gpu for gpu in hardware if gpu.vendor_id == QUALCOMM]
    if adreno:  # Windows on ARM: the Environment line names the cpu environment
        return findings + [_adreno(gpu, project) for gpu in adreno]
    if accelerator == "directml":
        if all(gpu.kind == INTEGRATED for gpu in hardware) and best in ("", "directml"):
            names = ", ".join(gpu.name for gpu in hardware)
            findings.append(
                Finding(
                    "GPU",
                    WARN,
                    f"Only an integrated GPU ({names}): DirectML runs on it, but it shares "
                    "memory with the CPU and is often no faster than the CPU for a model as "
                    "small as LeNet.",
                    f"Nothing to install. Compare with `python -m {project.package_name}.benchmark`"
                    " and train with `--device cpu` if the CPU is faster.",
                    code="GPU-INTEGRATED-ONLY",
                    role=NO_ACTION,
                )
            )
        elif any(gpu.kind == INTEGRATED for gpu in hardware):
            findings.append(
                Finding(
                    "GPU",
                    OK,
                    "Integrated and discrete GPUs: DirectML's device 0 is often the integrated "
                    "one; the project picks a discrete GPU by name (override with --device).",
                    code="GPU-INTEGRATED-AND-DISCRETE",
                )
            )
    elif accelerator in CUDA_STACKS and not any(gpu.vendor_id == NVIDIA for gpu in hardware):
        findings.append(
            Finding(
                "GPU",
                WARN,
                "No NVIDIA GPU: the CUDA build of torch trains on the CPU here.",
                "For an AMD or Intel GPU on Windows, create the directml "
                f"environment ({stack_files('directml')}) and train in it.",
                code="GPU-NO-NVIDIA",
            )
        )
    elif accelerator == "cpu":
        findings.append(
            Finding(
                "GPU",
                OK,
                "The cpu environment leaves these GPUs unused: the directml environment trains "
                f"on any DirectX 12 GPU ({stack_files('directml')}), the cuda environment on "
                "an NVIDIA GPU.",
                code="GPU-UNUSED",
            )
        )
    return findings


def _adreno(gpu: Gpu, project: Project) -> Finding:
    """What a Snapdragon laptop's GPU and NPU are used for: PyTorch trains on neither."""
    found = (
        f"{gpu.name} (Windows on ARM): no PyTorch backend trains on the Adreno GPU or the "
        "Hexagon NPU, so training runs on the CPU (PyTorch's native ARM64 build). The NPU runs "
        "the exported model: ONNX Runtime with onnxruntime-qnn (`python -m "
        f"{project.package_name}.predict <picture> --runtime onnx`)."
    )
    if project.accelerator == "directml":
        found += (
            " DirectML reaches the Adreno only through an emulated x64 Python, on the frozen "
            "torch 2.4.1: experimental."
        )
    return Finding("GPU", OK, found, code="GPU-ADRENO", brief=f"{gpu.name}: not for training.")
