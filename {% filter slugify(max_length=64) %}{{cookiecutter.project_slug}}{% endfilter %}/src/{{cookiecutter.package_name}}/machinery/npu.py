"""The NPU of a Snapdragon laptop (Qualcomm's Hexagon, "HTP") for the exported model, through
onnxruntime-qnn where it is installed (the environment files install it on Windows on ARM).

onnxruntime-qnn 2.x is a plug-in execution provider for ONNX Runtime 1.24.2 and later: its
package gives the plug-in's library (``get_library_path()``) and its name (``EP_NAME``,
"QNNExecutionProvider"); ONNX Runtime loads it with ``register_execution_provider_library``,
then ``get_ep_devices()`` lists the devices it serves, and a session takes the NPU with
``SessionOptions.add_provider_for_devices`` and the provider option ``backend_type=htp``. The
float32 model then runs in fp16 (``enable_htp_fp16_precision`` defaults to 1) and needs fixed
shapes, which export writes. Read in the onnxruntime-qnn 2.7.0 wheel (onnxruntime_qnn/
__init__.py) and its docs/execution_providers/QNN-ExecutionProvider.md (GitHub:
onnxruntime/onnxruntime-qnn).

Without onnxruntime-qnn nothing changes: the best provider of the ONNX Runtime package answers
(DirectML with onnxruntime-directml), and nothing is said.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from . import this_project

PLUGIN = "onnxruntime_qnn"  # the import name of the onnxruntime-qnn package
PROVIDER = "QNNExecutionProvider"  # onnxruntime_qnn.EP_NAME, if an older 2.x lacks it
HTP = {"backend_type": "htp"}  # the NPU; "gpu" would be the Adreno GPU, "cpu" Qualcomm's CPU
_registered: set[str] = set()  # ONNX Runtime refuses a second registration of one name


@dataclass
class Npu:
    """The NPU's devices to run on (empty where there is none) with their provider options,
    and ``why_not``: one sentence where onnxruntime-qnn is installed but the NPU cannot answer
    ("" where it can, or where onnxruntime-qnn is not installed)."""

    devices: list = field(default_factory=list)
    options: dict = field(default_factory=dict)
    why_not: str = ""


def find_npu(ort: Any) -> Npu:
    """Registers onnxruntime-qnn with ``ort`` (the onnxruntime module) once and returns the
    NPU devices it serves, or the reason there are none."""
    try:
        plugin = importlib.import_module(PLUGIN)
    except ModuleNotFoundError as error:
        if error.name == PLUGIN:
            return Npu()
        return Npu(why_not=f"onnxruntime-qnn does not load ({_one_line(error)})")
    except Exception as error:  # installed, but broken (a missing file, a wheel of another OS)
        return Npu(why_not=f"onnxruntime-qnn does not load ({_one_line(error)})")
    name = getattr(plugin, "EP_NAME", PROVIDER)
    if not hasattr(ort, "register_execution_provider_library"):
        return Npu(
            why_not=f"ONNX Runtime {ort.__version__} cannot load onnxruntime-qnn (it needs "
            f"1.24.2 or newer: {this_project.pip_command('install --upgrade onnxruntime')})"
        )
    try:
        _register(ort, name, plugin.get_library_path())
        devices = [d for d in ort.get_ep_devices() if d.ep_name == name and _is_npu(ort, d)]
    except Exception as error:
        reason = _one_line(error)
        return Npu(why_not=f"onnxruntime-qnn did not register with ONNX Runtime ({reason})")
    if not devices:
        return Npu(why_not="onnxruntime-qnn finds no NPU on this machine")
    return Npu(devices, dict(HTP))


def _register(ort: Any, name: str, library: str) -> None:
    """Registers the plug-in unless this process (or the program around it) already did."""
    if name in _registered or any(d.ep_name == name for d in ort.get_ep_devices()):
        return
    ort.register_execution_provider_library(name, library)
    _registered.add(name)


def _is_npu(ort: Any, device: Any) -> bool:
    return device.device.type == ort.OrtHardwareDeviceType.NPU


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."
