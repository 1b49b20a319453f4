"""Read digits with the exported model (model.onnx): ONNX Runtime and numpy, nothing else.

From the command line, on pictures (your model reads them as the drawing page does):

    python -m <package>.predict digit.png                  # the latest run's best.pt (torch)
    python -m <package>.predict digit.png --runtime onnx   # its model.onnx (ONNX Runtime)

Copy this file into your own program, install ``onnxruntime`` (``onnxruntime-directml`` on
Windows for DirectML) and ``numpy``, then:

    from predict import Model
    model = Model("model.onnx")               # the best execution provider this machine has
    print(model.provider)                     # which one answers, e.g. DmlExecutionProvider
    label, probabilities = model.predict(pixels)[0]   # pixels: uint8 (28, 28) or (N, 28, 28)

A plug-in execution provider, such as onnxruntime-qnn for a Snapdragon NPU, runs the model
when ``devices`` names its devices (the project's machinery/npu.py shows how to find them):

    model = Model("model.onnx", devices=npu_devices, device_options={"backend_type": "htp"})

The pixels are prepared like the training images: 28x28, a white digit on black, centred
(``datasets/handwriting.py`` shows how a drawing becomes one). The model file says how to
normalise them and what the classes are called, so nothing here is specific to MNIST.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

try:
    import onnxruntime as ort
except ModuleNotFoundError:  # `python -m ... predict` on the torch runtime needs none
    ort = None

FORMAT = "lenet5-onnx"  # written into the metadata by the project's export command
# Best first; ONNX Runtime packages contain some of these (onnxruntime-directml: DirectML).
PREFERRED = (
    "DmlExecutionProvider",
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "MIGraphXExecutionProvider",
    "OpenVINOExecutionProvider",
    "CoreMLExecutionProvider",
    "CPUExecutionProvider",
)
CPU = "CPUExecutionProvider"
INPUT_SHAPE = (1, 1, 28, 28)  # one grey 28x28 image: the input of every model export writes


class ModelError(ValueError):
    """The file is missing, damaged, or not a model exported by this project."""


def _need_onnx_runtime() -> None:
    if ort is None:
        raise ModelError(
            "ONNX Runtime is not installed: `pip install onnxruntime` (onnxruntime-directml on "
            "Windows for DirectML), or install the project's environment file, which names it."
        )


def best_provider(available: list[str] | None = None) -> str:
    """The first of PREFERRED that this ONNX Runtime package contains."""
    if available is None:
        _need_onnx_runtime()
        available = ort.get_available_providers()
    return next((name for name in PREFERRED if name in available), CPU)


class Model:
    """An exported model in one ONNX Runtime session. ``provider`` says who answers;
    ``fallback`` says why the CPU answers instead of a better provider ("" when it does not)."""

    def __init__(
        self,
        path: str | Path,
        provider: str | None = None,
        devices: list | None = None,
        device_options: dict[str, str] | None = None,
    ) -> None:
        """``devices``: the devices of one plug-in execution provider to try first
        (``ort.get_ep_devices()`` after ``ort.register_execution_provider_library``, such as
        onnxruntime-qnn's NPU), with ``device_options``, its provider options."""
        self.path = Path(path)
        if self.path.is_dir():
            raise ModelError(f"{self.path} is a folder: name the ONNX model in it.")
        if not self.path.is_file():
            raise ModelError(f"There is no ONNX model at {self.path}.")
        _need_onnx_runtime()
        self.devices, self.device_options = list(devices or []), dict(device_options or {})
        wanted = self.devices[0].ep_name if self.devices else provider or best_provider()
        self.fallback = ""
        try:
            self.session = self._session(wanted)
            self._run(np.zeros(self.shape, np.float32))  # a provider that loads may still fail
        except ModelError:
            raise
        except Exception as error:
            if wanted == CPU:
                raise self._damaged(error) from None
            self.fallback = f"{wanted} failed ({_one_line(error)}); the CPU answers instead"
            self.session = self._session(CPU)
        self.provider = self.session.get_providers()[0]
        if wanted != CPU and self.provider != wanted and not self.fallback:
            self.fallback = f"{wanted} did not start; the CPU answers instead"
        meta = self.session.get_modelmeta().custom_metadata_map
        self.classes, self.mean, self.std = self._preparation(meta)
        self.metadata = meta
        self._lock = threading.Lock()  # one Run at a time: DirectML sessions require it

    def _session(self, wanted: str) -> ort.InferenceSession:
        """A session on ``wanted`` (the CPU takes what it cannot run)."""
        options = ort.SessionOptions()
        if wanted == "DmlExecutionProvider":  # what DirectML requires; else ORT warns
            options.enable_mem_pattern = False
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        providers = [wanted, CPU] if wanted != CPU else [CPU]
        if self.devices and wanted == self.devices[0].ep_name:  # a plug-in: its own devices
            options.add_provider_for_devices(self.devices, self.device_options)
            providers = None  # given here, they would replace the devices
        try:
            session = ort.InferenceSession(str(self.path), options, providers=providers)
        except Exception as error:
            if wanted == CPU:
                raise self._damaged(error) from None
            raise
        inputs, outputs = session.get_inputs(), session.get_outputs()
        meta = session.get_modelmeta().custom_metadata_map
        if meta.get("format") != FORMAT or len(inputs) != 1 or len(outputs) != 1:
            raise ModelError(
                f"{self.path} is an ONNX model, but not one exported by this project's export "
                "command (its metadata does not say so); export your checkpoint again."
            )
        self.input, self.shape = inputs[0].name, tuple(inputs[0].shape)
        self.outputs = self._check_shapes(inputs[0], outputs[0])
        return session

    def _check_shapes(self, given, answer) -> int:
        """The number of outputs; ModelError for a model that takes anything but one grey
        28x28 image, or that answers anything but one row of float logits."""
        if self.shape != INPUT_SHAPE or given.type != "tensor(float)":
            raise ModelError(
                f"{self.path} takes {given.type} of shape {_shape(given.shape)}, not one grey "
                f"28x28 image (float {_shape(INPUT_SHAPE)}) as this project's models do; export "
                "your checkpoint again."
            )
        shape = tuple(answer.shape)
        if (
            len(shape) != 2
            or shape[0] != 1
            or not isinstance(shape[1], int)
            or shape[1] < 1
            or answer.type != "tensor(float)"
        ):
            raise ModelError(
                f"{self.path} answers {answer.type} of shape {_shape(shape)}, not one row of "
                "float logits (1, classes) as this project's models do; export your checkpoint "
                "again."
            )
        return shape[1]

    def _preparation(self, meta: dict[str, str]) -> tuple[list[str], float, float]:
        """The class names and the normalisation's mean and std from the metadata export
        writes; ModelError, saying which entry, where one is missing or damaged."""
        try:
            classes = json.loads(meta["class_names"])
        except (KeyError, ValueError, RecursionError):  # RecursionError: JSON nested too deep
            classes = None
        try:
            preparation = json.loads(meta["preparation"])
            mean, std = float(preparation["mean"]), float(preparation["std"])
        except (KeyError, TypeError, ValueError, OverflowError, RecursionError):
            mean = std = float("nan")
        problem = ""
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            problem = "its class_names entry is missing or not a JSON list of names"
        elif len(classes) != self.outputs:
            problem = f"it names {len(classes)} classes for its {self.outputs} outputs"
        elif not (np.isfinite(mean) and np.isfinite(std) and std > 0):
            problem = "its preparation entry is missing or gives no mean and positive std"
        if problem:
            raise ModelError(
                f"{self.path} is marked as exported by this project, but {problem}; export "
                "your checkpoint again."
            )
        return classes, mean, std

    def _damaged(self, error: Exception) -> ModelError:
        return ModelError(
            f"{self.path} cannot be read by ONNX Runtime: it is damaged or not an ONNX model "
            f"({_one_line(error)}). Export it again."
        )

    def _run(self, batch: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: batch})[0]

    def logits(self, inputs: np.ndarray) -> np.ndarray:
        """Normalised float32 (N, 1, 28, 28) -> logits (N, classes). The model's input shape
        is fixed (one image at a time), as DirectML prefers."""
        rows = [np.asarray(image, np.float32).reshape(self.shape) for image in inputs]
        with self._lock:
            if not rows:
                return np.zeros((0, len(self.classes)), np.float32)
            return np.concatenate([self._run(row) for row in rows])

    def normalise(self, pixels: np.ndarray) -> np.ndarray:
        """uint8 (28, 28) or (N, 28, 28), white on black -> the model's input (N, 1, 28, 28)."""
        images = np.asarray(pixels, np.float32).reshape(-1, 1, *self.shape[-2:])
        return (images / 255.0 - self.mean) / self.std

    def predict(self, pixels: np.ndarray) -> list[tuple[str, np.ndarray]]:
        """The class name and the probabilities of every class, for each image."""
        logits = self.logits(self.normalise(pixels))
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities = exp / exp.sum(axis=1, keepdims=True)
        return [(self.classes[int(row.argmax())], row) for row in probabilities]


def _shape(dims) -> str:
    """(1, 3, 32, 32); a dimension without a fixed size shows its name, or '?'."""
    shown = [str(d) if isinstance(d, (int, str)) else "?" for d in dims]
    return f"({', '.join(shown)})"


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


# python -m <package>.predict PICTURE: the project's command line (machinery/predict_command.py),
# which needs torch and the project's models: imported only here (no import statement), so that
# a copy of this file still needs nothing but onnxruntime and numpy.
if __name__ == "__main__":
    if not __package__:  # run as a file: the project's (PyCharm's arrow), or a copy
        try:
            script = __import__("machinery.script", fromlist=["run_as_module"])
        except ImportError:  # a copy, without the project beside it
            raise SystemExit(
                "This file is a module: `from predict import Model` in your program."
            ) from None
        script.run_as_module(__file__)
    help_first = __import__(f"{__package__}.machinery.quick_help", fromlist=["answer_help"])
    help_first.answer_help("predict")  # at once, before torch loads (seconds)
    command = __import__(f"{__package__}.machinery.predict_command", fromlist=["main"])
    raise SystemExit(command.main())
