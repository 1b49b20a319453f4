"""Evaluate a trained checkpoint on the test set: accuracy, per-class accuracy, confusion matrix.

    python -m <package>.evaluate                  # runs/best.pt, else runs/last.pt
    python -m <package>.evaluate --checkpoint runs/last.pt --device cpu

Writes ``confusion_matrix.png`` and ``test_metrics.json`` beside the checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from . import data
from .datasets import mnist
from .machinery import checkpoints, devices, reporting
from .machinery.checkpoints import BEST, LAST
from .machinery.cli import positive_int, safe_console
from .model import NUM_CLASSES, LeNet5, to_device
from .train import EVAL_BATCH_SIZE

TEST_METRICS_JSON = "test_metrics.json"


class EvaluationError(Exception):
    """A problem the user can fix (no checkpoint, no data, no such device)."""


@dataclass
class Report:
    checkpoint: Path
    dataset: str
    description: str
    device: str
    accuracy: float
    per_class: list[float]  # accuracy of each true digit
    confusion: list[list[int]]  # rows: true digit, columns: predicted digit
    model: str = ""  # which epoch's model the checkpoint holds, in words

    @property
    def images(self) -> int:
        return sum(sum(row) for row in self.confusion)

    def to_dict(self) -> dict:
        return {
            "checkpoint": str(self.checkpoint),
            "dataset": self.dataset,
            "synthetic": self.dataset == "synthetic",
            "device": self.device,
            "images": self.images,
            "accuracy": self.accuracy,
            "model": self.model,
            "per_class_accuracy": {str(d): a for d, a in enumerate(self.per_class)},
            "confusion_matrix": self.confusion,
        }


def find_checkpoint(output_dir: Path) -> Path:
    """best.pt, else last.pt, in ``output_dir``; EvaluationError when there is neither."""
    for name in (BEST, LAST):
        if (Path(output_dir) / name).is_file():
            return Path(output_dir) / name
    package = __package__ or "<package>"
    raise EvaluationError(
        f"No checkpoint in {output_dir} (looked for {BEST} and {LAST}). Train first, e.g. "
        f"python -m {package}.train --output-dir {output_dir}, or pass --checkpoint."
    )


def confusion_matrix(predictions: torch.Tensor, labels: torch.Tensor) -> list[list[int]]:
    """10x10 counts (rows: true digit, columns: predicted digit), computed on the CPU."""
    flat = labels.cpu().long() * NUM_CLASSES + predictions.cpu().long()
    counts = torch.bincount(flat, minlength=NUM_CLASSES * NUM_CLASSES)
    return counts.reshape(NUM_CLASSES, NUM_CLASSES).tolist()


def predict(model: torch.nn.Module, split: data.Split, batch_size: int) -> torch.Tensor:
    """Predicted digits for the whole split, read back once at the end."""
    device = next(model.parameters()).device
    model.eval()
    outputs = []
    with torch.no_grad():
        for images, _ in data.batches(split, batch_size):
            outputs.append(model(data.to_model_input(images, device)).argmax(dim=1))
    return torch.cat(outputs).cpu()


def evaluate_checkpoint(
    path: Path,
    device: str = "auto",
    data_dir: Path | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    discovery: devices.Discovery | None = None,
    dataset: data.Dataset | None = None,
) -> Report:
    """Load ``path``, run the test split of the dataset it was trained on, and report.
    ``data_dir`` None: the folder the run trained from, as its checkpoint records."""
    try:
        state = checkpoints.load_checkpoint(path)
    except checkpoints.CheckpointError as error:
        raise EvaluationError(str(error)) from error
    config = state.get("config") if isinstance(state.get("config"), dict) else {}
    name = str(config.get("dataset", "mnist"))
    if data_dir is None:
        data_dir = Path(str(state.get("data_dir", "data")))
    try:
        option = devices.choose(device, discovery if discovery is not None else devices.discover())
        if dataset is None:
            test, description = data.load_test_split(name, data_dir)
        else:
            test, description = dataset.test, dataset.description
    except (devices.DeviceNotAvailable, mnist.MNISTUnavailable, ValueError) as error:
        raise EvaluationError(str(error)) from error
    model = to_device(LeNet5(), option.device)
    try:
        checkpoints.restore_module(model, state["model"], path)
    except (checkpoints.CheckpointError, KeyError) as error:
        raise EvaluationError(f"{path} holds no usable model: {error}") from error
    test = test.to(option.device)
    predictions = predict(model, test, batch_size)
    matrix = confusion_matrix(predictions, test.labels)
    totals = [sum(row) for row in matrix]
    per_class = [
        matrix[d][d] / totals[d] if totals[d] else float("nan") for d in range(NUM_CLASSES)
    ]
    accuracy = sum(matrix[d][d] for d in range(NUM_CLASSES)) / max(1, sum(totals))
    return Report(
        Path(path),
        name,
        description,
        option.describe(),
        accuracy,
        per_class,
        matrix,
        _which_epoch(state, Path(path)),
    )


def _which_epoch(state: dict, path: Path) -> str:
    """Which model a checkpoint holds, in words: best.pt and last.pt differ."""
    epochs = state.get("epochs_done")
    if not isinstance(epochs, int) or isinstance(epochs, bool):
        return ""
    total = state.get("config", {}).get("epochs") if isinstance(state.get("config"), dict) else None
    of = f" of {total}" if isinstance(total, int) else ""
    if path.name == BEST:
        return f"the model after epoch {epochs}{of}, the best validation accuracy"
    return f"the model after epoch {epochs}{of}"


def format_report(report: Report) -> str:
    rows = []
    for digit in range(NUM_CLASSES):
        row = report.confusion[digit]
        wrong = [(count, pred) for pred, count in enumerate(row) if pred != digit and count]
        worst = max(wrong) if wrong else None
        rows.append(
            [
                digit,
                sum(row),
                row[digit],
                f"{100 * report.per_class[digit]:.2f}%",
                f"{worst[1]} ({worst[0]}x)" if worst else "-",
            ]
        )
    table = reporting.format_table(
        ["digit", "images", "correct", "accuracy", "most often taken for"], rows
    )
    what = (
        "SYNTHETIC test digits (not MNIST)" if report.dataset == "synthetic" else "MNIST test set"
    )
    return (
        f"Checkpoint: {report.checkpoint}"
        + (f" ({report.model})" if report.model else "")
        + f"\nDevice    : {report.device}\n"
        f"Data      : {report.description}\n\n{table}\n\n"
        f"Test accuracy: {100 * report.accuracy:.2f}% on the {what} ({report.images} images)"
    )


def write_outputs(report: Report, directory: Path) -> list[Path]:
    name = reporting.dataset_label(report.dataset)
    title = f"Confusion matrix: {100 * report.accuracy:.2f}% correct\n{name}, test set"
    png = reporting.plot_confusion(report.confusion, directory / reporting.CONFUSION_PNG, title)
    metrics = directory / TEST_METRICS_JSON
    checkpoints.write_text_atomic(metrics, json.dumps(report.to_dict(), indent=2) + "\n")
    return [png, metrics]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__ or '<package>'}.evaluate",
        description="Test accuracy, per-class accuracy and a confusion matrix of a checkpoint.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--output-dir", type=Path, default=Path("runs"), help="the training run")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="a checkpoint file (default: best.pt, else last.pt, in --output-dir)",
    )
    parser.add_argument(
        "--device", default="auto", help="auto, directml[:N], cuda[:N], xpu, mps, cpu"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where MNIST is kept: DIR/MNIST/raw, or DIR itself holding the files (default: "
        "the folder the run trained from; only the two t10k test files are needed)",
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=EVAL_BATCH_SIZE, help="evaluation batch"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    safe_console()
    args = build_parser().parse_args(argv)
    try:
        path = args.checkpoint or find_checkpoint(args.output_dir)
        report = evaluate_checkpoint(path, args.device, args.data_dir, args.batch_size)
        print(format_report(report))
        files = write_outputs(report, Path(path).parent)
    except (EvaluationError, checkpoints.CheckpointWriteError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    print("Wrote " + ", ".join(str(p) for p in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
