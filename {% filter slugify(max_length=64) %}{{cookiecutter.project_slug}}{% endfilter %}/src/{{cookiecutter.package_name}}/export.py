"""Export a trained checkpoint to ONNX, for ONNX Runtime on DirectML, CUDA, OpenVINO or the CPU.

    python -m <package>.export                    # the latest run's best.pt -> model.onnx beside it
    python -m <package>.export --checkpoint runs/<run>/last.pt --output lenet.onnx

The model file holds everything a program needs to use it: a fixed input of one normalised
28x28 image (1, 1, 28, 28), float32 logits out, and in its metadata the class names and the
preparation (the normalisation's mean and std). ``predict.py`` reads it with ONNX Runtime and
numpy alone. After writing, the file is checked with ``onnx.checker`` and run with ONNX
Runtime on the CPU over the held-out test images: the largest difference from PyTorch's
outputs and the accuracy of both are printed, and must agree within TOLERANCE.

Opset 18: the lowest opset that torch 2.14's exporter builds without converting, within what
torch 2.4.1's exporter writes (up to 20) and what ONNX Runtime's DirectML execution provider
supports (up to 20).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

if __name__ == "__main__":  # --help answers at once, before torch loads (seconds)
    from .machinery.quick_help import answer_help

    answer_help("export")

import contextlib
import io
import json
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from . import data
from .datasets import folder, mnist
from .machinery import checkpoints, onnx_runtime, parsers, run_folders
from .machinery.command_entry import command, write_err, write_out
from .machinery.terminal_text import printable
from .model import NUM_CLASSES, LeNet5

ONNX_NAME = onnx_runtime.ONNX_NAME
OPSET = 18
INPUT_SHAPE = (1, 1, 28, 28)  # static: DirectML runs fixed shapes best
# ONNX Runtime and PyTorch compute in float32 with different kernels: logits differ in the
# last digits. A near tie between two classes may then flip, so the accuracies may differ by
# one image in a thousand at most.
TOLERANCE = 1e-3  # the largest allowed difference of any logit
ACCURACY_TOLERANCE = 0.001  # 0.1 percentage points


class ExportError(Exception):
    """A problem the user can fix (no checkpoint, a foreign file, no onnx package)."""


@dataclass
class Comparison:
    images: int
    largest_difference: float
    torch_accuracy: float
    onnx_accuracy: float
    provider: str

    @property
    def agrees(self) -> bool:
        return (
            self.largest_difference <= TOLERANCE
            and abs(self.torch_accuracy - self.onnx_accuracy) <= ACCURACY_TOLERANCE
        )


def class_names(checkpoint: checkpoints.Checkpoint) -> list[str]:
    """The name of each output: the digits, or the classes of your own pictures that the
    checkpoint records (its data split); outputs no class uses are named by number."""
    names = [str(i) for i in range(NUM_CLASSES)]
    recorded = checkpoint.classes or []
    names[: len(recorded)] = recorded
    return names


def class_count(checkpoint: checkpoints.Checkpoint) -> int:
    """How many of the outputs are classes the model learned (the first ones); the others
    answer nothing a program should show."""
    recorded = checkpoint.classes
    return min(len(recorded), NUM_CLASSES) if recorded else NUM_CLASSES


def metadata(checkpoint: checkpoints.Checkpoint, path: Path) -> dict[str, str]:
    """What a program needs to use the model, as ONNX metadata (strings; JSON for lists)."""
    return {
        "format": onnx_runtime.FORMAT,
        "class_names": json.dumps(class_names(checkpoint), ensure_ascii=False),
        "class_count": str(class_count(checkpoint)),
        "preparation": json.dumps(
            {
                "input": "uint8 pixels (28, 28), a white digit on black, centred like MNIST",
                "normalise": "(pixels / 255 - mean) / std",
                "mean": data.MNIST_MEAN,
                "std": data.MNIST_STD,
            }
        ),
        "dataset": checkpoint.dataset,
        "data_dir": checkpoint.data_dir,
        "trained": checkpoint.which_epoch(path) or path.name,
        "torch_version": checkpoint.torch_version,
    }


def _exporter_options() -> dict:
    """torch 2.9+ exports through torch.export (dynamo=True, the default; it needs the
    onnxscript package); torch 2.4.1 has only the TorchScript exporter. LeNet is a plain
    feed-forward graph: both give the same operators, so the TorchScript exporter serves
    both stacks with one opset and needs no extra package."""
    import inspect

    options = {"opset_version": OPSET, "input_names": ["image"], "output_names": ["logits"]}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False
    return options


def same_file(one: Path, other: Path) -> bool:
    """Whether two paths name one file: the same resolved path (compared as this system
    compares names: without case on Windows), or a link to it."""
    with contextlib.suppress(OSError):
        if os.path.samefile(one, other):
            return True
    try:
        first, second = Path(one).resolve(), Path(other).resolve()
    except (OSError, RuntimeError):  # a link loop
        return False
    return os.path.normcase(str(first)) == os.path.normcase(str(second))


def check_output(output: Path, checkpoint: Path) -> None:
    """ExportError, before anything is written, for an output that would replace a file the
    run needs: the checkpoint exported, best.pt, last.pt, the run's metrics and pictures.
    An ONNX model is written to a name ending in .onnx, so only another model is replaced."""
    if same_file(output, checkpoint):
        raise ExportError(
            f"--output {printable(output, 300)} is the checkpoint being exported; writing the "
            f"model there would destroy it. Nothing was written: leave --output out "
            f"({ONNX_NAME} beside the checkpoint) or name a .onnx file."
        )
    if Path(output).suffix.lower() != ".onnx":
        raise ExportError(
            f"--output {printable(output, 300)} does not end in .onnx, so it may be a file a "
            f"run needs (its {checkpoints.BEST}, {checkpoints.LAST}, metrics or pictures). "
            f"Nothing was written: leave --output out ({ONNX_NAME} beside the checkpoint) or "
            "name a .onnx file."
        )


def export(state: checkpoints.Checkpoint, checkpoint: Path, output: Path) -> None:
    """Write the model in ``state`` (read from ``checkpoint``) to ``output`` as ONNX, with
    metadata, checked; never over a file the run needs (``check_output``)."""
    check_output(output, checkpoint)
    try:
        import onnx
    except ImportError:
        raise ExportError(onnx_runtime.missing("onnx")) from None
    model = LeNet5().eval()  # on the CPU, in the default layout: what the exporter traces
    try:
        checkpoints.restore_module(model, state.model, checkpoint)
    except checkpoints.CheckpointError as error:
        raise ExportError(f"{checkpoint} holds no usable model: {error}") from error
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation notice (torch 2.9+)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        torch.onnx.export(model, (torch.zeros(INPUT_SHAPE),), buffer, **_exporter_options())
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.helper.set_model_props(proto, metadata(state, checkpoint))
    proto.doc_string = f"LeNet-5 exported from {checkpoint.name}; see predict.py to use it."
    try:
        onnx.checker.check_model(proto, full_check=True)
    except onnx.checker.ValidationError as error:
        raise ExportError(f"The exported model fails onnx.checker: {error}") from error
    checkpoints.write_bytes_atomic(output, proto.SerializeToString())


def compare(
    state: checkpoints.Checkpoint,
    checkpoint: Path,
    output: Path,
    test: data.AnySplit,
    limit: int | None = None,
) -> Comparison:
    """Run the exported model with ONNX Runtime on the CPU and the checkpoint with PyTorch on
    the CPU over ``test`` (its first ``limit`` images)."""
    session = onnx_runtime.open_model(output, "CPUExecutionProvider")
    model = LeNet5().eval()
    checkpoints.restore_module(model, state.model, checkpoint)
    torch_logits, onnx_logits, labels, seen = [], [], [], 0
    with torch.no_grad():
        for images, batch_labels in data.batches(test, 500):
            if limit is not None and seen >= limit:
                break
            inputs = data.to_model_input(images, torch.device("cpu"))
            torch_logits.append(model(inputs))
            onnx_logits.append(torch.from_numpy(session.logits(inputs.numpy())))
            labels.append(batch_labels.cpu())
            seen += len(batch_labels)
    expected, got, truth = torch.cat(torch_logits), torch.cat(onnx_logits), torch.cat(labels)
    if limit is not None:
        expected, got, truth = expected[:limit], got[:limit], truth[:limit]
    return Comparison(
        images=len(truth),
        largest_difference=float((expected - got).abs().max()),
        torch_accuracy=float((expected.argmax(1) == truth).float().mean()),
        onnx_accuracy=float((got.argmax(1) == truth).float().mean()),
        provider=session.provider,
    )


def load_test_images(
    state: checkpoints.Checkpoint, checkpoint: Path, data_dir: Path | None
) -> tuple[data.AnySplit, str]:
    """The held-out test split of the dataset the checkpoint trained on, and its description."""
    name = state.dataset
    again = f"python -m {__package__ or '<package>'}.export --checkpoint "
    again += printable(checkpoint, 300)
    try:
        if name == "mnist":
            data_dir = mnist.folder_with_test_files(data_dir, state.data_dir, again)
        root = folder.folder_now(name, data_dir, again)  # a folder of your own pictures
        if root is not None:
            dataset = data.load_folder(root)
            return dataset.test, dataset.description
        return data.load_test_split(name, data_dir)
    except (mnist.MNISTUnavailable, ValueError) as error:
        raise ExportError(
            f"The model was written, but the test images to check it on are not here: {error}"
        ) from error


def format_comparison(result: Comparison) -> str:
    verdict = (
        "they agree"
        if result.agrees
        else "they DISAGREE: the exported model does not compute what PyTorch does"
    )
    return (
        f"Checked on {result.images} test images, both on the CPU ({result.provider}):\n"
        f"  largest difference of a logit: {result.largest_difference:.2e} "
        f"(allowed: {TOLERANCE:.0e})\n"
        f"  accuracy with PyTorch     : {100 * result.torch_accuracy:.2f}%\n"
        f"  accuracy with ONNX Runtime: {100 * result.onnx_accuracy:.2f}% "
        f"(allowed difference: {100 * ACCURACY_TOLERANCE:.1f} points)\n"
        f"So {verdict}."
    )


build_parser = parsers.export  # in machinery/parsers.py: --help answers before torch loads


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        checkpoint = Path(args.checkpoint or run_folders.find_checkpoint(args.output_dir))
        state = checkpoints.Checkpoint.load(
            checkpoint,
            onnx_fix="it is exported already; export reads a checkpoint, such as a best.pt",
        )
        output = args.output or checkpoint.with_name(ONNX_NAME)
        export(state, checkpoint, output)
        size = output.stat().st_size
        write_out(
            f"Wrote {output} ({size / 1024:.0f} KB, opset {OPSET}, input {INPUT_SHAPE}) from "
            f"{checkpoint}; onnx.checker finds it valid."
        )
        test, description = load_test_images(state, checkpoint, args.data_dir)
        write_out(f"Data: {description}")
        result = compare(state, checkpoint, output, test, args.check_images)
    except (
        ExportError,
        run_folders.NoTrainedModel,
        checkpoints.CheckpointError,
        checkpoints.CheckpointWriteError,
        onnx_runtime.OnnxError,
    ) as error:
        write_err(f"error: {error}")
        return 2
    write_out(format_comparison(result))
    return 0 if result.agrees else 1


if __name__ == "__main__":
    sys.exit(main())
