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

FORMAT = "lenet5-onnx"  # predict.FORMAT: the metadata mark of this project's exported models


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
        f'"{sys.executable}" -m pip install {package}, or install the project\'s environment '
        "file again (it lists it)."
    )


def load_predict() -> Any:
    """The package's ``predict`` module; OnnxRuntimeMissing when onnxruntime cannot load."""
    package = runtime_package()
    try:
        return importlib.import_module(f"{__package__.rpartition('.')[0]}.predict")
    except ModuleNotFoundError as error:
        if error.name not in ("onnxruntime", "numpy"):
            raise
        raise OnnxRuntimeMissing(missing(package)) from None
    except ImportError as error:  # installed, but its libraries do not load (a DLL, a wheel)
        raise OnnxRuntimeMissing(
            f"onnxruntime is installed but does not load ({' '.join(str(error).split())}). "
            f"Reinstall it: pip uninstall onnxruntime onnxruntime-directml, then pip install "
            f"{package}."
        ) from None


def open_model(path: Path, provider: str | None = None) -> Any:
    """``predict.Model`` for ``path`` on the best execution provider (or ``provider``)."""
    if not Path(path).is_file():
        package = __package__.rpartition(".")[0]
        raise OnnxError(
            f"There is no ONNX model at {path}. Export one from a checkpoint first: "
            f"python -m {package}.export (it writes model.onnx beside best.pt)."
        )
    predict = load_predict()
    try:
        return predict.Model(path, provider)
    except predict.ModelError as error:
        raise OnnxError(str(error)) from None


def describe(model: Any) -> str:
    """Who answers, in words: 'ONNX Runtime 1.32.0 on CPUExecutionProvider'."""
    import onnxruntime

    text = f"ONNX Runtime {onnxruntime.__version__} on {model.provider}"
    return f"{text} ({model.fallback})" if model.fallback else text
