"""What a training run prints as it goes: one line per epoch, and the progress bar (its header
is ``startup.print_header``).

The bar is tqdm's, on stderr, and only on a terminal (no bar in logs or CI); ``say`` prints a
line without breaking a bar that is on screen. A console that is gone (closed, ``| head`` that
stopped reading, a full disk behind ``>``) ends the printing, never the training.
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm

from .command_entry import silence_stdout, stdout_gone
from .ranks import is_main


def say(message: str) -> None:
    """Print a line without breaking a progress bar that is on screen; nothing once stdout
    is gone."""
    if stdout_gone():
        return
    try:
        tqdm.write(message, file=sys.stdout)
        sys.stdout.flush()
    except (OSError, ValueError):  # BrokenPipeError, ENOSPC, EINVAL on Windows, closed file
        silence_stdout()


def epoch_bar(epoch: int, epochs: int, total: int, initial: int) -> tqdm:
    """The progress bar of one epoch: ``total`` batches, ``initial`` already done."""
    return tqdm(
        total=total,
        initial=initial,
        desc=f"epoch {epoch + 1}/{epochs}",
        unit="batch",
        leave=False,
        dynamic_ncols=True,
        # a bar only on a terminal, and under torchrun only rank 0's
        disable=None if sys.stderr is not None and is_main() else True,
        file=sys.stderr,
    )


def print_epoch(row: dict[str, Any], epochs: int, synthetic: bool) -> None:
    say(
        f"epoch {row['epoch']}/{epochs}"
        f"  train loss {row['train_loss']:.4f} acc {100 * row['train_accuracy']:.2f}%"
        f"  | val loss {row['val_loss']:.4f} acc {100 * row['val_accuracy']:.2f}%"
        f"  | {row['seconds']:.1f} s, {row['samples_per_s']:.0f} samples/s"
        + ("  [SYNTHETIC data]" if synthetic else "")
    )
