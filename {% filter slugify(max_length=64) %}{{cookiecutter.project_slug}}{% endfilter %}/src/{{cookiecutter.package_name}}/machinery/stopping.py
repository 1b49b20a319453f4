"""How a training run stops: errors the user can act on, Ctrl+C, and the NaN guard.

- A ``TrainError`` carries one or two sentences for the user and the exit code; the command
  line prints it without a traceback.
- The first Ctrl+C only sets a flag (``StopSignal``); the loop looks at it between steps, saves
  a checkpoint and stops. A second Ctrl+C stops at once; the last checkpoint is kept.
- ``finite`` is the NaN guard: the loop checks the running loss whenever it reads it back.
- ``gpu_failures_explained``: a GPU whose driver cannot run an operator raises a RuntimeError
  in the middle of a step; the user gets what failed, what is saved and what to do.
- ``training_stops_cleanly``: all of these around the epoch loop, and a checkpoint that cannot
  be written (a full disk) as one sentence too.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from .console import say

EXIT_USAGE = 2
EXIT_DIVERGED = 3
EXIT_DEVICE_FAILED = 4  # as verify_install's "broken": this device cannot train
EXIT_INTERRUPTED = 130


class TrainError(Exception):
    """A problem the user can fix; the message is one or two sentences, no traceback."""

    exit_code = EXIT_USAGE


class TrainingDiverged(TrainError):
    exit_code = EXIT_DIVERGED


class Interrupted(TrainError):
    exit_code = EXIT_INTERRUPTED


class DeviceFailed(TrainError):
    exit_code = EXIT_DEVICE_FAILED


@contextlib.contextmanager
def gpu_failures_explained(option: Any, kept: Callable[[], str]) -> Iterator[None]:
    """A RuntimeError from a GPU while training (DirectML's ``CompileGraph``, ``Invalid
    parameter.``, out of memory) becomes DeviceFailed. On the CPU it is a bug: raised as is."""
    try:
        yield
    except RuntimeError as error:
        if option.device.type == "cpu":
            raise
        package = __package__.rsplit(".", 1)[0]
        detail = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        raise DeviceFailed(
            f"{option.describe()} failed while training: {detail}. {kept()} "
            f"`python -m {package}.verify_install` tests this device step by step and names "
            "the step it cannot run; meanwhile `--device cpu` trains correctly, only slower."
        ) from error


class StopSignal:
    """Set by the first Ctrl+C; the loop checks it between steps (a Python flag, no sync)."""

    def __init__(self) -> None:
        self._requested = False
        self.at_once = False  # set once nothing is left to save: Ctrl+C then stops at once

    def stop_at_once(self) -> None:
        """From now on the first Ctrl+C stops at once (the final test: every epoch is saved)."""
        self.at_once = True

    @property
    def pressed(self) -> bool:
        """Whether Ctrl+C reached this process."""
        return self._requested

    @property
    def requested(self) -> bool:
        """Whether the run stops now (under torchrun: once every process knows it)."""
        return self._requested

    def request(self) -> None:
        self._requested = True

    def again_means_now(self) -> bool:
        """Whether a Ctrl+C after the first one stops at once (see ``distributed.AgreedStop``,
        where one Ctrl+C can arrive twice)."""
        return True

    def agree(self) -> None:
        """Nothing to agree on in one process (see ``distributed.AgreedStop``)."""


@contextlib.contextmanager
def ctrl_c_stops_gracefully(
    stop: StopSignal, kept: Callable[[], str], saves: bool = True
) -> Iterator[None]:
    """First Ctrl+C: finish the batch, save a checkpoint (unless not ``saves``: a dry run),
    exit. Second: stop at once, and raise ``Interrupted`` whose message is "Interrupted. " +
    ``kept()`` (what was saved)."""

    def handler(signum: int, frame: Any) -> None:
        if stop.at_once:
            raise KeyboardInterrupt
        if stop.pressed:
            if stop.again_means_now():
                raise KeyboardInterrupt
            return
        stop.request()
        if not saves:
            say("\nCtrl+C: finishing this batch, then stopping (a dry run saves nothing).")
            return
        say(
            "\nCtrl+C: finishing this batch, then saving a checkpoint and stopping "
            "(press Ctrl+C again to stop at once without saving)."
        )

    # Signal handlers can only be installed from the main thread (a notebook worker is not).
    installed = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if installed else None
    if installed:
        signal.signal(signal.SIGINT, handler)
    try:
        yield
    except KeyboardInterrupt as error:  # a second Ctrl+C, or one outside the training steps
        raise Interrupted(f"Interrupted. {kept()}") from error
    finally:
        if installed and previous is not None:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def training_stops_cleanly(run: Any) -> Iterator[None]:
    """Around train.py's epoch loop (``run`` is its ``Run``): Ctrl+C saves and stops, a GPU
    that cannot run an operator and a checkpoint that cannot be written stop with one
    sentence each, which says what is kept."""
    from .checkpoints import CheckpointWriteError  # torch: not imported before it is needed

    def kept() -> str:
        return "A dry run saves nothing." if run.cfg.dry_run else what_is_kept(run.last_path)

    saves = not run.cfg.dry_run
    with ctrl_c_stops_gracefully(run.stop, kept, saves), gpu_failures_explained(run.option, kept):
        try:
            yield
        except CheckpointWriteError as error:  # a full disk: the files written before are whole
            raise TrainError(f"{error} Training stopped. {kept()}") from error


def finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def what_is_kept(last_path: Any) -> str:
    """What a stopped run leaves behind, for its last message: what ``last_path`` holds, read
    from the file (a save cut short leaves the one before it)."""
    from .checkpoints import Checkpoint, CheckpointError

    try:
        held = Checkpoint.load(last_path)
    except CheckpointError:  # none yet (or one that cannot be read)
        return "Nothing was saved."
    if held.position is None and held.epochs_done == held.config.get("epochs"):
        folder = Path(last_path).parent
        return f"All {held.epochs_done} epochs are saved in {folder}; evaluate tests its best.pt."
    return (
        f"The last checkpoint ({last_path}, {held.which_epoch(last_path)}) is kept; "
        "--resume continues from it."
    )


def diverged(
    epoch: int, batch: int, last_path: Any, epochs_done: int, saved: bool, settings: Any
) -> TrainingDiverged:
    """The NaN guard's error: where the loss stopped being a number, what is kept, what to
    try. ``saved``: whether a checkpoint of a good epoch exists (not in a dry run);
    ``settings``: the run's ``TrainConfig``."""
    kept = (
        f"The last good checkpoint ({last_path}, epoch {epochs_done}) is kept."
        if saved
        else "No checkpoint was written."
    )
    return TrainingDiverged(
        f"The loss became NaN or infinite in epoch {epoch + 1} (by batch {batch}): training "
        f"diverged and was stopped. {kept} {_what_to_try(settings)}"
    )


def diverged_in(run: Any, epoch: int, batch: int) -> TrainingDiverged:
    """``diverged`` for train.py's ``run``: a good epoch is saved once one ended (a dry run
    saves none)."""
    saved = run.epochs_done > 0 and not run.cfg.dry_run
    return diverged(epoch, batch, run.last_path, run.epochs_done, saved, run.cfg)


def stopped(run: Any, when: str) -> Interrupted:
    """CTRL+C, once train.py's ``run`` has saved where it stands: "Stopped ``when``", and
    where --resume continues from (a dry run saves nothing)."""
    message = f"Stopped {when}."
    if not run.cfg.dry_run:
        message += f" Saved {run.last_path}; --resume continues from there."
    return Interrupted(message)


# Beyond these a setting is far from the recipe the defaults follow, and a likely reason for
# a loss that blew up: several times the default peak lr, momentum close to 1, or weight decay
# many times the default (it then pulls the weights harder than the data does).
UNUSUAL_LR_FACTOR = 2.0
UNUSUAL_MOMENTUM = 0.95
UNUSUAL_WEIGHT_DECAY_FACTOR = 20.0


def unusual_settings(settings: Any) -> list[str]:
    """The settings of a run that are far from the defaults, as options: ``--momentum 0.99
    (default 0.9)``."""
    defaults = type(settings)()
    default_lr = settings.DEFAULT_LR[settings.optimizer]
    found = []
    if settings.peak_lr > UNUSUAL_LR_FACTOR * default_lr:
        found.append(f"--lr {settings.peak_lr:g} (default {default_lr:g})")
    if settings.optimizer == "sgd" and settings.momentum > UNUSUAL_MOMENTUM:
        found.append(f"--momentum {settings.momentum:g} (default {defaults.momentum:g})")
    if settings.weight_decay > UNUSUAL_WEIGHT_DECAY_FACTOR * defaults.weight_decay:
        found.append(
            f"--weight-decay {settings.weight_decay:g} (default {defaults.weight_decay:g})"
        )
    return found


def _what_to_try(settings: Any) -> str:
    unusual = unusual_settings(settings)
    if not unusual:
        return f"Try a lower --lr (now {settings.peak_lr:g})."
    return (
        f"Settings far from the defaults are the likely reason: {', '.join(unusual)}; try "
        "the defaults for these, or a lower --lr."
    )
