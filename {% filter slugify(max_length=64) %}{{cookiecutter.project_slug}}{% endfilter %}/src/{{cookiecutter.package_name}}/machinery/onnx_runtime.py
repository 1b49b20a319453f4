"""ONNX Runtime for the project's commands (export, evaluate --onnx, draw --runtime onnx).

``predict.py`` is the learner's copyable file and needs only onnxruntime and numpy; this
module loads it with one clear sentence when a package is missing or a model file is wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..model import NUM_CLASSES
from . import npu, this_project
from .checkpoints import BEST, LAST
from .terminal_text import printable

FORMAT = "lenet5-onnx"  # predict.FORMAT: the metadata mark of this project's exported models
ONNX_NAME = "model.onnx"  # what export writes beside a checkpoint unless told another name


class OnnxError(Exception):
    """A problem the user can fix: ONNX Runtime missing, a model file that is wrong."""


class OnnxRuntimeMissing(OnnxError):
    """onnxruntime (or onnx, for export) is not installed in this Python."""


def runtime_package() -> str:
    """The ONNX Runtime package for this environment: the DirectML build on Windows where the
    DirectML stack is installed, else the plain one (never both: they share one import name)."""
    if sys.platform == "win32" and importlib.util.find_spec("torch_directml") is not None:
        return "onnxruntime-directml"
    return "onnxruntime"


def missing(package: str) -> str:
    """The sentence for a missing package, with the command that installs it here."""
    return (
        f"{package} is not installed in this Python ({sys.executable}). Install it with "
        f"{this_project.pip_command(f'install {package}')}, or install the project's "
        "environment file again (it lists it)."
    )


def load_predict() -> Any:
    """The package's ``predict`` module; OnnxRuntimeMissing when onnxruntime cannot load."""
    package = runtime_package()
    try:
        predict = importlib.import_module(f"{__package__.rpartition('.')[0]}.predict")
        if predict.ort is None:  # predict imports without ONNX Runtime, for the torch runtime
            raise OnnxRuntimeMissing(missing(package))
        return predict
    except ModuleNotFoundError as error:
        if error.name not in ("onnxruntime", "numpy"):
            raise
        raise OnnxRuntimeMissing(missing(package)) from None
    except ImportError as error:  # installed, but its libraries do not load (a DLL, a wheel)
        raise OnnxRuntimeMissing(
            f"onnxruntime is installed but does not load ({' '.join(str(error).split())}). "
            "Reinstall it: "
            f"{this_project.pip_command('uninstall onnxruntime onnxruntime-directml')}, then "
            f"{this_project.pip_command(f'install {package}')}."
        ) from None


def export_command(model: Path) -> str:
    """The export command that writes ``model``: from the checkpoint beside it (best.pt, else
    last.pt), so that the advice names this run and not the latest one."""
    model = Path(model)
    package = __package__.rpartition(".")[0]
    beside = [model.with_name(name) for name in (BEST, LAST)]
    checkpoint = next((str(path) for path in beside if path.is_file()), "CHECKPOINT.pt")
    command = f"python -m {package}.export --checkpoint {checkpoint}"
    if model.name != ONNX_NAME:  # export writes model.onnx beside the checkpoint by default
        command += f" --output {model}"
    return printable(command, None)


def open_model(path: Path, provider: str | None = None) -> Any:
    """``predict.Model`` for ``path`` on the best execution provider (or ``provider``), one
    with this project's ten outputs (model.NUM_CLASSES). The best is a Snapdragon's NPU where
    onnxruntime-qnn is installed (machinery/npu.py); its ``fallback`` says why it is not."""
    if Path(path).is_dir():
        raise OnnxError(
            f"{printable(path, None)} is a folder: name the model in it, such as "
            f"{printable(Path(path) / ONNX_NAME, None)}."
        )
    if not Path(path).is_file():
        raise OnnxError(
            f"There is no ONNX model at {printable(path, None)}. Export one from a checkpoint "
            f"first: {export_command(path)}"
        )
    predict = load_predict()
    found = npu.find_npu(predict.ort) if provider is None else npu.Npu()
    try:
        model = predict.Model(path, provider, found.devices, found.options)
    except predict.ModelError as error:  # it may quote names from the file: shown escaped
        raise OnnxError(printable(str(error), None)) from None
    if found.why_not and not model.fallback:
        answers = "the CPU" if model.provider == predict.CPU else model.provider
        model.fallback = f"{found.why_not}; {answers} answers instead"
    if model.outputs != NUM_CLASSES:
        raise OnnxError(
            f"{printable(path, None)} has {model.outputs} outputs, not the {NUM_CLASSES} of this "
            "project's LeNet-5 (model.NUM_CLASSES); export your checkpoint again."
        )
    return model


def describe(model: Any) -> str:
    """Who answers, in words: 'ONNX Runtime 1.32.0 on CPUExecutionProvider'."""
    import onnxruntime

    text = f"ONNX Runtime {onnxruntime.__version__} on {model.provider}"
    return f"{text} ({model.fallback})" if model.fallback else text
