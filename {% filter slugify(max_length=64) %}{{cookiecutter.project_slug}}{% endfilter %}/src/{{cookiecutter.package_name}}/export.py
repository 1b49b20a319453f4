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

import argparse
import io
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from . import data, evaluate
from .datasets import mnist
from .machinery import checkpoints, onnx_runtime, runs
from .machinery.cli import (
    add_checkpoint_option,
    add_data_dir_option,
    add_output_dir_option,
    command,
    command_parser,
    whole_number,
    write_err,
    write_out,
)
from .model import NUM_CLASSES, LeNet5

ONNX_NAME = "model.onnx"
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


def _recorded_classes(state: dict) -> list[str] | None:
    """The classes of your own pictures that the checkpoint records (its data split)."""
    split = state.get("data_split")
    recorded = split.get("classes") if isinstance(split, dict) else None
    if isinstance(recorded, list) and recorded and all(isinstance(n, str) for n in recorded):
        return recorded[:NUM_CLASSES]
    return None


def class_names(state: dict) -> list[str]:
    """The name of each output: the digits, or the classes of your own pictures that the
    checkpoint records (its data split); outputs no class uses are named by number."""
    names = [str(i) for i in range(NUM_CLASSES)]
    recorded = _recorded_classes(state)
    if recorded is not None:
        names[: len(recorded)] = recorded
    return names


def class_count(state: dict) -> int:
    """How many of the outputs are classes the model learned (the first ones); the others
    answer nothing a program should show."""
    recorded = _recorded_classes(state)
    return NUM_CLASSES if recorded is None else len(recorded)


def metadata(state: dict, path: Path) -> dict[str, str]:
    """What a program needs to use the model, as ONNX metadata (strings; JSON for lists)."""
    config = state.get("config") if isinstance(state.get("config"), dict) else {}
    dataset = str(config.get("dataset", "mnist"))
    return {
        "format": onnx_runtime.FORMAT,
        "class_names": json.dumps(class_names(state), ensure_ascii=False),
        "class_count": str(class_count(state)),
        "preparation": json.dumps(
            {
                "input": "uint8 pixels (28, 28), a white digit on black, centred like MNIST",
                "normalise": "(pixels / 255 - mean) / std",
                "mean": data.MNIST_MEAN,
                "std": data.MNIST_STD,
            }
        ),
        "dataset": dataset,
        "data_dir": str(state.get("data_dir", "")),
        "trained": evaluate._which_epoch(state, path) or path.name,
        "torch_version": str(state.get("torch_version", "")),
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


def export(state: dict, checkpoint: Path, output: Path) -> None:
    """Write the model in ``state`` to ``output`` as ONNX, with metadata, checked."""
    try:
        import onnx
    except ImportError:
        raise ExportError(onnx_runtime.missing("onnx")) from None
    model = LeNet5().eval()  # on the CPU, in the default layout: what the exporter traces
    try:
        checkpoints.restore_module(model, state["model"], checkpoint)
    except (checkpoints.CheckpointError, KeyError) as error:
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
    try:
        with checkpoints.atomic_path(output) as tmp:
            tmp.write_bytes(proto.SerializeToString())
    except OSError as error:
        raise checkpoints.CheckpointWriteError(
            f"Could not write {output}: {error.strerror or error}."
        ) from error


def compare(
    state: dict, checkpoint: Path, output: Path, test: data.AnySplit, limit: int | None = None
) -> Comparison:
    """Run the exported model with ONNX Runtime on the CPU and the checkpoint with PyTorch on
    the CPU over ``test`` (its first ``limit`` images)."""
    session = onnx_runtime.open_model(output, "CPUExecutionProvider")
    model = LeNet5().eval()
    checkpoints.restore_module(model, state["model"], checkpoint)
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


def load_test_images(state: dict, checkpoint: Path, data_dir: Path | None) -> tuple:
    """The held-out test split of the dataset the checkpoint trained on, and its description."""
    config = state.get("config") if isinstance(state.get("config"), dict) else {}
    name = str(config.get("dataset", "mnist"))
    try:
        if name == "mnist":
            data_dir = evaluate._mnist_folder(data_dir, state.get("data_dir"), checkpoint)
        return data.load_test_split(name, data_dir)
    except (evaluate.EvaluationError, mnist.MNISTUnavailable, ValueError) as error:
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


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{__package__ or '<package>'}.export",
        "Export a checkpoint to ONNX and check it with ONNX Runtime on the CPU.",
    )
    add_output_dir_option(parser)
    add_checkpoint_option(parser)
    parser.add_argument(
        "--output", type=Path, default=None, help=f"the ONNX file (default: {ONNX_NAME} beside it)"
    )
    add_data_dir_option(parser, default=None)
    parser.add_argument(
        "--check-images",
        type=whole_number(1, 1_000_000),
        default=None,
        help="compare on the first N test images (default: all of them)",
    )
    return parser


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        checkpoint = Path(args.checkpoint or runs.find_checkpoint(args.output_dir))
        state = checkpoints.load_checkpoint(checkpoint)
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
        runs.NoTrainedModel,
        evaluate.EvaluationError,
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
