"""Draw a digit and watch your trained model read it, on the device it trained on.

    python -m <package>.draw                       # the latest run's best.pt; opens the browser
    python -m <package>.draw --checkpoint runs/<run>/last.pt --device cpu --no-browser
    python -m <package>.draw --runtime onnx        # the exported model.onnx, run by ONNX Runtime

Starts a page on this computer only (http://127.0.0.1:<free port>/): draw with the mouse, a
finger or a pen; the ten probabilities update as you draw, next to the 28x28 image the model
receives. A switch shows what the model answers without MNIST's preparation (see
``datasets/handwriting.py``). Ctrl+C stops it.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

if __name__ == "__main__":  # --help answers at once, before torch loads (seconds)
    from .machinery.quick_help import answer_help

    answer_help("draw")

import io
import sys
import threading
import time
import webbrowser
from pathlib import Path

import torch

from . import data
from .datasets import handwriting
from .machinery import checkpoints, devices, onnx_runtime, parsers, run_folders
from .machinery.command_entry import command
from .machinery.page_server import PageServer, RequestError
from .machinery.terminal_text import printable
from .model import LeNet5, to_device

PAGE = Path(__file__).with_name("draw.html")
ONNX_NAME = "model.onnx"  # export.ONNX_NAME (export imports onnx, not needed here)
MAX_SIDE = 560  # pixels; the page sends 280x280, a bigger image is refused before decoding
# Pictures decoded at once; other requests wait their turn. Each decode holds a few copies of
# the picture: fifty at once (a page left open in many tabs, a script) took gigabytes.
DECODES_AT_ONCE = 2
_decoding = threading.BoundedSemaphore(DECODES_AT_ONCE)


class DrawError(Exception):
    """A problem the user can fix (no trained model yet, no such device)."""


class Reader:
    """One model on one device, shared by every request: one at a time reads with it."""

    def __init__(
        self,
        model: torch.nn.Module,
        device: devices.DeviceOption,
        classes: list[str] | None = None,
    ) -> None:
        self.model = model.eval()
        self.device = device
        # What each output means: a folder's class names, or the digits.
        self.classes = list(classes) if classes else [str(d) for d in range(10)]
        self._lock = threading.Lock()  # a DirectML or CUDA queue is not for concurrent callers

    def read(self, canvas: torch.Tensor) -> dict:
        """Probabilities for the drawing ``canvas`` (uint8 (H, W), dark on light), prepared
        like MNIST and as drawn, with the 28x28 images the model received."""
        started = time.perf_counter()
        if not handwriting.has_ink(canvas):
            return {"empty": True, "device": self.who_answers(), "classes": self.classes}
        images = torch.stack(
            [handwriting.prepare_like_mnist(canvas), handwriting.shrink_as_drawn(canvas)]
        )
        probabilities = self.probabilities(images[:, None])
        answer = {"empty": False, "device": self.who_answers(), "classes": self.classes}
        for key, image, row in zip(("prepared", "as_drawn"), images, probabilities):
            answer[key] = {
                "digit": int(row.argmax()),
                "probabilities": [round(float(p), 4) for p in row],
                "image": image.flatten().tolist(),
            }
        answer["ms"] = round(1000 * (time.perf_counter() - started), 1)
        return answer

    def probabilities(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 (N, 1, 28, 28) -> probabilities (N, 10) on the CPU."""
        with self._lock, torch.no_grad():
            logits = self.model(data.to_model_input(images, self.device.device))
            return torch.softmax(logits, dim=1).cpu()  # one readback for all

    def who_answers(self) -> str:
        return self.device.describe()


class OnnxReader(Reader):
    """The exported model, run by ONNX Runtime (``predict.Model``) instead of torch."""

    def __init__(self, model) -> None:
        self.model = model  # predict.Model: it allows one Run at a time itself
        self.classes = learned_classes(model)  # from the model's metadata

    def probabilities(self, images: torch.Tensor) -> torch.Tensor:
        logits = self.model.logits(data.to_model_input(images, torch.device("cpu")).numpy())
        return torch.softmax(torch.from_numpy(logits), dim=1)

    def who_answers(self) -> str:
        return onnx_runtime.describe(self.model)


def learned_classes(model) -> list[str]:
    """The names of the outputs an exported model learned: its metadata names all ten and
    says how many of them (the first) are classes of its training data (``class_count``).
    A model exported before it said so: a folder's unused outputs are named by their number."""
    names = [str(name) for name in model.classes]
    count = model.metadata.get("class_count", "")
    if count.isdigit() and 0 < int(count) <= len(names):
        return names[: int(count)]
    if model.metadata.get("dataset", "").startswith("folder:"):
        while len(names) > 1 and names[-1] == str(len(names) - 1):
            names.pop()
    return names


def load_onnx_reader(path: Path) -> tuple[OnnxReader, checkpoints.Checkpoint]:
    """``path`` (model.onnx, or a checkpoint whose folder holds one) run by ONNX Runtime, and
    what it was trained on, as load_reader gives it; DrawError if it cannot be had."""
    path = Path(path)
    if path.suffix != ".onnx":
        path = path.with_name(ONNX_NAME)
    try:
        model = onnx_runtime.open_model(path)
    except onnx_runtime.OnnxError as error:
        raise DrawError(str(error)) from None
    reader = OnnxReader(model)
    dataset = model.metadata.get("dataset", "mnist")
    # What it was trained on, as a checkpoint says it (trained_on, class_names).
    split = {"classes": reader.classes} if dataset.startswith("folder:") else None
    return reader, checkpoints.Checkpoint({}, {"dataset": dataset}, data_split=split)


def decode_png(body: bytes) -> torch.Tensor:
    """A PNG from the page -> uint8 (H, W) grey, transparent parts as white paper.
    RequestError (4xx) for anything that is not a PNG of a sensible size."""
    from PIL import Image  # Pillow comes with torchvision

    if not body.startswith(b"\x89PNG\r\n\x1a\n"):
        raise RequestError(415, "The drawing must be sent as a PNG image.")
    try:
        image = Image.open(io.BytesIO(body))
        width, height = image.size  # read from the header, before any pixel is decoded
        if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
            raise RequestError(
                413, f"The image is {width}x{height}; at most {MAX_SIDE}x{MAX_SIDE} is accepted."
            )
        with _decoding:
            paper = Image.new("RGBA", (width, height), "white")
            paper.alpha_composite(image.convert("RGBA"))
            grey = paper.convert("L")
    except RequestError:
        raise
    except Exception as error:  # Pillow reports damage as OSError, SyntaxError, ValueError...
        raise RequestError(
            400, f"The PNG image cannot be read: {str(error).rstrip('.')}."
        ) from None
    return torch.frombuffer(bytearray(grey.tobytes()), dtype=torch.uint8).reshape(height, width)


def predict_endpoint(reader: Reader):
    def predict(body: bytes, content_type: str) -> dict:
        if content_type != "image/png":
            raise RequestError(
                415, f"Send the drawing as image/png, not {content_type or 'nothing'}."
            )
        return reader.read(decode_png(body))

    return predict


def find_model(output_dir: Path = run_folders.RUNS_DIR) -> Path:
    """best.pt (else last.pt) of the latest run in ``output_dir``, as evaluate finds it."""
    try:
        return run_folders.find_checkpoint(output_dir)
    except run_folders.NoTrainedModel as error:
        raise DrawError(str(error)) from None


def load_reader(
    path: Path, device: str = "auto", discovery=None
) -> tuple[Reader, checkpoints.Checkpoint]:
    """The model in ``path`` on ``device``, and its checkpoint; DrawError if either cannot be
    had."""
    try:
        checkpoint = checkpoints.Checkpoint.load(
            path, onnx_fix="add --runtime onnx to run it with ONNX Runtime"
        )
        option = devices.choose(device, discovery if discovery is not None else devices.discover())
        model = to_device(LeNet5(), option.device)
        checkpoints.restore_module(model, checkpoint.model, path)
    except (checkpoints.CheckpointError, devices.DeviceNotAvailable) as error:
        raise DrawError(str(error)) from error
    return Reader(model, option, checkpoint.classes), checkpoint


def trained_on(state: checkpoints.Checkpoint) -> str:
    return state.dataset


def class_names(state: checkpoints.Checkpoint) -> list[str] | None:
    """The class names a model trained on your own pictures learned (its checkpoint keeps
    them); None for digits, or when the checkpoint does not say."""
    return state.classes


def trained_on_note(state: checkpoints.Checkpoint) -> str | None:
    """The line that says what the model learned, when it is not MNIST's digits."""
    name = trained_on(state)
    if name == "synthetic":
        return (
            "this model learned SYNTHETIC digits, not MNIST; handwriting may puzzle it more "
            "than a model trained on MNIST."
        )
    if name.startswith("folder:"):
        names = class_names(state)
        if names is None:
            return (
                f"this model learned the pictures in {printable(name[len('folder:') :])}, not "
                "digits, and its checkpoint does not name their classes: the page shows output "
                "numbers."
            )
        listed = ", ".join(printable(n, 40) for n in names)
        return (
            f"this model learned your own pictures, not digits: it answers {listed}. Draw "
            "one of those."
        )
    return None


def make_server(reader: Reader, port: int = 0) -> PageServer:
    pages = {"/": (PAGE.read_bytes(), "text/html; charset=utf-8")}
    return PageServer(pages, {"/predict": predict_endpoint(reader)}, port)


build_parser = parsers.draw  # in machinery/parsers.py: --help answers before torch loads


@command  # a console that cannot show a character, Ctrl+C: one line, no traceback
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"error: --port must be from 0 to 65535, not {args.port}", file=sys.stderr)
        return 2
    try:
        path = args.checkpoint or find_model(args.output_dir)
        if args.runtime == "onnx":
            reader, state = load_onnx_reader(path)
            path = path if Path(path).suffix == ".onnx" else Path(path).with_name(ONNX_NAME)
        else:
            reader, state = load_reader(path, args.device)
        server = make_server(reader, args.port)
    except DrawError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except OSError as error:
        print(
            f"error: cannot listen on 127.0.0.1:{args.port}: {error.strerror or error}. "
            "Choose another --port, or 0 for a free one.",
            file=sys.stderr,
        )
        return 2
    print(f"Model   : {path}", flush=True)
    print(f"Device  : {reader.who_answers()} answers", flush=True)
    note = trained_on_note(state)
    if note is not None:
        print(f"Note    : {note}", flush=True)
    print(f"The page: {server.url}  (Ctrl+C stops it)", flush=True)
    if not args.no_browser and not webbrowser.open(server.url):
        print("No browser could be opened here: open the address above in one.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("Stopped.", flush=True)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
