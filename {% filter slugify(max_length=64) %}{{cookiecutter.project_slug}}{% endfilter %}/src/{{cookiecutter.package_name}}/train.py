"""Train LeNet-5 on MNIST (or synthetic digits) on DirectML, CUDA/ROCm, XPU, MPS or the CPU.

    python -m <package>.train                                  # MNIST, 5 epochs, best device
    python -m <package>.train --dataset synthetic --epochs 1   # no download needed
    python -m <package>.train --optimizer adam                 # a second run, beside the first
    python -m <package>.train --resume                         # continue the latest run

Read it top to bottom: the settings, the optimizer and its schedule, one step, the epoch with
its running sums, the checkpoint, the epoch loop (validation is evaluate.py's
``evaluate_split``). In capitals, what a first reading can skip: RESUME (``--resume`` goes on
exactly, even mid-epoch), CTRL+C (the loop saves where it stands and stops) and TORCHRUN
(several processes; the ``distributed`` lines do nothing without it). ``machinery/`` holds the
rest, one call each: the device, the run's folder, the header, the curves, the command line.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

if __name__ == "__main__":  # --help answers at once, before torch loads (seconds)
    from .machinery.quick_help import answer_help

    answer_help("train")

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from . import data
from .evaluate import evaluate_split
from .machinery import (
    checkpoints,
    console,
    devices,
    distributed,
    run_folders,
    startup,
    stopping,
    train_command,
    within_epoch,
)
from .machinery.optim import LerpFreeAdam
from .model import LeNet5, to_device

# The gradients' total norm is capped at this: without it, a few outsized steps near the
# schedule's peak undid what LeNet (no normalisation layer) had learnt: on the synthetic digits
# the loss jumped from 0.75 to 2.9 before it recovered. The cap acts mostly early in a run.
MAX_GRAD_NORM = 2.0


@dataclass
class TrainConfig:
    """Every setting of a run (``--help`` lists them). The defaults reach >= 99.0 % on MNIST in
    5 epochs: LeNet-5's classic recipe (SGD, Nesterov momentum 0.9, batch 128, weight decay
    5e-4) on a one-cycle schedule (``get_lr``), whose peak of 0.05 does not diverge (0.1 did)."""

    # The optimizers build_optimizer knows, and the peak of the schedule for each.
    DEFAULT_LR: ClassVar[dict[str, float]] = {"sgd": 0.05, "adam": 0.002}
    DRY_RUN_BATCHES: ClassVar[int] = 3

    epochs: int = 5
    batch_size: int = 128  # under torchrun: of all processes together (each takes its share)
    lr: float | None = None  # None: DEFAULT_LR for the optimizer
    optimizer: str = "sgd"  # or "adam"
    momentum: float = 0.9  # SGD's (Adam has its own betas)
    weight_decay: float = 5e-4
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


OPTIMIZERS = tuple(TrainConfig.DEFAULT_LR)  # ("sgd", "adam")


# The optimizer, the learning-rate schedule, and one step
def build_optimizer(
    name: str,
    params: Iterable[nn.Parameter],
    lr: float,
    device_type: str,
    momentum: float = TrainConfig.momentum,
    weight_decay: float = TrainConfig.weight_decay,
) -> torch.optim.Optimizer:
    """The optimizer ``name``, built once, after ``model.to(device)`` (see ``setup``). On
    DirectML (``"privateuseone"``) both stay on the GPU: SGD without ``foreach`` (it has no
    ``_foreach_*`` kernels), Adam as LerpFreeAdam (torch's calls ``lerp``: a CPU fallback)."""
    directml = device_type == "privateuseone"
    if name == "sgd":
        return torch.optim.SGD(
            params,
            lr=lr,
            momentum=momentum,
            nesterov=momentum > 0,  # Nesterov's look-ahead: a little faster than plain momentum
            weight_decay=weight_decay,
            foreach=False if directml else None,  # None: torch's fastest path for the device
        )
    if name == "adam":
        if directml:
            return LerpFreeAdam(params, lr=lr, weight_decay=weight_decay)
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")


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
    # No spikes: the gradients scaled down together above MAX_GRAD_NORM, on the device (no
    # readback). The foreach path only where it has kernels: not on DirectML.
    foreach = None if device.type in ("cuda", "xpu") else False
    nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM, foreach=foreach)
    optimizer.step()
    with torch.no_grad():  # argmax and == run on the device too: no need to copy to the CPU
        loss_sum = loss.detach() * labels.shape[0]
        correct = (logits.argmax(dim=1) == labels).sum()
    return loss_sum, correct


# What the loop carries from epoch to epoch
@dataclass
class Run:
    """The model, the optimizer, the data on the device, and the rest a checkpoint saves."""

    cfg: TrainConfig
    option: devices.DeviceOption  # the device, and how to name it
    dataset: data.Dataset  # on the device
    model: nn.Module
    optimizer: torch.optim.Optimizer
    stop: stopping.StopSignal  # CTRL+C: set by the first Ctrl+C, read between steps
    generator: torch.Generator  # shuffles the training data; a CPU one (DirectML has none)
    batch_size: int  # TORCHRUN: this process's share of cfg.batch_size (all of it without)
    steps_per_epoch: int
    epochs: int  # cfg.epochs, or 1 for a dry run
    history: list[dict[str, Any]] = field(default_factory=list)  # one row per epoch
    points: list[dict[str, Any]] = field(default_factory=list)  # sums within epochs (curves)
    best_accuracy: float = -1.0  # the best validation accuracy so far: best.pt's
    epochs_done: int = 0
    position: dict[str, Any] | None = None  # RESUME: where a stopped run stands in an epoch

    @property
    def out(self) -> Path:  # the run's folder
        return Path(self.cfg.output_dir)

    @property
    def last_path(self) -> Path:
        return self.out / checkpoints.LAST

    @property
    def total_steps(self) -> int:  # the schedule's length
        return self.cfg.epochs * self.steps_per_epoch


def setup(cfg: TrainConfig, start: startup.Started) -> Run:
    """The model, the optimizer and the data on the chosen device, in the order that matters."""
    device = start.option.device
    torch.manual_seed(cfg.seed)  # the same initial weights for the same seed
    # 1. The model to the device first. In torch 2.4.1 `.to(privateuseone)` makes new Parameter
    #    objects, so an optimizer built before the move would update orphaned CPU tensors.
    model = to_device(LeNet5(), device)
    model = distributed.shared(model)  # TORCHRUN: gradients averaged over the processes
    # 2. Then the optimizer, once: building it again every epoch (a popular DirectML "fix")
    #    throws away the momentum.
    optimizer = build_optimizer(
        cfg.optimizer, model.parameters(), cfg.peak_lr, device.type, cfg.momentum, cfg.weight_decay
    )
    # 3. The whole dataset to the device, once: batches are then slices, with no copies.
    dataset = start.dataset.to(device)
    generator = torch.Generator().manual_seed(cfg.seed)  # shuffles; on the CPU (DirectML: none)
    steps = data.num_batches(distributed.usable(len(dataset.train)), cfg.batch_size)
    epochs = cfg.epochs
    if cfg.dry_run:  # a few batches of one epoch
        steps, epochs = min(steps, cfg.DRY_RUN_BATCHES), 1
    parts = (model, optimizer, start.stop, generator, start.batch_size, steps, epochs)
    return Run(cfg, start.option, dataset, *parts)


# One epoch, and its running sums
@dataclass
class Trained:
    """One epoch's training (or its batches before a Ctrl+C), read back once at its end."""

    loss: float  # mean over the epoch's training images
    accuracy: float
    batches: int  # batches done in this epoch
    samples_per_s: float  # of this session (a resumed epoch counts only its rest)
    started: float  # perf_counter() at the epoch's start (before a resume: as if it had run on)
    points: list[dict[str, Any]]  # the running sums every few batches: curves.png's points
    position: dict[str, Any] | None = None  # CTRL+C: where the epoch stopped (RESUME from it)


def train_epoch(run: Run, epoch: int) -> Trained:
    """One pass over the training data (or its rest, when a stopped run resumes inside it).
    A Ctrl+C ends it early, after the batch it was pressed in (``Trained.position``)."""
    cfg, model, optimizer = run.cfg, run.model, run.optimizer
    device = next(model.parameters()).device
    # RESUME: a run stopped inside this epoch goes on from the batch after the stop, on the
    # same shuffle, with the sums and seconds it had (a fresh epoch: batch 0, zero sums).
    at = within_epoch.InEpoch.start(run.position, run.generator, distributed.is_main())
    run.position = None
    # The running sums: the loss and the correct answers added up on the device. Nothing is
    # read back inside the loop except every log_interval batches: a readback waits for the
    # device to finish its queue (a sync), and the loop would wait with it.
    loss_sum = torch.tensor(at.loss_sum, device=device)
    correct = torch.tensor(at.correct, device=device)
    seen = at.seen
    points = within_epoch.EpochPoints(epoch, run.steps_per_epoch)  # curves.png's, on the device
    session = time.perf_counter()
    started = session - at.seconds
    # The epoch's shuffle (one gather on the device); TORCHRUN: this process's slice of it.
    order = distributed.my_share(data.shuffled(run.dataset.train, run.generator))
    batches = data.batches(order, run.batch_size, at.batch, run.steps_per_epoch - at.batch)
    step = at.batch
    with console.epoch_bar(epoch, run.epochs, run.steps_per_epoch, at.batch) as bar:
        for step, (images, labels) in enumerate(batches, start=at.batch):
            lr = get_lr(epoch * run.steps_per_epoch + step, run.total_steps, cfg.peak_lr)
            for group in optimizer.param_groups:
                group["lr"] = lr  # a Python float: no device work
            batch_loss, batch_correct = train_step(model, optimizer, images, labels)
            loss_sum += batch_loss  # stays on the device: no sync
            correct += batch_correct
            seen += len(labels)
            points.keep(step + 1, loss_sum, correct, seen)  # a copy every few batches
            bar.update(1)
            if (step + 1) % cfg.log_interval == 0:  # the only readback inside an epoch
                loss_now, correct_now, seen_now = distributed.read_back(loss_sum, correct, seen)
                run.stop.agree()  # TORCHRUN: the processes agree whether Ctrl+C was pressed
                if not stopping.finite(loss_now):  # the NaN guard (in fit): no further step
                    break
                accuracy = 100 * correct_now / seen_now
                bar.set_postfix(loss=f"{loss_now / seen_now:.4f}", acc=f"{accuracy:.2f}%")
            if run.stop.requested and step + 1 < run.steps_per_epoch:  # CTRL+C was pressed
                break  # fit saves where the epoch stopped
    loss_now, correct_now, seen_now = distributed.read_back(loss_sum, correct, seen)  # a sync
    session_s = time.perf_counter() - session  # ended by that readback: the device is done
    n, speed = max(1, seen_now), (seen_now - at.seen_before) / max(session_s, 1e-9)
    # points.read(): curves.png's points, one readback for all of them (TORCHRUN: one collective)
    trained = Trained(loss_now / n, correct_now / n, step + 1, speed, started, points.read())
    if step + 1 < run.steps_per_epoch and stopping.finite(loss_now):  # CTRL+C: RESUME goes on
        sums = {"loss_sum": loss_now, "correct": correct_now, "seen": seen_now}
        seconds = time.perf_counter() - started  # the epoch's, before and after a resume
        trained.position = {"batch": step + 1, "generator": at.shuffle, **sums, "seconds": seconds}
    return trained


# The checkpoint: best.pt and last.pt
def checkpoint(run: Run, position: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything needed to use the model (``model``) and to continue the run exactly (the
    rest). evaluate, export and draw read it (``checkpoints.Checkpoint.load``)."""
    return {
        "model": distributed.unwrapped(run.model).state_dict(),
        "model_class": "LeNet5",
        "config": {name: getattr(run.cfg, name) for name in checkpoints.RUN_SETTINGS},
        "data_dir": str(run.cfg.data_dir),  # where evaluate finds the test files
        "data_split": run.dataset.split,  # a folder's classes and parts; None otherwise
        "epochs_done": run.epochs_done,
        "optimizer": run.optimizer.state_dict(),  # momentum buffers: resume continues them
        "position": position,  # RESUME inside an epoch (None after a whole epoch)
        "history": run.history,
        "points": run.points,
        "best_val_accuracy": run.best_accuracy,
        "rng": {"generator": run.generator.get_state(), "torch": torch.get_rng_state()},
        "torch_version": str(torch.__version__),
    }


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write ``state`` to ``path`` with every tensor moved to the CPU: the file then loads on
    any machine with map_location="cpu" (map_location set to a DirectML device fails)."""
    if not distributed.is_main():  # TORCHRUN: the first process alone writes the run's files
        return
    state = {"format": checkpoints.FORMAT, "version": checkpoints.VERSION, **state}
    # A temporary file, renamed once complete: a crash or a full disk keeps the old file.
    with checkpoints.atomic_file(path) as handle:
        torch.save(checkpoints.to_cpu(state), handle)


# The epoch loop, and the run
def fit(run: Run) -> run_folders.RunResult:
    """Train for the remaining epochs, validating and saving after each; then test the model
    that evaluate will load (best.pt) on the test set, once."""
    cfg, limit = run.cfg, 1 if run.cfg.dry_run else None  # a dry run validates one batch
    for epoch in range(run.epochs_done, run.epochs):
        trained = train_epoch(run, epoch)  # all its batches, or those before a Ctrl+C
        run.points += trained.points
        whole = trained.position is None  # False: CTRL+C stopped it; last.pt keeps the position
        if whole:  # validated, and a row of the history
            val_loss, val_accuracy = evaluate_split(run.model, run.dataset.val, limit=limit)
            # The NaN guard: a loss that is no number, in training or validation, stops the run
            # before anything is saved: the last good checkpoint is kept.
            if not stopping.finite(trained.loss + val_loss):
                raise stopping.diverged_in(run, epoch, trained.batches)
            run.history.append(
                {
                    "epoch": epoch + 1,
                    "train_loss": trained.loss,
                    "train_accuracy": trained.accuracy,
                    "val_loss": val_loss,
                    "val_accuracy": val_accuracy,
                    "lr": run.optimizer.param_groups[0]["lr"],  # the epoch's last step's
                    # the whole epoch: training (before and after a resume) and validation
                    "seconds": round(time.perf_counter() - trained.started, 3),
                    "samples_per_s": round(trained.samples_per_s, 1),
                }
            )
            run.epochs_done = epoch + 1
            # The best epoch: the best validation accuracy, a tie going to the lower loss (a
            # small validation set is often 100 % right after a few epochs).
            best = max(run.history, key=lambda row: (row["val_accuracy"], -row["val_loss"]))
            run.best_accuracy = best["val_accuracy"]
        if not cfg.dry_run:
            state = checkpoint(run, position=trained.position)  # the same for both files
            # best.pt (what evaluate, export and draw load) first: a stop between the two saves
            # must never leave a last.pt whose history has a best epoch that best.pt lacks.
            best_pt = [run.out / checkpoints.BEST] if whole and best is run.history[-1] else []
            for path in best_pt + [run.last_path]:  # last.pt: what --resume continues
                save_checkpoint(state, path)
            if whole:
                run_folders.write_metrics_and_curves(run)  # metrics, curves.png, compare.png
        if whole:  # printed only once saved: a console closed meanwhile must not cost the epoch
            console.print_epoch(run.history[-1], run.epochs, run.dataset.synthetic)
        run.stop.agree()  # TORCHRUN: every process stops here, or none
        if run.stop.requested:  # CTRL+C: in the epoch, or in its last batch or validation
            where = f"in epoch {epoch + 1} after batch {trained.batches}/{run.steps_per_epoch}"
            raise stopping.stopped(run, f"after epoch {epoch + 1}" if whole else where)
    run.stop.stop_at_once()  # CTRL+C: every epoch is saved, so the test stops at once
    tested = run_folders.load_best(run)  # the model evaluate, export and draw load: best.pt's
    test = evaluate_split(run.model, run.dataset.test, limit=limit)
    return run_folders.finish(run, test, tested)  # the test result, the files, their list


def train(
    cfg: TrainConfig,
    stop: stopping.StopSignal | None = None,
    discovery: devices.Discovery | None = None,
    dataset: data.Dataset | None = None,
    explicit: Sequence[str] = (),
) -> run_folders.RunResult:
    """Run training as ``cfg`` says. Raises TrainError (and its subclasses) with a message for
    the user. ``discovery`` and ``dataset`` replace device discovery and loading
    ``cfg.dataset`` (tests pass small ones); ``explicit`` names the options the user typed."""
    # The device, TORCHRUN's processes, the run's folder (held), the data; RESUME: the saved run.
    with startup.started(cfg, explicit, stop, discovery, dataset) as (cfg, start):
        run = setup(cfg, start)
        startup.print_header(run, start)
        if start.saved is not None:
            startup.restore(run, start.saved)  # RESUME: weights, optimizer, shuffle, history
        # CTRL+C saves and stops; a GPU that fails, or a full disk, stops with one sentence.
        with stopping.training_stops_cleanly(run):
            return fit(run)


def main(argv: list[str] | None = None) -> int:
    """Console entry point; returns the exit code (0 ok, 2 user error, 3 diverged, 4 the GPU
    failed, 1 another process of a torchrun run stopped, 130 Ctrl+C)."""
    return train_command.main(argv, train, TrainConfig)


# Only as a program: DataLoader workers (--dataset folder:) spawned on Windows and macOS import
# this module first, and must not train.
if __name__ == "__main__":
    sys.exit(main())
