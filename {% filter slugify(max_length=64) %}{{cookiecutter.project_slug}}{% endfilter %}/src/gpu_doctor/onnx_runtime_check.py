"""ONNX Runtime, when it is installed: its execution providers, and whether the best of them
really runs a model.

``get_available_providers()`` lists what the package was built with, not a device that works
(a DirectML build on a machine whose GPU driver is broken still lists DirectML), so the check
creates a session on the best provider and runs one small model, comparing its answer with
numpy's. Nothing here decides the verdict: training does not need ONNX Runtime.
Imports onnxruntime, onnx and numpy inside functions only (the doctor runs before they exist).
"""

from __future__ import annotations

import contextlib
from importlib import metadata
from typing import Any

from .bounded import describe_error
from .findings import OK, WARN, Finding
from .install_commands import reinstall_clean, this_project
from .project import project_module

CHECK = "ONNX Runtime"

CODES = {
    "ORT-OK": "ONNX Runtime runs a model on its best execution provider.",
    "ORT-PROVIDER-FAILED": "ONNX Runtime's best execution provider fails; the CPU answers.",
    "ORT-BROKEN": "ONNX Runtime is installed but does not import, run or compute right.",
    "ORT-TWO-PACKAGES": "Two ONNX Runtime packages in one environment: they break each other.",
    "ORT-UNCHECKED": "ONNX Runtime is installed, but onnx (to build the check's model) is not.",
}
PACKAGES = ("onnxruntime", "onnxruntime-directml", "onnxruntime-gpu", "onnxruntime-openvino")


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


def findings() -> list[Finding]:
    """One finding about ONNX Runtime, or none when it is not installed."""
    packages = installed_packages()
    if not packages:
        return []
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
