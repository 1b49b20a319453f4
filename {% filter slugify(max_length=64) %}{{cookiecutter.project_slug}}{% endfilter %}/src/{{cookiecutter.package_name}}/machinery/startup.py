"""Before a training run, one call (``started``): the device, the processes under torchrun, the
run's folder (a new one, or the latest for ``--resume``) held for the run, the settings and
checkpoint a resumed run continues with (checked, since a checkpoint may come from anywhere),
and the data. ``train.py`` then builds its ``Run``, prints the run's header
(``print_header``) and puts a resumed run's state back into it (``restore``). Nothing here
imports ``train.py``: its ``TrainConfig`` and ``Run`` come in as arguments (``cfg``, ``run``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from .. import data
from ..datasets import folder, mnist
from ..datasets.folder_split import split_change
from . import checkpoints, devices, distributed, output_lock, run_folders, this_project
from .checkpoints import BEST, LAST, RUN_SETTINGS
from .cli import FLOAT32_MAX, MAX_SEED
from .console import say
from .discovery import NOT_BUILT
from .ranks import current
from .stopping import StopSignal, TrainError, finite
from .terminal_text import printable
from .train_command import MAX_BATCH_SIZE, MAX_EPOCHS

TrainConfig = Any  # train.py's settings (a dataclass); Run: train.py's run
Run = Any


@dataclass
class Started:
    """What ``started`` yields to train.py besides the settings: the device and what discovery
    found, the data on the CPU, the Ctrl+C flag, and the checkpoint a resumed run continues
    (None for a new run)."""

    option: devices.DeviceOption
    found: devices.Discovery
    dataset: data.Dataset
    stop: StopSignal
    saved: checkpoints.Checkpoint | None
    batch_size: int  # TORCHRUN: this process's share of cfg.batch_size (all of it without)


@contextlib.contextmanager
def started(
    cfg: TrainConfig,
    explicit: Sequence[str] = (),
    stop: StopSignal | None = None,
    discovery: devices.Discovery | None = None,
    dataset: data.Dataset | None = None,
) -> Iterator[tuple[TrainConfig, Started]]:
    """Everything a run needs before its model, held until the run ends: the device
    (``--device``), the other processes under torchrun, the run's folder (one run at a time
    in it), the settings and checkpoint of a resumed run, and the data. Yields (the settings
    with ``output_dir`` set, the rest). ``explicit``: the options the user typed; ``stop``,
    ``discovery`` and ``dataset`` replace the defaults (tests pass small ones)."""
    found = discovery if discovery is not None else devices.discover()
    try:
        option = devices.choose(cfg.device, found)
    except devices.DeviceNotAvailable as error:
        raise TrainError(str(error)) from error
    with distributed.processes(option) as option, contextlib.ExitStack() as held:
        stop = stop or distributed.stop_signal()  # under torchrun Ctrl+C stops every process
        # One process decides, and the others get its answer or its error: the new folder's
        # name holds the time, and the checkpoint to resume may be on the first machine only.
        cfg, saved = distributed.same_on_all(_run_folder, cfg, explicit, held)
        batch_size = distributed.process_batch(cfg.batch_size)  # TORCHRUN: checked, then shared
        if dataset is None:  # under torchrun the first process on each machine downloads it
            try:
                dataset = distributed.first_then_others(
                    lambda: data.load_dataset(cfg.dataset, cfg.data_dir)
                )
            except (mnist.MNISTUnavailable, folder.FolderUnavailable) as error:
                raise TrainError(str(error)) from error
            except OSError as error:  # a path the system refuses outright: too long, a bad name
                raise TrainError(
                    f"--dataset {printable(cfg.dataset, SHOWN)} cannot be read "
                    f"({error.strerror or error}): name a folder that exists, with one subfolder "
                    "of images per class."
                ) from error
        change = None if saved is None else split_change(saved.data_split, dataset.split)
        if change is not None:  # RESUME: a folder whose pictures moved between the parts
            raise TrainError(
                f"{Path(cfg.output_dir) / LAST} cannot be resumed: {change.sentence} Start a new "
                "run without --resume."
            )
        yield cfg, Started(option, found, dataset, stop, saved, batch_size)


def _run_folder(
    cfg: TrainConfig, explicit: Sequence[str], held: contextlib.ExitStack
) -> tuple[TrainConfig, checkpoints.Checkpoint | None]:
    """(the settings with ``output_dir`` set, the checkpoint to resume or None); the folder is
    held in ``held`` (see ``output_lock``), except by a dry run, which writes no file."""
    chosen = cfg.output_dir is not None  # a refusal names --output-dir only if it was typed
    cfg = _with_output_dir(cfg)
    if not cfg.dry_run:
        held.enter_context(output_lock.claim(cfg.output_dir, chosen, _writable_fix(cfg, chosen)))
    return _resumed_settings(cfg, explicit)


def _with_output_dir(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with ``output_dir`` set to this run's folder: the one ``--output-dir`` named;
    else, for ``--resume``, the latest run in ``runs_dir``; else a new folder there named
    after the time and the settings that differ from the defaults (see ``run_folders``)."""
    if cfg.output_dir is not None:
        return cfg
    runs_dir = Path(cfg.runs_dir)
    if cfg.resume:
        latest = run_folders.latest_run(runs_dir)
        if latest is None:
            raise TrainError(
                f"Nothing to resume: no run in {runs_dir} has a {LAST}. Start without --resume."
            )
        return replace(cfg, output_dir=latest)
    return replace(cfg, output_dir=run_folders.new_run_folder(runs_dir, run_folders.run_name(cfg)))


def _resumed_settings(
    cfg: TrainConfig, explicit: Sequence[str]
) -> tuple[TrainConfig, checkpoints.Checkpoint | None]:
    """(settings, checkpoint): for ``--resume``, the saved run's settings and its checkpoint;
    otherwise ``cfg`` unchanged and None. Options typed with --resume that differ from the
    saved ones are named in a note: a resumed run keeps its own."""
    if not cfg.resume:
        return cfg, None
    last = Path(cfg.output_dir) / LAST
    if not last.exists():
        raise TrainError(f"Nothing to resume: {last} does not exist. Start without --resume.")
    checkpoint = _load(last)
    saved = checkpoint.config
    _check_saved_settings(saved, last, tuple(cfg.DEFAULT_LR))
    ignored = [n for n in explicit if n in RUN_SETTINGS and getattr(cfg, n) != saved.get(n)]
    if ignored:
        names = ", ".join("--" + n.replace("_", "-") for n in ignored)
        say(
            f"note: --resume continues the saved run with its own settings; ignored: {names}. "
            "To change them, start a new run (without --resume)."
        )
    if not cfg.dry_run:
        _catch_up_best(last, checkpoint)
    return replace(cfg, **{n: saved[n] for n in RUN_SETTINGS if n in saved}), checkpoint


def _catch_up_best(last: Path, held: checkpoints.Checkpoint) -> None:
    """A run stopped between its two saves by an older version of this project (last.pt
    first) kept a best.pt that lacks its best epoch, and --resume never trains that epoch
    again: when last.pt is that epoch, it becomes best.pt."""
    if held.position is not None or not held.history:
        return
    # The best epoch as train.fit picks it: the best validation accuracy, then the lower loss.
    top = max(held.history, key=lambda row: (row["val_accuracy"], -row["val_loss"]))
    best = last.with_name(BEST)
    if top["epoch"] != held.epochs_done or _epochs_in(best) == held.epochs_done:
        return
    try:
        checkpoints.copy_atomic(last, best)
    except checkpoints.CheckpointWriteError as error:
        raise TrainError(f"{error} Make room there, then run --resume again.") from error
    say(f"note: {best} now holds epoch {held.epochs_done}, the run's best (a stop kept an older).")


def _epochs_in(path: Path) -> int | None:
    try:
        return checkpoints.Checkpoint.load(path).epochs_done
    except checkpoints.CheckpointError:  # none, or damaged: the copy replaces it
        return None


def _whole(value: Any, low: int, high: int = MAX_SEED) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _number(value: Any, positive: bool, below: float = FLOAT32_MAX) -> bool:
    """A number the run computes with in float32: finite there, and not negative."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not finite(value):
        return False
    return (value > 0 if positive else value >= 0) and value <= below


MAX_PATH = 32_767  # the longest path Windows takes (Linux: 4,096); longer is no folder's


# What each saved setting must be for the run to continue, said the way the user reads it
# (the optimizer: one that TrainConfig.DEFAULT_LR names).
_SAVED_SETTINGS = {
    "epochs": (lambda v: _whole(v, 1, MAX_EPOCHS), f"a whole number from 1 to {MAX_EPOCHS}"),
    "batch_size": (
        lambda v: _whole(v, 1, MAX_BATCH_SIZE),
        f"a whole number from 1 to {MAX_BATCH_SIZE}",
    ),
    "lr": (lambda v: v is None or _number(v, positive=True), "a positive float32 number"),
    "momentum": (
        lambda v: _number(v, positive=False) and v < 1,
        "a number from 0 up to, not including, 1",
    ),
    "weight_decay": (lambda v: _number(v, positive=False), "zero or a positive float32 number"),
    "seed": (lambda v: _whole(v, 0), f"a whole number from 0 to {MAX_SEED}"),
    "dataset": (
        lambda v: data.is_dataset(v) and len(v) <= MAX_PATH,
        f"one of {', '.join(data.DATASETS)}, folder:<path> (at most {MAX_PATH:,} characters)",
    ),
}
SHOWN = 60  # characters of a saved value a message shows: a file may hold megabytes of text


def _check_saved_settings(saved: dict[str, Any], path: Path, optimizers: Sequence[str]) -> None:
    """TrainError unless every saved setting is one a run can continue with (a checkpoint
    edited by hand, or written by other code, must not end in a traceback mid-run)."""
    choices = (lambda v: v in optimizers, "one of " + ", ".join(optimizers))
    for name, (valid, wanted) in {**_SAVED_SETTINGS, "optimizer": choices}.items():
        if name in saved and not valid(saved[name]):
            value = printable(repr(saved[name]), SHOWN)
            problem = f"its saved setting {name}={value} is not {wanted}"
            raise TrainError(checkpoints.cannot_resume(path, problem))


def _load(path: Path) -> checkpoints.Checkpoint:
    try:
        checkpoint = checkpoints.Checkpoint.load(path)
    except checkpoints.CheckpointError as error:
        raise TrainError(str(error)) from error
    refusal = checkpoint.resume_refusal(path)
    if refusal:
        raise TrainError(refusal)
    return checkpoint


def restore(run: Run, checkpoint: checkpoints.Checkpoint) -> None:
    """Put a checkpoint's state back into ``run``: the weights and the optimizer's state
    (CPU tensors, copied into the model and optimizer already on the device), the shuffling
    generator, the history and where a stopped run stands inside its epoch. The same curve
    then continues, exactly."""
    try:
        model = distributed.unwrapped(run.model)
        checkpoints.restore_module(model, checkpoint.model, run.last_path)
    except checkpoints.CheckpointError as error:
        raise TrainError(
            f"{error} It cannot be resumed: start a new run without --resume, or in "
            "another --output-dir."
        ) from error
    where = checkpoint.position
    problem = checkpoints.optimizer_problem(checkpoint.optimizer, run.optimizer)
    # A whole epoch's batches: a dry run's few are not the run's.
    steps = data.num_batches(distributed.usable(len(run.dataset.train)), run.cfg.batch_size)
    if where is not None and not 0 < where["batch"] < steps:
        problem = f"it stopped at batch {where['batch']} of an epoch of {steps}"
    if problem:
        raise TrainError(checkpoints.cannot_resume(run.last_path, problem))
    try:
        run.optimizer.load_state_dict(checkpoint.optimizer)
        run.generator.set_state(checkpoint.rng["generator"])
        torch.set_rng_state(checkpoint.rng["torch"])
        run.history = list(checkpoint.history)
        run.points = list(checkpoint.points)  # older checkpoints have none
        run.best_accuracy = float(checkpoint.best_val_accuracy)
        run.epochs_done = checkpoint.epochs_done
        run.position = where  # checked by Checkpoint.load: a dict of POSITION's entries
    except Exception as error:
        raise TrainError(f"{run.last_path} cannot be resumed: {devices.one_line(error)}") from error
    if run.cfg.dry_run:  # a few batches from the saved model, as an epoch of their own
        run.history, run.points, run.position, run.epochs_done = [], [], None, 0


def _writable_fix(cfg: TrainConfig, chosen: bool) -> str:
    """What makes a run folder that cannot be written work: --resume needs the run's own
    folder; a new run's folder in --runs-dir needs another --runs-dir."""
    if cfg.resume:
        return (
            f"--resume continues the run in its own folder: make {printable(cfg.output_dir, 300)} "
            "writable, or copy the run to a folder you can write to and resume it there "
            "with --output-dir."
        )
    return "" if chosen else "Name a folder you can write to with --runs-dir."


# --------------------------------------------------------------------------------------------
# The header a run prints before its first epoch


def project_title() -> str:
    return this_project.project_name() or "LeNet-5"


def project_accelerator() -> str:
    """The stack this project was generated for ("directml", "cuda", "cpu"), if known."""
    return this_project.accelerator()


def worth_a_note(missing: devices.Unavailable, accelerator: str) -> bool:
    """A backend that is installed and failed, or the project's own one missing from the
    environment made for it. Another environment of the project (the cpu one the doctor names
    for a machine without a GPU) lacks it by design: no note; verify_install says which
    environment fits."""
    if missing.installed:
        return True
    if missing.kind != accelerator.replace("cuda-legacy", "cuda"):
        return False
    if missing.kind == "directml":  # the directml environment is the one with its torch
        pinned = this_project.directml_torch()
        return not pinned or str(torch.__version__).split("+")[0] == pinned
    return missing.code != NOT_BUILT  # a torch without CUDA: another environment's


def print_header(run: Run, start: Started) -> None:
    """What a run prints before its first epoch: the device, the data, the settings, where
    it writes, and where a resumed run continues (``start.saved``: before ``restore``)."""
    cfg, out, last, found, saved = run.cfg, run.out, run.last_path, start.found, start.saved
    accelerator = project_accelerator()
    parameters = sum(p.numel() for p in run.model.parameters())
    say(f"{project_title()}: LeNet-5, {parameters:,} parameters, float32")
    say(f"  device  : {run.option.describe()}  [--device {cfg.device}]")
    for missing in found.unavailable:
        if worth_a_note(missing, accelerator):
            say(f"  note    : {missing.kind} not used: {missing.reason}")
    say(f"  data    : {run.dataset.description}")
    for note in run.dataset.notes:  # a folder's left-out folders and skipped files
        say(f"  note    : {note}")
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
    if saved is not None and saved.epochs_done >= run.epochs:
        say(f"  resuming: {last} has finished all {run.epochs} epochs")
        say("This run is complete: nothing to train. Start a new run to train again.")
    elif saved is not None:
        where = f"epoch {saved.epochs_done + 1}"
        if saved.position is not None:
            where += f", batch {saved.position['batch'] + 1}"
        say(f"  resuming: {last} at {where}")
    elif last.exists():
        say(f"  note    : this new run replaces the one in {out} (--resume would continue it)")
