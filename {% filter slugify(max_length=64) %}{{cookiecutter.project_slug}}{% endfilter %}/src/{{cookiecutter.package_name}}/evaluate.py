"""Evaluate a trained checkpoint on the test set: accuracy, per-class accuracy, confusion matrix.

    python -m <package>.evaluate                  # the latest run in runs/: best.pt, else last.pt
    python -m <package>.evaluate --checkpoint runs/last.pt --device cpu
    python -m <package>.evaluate --onnx runs/<run>/model.onnx   # the exported model, no torch

Writes ``confusion_matrix.png`` and ``test_metrics.json`` beside the checkpoint
(``confusion_matrix_onnx.png`` and ``test_metrics_onnx.json`` beside an ONNX model). With
``--onnx`` ONNX Runtime answers, on the best execution provider it has (``--device cpu``: the
CPU), and the report says which one.

A checkpoint may come from another machine: the data folder it records is only read, never
created or downloaded into; ``--data-dir`` is where evaluation may download.

``evaluate_split`` (with ``eval_step``) is also train.py's validation after every epoch, and
its test of best.pt at the end of a run.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

if __name__ == "__main__":  # --help answers at once, before torch loads (seconds)
    from .machinery.quick_help import answer_help

    answer_help("evaluate")

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.nn import functional as F

from . import data
from .datasets import folder, folder_split, mnist
from .datasets.folder_split import split_change
from .machinery import (
    checkpoints,
    devices,
    distributed,
    metrics,
    onnx_runtime,
    parsers,
    plots,
    run_folders,
)
from .machinery.command_entry import command, write_err, write_out
from .machinery.parsers import EVAL_BATCH_SIZE
from .machinery.terminal_text import printable
from .model import NUM_CLASSES, LeNet5, to_device

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
    classes: list[str] | None = None  # a folder's class names; None: the digits 0-9
    notes: list[str] = field(default_factory=list)  # skipped files, a changed folder

    @property
    def images(self) -> int:
        return sum(sum(row) for row in self.confusion)

    @property
    def names(self) -> list[str]:
        """The classes' names: a folder's, or the digits."""
        return list(self.classes) if self.classes else [str(d) for d in range(NUM_CLASSES)]

    def to_dict(self) -> dict:
        def number(value: float) -> float | None:  # JSON has no NaN: a class without images
            return None if math.isnan(value) else value

        return {
            "checkpoint": str(self.checkpoint),
            "dataset": self.dataset,
            "synthetic": self.dataset == "synthetic",
            "device": self.device,
            "images": self.images,
            "accuracy": number(self.accuracy),
            "model": self.model,
            "classes": self.names,
            "per_class_accuracy": {name: number(a) for name, a in zip(self.names, self.per_class)},
            "confusion_matrix": self.confusion,
        }


def find_checkpoint(output_dir: Path) -> Path:
    """best.pt, else last.pt, of the latest run in ``output_dir`` (``run_folders.find_checkpoint``);
    EvaluationError, saying what to run first, when there is neither."""
    try:
        return run_folders.find_checkpoint(output_dir)
    except run_folders.NoTrainedModel as error:
        raise EvaluationError(str(error)) from None


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


# --------------------------------------------------------------------------------------------
# Validation: train.py calls evaluate_split after every epoch, and on the test set at the end


def eval_step(
    model: torch.nn.Module, images_uint8: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss summed over the batch, number correct) as device tensors, without gradients."""
    model.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        inputs = data.to_model_input(images_uint8, device)
        labels = labels.to(device)
        logits = model(inputs)
        loss_sum = F.cross_entropy(logits, labels, reduction="sum")
        correct = (logits.argmax(dim=1) == labels).sum()
    return loss_sum, correct


def evaluate_split(
    model: torch.nn.Module,
    split: data.Split,
    batch_size: int = EVAL_BATCH_SIZE,  # images per validation batch
    limit: int | None = None,
) -> tuple[float, float]:
    """(mean loss, accuracy) over ``split`` (or its first ``limit`` batches); one readback.
    The sums stay on the device, as in train.py's epoch."""
    device = next(model.parameters()).device
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    seen = 0
    split = distributed.my_share(split, whole=True)  # TORCHRUN: this process's part
    for images, labels in data.batches(split, batch_size, limit=limit):
        batch_loss, batch_correct = eval_step(model, images, labels)
        loss_sum += batch_loss
        correct += batch_correct
        seen += len(labels)
    loss_sum, correct, seen = distributed.summed(loss_sum, correct, seen)  # TORCHRUN: all's
    if seen == 0:
        return float("nan"), float("nan")
    return float(loss_sum.item()) / seen, int(correct.item()) / seen


def evaluate_checkpoint(
    path: Path,
    device: str = "auto",
    data_dir: Path | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    discovery: devices.Discovery | None = None,
    dataset: data.Dataset | None = None,
) -> Report:
    """Load ``path``, run the test split of the dataset it was trained on, and report.
    ``data_dir`` None: the folder the run trained from, as its checkpoint records; it is only
    read (a checkpoint from elsewhere names a folder of another machine)."""
    try:
        checkpoint = checkpoints.Checkpoint.load(
            path, onnx_fix=f"evaluate it with --onnx {printable(path, 300)} instead"
        )
    except checkpoints.CheckpointError as error:
        raise EvaluationError(str(error)) from error
    name = checkpoint.dataset
    if name == "mnist" and dataset is None:
        data_dir = _mnist_folder(data_dir, checkpoint.data_dir, Path(path))
    try:
        option = devices.choose(device, discovery if discovery is not None else devices.discover())
        if dataset is None and folder.folder_path(name) is not None:
            again = f"python -m {__package__}.evaluate --checkpoint {printable(path, 300)}"
            dataset = data.load_folder(folder.folder_now(name, data_dir, again))
        if dataset is None:
            test, description = data.load_test_split(name, data_dir)
            classes, notes = None, []
        else:
            test, description = dataset.test, dataset.description
            classes, notes = dataset.classes, list(dataset.notes)
    except (devices.DeviceNotAvailable, mnist.MNISTUnavailable, ValueError) as error:
        raise EvaluationError(str(error)) from error
    change = split_change(checkpoint.data_split, dataset.split if dataset else None)
    if change is not None and change.what == folder_split.CLASSES:
        raise EvaluationError(
            f"{path} cannot be evaluated on {printable(name)}: {change.sentence} Put the class "
            "folders back as they were, or train a new run on the folder as it is."
        )
    if change is not None:
        notes.append(
            f"{change.sentence} Each picture keeps its part, chosen by its content: pictures "
            "added or removed move no other picture between training and test."
            if change.what == folder_split.PICTURES
            else f"{path}: {change.sentence}"
        )
    model = to_device(LeNet5(), option.device)
    try:
        checkpoints.restore_module(model, checkpoint.model, path)
    except checkpoints.CheckpointError as error:
        raise EvaluationError(f"{path} holds no usable model: {error}") from error
    if len(test) == 0:
        raise EvaluationError(f"{printable(name)} has no test images left to evaluate on.")
    test = test.to(option.device)
    predictions = predict(model, test, batch_size)
    return _report(
        Path(path),
        name,
        description,
        option.describe(),
        predictions,
        test.labels,
        checkpoint.which_epoch(Path(path)),
        classes,
        notes,
    )


def _report(
    path, name, description, device, predictions, labels, model, classes=None, notes=()
) -> Report:
    matrix = confusion_matrix(predictions, labels)
    totals = [sum(row) for row in matrix]
    count = len(classes) if classes else NUM_CLASSES
    per_class = [matrix[d][d] / totals[d] if totals[d] else float("nan") for d in range(count)]
    accuracy = sum(matrix[d][d] for d in range(NUM_CLASSES)) / max(1, sum(totals))
    return Report(
        path, name, description, device, accuracy, per_class, matrix, model, classes, list(notes)
    )


def evaluate_onnx(
    path: Path,
    device: str = "auto",
    data_dir: Path | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    dataset: data.Dataset | None = None,
) -> Report:
    """The exported model ``path`` run by ONNX Runtime on the test split of the dataset its
    metadata names; ``device`` "cpu" keeps it on the CPU, else the best provider answers."""
    try:
        model = onnx_runtime.open_model(
            Path(path), "CPUExecutionProvider" if device == "cpu" else None
        )
    except onnx_runtime.OnnxError as error:
        raise EvaluationError(str(error)) from error
    name = model.metadata.get("dataset", "mnist")
    try:
        if dataset is None and folder.folder_path(name) is not None:
            again = f"python -m {__package__}.evaluate --onnx {printable(path, 300)}"
            dataset = data.load_folder(folder.folder_now(name, data_dir, again))
        if dataset is not None:
            test, description = dataset.test, dataset.description
            classes, notes = dataset.classes, list(dataset.notes)
        else:
            if name == "mnist":
                data_dir = _mnist_folder(
                    data_dir, model.metadata.get("data_dir"), Path(path), "--onnx"
                )
            test, description = data.load_test_split(name, data_dir)
            classes, notes = None, []
    except (mnist.MNISTUnavailable, ValueError) as error:
        raise EvaluationError(str(error)) from error
    outputs = []
    for images, _ in data.batches(test, batch_size):
        logits = model.logits(data.to_model_input(images, torch.device("cpu")).numpy())
        outputs.append(torch.from_numpy(logits.argmax(axis=1)))
    predictions = torch.cat(outputs) if outputs else torch.zeros(0, dtype=torch.long)
    trained = model.metadata.get("trained", "")
    return _report(
        Path(path),
        name,
        description,
        onnx_runtime.describe(model),
        predictions,
        test.labels,
        f"exported from {trained}" if trained else "",
        classes,
        notes,
    )


def _mnist_folder(
    given: Path | None, recorded: object, model: Path, option: str = "--checkpoint"
) -> Path:
    """Where to read the MNIST test files for ``model`` (``mnist.folder_with_test_files``)."""
    command = f"python -m {__package__ or '<package>'}.evaluate {option} {printable(model, 300)}"
    try:
        return mnist.folder_with_test_files(given, recorded, command)
    except mnist.MNISTUnavailable as error:
        raise EvaluationError(str(error)) from None


def format_report(report: Report) -> str:
    names = report.names
    shown = [printable(name, 40) for name in names]  # a folder's names are the user's text

    def named(index: int) -> str:
        return shown[index] if index < len(names) else f"output {index} (no class)"

    rows = []
    for index in range(len(names)):
        row = report.confusion[index]
        wrong = [(count, pred) for pred, count in enumerate(row) if pred != index and count]
        worst = max(wrong) if wrong else None
        accuracy = report.per_class[index]
        rows.append(
            [
                shown[index],
                sum(row),
                row[index],
                "-" if math.isnan(accuracy) else f"{100 * accuracy:.2f}%",
                f"{named(worst[1])} ({worst[0]}x)" if worst else "-",
            ]
        )
    header = "class" if report.classes else "digit"
    table = metrics.format_table(
        [header, "images", "correct", "accuracy", "most often taken for"], rows
    )
    what = run_folders.test_set_label(report.dataset)
    notes = "".join(f"note: {note}\n" for note in report.notes)
    return (
        f"Checkpoint: {report.checkpoint}"
        + (f" ({printable(report.model)})" if report.model else "")  # a model file's text
        + f"\nDevice    : {report.device}\n"
        f"Data      : {report.description}\n{notes}\n{table}\n\n"
        f"Test accuracy: {100 * report.accuracy:.2f}% on the {what} ({report.images} images)"
    )


def write_outputs(report: Report, directory: Path, suffix: str = "") -> list[Path]:
    """test_metrics.json, then the confusion matrix's picture (``suffix`` "_onnx" keeps an
    ONNX model's apart); a picture that cannot be drawn is a note in ``report.notes``, never a
    failed evaluation."""
    numbers = directory / TEST_METRICS_JSON.replace(".json", f"{suffix}.json")
    text = json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"
    checkpoints.write_text_atomic(numbers, text)
    name = plots.dataset_label(report.dataset)
    title = f"Confusion matrix: {100 * report.accuracy:.2f}% correct\n{name}, test set"
    path = directory / plots.CONFUSION_PNG.replace(".png", f"{suffix}.png")
    drawn = plots.draw_safely(
        lambda: plots.plot_confusion(report.confusion, path, title, report.classes), path
    )
    if isinstance(drawn, str):
        report.notes.append(drawn)
        return [numbers]
    return [drawn, numbers]


build_parser = parsers.evaluate  # in machinery/parsers.py: --help answers before torch loads


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.onnx is not None and args.checkpoint is not None:
            raise EvaluationError("Pass --checkpoint or --onnx, not both: each names a model.")
        if args.onnx is not None:
            path = args.onnx
            report = evaluate_onnx(path, args.device, args.data_dir, args.batch_size)
        else:
            path = args.checkpoint or find_checkpoint(args.output_dir)
            report = evaluate_checkpoint(path, args.device, args.data_dir, args.batch_size)
        if args.data_dir is not None and report.dataset == "synthetic":
            write_out(
                "note: --data-dir is ignored: this checkpoint was trained on synthetic digits, "
                "which are generated here, not read from a folder."
            )
        suffix = "_onnx" if args.onnx is not None else ""
        files = write_outputs(report, Path(path).parent, suffix)  # saved before any printing
        write_out(format_report(report))
    except (EvaluationError, checkpoints.CheckpointWriteError) as error:
        write_err(f"error: {error}")
        return 2
    write_out("Wrote " + ", ".join(str(p) for p in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
