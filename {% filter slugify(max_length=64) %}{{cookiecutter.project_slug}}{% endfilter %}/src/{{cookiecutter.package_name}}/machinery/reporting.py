"""Metrics files (CSV and JSON, one row per epoch), training curves and confusion matrices as PNG.

Plots use matplotlib's object API with the Agg canvas: no window, no global backend switch
(``matplotlib.use`` would change the backend of a notebook that imports this module), and it
works on machines without a display. matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Sequence

from .checkpoints import CheckpointWriteError, atomic_path, write_text_atomic

METRICS_CSV = "metrics.csv"
METRICS_JSON = "metrics.json"
CURVES_PNG = "curves.png"
CONFUSION_PNG = "confusion_matrix.png"

FIELDS = (
    "epoch",
    "train_loss",
    "train_accuracy",
    "val_loss",
    "val_accuracy",
    "lr",
    "seconds",
    "samples_per_s",
)


def write_metrics(
    history: Sequence[dict[str, Any]],
    output_dir: Path,
    dataset: str,
    extra: dict[str, Any] | None = None,
) -> list[Path]:
    """metrics.csv (one row per epoch, with the dataset's name in every row) and metrics.json."""
    output_dir = Path(output_dir)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=(*FIELDS, "dataset"), lineterminator="\n")
    writer.writeheader()
    for row in history:
        writer.writerow({**{k: row.get(k, "") for k in FIELDS}, "dataset": dataset})
    csv_path, json_path = output_dir / METRICS_CSV, output_dir / METRICS_JSON
    write_text_atomic(csv_path, buffer.getvalue())
    document = {"dataset": dataset, "synthetic": dataset == "synthetic", "epochs": list(history)}
    document.update(extra or {})
    write_text_atomic(json_path, json.dumps(document, indent=2) + "\n")
    return [csv_path, json_path]


def read_metrics(output_dir: Path) -> dict[str, Any]:
    return json.loads((Path(output_dir) / METRICS_JSON).read_text(encoding="utf-8"))


def _new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: Path) -> Path:
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            figure.savefig(str(tmp), format="png")
    except OSError as error:
        raise CheckpointWriteError(f"Could not write {path}: {error.strerror or error}.") from error
    return path


def plot_curves(history: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Loss and accuracy per epoch, training and validation, side by side."""
    figure = _new_figure(10, 4)
    loss_ax, acc_ax = figure.subplots(1, 2)
    epochs = [row["epoch"] for row in history]
    for key, label in (("train", "training"), ("val", "validation")):
        loss_ax.plot(epochs, [row[f"{key}_loss"] for row in history], marker="o", label=label)
        acc_ax.plot(
            epochs, [100.0 * row[f"{key}_accuracy"] for row in history], marker="o", label=label
        )
    loss_ax.set(xlabel="epoch", ylabel="cross-entropy loss", title="Loss")
    acc_ax.set(xlabel="epoch", ylabel="accuracy (%)", title="Accuracy")
    for ax in (loss_ax, acc_ax):
        ax.grid(True, alpha=0.3)
        ax.legend()
        if len(epochs) <= 20:
            ax.set_xticks(epochs)  # whole epochs only, even for a one-epoch run
        else:
            ax.xaxis.get_major_locator().set_params(integer=True)
    figure.suptitle(title)
    figure.tight_layout()
    return _save(figure, path)


def plot_confusion(matrix: Sequence[Sequence[int]], path: Path, title: str) -> Path:
    """A 10x10 confusion matrix: rows are true digits, columns predictions, counts in cells."""
    figure = _new_figure(6.5, 6)
    ax = figure.subplots()
    size = len(matrix)
    image = ax.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    peak = max(max(row) for row in matrix) or 1
    for i in range(size):
        for j in range(size):
            count = int(matrix[i][j])
            if count:
                colour = "white" if count > peak / 2 else "black"
                ax.text(j, i, str(count), ha="center", va="center", fontsize=7, color=colour)
    ax.set(
        xticks=range(size),
        yticks=range(size),
        xlabel="predicted digit",
        ylabel="true digit",
        title=title,
    )
    figure.tight_layout()
    return _save(figure, path)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned columns (ASCII only, safe on any console)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
