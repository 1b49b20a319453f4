"""What a training run prints: its header, one line per epoch, and the progress bar.

The bar is tqdm's, on stderr, and only on a terminal (no bar in logs or CI); ``say`` prints a
line without breaking a bar that is on screen. A console that is gone (closed, ``| head`` that
stopped reading, a full disk behind ``>``) ends the printing, never the training.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from .cli import silence_stdout, stdout_gone

if TYPE_CHECKING:  # only for the type hints: run imports console at run time
    from .devices import Discovery
    from .run import TrainingRun


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
    from .distributed import is_main  # here: distributed imports stopping, which needs say

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


def project_title() -> str:
    try:
        from .project import load_project

        return load_project().project_name
    except Exception:  # project.json missing or unreadable: only the title suffers
        return "LeNet-5"


def project_accelerator() -> str:
    """The stack this project was generated for ("directml", "cuda", "cpu"), if known."""
    try:
        from .project import load_project

        return load_project().accelerator
    except Exception:
        return ""


def print_header(run: TrainingRun, found: Discovery, resumed: bool) -> None:
    cfg, out, last = run.cfg, run.out, run.last_path
    accelerator = project_accelerator()
    say(f"{project_title()}: LeNet-5, {run.parameters:,} parameters, float32")
    say(f"  device  : {run.option.describe()}  [--device {cfg.device}]")
    for missing in found.unavailable:
        if missing.installed or missing.kind == accelerator.replace("cuda-legacy", "cuda"):
            say(f"  note    : {missing.kind} not used: {missing.reason}")
    say(f"  data    : {run.dataset.description}")
    for note in run.dataset.notes:  # a folder's left-out folders and skipped files
        say(f"  note    : {note}")
    from .distributed import current

    processes = current()
    if processes.many:
        say(
            f"  torchrun: {processes.world_size} processes, {run.batch_size} images each per "
            f"step (batch {cfg.batch_size} in all), gradients averaged by DDP"
        )
    say(
        f"  settings: {cfg.optimizer}, peak lr {cfg.peak_lr:g} (one-cycle), "
        f"batch {cfg.batch_size}, {cfg.epochs} epoch{'s' if cfg.epochs != 1 else ''}, "
        f"weight decay {cfg.weight_decay:g}, "
        f"seed {cfg.seed}"
    )
    if cfg.dry_run:
        say(f"  dry run : {run.steps_per_epoch} batches of one epoch; nothing is saved")
        return
    say(f"  output  : {out}")
    if resumed and run.epochs_done >= run.epochs:
        say(f"  resuming: {last} has finished all {run.epochs} epochs")
        say("This run is complete: nothing to train. Start a new run to train again.")
    elif resumed:
        where = f"epoch {run.epochs_done + 1}"
        if run.position is not None:
            where += f", batch {run.position.batch + 1}"
        say(f"  resuming: {last} at {where}")
    elif last.exists():
        say(f"  note    : this new run replaces the one in {out} (--resume would continue it)")
