"""ONNX Runtime, when it is installed: its execution providers, and whether the best of them
really runs a model.

``get_available_providers()`` lists what the package was built with, not a device that works
(a DirectML build on a machine whose GPU driver is broken still lists DirectML), so the check
creates a session on the best provider and runs one small model, comparing its answer with
numpy's. Nothing here decides the verdict: training does not need ONNX Runtime.
On a Snapdragon laptop, onnxruntime-qnn's plug-in provider is registered and one model runs on
the NPU; on Windows 11 24H2 and later, Windows ML is offered as DirectML's successor.
Imports onnxruntime, onnx and numpy inside functions only (the doctor runs before they exist).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from importlib import metadata
from typing import Any

from . import os_info
from .bounded import describe_error
from .findings import NO_ACTION, OK, WARN, Finding, internal_error
from .install_commands import PYTHON_PIP, pip, reinstall_clean, this_project
from .os_info import OsInfo
from .project import project_module

CHECK = "ONNX Runtime"

CODES = {
    "ORT-OK": "ONNX Runtime runs a model on its best execution provider.",
    "ORT-PROVIDER-FAILED": "ONNX Runtime's best execution provider fails; the CPU answers.",
    "ORT-BROKEN": "ONNX Runtime is installed but does not import, run or compute right.",
    "ORT-TWO-PACKAGES": "Two ONNX Runtime packages in one environment: they break each other.",
    "ORT-UNCHECKED": "ONNX Runtime is installed, but onnx (to build the check's model) is not.",
    "ORT-NPU": "onnxruntime-qnn's provider is registered and runs a model on the NPU.",
    "ORT-NPU-UNAVAILABLE": "onnxruntime-qnn is installed, but no model runs on the NPU.",
    "ORT-WINDOWS-ML": "Windows ML, DirectML's successor for running models, fits this machine.",
}
# The distributions that install the import name onnxruntime (one per environment).
PACKAGES = (
    "onnxruntime",
    "onnxruntime-directml",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-windowsml",
)
# Qualcomm's plug-in provider for onnxruntime 1.24.2 and later (it installs onnxruntime_qnn).
QNN = "onnxruntime-qnn"
QNN_PROVIDER = "QNNExecutionProvider"
# The NPU computes a float32 model in float16 (enable_htp_fp16_precision): about 3 digits.
FLOAT16_TOLERANCE = 1e-2
# Windows ML fetches the vendors' providers on Windows 11 24H2 (build 26100) and later; its
# onnxruntime-windowsml wheels (1.27.1 to 1.30.0, win_amd64 and win_arm64) are cp311 to cp314.
WINDOWS_ML_BUILD = 26100
WINDOWS_ML_PYTHONS = ((3, 11), (3, 14))


def installed_packages() -> list[str]:
    """The ONNX Runtime distributions installed here, as 'name version'."""
    found = []
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found.append(f"{name} {metadata.version(name)}")
    return found


def tiny_model() -> tuple[bytes, Any, Any]:
    """A MatMul and a ReLU (opset 18) as ONNX bytes, an input, and numpy's answer for it."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    weights = (np.arange(64, dtype=np.float32).reshape(16, 4) - 30.0) / 16.0
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "check",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])],
        [onnx.numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8  # readable by every ONNX Runtime the environment files install
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(1, 16)
    return model.SerializeToString(), x, np.maximum(x @ weights, 0.0)


def run_once(ort: Any, provider: str) -> tuple[str, float]:
    """(the provider that answered, the largest difference from numpy) for one inference."""
    model, x, expected = tiny_model()
    providers = [provider, "CPUExecutionProvider"] if provider != "CPUExecutionProvider" else []
    session = ort.InferenceSession(model, providers=providers or ["CPUExecutionProvider"])
    (got,) = session.run(None, {"x": x})
    return session.get_providers()[0], float(abs(got - expected).max())


def findings(info: OsInfo | None = None, python: tuple[int, ...] | None = None) -> list[Finding]:
    """The ONNX Runtime area: the NPU's finding (when onnxruntime-qnn is installed), the
    package's, and Windows ML where it fits; none when ONNX Runtime is not installed.
    ``info``, ``python``: this machine and this Python unless a test describes others."""
    packages = installed_packages()
    if not packages:
        return []
    runtime = package_findings(packages)
    if runtime[0].code in ("ORT-TWO-PACKAGES", "ORT-BROKEN", "ORT-UNCHECKED"):
        return runtime
    try:
        npu = npu_findings()
        info = os_info.detect() if info is None else info
    except Exception as error:  # verify_install's report goes on
        return runtime + [internal_error(describe_error(error))]
    python = tuple(sys.version_info[:3]) if python is None else python
    working_npu = [finding for finding in npu if finding.code == "ORT-NPU"]
    offer = [] if working_npu else windows_ml_findings(info, python, packages)
    return npu + runtime + offer  # a working NPU speaks for the area first


def package_findings(packages: list[str]) -> list[Finding]:
    """One finding about the installed ONNX Runtime package: it runs a model on its best
    provider, or what is wrong with it."""
    if len(packages) > 1:
        return [
            Finding(
                CHECK,
                WARN,
                f"{' and '.join(packages)} are installed together: they share the import name "
                "onnxruntime, so the one installed last has overwritten the other's files.",
                f"Keep one: {reinstall_clean([p.split()[0] for p in packages], this_project())}.",
                code="ORT-TWO-PACKAGES",
            )
        ]
    try:
        import onnxruntime as ort

        providers = ort.get_available_providers()
        best = project_module("predict").best_provider(providers)  # the provider it will use
    except Exception as error:
        return [_broken(packages[0], f"does not import: {describe_error(error)}")]
    listed = ", ".join(providers)
    try:
        import onnx  # noqa: F401  (builds the check's model)
    except ImportError:
        return [
            Finding(
                CHECK,
                WARN,
                f"{packages[0]} lists {listed}; not run, because onnx (which builds the check's "
                "model and exports yours) is not installed.",
                "Install the environment file again: it names onnx.",
                code="ORT-UNCHECKED",
            )
        ]
    try:
        answered, difference = run_once(ort, best)
    except Exception as error:
        if best == "CPUExecutionProvider":
            return [_broken(packages[0], f"cannot run a model: {describe_error(error)}")]
        answered, difference, failure = "", 0.0, describe_error(error)
    else:
        failure = "" if answered == best else "it did not start"
    if failure:
        return [
            Finding(
                CHECK,
                WARN,
                f"{packages[0]} lists {listed}, but a session on {best} fails ({failure}); "
                "exported models run on the CPU instead.",
                "Update the GPU driver; for DirectML, make sure no other DirectML.dll sits in "
                "System32 or beside python.exe (the wheel brings its own).",
                code="ORT-PROVIDER-FAILED",
            )
        ]
    if difference > 1e-4:
        return [_broken(packages[0], f"computes wrong values on {best} (off by {difference:.1e})")]
    return [
        Finding(
            CHECK,
            OK,
            f"{packages[0]}: providers {listed}; one inference on {answered} gives numpy's answer.",
            code="ORT-OK",
            brief=f"{packages[0]} works ({answered.replace('ExecutionProvider', '')}).",
        )
    ]


def _broken(package: str, what: str) -> Finding:
    name = package.split()[0]
    return Finding(
        CHECK,
        WARN,
        f"{package} is installed but {what}. Exported models cannot run here.",
        f"Reinstall it: {reinstall_clean([name], this_project())}.",
        code="ORT-BROKEN",
    )


def npu_findings() -> list[Finding]:
    """onnxruntime-qnn's provider registered with ONNX Runtime, and one model run on the NPU
    it lists; none when onnxruntime-qnn is not installed."""
    if importlib.util.find_spec("onnxruntime_qnn") is None:
        return []
    package = f"{QNN} {_version(QNN)}"
    try:
        import onnxruntime as ort
        import onnxruntime_qnn

        package = f"{QNN} {getattr(onnxruntime_qnn, '__version__', '') or _version(QNN)}"
        provider, devices = qnn_devices(ort, onnxruntime_qnn)
    except Exception as error:
        return [_no_npu(f"{package} is installed, but {_registration_failure(error)}.")]
    npus = [device for device in devices if device.device.type == ort.OrtHardwareDeviceType.NPU]
    if not npus:
        listed = ", ".join(_device_name(device) for device in devices) or "no device"
        return [_no_npu(f"{package}: {provider} is registered but lists no NPU ({listed}).")]
    npu = _device_name(npus[0])
    try:
        difference, scale = run_on_device(ort, npus[0])
    except Exception as error:
        return [_no_npu(f"{package}: the {npu} fails to run a model: {describe_error(error)}.")]
    if difference > FLOAT16_TOLERANCE * scale:
        return [_no_npu(f"{package}: the {npu} computes wrong values (off by {difference:.1e}).")]
    return [
        Finding(
            CHECK,
            OK,
            f"{package}: {provider} is registered, and the {npu} runs one inference within "
            "float16 precision of numpy's answer (it computes a float32 model in float16).",
            code="ORT-NPU",
            brief=f"{package}: the NPU runs exported models.",
        )
    ]


def qnn_devices(ort: Any, qnn: Any) -> tuple[str, list[Any]]:
    """Register onnxruntime-qnn's library with ONNX Runtime (once: a second registration
    fails) and return its provider's name and the devices it lists (NPU, GPU, CPU)."""
    provider = getattr(qnn, "get_ep_name", lambda: QNN_PROVIDER)()
    if not hasattr(ort, "register_execution_provider_library"):
        raise LookupError(f"onnxruntime {getattr(ort, '__version__', '')} has no plug-in providers")

    def listed() -> list[Any]:
        return [device for device in ort.get_ep_devices() if device.ep_name == provider]

    if not listed():  # predict may have registered it in this process already
        ort.register_execution_provider_library(provider, qnn.get_library_path())
    return provider, listed()


def run_on_device(ort: Any, device: Any) -> tuple[float, float]:
    """(the largest difference from numpy's answer, the size of that answer) for one inference
    of the check's model on ``device`` (an OrtEpDevice)."""
    model, x, expected = tiny_model()
    options = ort.SessionOptions()
    options.add_provider_for_devices([device], {})
    session = ort.InferenceSession(model, sess_options=options)
    (got,) = session.run(None, {"x": x})
    return float(abs(got - expected).max()), max(1.0, float(abs(expected).max()))


def _device_name(device: Any) -> str:
    """'Qualcomm NPU' for an OrtEpDevice."""
    kind = getattr(device.device.type, "name", str(device.device.type))
    vendor = getattr(device.device, "vendor", "") or ""
    return f"{vendor} {kind}".strip()


def _registration_failure(error: Exception) -> str:
    if isinstance(error, LookupError):
        return f"{error}: onnxruntime-qnn 2 needs onnxruntime 1.24.2 or later"
    return f"ONNX Runtime cannot register its provider: {describe_error(error)}"


WINDOWS_ML_INSTALL = 'install "windowsml[with-ort]"'


def pip_of_this_project(arguments: str) -> str:
    """A pip command as this project's environment manager spells it."""
    project = this_project()
    return pip(project, arguments) if project else f"{PYTHON_PIP} {arguments}"


def _no_npu(found: str) -> Finding:
    return Finding(
        CHECK,
        WARN,
        f"{found} Exported models run on the CPU instead.",
        "On a Snapdragon laptop, install the laptop maker's current drivers (Windows Update > "
        "Optional updates: the NPU's driver comes with them), then run verify_install again. "
        f"On a machine without a Qualcomm NPU, {QNN} has nothing to run on: uninstall it "
        f"({pip_of_this_project(f'uninstall {QNN}')}).",
        code="ORT-NPU-UNAVAILABLE",
        brief=f"{QNN}: no model runs on the NPU.",
    )


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def windows_ml_findings(
    info: OsInfo, python: tuple[int, ...], packages: list[str]
) -> list[Finding]:
    """Windows ML as information where it fits: Windows 11 24H2 or later, a Python its wheels
    exist for, and not installed already. Nothing to do: the project's own runtime works."""
    low, high = WINDOWS_ML_PYTHONS
    fits = (
        info.is_windows
        and (info.windows_build or 0) >= WINDOWS_ML_BUILD
        and low <= tuple(python[:2]) <= high
        and not any(package.startswith("onnxruntime-windowsml ") for package in packages)
    )
    if not fits:
        return []
    installed = packages[0].split()[0]
    return [
        Finding(
            CHECK,
            OK,
            f"Windows ML fits this machine (Windows 11 build {info.windows_build}, Python "
            f"{python[0]}.{python[1]}): Microsoft's successor of DirectML for running models, "
            "with DirectML on every GPU (ARM64 included) and the vendors' own providers (Qualcomm "
            "QNN for the NPU, Intel OpenVINO, NVIDIA TensorRT-RTX, AMD), which it downloads.",
            "Nothing to do: exported models run with the environment's ONNX Runtime. To try "
            "Windows ML, in an environment of its own: "
            f"{pip_of_this_project(WINDOWS_ML_INSTALL)} (its "
            f"onnxruntime-windowsml replaces {installed}, never beside it; not with the "
            "Microsoft Store's Python).",
            code="ORT-WINDOWS-ML",
            role=NO_ACTION,
            brief="Windows ML fits here (DirectML's successor).",
        )
    ]
