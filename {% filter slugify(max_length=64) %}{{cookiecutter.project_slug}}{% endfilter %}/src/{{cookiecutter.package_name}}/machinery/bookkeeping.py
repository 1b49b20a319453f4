"""The bookkeeping of a training run, so that ``train.py`` can show only the learning.

A ``TrainingRun`` holds what the loop needs besides the model and the optimizer: the data on
the device, the shuffling generator, the schedule's step counts, the history of epochs, and
where a stopped run stands inside an epoch. It writes the checkpoints (``last.pt`` every epoch,
``best.pt`` when validation improves; CPU tensors, atomic), the metrics files and the curves,
and it restores all of it for ``--resume``, so that a resumed run continues exactly the same
curve, even from the middle of an epoch after Ctrl+C.

Each run has its own folder (``run_folders.py``): a new one in ``runs/`` unless ``--output-dir``
names one, and for ``--resume`` the latest run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .. import data
from ..datasets.folder_split import split_change
from . import checkpoints, devices, distributed, metrics, output_lock, plots, run_folders
from .console import print_epoch, say
from .epoch_meter import EpochMeter, EpochTraining, Position
from .optim import one_cycle_lr
from .ranks import is_main
from .stopping import Interrupted, StopSignal, TrainError, TrainingDiverged, finite
from .terminal_text import printable

if TYPE_CHECKING:  # train.py imports this module
    from ..train import TrainConfig

LAST = checkpoints.LAST
BEST = checkpoints.BEST
DRY_RUN_BATCHES = 3
POINTS_PER_EPOCH = 25  # training points within an epoch in curves.png (a one-epoch run too)
_STOPPED_KEPT = "Training stopped; the last good checkpoint is kept."

# What a resumed run takes from its checkpoint: everything that shapes the curve.
RUN_SETTINGS = (
    "epochs",
    "batch_size",
    "lr",
    "optimizer",
    "momentum",
    "weight_decay",
    "seed",
    "dataset",
)


@dataclass
class RunResult:
    history: list[dict[str, Any]]
    test_loss: float
    test_accuracy: float
    device: str
    dataset: str
    files: list[Path] = field(default_factory=list)
    output_dir: Path | None = None  # this run's folder
    compared: Path | None = None  # the picture comparing it with the runs before it


class TrainingRun:
    """Everything about one run except the learning itself; see the module docstring."""

    def __init__(
        self,
        cfg: TrainConfig,
        option: devices.DeviceOption,
        dataset: data.Dataset,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        stop: StopSignal,
    ) -> None:
        self.cfg, self.option, self.stop = cfg, option, stop
        self.dataset, self.model, self.optimizer = dataset, model, optimizer
        self.out = Path(cfg.output_dir)
        self.last_path = self.out / LAST
        self.generator = torch.Generator().manual_seed(cfg.seed)  # CPU generator, any device
        self.history: list[dict[str, Any]] = []
        self.points: list[dict[str, Any]] = []  # training sums within epochs, for the curves
        self.best_accuracy = -1.0
        self.epochs_done = 0
        self.position: Position | None = None
        self.swept = False  # whether leftovers of dead runs were removed from the folder
        # Under torchrun each process takes its share of every batch (see distributed.py).
        self.batch_size = distributed.process_batch(cfg.batch_size)
        steps = data.num_batches(distributed.usable(len(dataset.train)), cfg.batch_size)
        self.steps_per_epoch = min(steps, DRY_RUN_BATCHES) if cfg.dry_run else steps
        self.total_steps = cfg.epochs * self.steps_per_epoch
        self.epochs = 1 if cfg.dry_run else cfg.epochs
        self.eval_limit = 1 if cfg.dry_run else None
        self.point_every = max(1, self.steps_per_epoch // POINTS_PER_EPOCH)
        self.compared: Path | None = None
        self.said: set[str] = set()  # notes already printed (a picture that failed)
        self.title = f"LeNet-5 on {plots.dataset_label(dataset.name)} - {option.describe()}"

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def lr(self, epoch: int, step: int) -> float:
        """The one-cycle schedule's rate for ``step`` of ``epoch``: a pure function of the
        global step, so a resumed run continues on exactly the same schedule."""
        return one_cycle_lr(epoch * self.steps_per_epoch + step, self.total_steps, self.cfg.peak_lr)

    # -- inside an epoch

    def start_epoch(self, epoch: int) -> tuple[int, EpochMeter]:
        """(first batch, meter): batch 0 and empty sums, or where a stopped run left off."""
        position, self.position = self.position, None
        if position is not None:
            self.generator.set_state(position.generator)  # the same shuffle as before the stop
        first = 0 if position is None else position.batch
        state = self.generator.get_state()
        return first, EpochMeter(self.model_device, state, first, position, self.point_every)

    def keep_points(self, epoch: int, points: list[tuple[int, float, int, int]]) -> None:
        """Cumulative sums within ``epoch``; ``x`` is the epoch count at that batch (0.5: half of
        the first epoch), as on the curves' axis."""
        for batch, loss_sum, correct, seen in points:
            x = epoch + batch / self.steps_per_epoch
            point = {"epoch": epoch + 1, "x": x, "loss_sum": loss_sum, "correct": correct}
            self.points.append({**point, "seen": seen})

    @property
    def model_device(self) -> torch.device:
        return next(self.model.parameters()).device

    def checked(self, values: tuple[float, float], epoch: int, batch: int) -> tuple[float, float]:
        """The NaN guard: ``values`` (loss, accuracy) unchanged, or TrainingDiverged. Under
        torchrun the processes also agree here whether Ctrl+C was pressed."""
        self.stop.agree()
        if not finite(values[0]):
            raise self.diverged(epoch, batch)
        return values

    def stop_inside_epoch(self, epoch: int, meter: EpochMeter, next_batch: int) -> None:
        """Ctrl+C inside an epoch: save where the run stands, then raise Interrupted."""
        here = meter.position(next_batch)
        if not finite(here.loss_sum):
            raise self.diverged(epoch, here.batch)
        self.keep_points(epoch, meter.points())
        message = f"Stopped in epoch {epoch + 1} after batch {here.batch}/{self.steps_per_epoch}."
        if not self.cfg.dry_run:
            self.save(self.last_path, here)
            message += f" Saved {self.last_path}; --resume continues from there."
        raise Interrupted(message)

    def diverged(self, epoch: int, batch: int) -> TrainingDiverged:
        kept = (
            f"The last good checkpoint ({self.last_path}, epoch {self.epochs_done}) is kept."
            if self.epochs_done and not self.cfg.dry_run
            else "No checkpoint was written."
        )
        return TrainingDiverged(
            f"The loss became NaN or infinite in epoch {epoch + 1} (by batch {batch}): training "
            f"diverged and was stopped. {kept} Try a lower --lr (now {self.cfg.peak_lr:g})."
        )

    # -- between epochs

    def end_epoch(
        self, epoch: int, trained: EpochTraining, validation: tuple[float, float]
    ) -> None:
        """Record the epoch, print its line, save checkpoints, metrics and curves; stop here if
        Ctrl+C was pressed during the epoch's last batch or its validation."""
        val_loss, val_accuracy = validation
        if not finite(trained.loss) or not finite(val_loss):
            raise self.diverged(epoch, trained.batches)
        row = {
            "epoch": epoch + 1,
            "train_loss": trained.loss,
            "train_accuracy": trained.accuracy,
            "val_loss": val_loss,
            "val_accuracy": val_accuracy,
            "lr": self.lr(epoch, trained.batches - 1),
            # the whole epoch: training (before and after a resume) and validation
            "seconds": round(trained.seconds_before + time.perf_counter() - trained.started, 3),
            "samples_per_s": round(trained.samples / max(trained.seconds, 1e-9), 1),
        }
        self.history.append(row)
        self.keep_points(epoch, trained.points)
        self.epochs_done = row["epoch"]
        if not self.cfg.dry_run:
            improved = val_accuracy > self.best_accuracy
            self.best_accuracy = max(self.best_accuracy, val_accuracy)
            self.save(self.last_path)
            if improved:
                self.save(self.out / BEST)
            self.write_reports()
        # Printed only once saved: a console closed meanwhile must not cost the epoch.
        print_epoch(row, self.epochs, self.dataset.synthetic)
        self.stop.agree()  # under torchrun: every process stops here, or none
        if self.stop.requested:
            raise Interrupted(
                f"Stopped after epoch {epoch + 1}. "
                f"Saved {self.last_path}; --resume continues from there."
            )

    def kept(self) -> str:
        """What an interrupted run leaves behind, for its last message."""
        if self.last_path.exists() and not self.cfg.dry_run:
            return (
                f"The last checkpoint ({self.last_path}, epoch {self.epochs_done}) is kept; "
                "--resume continues from it."
            )
        return "Nothing was saved."

    def finish(self, test: tuple[float, float]) -> RunResult:
        """Print the test result, write the final metrics, list the output files."""
        test_loss, test_accuracy = test
        cfg, test_split = self.cfg, self.dataset.test
        label = {"synthetic": "SYNTHETIC test digits (not MNIST)", "mnist": "MNIST test set"}.get(
            self.dataset.name,
            f"test part of {printable(plots.dataset_label(self.dataset.name))}",
        )
        say(
            f"test accuracy {100 * test_accuracy:.2f}% on the {label} "
            f"({len(test_split)} images), loss {test_loss:.4f}"
        )
        if not cfg.dry_run:
            say(
                f"          (the model after epoch {self.epochs_done}, as in {LAST}; evaluate "
                f"uses {BEST}, the epoch with the best validation accuracy)"
            )
        files: list[Path] = []
        if not cfg.dry_run and self.history:
            extra = {
                "test": {"loss": test_loss, "accuracy": test_accuracy, "images": len(test_split)},
                "device": self.option.describe(),
            }
            files = self.write_reports(extra)
            files += [p for p in (self.last_path, self.out / BEST) if p.exists()]
            say("outputs : " + ", ".join(str(p) for p in files))
            if self.compared is not None:
                say(f"compare : {self.compared} (this run beside the runs before it)")
        return RunResult(
            self.history,
            test_loss,
            test_accuracy,
            self.option.describe(),
            self.dataset.name,
            files,
            None if cfg.dry_run else self.out,
            self.compared,
        )

    # -- files

    def checkpoint(self, position: Position | None) -> checkpoints.Checkpoint:
        return checkpoints.Checkpoint(
            model=distributed.unwrapped(self.model).state_dict(),
            config={name: getattr(self.cfg, name) for name in RUN_SETTINGS},
            data_dir=str(self.cfg.data_dir),  # where evaluate finds the test files
            data_split=self.dataset.split,  # a folder's classes and parts; None otherwise
            epochs_done=self.epochs_done,
            optimizer=self.optimizer.state_dict(),
            position=None if position is None else position.to_dict(),
            history=self.history,
            points=self.points,
            best_val_accuracy=self.best_accuracy,
            rng={"generator": self.generator.get_state(), "torch": torch.get_rng_state()},
            torch_version=str(torch.__version__),
        )

    def restore(self, checkpoint: checkpoints.Checkpoint) -> None:
        """Continue from a checkpoint: tensors come as CPU tensors and are copied into the model
        and optimizer that already live on the device."""
        try:
            model = distributed.unwrapped(self.model)
            checkpoints.restore_module(model, checkpoint.model, self.last_path)
        except checkpoints.CheckpointError as error:
            raise TrainError(
                f"{error} It cannot be resumed: start a new run without --resume, or in "
                "another --output-dir."
            ) from error
        try:
            self.optimizer.load_state_dict(checkpoint.optimizer)
            self.generator.set_state(checkpoint.rng["generator"])
            torch.set_rng_state(checkpoint.rng["torch"])
            self.history = list(checkpoint.history)
            self.points = list(checkpoint.points)  # older checkpoints have none
            self.best_accuracy = float(checkpoint.best_val_accuracy)
            self.epochs_done = checkpoint.epochs_done
            where = checkpoint.position
            self.position = None if where is None else Position(**where)
        except Exception as error:
            raise TrainError(
                f"{self.last_path} cannot be resumed: {devices.one_line(error)}"
            ) from error
        change = split_change(checkpoint.data_split, self.dataset.split)
        if change is not None:
            raise TrainError(
                f"{self.last_path} cannot be resumed: {change.sentence} Start a new run without "
                "--resume."
            )

    def save(self, path: Path, position: Position | None = None) -> None:
        if not is_main():  # under torchrun rank 0 alone writes the run's files
            return
        if not self.swept:  # the run now writes here: leftovers of dead runs can go
            output_lock.remove_leftovers(self.out)
            self.swept = True
        try:
            self.checkpoint(position).save(path)
        except checkpoints.CheckpointWriteError as error:
            raise TrainError(f"{error} {_STOPPED_KEPT}") from error

    def write_reports(self, extra: dict[str, Any] | None = None) -> list[Path]:
        if not is_main():
            return []
        try:
            within = metrics.within_epochs(self.points)
            config = {n: getattr(self.cfg, n) for n in RUN_SETTINGS}
            config["peak_lr"] = self.cfg.peak_lr  # what a run with the default lr used
            extra = {**(extra or {}), "config": config, "within_epochs": within}
            files = metrics.write_metrics(self.history, self.out, self.dataset.name, extra)
        except OSError as error:
            raise TrainError(f"{error} {_STOPPED_KEPT}") from error
        # Pictures come last and never stop a run: what failed is said once, the run goes on.
        curves = self.out / plots.CURVES_PNG
        drawn = plots.draw_safely(
            lambda: plots.plot_curves(self.history, curves, self.title, within), curves
        )
        files += self._drawn(drawn)
        if self.out.resolve().parent == Path(self.cfg.runs_dir).resolve():
            compare_png = self.out.parent / run_folders.COMPARE_PNG
            drawn = plots.draw_safely(
                lambda: run_folders.compare(self.out.parent, say), compare_png
            )
            shown = self._drawn(drawn)
            self.compared = shown[0] if shown else None
        return files

    def _drawn(self, drawn: Path | str | None) -> list[Path]:
        """[the picture], or [] after saying (once per picture) why it was not drawn."""
        if isinstance(drawn, str):
            if drawn not in self.said:
                self.said.add(drawn)
                say(f"note: {drawn}")
            return []
        return [] if drawn is None else [drawn]
