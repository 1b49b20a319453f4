"""Train LeNet-5 on MNIST (or synthetic digits) on DirectML, CUDA/ROCm, XPU, MPS or the CPU.

    python -m <package>.train                                  # MNIST, 5 epochs, best device
    python -m <package>.train --dataset synthetic --epochs 1   # no download needed
    python -m <package>.train --optimizer adam                 # a second run, beside the first
    python -m <package>.train --resume                         # continue the latest run

Read it top to bottom: the settings, the learning-rate schedule, one training step,
validation, the epoch, saving a checkpoint, the epoch loop, the run. Each DirectML practice
sits where it happens: the model goes to the device before the optimizer is built, once; the
data lives on the device and batches are cut there; nothing is read back from the device
inside the loop except every ``log_interval`` batches; everything stays float32; checkpoints
hold CPU tensors.

Three features are calls into ``machinery/``, marked in capitals where they happen; a first
reading can skip them:

- RESUME: ``--resume`` continues a run exactly, even from the middle of an epoch.
- CTRL+C: the first Ctrl+C sets ``run.stop``; the loop saves where it stands and stops.
- TORCHRUN: ``torchrun --standalone --nproc-per-node=2 -m <package>.train`` trains in several
  processes; the lines that say ``distributed`` do nothing without it.

The rest of ``machinery/`` is one call each: the device, the run's folder and its header, the
metrics files and curves, and the command line.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from . import data
from .machinery import (
    checkpoints,
    console,
    devices,
    distributed,
    output_lock,
    plots,
    startup,
    stopping,
    train_command,
)
from .machinery.checkpoints import BEST, LAST, RUN_SETTINGS
from .machinery.epoch_meter import EpochMeter, EpochTraining, Position
from .machinery.optim import DEFAULT_MOMENTUM, DEFAULT_WEIGHT_DECAY, build_optimizer, clip_gradients
from .machinery.ranks import is_main
from .machinery.run_folders import write_metrics_and_curves
from .machinery.stopping import Interrupted, StopSignal, TrainError, finite
from .model import LeNet5, to_device

EVAL_BATCH_SIZE = 1000
# The gradients' total norm is capped at this. LeNet has no normalisation layer, and with
# momentum a few outsized steps near the schedule's peak undid what a run had learnt: on the
# synthetic digits the loss jumped from 0.75 to 2.9 before it recovered, which looks broken.
# The cap acts mostly early in a run, while gradients are large, like a lower rate just there.
MAX_GRAD_NORM = 2.0
POINTS_PER_EPOCH = 25  # training points within an epoch in curves.png (a one-epoch run too)


@dataclass
class TrainConfig:
    """Every setting of a run; ``python -m <package>.train --help`` lists them as options.

    The defaults reach >= 99.0 % test accuracy on MNIST within 5 epochs: LeNet-5 with SGD,
    Nesterov momentum 0.9, batch 128 and weight decay 5e-4 is the classic recipe, and the
    one-cycle schedule (``get_lr``) gets there in a few epochs instead of tens. A peak of 0.05
    does not diverge even when the warm-up is short (0.1 did in one-epoch runs).
    """

    DEFAULT_LR: ClassVar[dict[str, float]] = {"sgd": 0.05, "adam": 0.002}  # schedule's peak
    DRY_RUN_BATCHES: ClassVar[int] = 3

    epochs: int = 5
    batch_size: int = 128  # under torchrun: of all processes together (each takes its share)
    lr: float | None = None  # None: DEFAULT_LR for the optimizer
    optimizer: str = "sgd"  # or "adam"
    momentum: float = DEFAULT_MOMENTUM
    weight_decay: float = DEFAULT_WEIGHT_DECAY
    seed: int = 1  # the initial weights and the shuffling (the data has its own seed)
    device: str = "auto"  # or directml, directml:N, cuda, cuda:N, xpu, xpu:N, mps, cpu
    data_dir: Path = Path("data")
    dataset: str = "mnist"  # or "synthetic": generated digits, no download
    output_dir: Path | None = None  # None: a new folder in runs_dir, named after time and settings
    runs_dir: Path = Path("runs")  # every run's folder, and compare.png
    resume: bool = False  # continue the run in output_dir (None: the latest in runs_dir)
    dry_run: bool = False  # a few batches, nothing saved
    log_interval: int = 50  # read the running loss back every N batches

    @property
    def peak_lr(self) -> float:
        return self.DEFAULT_LR[self.optimizer] if self.lr is None else self.lr


# --------------------------------------------------------------------------------------------
# The learning-rate schedule


def get_lr(step: int, total_steps: int, peak: float) -> float:
    """One-cycle (Smith & Topin 2017): a linear warm-up from peak/25 over the first 20 % of
    the steps, then cosine decay to peak/10^4. A pure function of the step (0-based), so a
    resumed run continues on exactly the same schedule."""
    warmup = max(1, round(0.2 * total_steps))
    start, end = peak / 25.0, peak / 1e4
    if step < warmup:
        return start + (peak - start) * step / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - 1 - warmup))
    return end + (peak - end) * 0.5 * (1.0 + math.cos(math.pi * progress))


# --------------------------------------------------------------------------------------------
# One step, and validation


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    images_uint8: torch.Tensor,
    labels: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimisation step on a uint8 batch. Returns (loss summed over the batch, number of
    correct predictions) as tensors on the device: nothing is read back here."""
    model.train()
    device = next(model.parameters()).device
    inputs = data.to_model_input(images_uint8, device)  # float32, normalised, on the device
    labels = labels.to(device)  # a no-op when the labels are there already
    logits = model(inputs)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    clip_gradients(model.parameters(), MAX_GRAD_NORM, device.type)  # no spikes; no readback
    optimizer.step()
    with torch.no_grad():  # argmax and == run on the device too: no need to copy to the CPU
        loss_sum = loss.detach() * labels.shape[0]
        correct = (logits.argmax(dim=1) == labels).sum()
    return loss_sum, correct


def eval_step(
    model: nn.Module, images_uint8: torch.Tensor, labels: torch.Tensor
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
    model: nn.Module,
    split: data.Split,
    batch_size: int = EVAL_BATCH_SIZE,
    limit: int | None = None,
) -> tuple[float, float]:
    """(mean loss, accuracy) over ``split`` (or its first ``limit`` batches); one readback."""
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


# --------------------------------------------------------------------------------------------
# What the loop carries from epoch to epoch


@dataclass
class Run:
    """The model, the optimizer, the data on the device, and what a checkpoint saves besides
    them: the history of epochs, the best validation accuracy, the shuffling generator."""

    cfg: TrainConfig
    option: devices.DeviceOption  # the device, and how to name it
    dataset: data.Dataset  # on the device
    model: nn.Module
    optimizer: torch.optim.Optimizer
    stop: StopSignal  # CTRL+C: set by the first Ctrl+C, read between steps
    generator: torch.Generator  # shuffles the training data; a CPU one (DirectML has none)
    batch_size: int  # TORCHRUN: this process's share of cfg.batch_size (all of it without)
    steps_per_epoch: int
    epochs: int  # cfg.epochs, or 1 for a dry run
    history: list[dict[str, Any]] = field(default_factory=list)  # one row per epoch
    points: list[dict[str, Any]] = field(default_factory=list)  # sums within epochs (curves)
    best_accuracy: float = -1.0  # the best validation accuracy so far: best.pt's
    epochs_done: int = 0
    position: Position | None = None  # RESUME: where a stopped run stands inside an epoch
    swept: bool = False  # whether leftovers of dead runs were removed from the folder
    compared: Path | None = None  # compare.png, once drawn
    said: set[str] = field(default_factory=set)  # notes already printed (a picture that failed)

    @property
    def out(self) -> Path:
        return Path(self.cfg.output_dir)

    @property
    def last_path(self) -> Path:
        return self.out / LAST

    @property
    def total_steps(self) -> int:  # the schedule's length
        return self.cfg.epochs * self.steps_per_epoch

    @property
    def eval_limit(self) -> int | None:  # a dry run validates and tests one batch
        return 1 if self.cfg.dry_run else None

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def title(self) -> str:
        return f"LeNet-5 on {plots.dataset_label(self.dataset.name)} - {self.option.describe()}"

    def keep_points(self, epoch: int, points: list[tuple[int, float, int, int]]) -> None:
        """Cumulative sums within ``epoch``; ``x`` is the epoch count at that batch (0.5: half of
        the first epoch), as on the curves' axis."""
        for batch, loss_sum, correct, seen in points:
            x = epoch + batch / self.steps_per_epoch
            point = {"epoch": epoch + 1, "x": x, "loss_sum": loss_sum, "correct": correct}
            self.points.append({**point, "seen": seen})

    def kept(self) -> str:
        """What a stopped run leaves behind, for its last message."""
        saved = self.last_path.exists() and not self.cfg.dry_run
        return stopping.what_is_kept(self.last_path, self.epochs_done, saved)


def setup(
    cfg: TrainConfig, option: devices.DeviceOption, dataset: data.Dataset, stop: StopSignal
) -> Run:
    """The model, the optimizer and the data on the chosen device, in the order that matters."""
    device = option.device
    torch.manual_seed(cfg.seed)  # the same initial weights for the same seed
    # 1. The model to the device first. In torch 2.4.1 `.to(privateuseone)` makes new Parameter
    #    objects, so an optimizer built before the move would update orphaned CPU tensors.
    model = to_device(LeNet5(), device)
    model = distributed.shared(model)  # TORCHRUN: gradients averaged over the processes
    # 2. Then the optimizer, once: building it again every epoch (a popular DirectML "fix")
    #    throws away the momentum. On DirectML it avoids ops that fall back to the CPU.
    optimizer = build_optimizer(
        cfg.optimizer, model.parameters(), cfg.peak_lr, device.type, cfg.momentum, cfg.weight_decay
    )
    # 3. The whole dataset to the device, once: batches are then slices, with no copies.
    dataset = dataset.to(device)
    steps = data.num_batches(distributed.usable(len(dataset.train)), cfg.batch_size)
    return Run(
        cfg,
        option,
        dataset,
        model,
        optimizer,
        stop,
        generator=torch.Generator().manual_seed(cfg.seed),
        batch_size=distributed.process_batch(cfg.batch_size),
        steps_per_epoch=min(steps, cfg.DRY_RUN_BATCHES) if cfg.dry_run else steps,
        epochs=1 if cfg.dry_run else cfg.epochs,
    )


# --------------------------------------------------------------------------------------------
# One epoch


def train_epoch(run: Run, epoch: int) -> EpochTraining:
    """One pass over the training data (or its rest, when a stopped run resumes inside it)."""
    cfg, model, optimizer = run.cfg, run.model, run.optimizer
    first, resumed, run.position = 0, run.position, None
    if resumed is not None:  # RESUME inside this epoch: the same shuffle, from the same batch
        run.generator.set_state(resumed.generator)
        first = resumed.batch
    # The epoch's loss and correct answers are summed on the device, read back only below.
    device = next(model.parameters()).device
    every = max(1, run.steps_per_epoch // POINTS_PER_EPOCH)
    sums = EpochMeter(device, run.generator.get_state(), first, resumed, every)
    order = data.shuffled(run.dataset.train, run.generator)  # one gather on the device
    order = distributed.my_share(order)  # TORCHRUN: this process's slice of the shuffle
    batches = data.batches(order, run.batch_size, first, run.steps_per_epoch - first)
    step = first
    with console.epoch_bar(epoch, run.epochs, run.steps_per_epoch, first) as bar:
        for step, (images, labels) in enumerate(batches, start=first):
            lr = get_lr(epoch * run.steps_per_epoch + step, run.total_steps, cfg.peak_lr)
            for group in optimizer.param_groups:
                group["lr"] = lr  # a Python float: no device work
            loss_sum, correct = train_step(model, optimizer, images, labels)
            sums.add(loss_sum, correct, len(labels))  # stays on the device: no sync
            bar.update(1)
            if (step + 1) % cfg.log_interval == 0:  # the only readback inside an epoch
                loss, accuracy = sums.running()
                run.stop.agree()  # TORCHRUN: the processes agree whether Ctrl+C was pressed
                if not finite(loss):  # the NaN guard: stop, keep the last good checkpoint
                    raise diverged_at(run, epoch, step + 1)
                bar.set_postfix(loss=f"{loss:.4f}", acc=f"{100 * accuracy:.2f}%")
            if run.stop.requested and step + 1 < run.steps_per_epoch:  # CTRL+C was pressed
                stop_inside_epoch(run, epoch, sums, step + 1)  # saves where we are, raises
    return sums.finish(step + 1)  # one readback: also the end of the epoch's timing


def diverged_at(run: Run, epoch: int, batch: int) -> TrainError:
    saved = run.epochs_done > 0 and not run.cfg.dry_run
    return stopping.diverged(epoch, batch, run.last_path, run.epochs_done, saved, run.cfg)


def stop_inside_epoch(run: Run, epoch: int, sums: EpochMeter, next_batch: int) -> None:
    """CTRL+C inside an epoch: save last.pt with where the run stands, then stop."""
    here = sums.position(next_batch)
    if not finite(here.loss_sum):
        raise diverged_at(run, epoch, here.batch)
    run.keep_points(epoch, sums.points())
    message = f"Stopped in epoch {epoch + 1} after batch {here.batch}/{run.steps_per_epoch}."
    if not run.cfg.dry_run:
        save_checkpoint(run, run.last_path, here)
        message += f" Saved {run.last_path}; --resume continues from there."
    raise Interrupted(message)


# --------------------------------------------------------------------------------------------
# Saving a checkpoint: best.pt and last.pt


def save_checkpoint(run: Run, path: Path, position: Position | None = None) -> None:
    """Everything needed to use the model (``model``) and to continue the run exactly (the
    rest), as CPU tensors: the file then loads on any machine, with map_location="cpu"
    (map_location set to a DirectML device fails). evaluate, export and draw read it."""
    if not is_main():  # TORCHRUN: the first process alone writes the run's files
        return
    if not run.swept:  # the run now writes here: leftovers of dead runs can go
        output_lock.remove_leftovers(run.out)
        run.swept = True
    state = {
        "format": checkpoints.FORMAT,
        "version": checkpoints.VERSION,
        "model": distributed.unwrapped(run.model).state_dict(),
        "model_class": "LeNet5",
        "config": {name: getattr(run.cfg, name) for name in RUN_SETTINGS},
        "data_dir": str(run.cfg.data_dir),  # where evaluate finds the test files
        "data_split": run.dataset.split,  # a folder's classes and parts; None otherwise
        "epochs_done": run.epochs_done,
        "optimizer": run.optimizer.state_dict(),  # momentum buffers: resume continues them
        "position": None if position is None else position.to_dict(),  # RESUME inside an epoch
        "history": run.history,
        "points": run.points,
        "best_val_accuracy": run.best_accuracy,
        "rng": {"generator": run.generator.get_state(), "torch": torch.get_rng_state()},
        "torch_version": str(torch.__version__),
    }
    try:
        # A temporary file renamed when complete: a crash or full disk keeps the old file.
        with checkpoints.atomic_file(path) as handle:
            torch.save(checkpoints.to_cpu(state), handle)
    except checkpoints.CheckpointWriteError as error:
        raise TrainError(f"{error} Training stopped; the last good checkpoint is kept.") from error


# --------------------------------------------------------------------------------------------
# The epoch loop


@dataclass
class RunResult:
    history: list[dict[str, Any]]
    test_loss: float
    test_accuracy: float  # of the model in best.pt, the one evaluate loads
    device: str
    dataset: str
    files: list[Path] = field(default_factory=list)
    output_dir: Path | None = None  # this run's folder
    compared: Path | None = None  # the picture comparing it with the runs before it


def fit(run: Run) -> RunResult:
    """Train for the remaining epochs, validating and saving after each; then test the model
    that evaluate will load (best.pt) on the test set, once."""
    cfg = run.cfg
    # CTRL+C saves and stops; a GPU that cannot run an operator stops with one sentence.
    ctrl_c = stopping.ctrl_c_stops_gracefully(run.stop, run.kept)
    gpu_failure = stopping.gpu_failures_explained(run.option, run.kept)
    with ctrl_c, gpu_failure:
        for epoch in range(run.epochs_done, run.epochs):
            trained = train_epoch(run, epoch)
            val_loss, val_accuracy = evaluate_split(
                run.model, run.dataset.val, limit=run.eval_limit
            )
            if not finite(trained.loss) or not finite(val_loss):  # the NaN guard, per epoch
                raise diverged_at(run, epoch, trained.batches)
            last_step = epoch * run.steps_per_epoch + trained.batches - 1
            # The whole epoch's time: training (before and after a resume) and validation.
            seconds = trained.seconds_before + time.perf_counter() - trained.started
            run.history.append(
                {
                    "epoch": epoch + 1,
                    "train_loss": trained.loss,
                    "train_accuracy": trained.accuracy,
                    "val_loss": val_loss,
                    "val_accuracy": val_accuracy,
                    "lr": get_lr(last_step, run.total_steps, cfg.peak_lr),
                    "seconds": round(seconds, 3),
                    "samples_per_s": round(trained.samples / max(trained.seconds, 1e-9), 1),
                }
            )
            run.keep_points(epoch, trained.points)
            run.epochs_done = epoch + 1
            if not cfg.dry_run:
                # best.pt: the best validation accuracy so far, a tie going to the lower loss
                # (a small validation set is often 100 % right after a few epochs).
                best = max(run.history, key=lambda row: (row["val_accuracy"], -row["val_loss"]))
                run.best_accuracy = best["val_accuracy"]
                save_checkpoint(run, run.last_path)  # every epoch: what --resume continues
                if best is run.history[-1]:  # what evaluate, export and draw load
                    save_checkpoint(run, run.out / BEST)
                write_metrics_and_curves(run)  # metrics.csv/json, curves.png, compare.png
            # Printed only once saved: a console closed meanwhile must not cost the epoch.
            console.print_epoch(run.history[-1], run.epochs, run.dataset.synthetic)
            run.stop.agree()  # TORCHRUN: every process stops here, or none
            if run.stop.requested:  # CTRL+C during the epoch's last batch or its validation
                raise Interrupted(
                    f"Stopped after epoch {epoch + 1}. "
                    f"Saved {run.last_path}; --resume continues from there."
                )
        tested = load_best(run)
        test = evaluate_split(run.model, run.dataset.test, limit=run.eval_limit)
    return finish(run, test, tested)


def load_best(run: Run) -> str:
    """Put best.pt's weights into the model (CPU tensors copied into the model on the device),
    so that the test accuracy is that of the model evaluate, export and draw use. Returns which
    model that is, in words ("" for a dry run, which saves nothing)."""
    if run.cfg.dry_run:
        return ""
    best = run.out / BEST
    saved = distributed.same_on_all(read_if_saved, best)  # TORCHRUN: read once, given to all
    if saved is None:  # no epoch's validation accuracy was a number (NaN is never "better")
        return f"the model after epoch {run.epochs_done}: no {BEST} was written"
    checkpoints.restore_module(distributed.unwrapped(run.model), saved.model, best)
    return f"{BEST}: {saved.which_epoch(best)}; evaluate, export and draw load it"


def read_if_saved(path: Path) -> checkpoints.Checkpoint | None:
    """The checkpoint at ``path``, or None where there is none; one sentence if it is damaged."""
    if not path.exists():
        return None
    try:
        return checkpoints.Checkpoint.load(path)
    except checkpoints.CheckpointError as error:
        raise TrainError(str(error)) from error


def finish(run: Run, test: tuple[float, float], tested: str) -> RunResult:
    """Print the test result, write the final metrics, list the output files."""
    test_loss, test_accuracy = test
    images = len(run.dataset.test)
    test_set = plots.test_set_label(run.dataset.name)
    console.say(
        f"test accuracy {100 * test_accuracy:.2f}% on the {test_set} ({images} images), "
        f"loss {test_loss:.4f}"
    )
    if tested:
        console.say(f"          ({tested})")
    files: list[Path] = []
    if not run.cfg.dry_run and run.history:
        extra = {
            "test": {"loss": test_loss, "accuracy": test_accuracy, "images": images},
            "device": run.option.describe(),
        }
        files = write_metrics_and_curves(run, extra)
        files += [p for p in (run.last_path, run.out / BEST) if p.exists()]
        console.say("outputs : " + ", ".join(str(p) for p in files))
        if run.compared is not None:
            console.say(f"compare : {run.compared} (this run beside the runs before it)")
    return RunResult(
        run.history,
        test_loss,
        test_accuracy,
        run.option.describe(),
        run.dataset.name,
        files,
        None if run.cfg.dry_run else run.out,
        run.compared,
    )


# --------------------------------------------------------------------------------------------
# The run


def train(
    cfg: TrainConfig,
    stop: StopSignal | None = None,
    discovery: devices.Discovery | None = None,
    dataset: data.Dataset | None = None,
    explicit: Sequence[str] = (),
) -> RunResult:
    """Run training as ``cfg`` says. Raises TrainError (and its subclasses) with a message for
    the user. ``discovery`` and ``dataset`` replace device discovery and loading
    ``cfg.dataset`` (tests pass small ones); ``explicit`` names the options the user typed."""
    option, found = startup.choose_device(cfg.device, discovery)
    with distributed.processes(option) as option:  # TORCHRUN: join the other processes
        chosen = cfg.output_dir is not None  # a refusal names --output-dir only if it was typed
        cfg = startup.run_folder(cfg)  # runs/<time>_<what differs>/, or the latest for --resume
        with startup.output_folder(cfg, chosen):  # one run at a time per run folder
            cfg, checkpoint = startup.resumed_settings(cfg, explicit)  # RESUME: saved settings
            if dataset is None:
                dataset = startup.load_data(cfg.dataset, cfg.data_dir)
            run = setup(cfg, option, dataset, stop or distributed.stop_signal())
            if checkpoint is not None:
                startup.restore(run, checkpoint)  # RESUME: weights, optimizer, shuffle, history
            startup.print_header(run, found, resumed=checkpoint is not None)
            return fit(run)


def main(argv: list[str] | None = None) -> int:
    """Console entry point; returns the exit code (0 ok, 2 user error, 3 diverged, 4 the GPU
    failed, 1 another process of a torchrun run stopped, 130 Ctrl+C)."""
    return train_command.main(argv, train, TrainConfig)


# Only when run as a program: DataLoader workers for --dataset folder:<path> are spawned on
# Windows and macOS, and each one first imports this module; training must not start there.
if __name__ == "__main__":
    sys.exit(main())
