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
# What each device kind's "none seen" reason starts with (machinery.devices' probes).
NONE_SEEN = {"cuda": "torch has", "xpu": "no Intel XPU"}


def hiding(kind: str, reason: str, environ: Mapping[str, str] | None = None) -> list:
    """(variable, value) pairs set here that can hide every GPU of ``kind`` ("cuda", "xpu"),
    when torch saw none (``reason``, the probe's); [] otherwise."""
    if not reason.startswith(NONE_SEEN.get(kind, "\0")):
        return []
    environ = os.environ if environ is None else environ
    runtime = "rocm" if kind == "cuda" and "ROCm" in reason else kind
    found = []
    for variable in VARIABLES[runtime]:
        value = environ.get(variable)
        if value is not None and (value.strip() or variable in EMPTY_HIDES):
            found.append((variable, value))
    return found


def shown(value: str) -> str:
    return "an empty value" if not value.strip() else repr(value)


def hidden_fix(stack: str, kind: str, reason: str, environ: Mapping[str, str] | None = None) -> str:
    """The fix when a variable set here hides from torch every GPU of ``kind``, the kind the
    project's ``stack`` trains on; "" otherwise."""
    found = hiding(kind, reason, environ) if TRAINS_ON.get(stack) == kind else []
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
