"""The stable code of every finding, and the version of verify_install's ``--json`` report.

A finding's wording may change between versions of the project; its code does not. Scripts
and ``doctor.reports`` group a room's reports by code. docs/report.md lists the same codes in a
table and a test keeps the two equal: add a code here and there together, never rename one.
Standard library only (the project generator's hook imports the doctor before torch exists).
"""

from __future__ import annotations

# 2: codes on findings, template_version, created, home folder written as "~".
SCHEMA_VERSION = 2

CODES: dict[str, str] = {
    # Python
    "PY-OK": "This Python's version is supported by the active stack.",
    "PY-UNSUPPORTED": "This Python's version is outside the active stack's range.",
    "PY-NOT-64BIT": "A 32-bit Python: PyTorch ships 64-bit wheels only.",
    "PY-GENERATOR-OTHER": "The generator runs on a Python the stack does not support (hook only).",
    "PY-GENERATOR-ENV": "The generator's Python differs from the environment's (hook only).",
    # Operating system
    "OS-OK": "The operating system runs the active stack.",
    "OS-WSL1": "WSL 1 has no GPU access.",
    "OS-WSL2-NO-GPU": "WSL2 without /dev/dxg or libd3d12.so: no GPU reaches the stack.",
    "OS-LINUX-NO-DIRECTML": "Plain Linux: DirectML needs Windows or WSL2.",
    "OS-WINDOWS-BUILD-UNKNOWN": "The Windows build number could not be read.",
    "OS-WINDOWS-TOO-OLD": "Windows older than DirectML's minimum build.",
    "OS-ARM64-PYTHON": "An ARM64 Python on Windows: torch-directml has x64 wheels only.",
    "OS-INTEL-MAC": "An Intel Mac (or x86_64 Python on a Mac): no current PyTorch wheels.",
    "OS-MACOS-MPS": "macOS: the project trains through MPS instead of its GPU stack.",
    "OS-UNSUPPORTED": "An operating system PyTorch publishes no wheels for.",
    # GPUs and drivers
    "GPU-FOUND": "A GPU, as the system reports it.",
    "GPU-QUERY-FAILED": "The GPUs could not be listed.",
    "GPU-QUERY-PARTLY-FAILED": "Part of the GPU query failed.",
    "GPU-NO-DRIVER": "A GPU runs on Windows' basic display driver: its driver is missing.",
    "GPU-SOFTWARE-ONLY": "Only a software adapter: no DirectX 12 GPU driver is active.",
    "GPU-NONE": "No GPU for compute.",
    "GPU-INTEGRATED-ONLY": "Only an integrated GPU for DirectML.",
    "GPU-INTEGRATED-AND-DISCRETE": "Integrated and discrete GPUs side by side.",
    "GPU-NO-NVIDIA": "A CUDA stack on a machine without an NVIDIA GPU.",
    "GPU-UNUSED": "The active stack leaves this GPU unused.",
    "GPU-CUDA-OK": "An NVIDIA GPU that CUDA trains on.",
    "GPU-NVIDIA-NO-DRIVER": "An NVIDIA GPU without NVIDIA's kernel driver (nouveau or none).",
    "GPU-AMD-LEGACY-DRIVER": "An AMD GPU on the legacy 'radeon' driver: no ROCm.",
    "GPU-AMD-NO-ROCM-BUILD": "An AMD GPU on Linux, but the installed torch is no ROCm build.",
    "GPU-AMD-ROCM-SUPPORTED": "The AMD GPU's gfx target is among the ROCm build's targets.",
    "GPU-AMD-ROCM-OVERRIDE": "The gfx target is not supported; a close one runs it (unofficial).",
    "GPU-AMD-ROCM-UNSUPPORTED": "The gfx target is not supported, and no close target is.",
    "GPU-AMD-NO-ACCESS": "This user cannot open /dev/kfd or the GPU's render node.",
    "GPU-WINDOWS-ROCM-PREVIEW": "A Radeon RX 7000/9000 on Windows: AMD's ROCm preview exists.",
    "GPU-INTEL-NO-XPU-BUILD": "An Intel GPU on Linux, but the installed torch is no XPU build.",
    "GPU-WSL2-SHARED": "WSL2 shares the Windows driver's GPUs through /dev/dxg.",
    "DRIVER-OLD": "A GPU driver several years old.",
    "DRIVER-TOO-OLD-FOR-CUDA": "An NVIDIA driver older than the CUDA build of torch needs.",
    # Which environment
    "ENV-BEST": "The active environment is the best one for this machine.",
    "ENV-OTHER-BEST": "Another stack's environment fits this machine better.",
    "ENV-UNKNOWN": "No recommendation: the GPUs could not be listed.",
    # Installed packages
    "PKG-OK": "A pinned package is installed at its pinned version.",
    "PKG-MISSING": "A pinned package is not installed.",
    "PKG-VERSION": "A pinned package is installed at another version.",
    "TORCH-BUILD-OK": "The installed torch is the build the active stack installs.",
    "TORCH-WRONG-BUILD": "The installed torch is another stack's build (CUDA in an xpu env).",
    "TORCH-NOT-IN-THIS-PYTHON": "torch is not importable in this Python.",
    "TORCH-DLL": "torch is installed but its libraries do not load.",
    "TORCH-IMPORT-FAILED": "torch is installed but fails to import.",
    "REQUIREMENT-MISSING": "A package the project's code imports is not installed.",
    "PROJECT-MODULE-MISSING": "A module of the project itself is missing.",
    "PROJECT-IMPORT-FAILED": "The project's code fails to import.",
    "PROJECT-UNREADABLE": "project.json could not be read.",
    # Devices and the run on the device
    "DEVICE-FOUND": "A device torch can train on.",
    "DEVICE-NOT-HERE": "Backends this machine or build does not have (one line for all).",
    "DEVICE-UNAVAILABLE-DIRECTML": "DirectML is unavailable, with the reason.",
    "DEVICE-UNAVAILABLE-CUDA": "CUDA (or ROCm) is unavailable, with the reason.",
    "DEVICE-UNAVAILABLE-XPU": "Intel XPU is unavailable, with the reason.",
    "DEVICE-UNAVAILABLE-MPS": "Apple MPS is unavailable, with the reason.",
    "DEVICE-DISCOVERY-FAILED": "Listing the devices failed.",
    "DEVICE-NOT-AVAILABLE": "The device asked for with --device is not available.",
    "DEVICE-CHOSEN": "The device training would use.",
    "ROCM-INVALID-DEVICE-FUNCTION": "ROCm has no kernels for this GPU's gfx target.",
    "SMOKE-TEST-OK": "LeNet forward and backward agree with the CPU.",
    "SMOKE-TEST-WRONG": "LeNet on the device computes wrong or non-finite values.",
    "SMOKE-TEST-ERROR": "LeNet forward and backward raised an error on the device.",
    "TRAIN-STEP-ERROR": "One training step raised an error on the device.",
    "TRAIN-STEP-WARNINGS": "Warnings during the training step.",
    "CPU-FALLBACK-NONE": "No operator fell back to the CPU.",
    "CPU-FALLBACK-OPERATORS": "Operators of the training step ran on the CPU instead.",
    "TIMING-STEP": "The time of one training step.",
    "TIMING-CPU-FASTER": "The CPU is faster than the device for this model.",
    # ONNX Runtime (exported models; training does not need it)
    "ORT-OK": "ONNX Runtime runs a model on its best execution provider.",
    "ORT-PROVIDER-FAILED": "ONNX Runtime's best execution provider fails; the CPU answers.",
    "ORT-BROKEN": "ONNX Runtime is installed but does not import, run or compute right.",
    "ORT-TWO-PACKAGES": "Two ONNX Runtime packages in one environment: they break each other.",
    "ORT-UNCHECKED": "ONNX Runtime is installed, but onnx (to build the check's model) is not.",
    "INTERNAL-ERROR": "A check failed unexpectedly (a bug to report).",
}
