"""Environment variables that choose which GPUs torch sees, when they leave it none.

CUDA_VISIBLE_DEVICES (and, for ROCm, HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES; for Intel
XPU, ZE_AFFINITY_MASK and ONEAPI_DEVICE_SELECTOR) hide every GPU they do not name; the system's
own lists (nvidia-smi, DXGI, sysfs) still show them all. So when torch sees no GPU of a kind
and one of its variables is set, that variable is what to look at first, not the driver.
Standard library only.
"""

from __future__ import annotations

import os
from typing import Mapping

# The variables each device kind's runtime reads, in the order the runtime applies them.
VARIABLES = {
    "cuda": ("CUDA_VISIBLE_DEVICES",),
    "rocm": ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"),
    "xpu": ("ONEAPI_DEVICE_SELECTOR", "ZE_AFFINITY_MASK"),
}
# An empty value hides every GPU only where the runtime documents it (CUDA, and HIP reading
# CUDA_VISIBLE_DEVICES); elsewhere an empty value leaves every GPU visible.
EMPTY_HIDES = {"CUDA_VISIBLE_DEVICES"}
# The device kind each GPU stack trains on (torch calls ROCm's devices "cuda" too).
TRAINS_ON = {
    "cuda": "cuda",
    "cuda-legacy": "cuda",
    "rocm": "cuda",
    "rocm-windows": "cuda",
    "xpu": "xpu",
}
# Why a backend is unusable, as the project's device discovery codes it
# (machinery/discovery.py's REASON_CODES, which a test keeps equal to these): the doctor
# chooses its advice by these codes, never by the reason's words.
NOT_INSTALLED = "not-installed"  # the backend's package is not installed (torch-directml)
NOT_BUILT = "not-built"  # this torch build has no support for it (a CPU-only torch: no CUDA)
NO_DEVICE = "no-device"  # the backend works but sees no GPU
NO_ROCM_DEVICE = "no-rocm-device"  # a ROCm build of torch works but sees no GPU
LIBRARY_MISSING = "library-missing"  # a system library it loads is missing (libd3d12.so)
LOAD_FAILED = "load-failed"  # its module failed to import for another reason
INIT_FAILED = "init-failed"  # it raised while starting or counting its GPUs (a broken driver)
SMOKE_FAILED = "smoke-failed"  # a device failed the smoke test (or could not be named)
CHECK_FAILED = "check-failed"  # the check itself failed, hung or crashed
REASON_CODES = (
    NOT_INSTALLED,
    NOT_BUILT,
    NO_DEVICE,
    NO_ROCM_DEVICE,
    LIBRARY_MISSING,
    LOAD_FAILED,
    INIT_FAILED,
    SMOKE_FAILED,
    CHECK_FAILED,
)
# The runtime whose variables can hide every GPU, by the code of a backend that saw none.
NONE_SEEN = {NO_DEVICE: "", NO_ROCM_DEVICE: "rocm"}


def hiding(kind: str, code: str, environ: Mapping[str, str] | None = None) -> list:
    """(variable, value) pairs set here that can hide every GPU of ``kind`` ("cuda", "xpu"),
    when torch saw none (``code``, the probe's); [] otherwise."""
    if code not in NONE_SEEN or kind not in VARIABLES:
        return []
    environ = os.environ if environ is None else environ
    runtime = NONE_SEEN[code] or kind
    found = []
    for variable in VARIABLES[runtime]:
        value = environ.get(variable)
        if value is None or names_the_first_gpu(value):
            continue
        if value.strip() or variable in EMPTY_HIDES:
            found.append((variable, value))
    return found


def names_the_first_gpu(value: str) -> bool:
    """Whether ``value`` lists GPU 0 first ("0", "0,1"): a GPU every machine with one has, so
    the variable hides nothing and a torch that sees no GPU has another cause (the driver).
    Other indices and UUIDs cannot be checked against the system's count here: still named."""
    first = value.split(",")[0].strip()
    return first.isdigit() and int(first) == 0


def shown(value: str) -> str:
    return "an empty value" if not value.strip() else repr(value)


def hidden_fix(stack: str, kind: str, code: str, environ: Mapping[str, str] | None = None) -> str:
    """The fix when a variable set here hides from torch every GPU of ``kind``, the kind the
    project's ``stack`` trains on; "" otherwise."""
    found = hiding(kind, code, environ) if TRAINS_ON.get(stack) == kind else []
    if not found:
        return ""
    named = " and ".join(f"{variable} is set to {shown(value)}" for variable, value in found)
    names = [variable for variable, _value in found]
    them = "it" if len(names) == 1 else "them"
    powershell = "; ".join(f"Remove-Item Env:{variable}" for variable in names)
    cmd = " & ".join(f"set {variable}=" for variable in names)
    return (
        f"{named} in this environment, and torch sees no GPU through {them}: unset {them} "
        f"(PowerShell: `{powershell}`; cmd: `{cmd}`; Linux and macOS: `unset {' '.join(names)}`) "
        "or name a GPU the system lists (indices count from 0), then run verify_install again."
    )
