"""What a run's numbers are kept as: ``metrics.csv`` and ``metrics.json`` (one row per epoch),
the training curve within epochs (from ``within_epoch.EpochPoints``), and plain-text tables for
the console."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Sequence

from .checkpoints import write_text_atomic

METRICS_CSV = "metrics.csv"
METRICS_JSON = "metrics.json"

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


def rows_of_numbers(value: Any, fields: Sequence[str]) -> list[dict[str, Any]] | None:
    """``value`` when it is a list of rows with a number in each of ``fields``, else None (a
    metrics.json edited by hand, or written by other code)."""
    if not isinstance(value, list):
        return None
    for row in value:
        if not isinstance(row, dict):
            return None
        for name in fields:
            number = row.get(name)
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                return None
    return value


def within_epochs(points: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Training loss and accuracy of each stretch of batches between two points of an epoch,
    from the cumulative sums the run kept (the first stretch starts at the epoch's start).
    A stretch less than half as long as the one before (the epoch's last batch or two) joins
    it: one batch without a mistake would otherwise look like a plunge at the epoch's end."""
    rows: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    last_start: dict[str, Any] = {}
    last_seen = 0
    for point in points:
        if not previous or previous["epoch"] != point["epoch"]:
            previous = {"epoch": point["epoch"], "loss_sum": 0.0, "correct": 0, "seen": 0}
            last_seen = 0
        start, seen = previous, point["seen"] - previous["seen"]
        if seen <= 0:
            continue
        if last_seen and seen < last_seen / 2:
            rows.pop()
            start, seen = last_start, point["seen"] - last_start["seen"]
        rows.append(
            {
                "epoch": round(point["x"], 4),
                "train_loss": (point["loss_sum"] - start["loss_sum"]) / seen,
                "train_accuracy": (point["correct"] - start["correct"]) / seen,
            }
        )
        last_start, last_seen, previous = start, seen, point
    return rows


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned columns (ASCII only, safe on any console)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
