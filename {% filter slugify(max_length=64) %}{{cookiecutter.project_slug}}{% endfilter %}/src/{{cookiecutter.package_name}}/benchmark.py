"""Time a training epoch of LeNet-5 on every available device, side by side.

    python -m <package>.benchmark                 # all devices, 200 batches of 128
    python -m <package>.benchmark --device cpu --device directml --batches 100

Each device trains the same freshly initialised model on the same synthetic digits (no
download), with the same training step as ``train``. A few warm-up batches come first (kernel
selection, memory allocation). The clock stops after a readback of the summed loss: DirectML
has no ``synchronize``, and a readback waits for all queued work on every backend.

The digits are a pool of at most ``POOL_BATCHES`` batches on the device, gone through again
and again: a long benchmark needs no more memory than a short one. On a terminal a progress
bar shows how far each device is.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

if __name__ == "__main__":  # --help answers at once, before torch loads (seconds)
    from .machinery.quick_help import answer_help

    answer_help("benchmark")

import itertools
import sys
import time
from dataclasses import dataclass
from typing import Callable

import torch

from . import data
from .machinery import devices, metrics, parsers, this_project
from .machinery.command_entry import command, write_err, write_out
from .machinery.console import epoch_bar
from .model import LeNet5, to_device
from .train import build_optimizer, train_step

DEFAULT_BATCHES = parsers.BENCHMARK_BATCHES
DEFAULT_WARMUP = parsers.BENCHMARK_WARMUP
POOL_BATCHES = 50  # distinct batches of digits; more batches repeat them


@dataclass
class Timing:
    option: devices.DeviceOption
    batches: int
    samples: int
    seconds: float = float("nan")
    error: str = ""

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else float("nan")


def time_epoch(
    option: devices.DeviceOption,
    split: data.Split,
    batch_size: int,
    warmup: int = DEFAULT_WARMUP,
    batches: int | None = None,
) -> Timing:
    """Train ``batches`` batches (default: one pass over ``split``) on ``option``'s device and
    time them, going through ``split`` again where it holds fewer; errors are recorded."""
    if batches is None:
        batches, samples = data.num_batches(len(split), batch_size), len(split)
    else:
        samples = batches * batch_size  # run_benchmark's pool holds whole batches only
    timing = Timing(option, batches, samples)
    try:
        device = option.device
        torch.manual_seed(0)
        pool = list(data.batches(split.to(device), batch_size))  # slices: no copies
        model = to_device(LeNet5(), device)  # to the device first, then the optimizer
        optimizer = build_optimizer("sgd", model.parameters(), 0.01, device.type)
        loss = torch.zeros((), device=device)
        for images, labels in itertools.islice(itertools.cycle(pool), warmup):
            loss, _ = train_step(model, optimizer, images, labels)
        float(loss.item())  # wait for the warm-up to finish
        start = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        with epoch_bar(0, 1, batches, 0) as bar:  # on a terminal only; it never reads back
            bar.set_description(option.label)
            for images, labels in itertools.islice(itertools.cycle(pool), batches):
                batch_loss, _ = train_step(model, optimizer, images, labels)
                loss_sum += batch_loss
                bar.update(1)
        float(loss_sum.item())  # the readback is the barrier: all queued work is done
        timing.seconds = time.perf_counter() - start
    except Exception as error:  # out of memory, an unsupported operator, a driver error
        timing.error = devices.one_line(error)
    return timing


def run_benchmark(
    options: list[devices.DeviceOption],
    batches: int = DEFAULT_BATCHES,
    batch_size: int = 128,
    warmup: int = DEFAULT_WARMUP,
    progress: Callable[[str], None] | None = None,
) -> list[Timing]:
    """Time each device in turn; ``progress`` gets a line before and after each device."""
    split = data.synthetic_digits(min(batches, POOL_BATCHES) * batch_size, seed=7)
    timings = []
    for number, option in enumerate(options, 1):
        if progress:
            progress(f"[{number}/{len(options)}] {option.describe()}: timing ...")
        timing = time_epoch(option, split, batch_size, warmup, batches)
        if progress:
            result = f"failed ({timing.error})" if timing.error else f"{timing.seconds:.2f} s"
            progress(f"[{number}/{len(options)}] {option.label}: {result}")
        timings.append(timing)
    return timings


def missing_notes(
    found: devices.Discovery, timed: list[devices.DeviceOption], accelerator: str
) -> list[str]:
    """Why a backend is not among the timed devices: every installed one that failed and, in
    a DirectML project, DirectML whatever the reason (not installed, no Direct3D 12, ...)."""
    timed_kinds = {option.kind for option in timed}
    notes = []
    for missing in found.unavailable:
        ours = missing.kind == accelerator == "directml"
        if missing.kind not in timed_kinds and (missing.installed or ours):
            notes.append(f"note: {missing.kind} is not among the devices: {missing.reason}")
    return notes


def _accelerator() -> str:
    return this_project.accelerator()


def format_timings(timings: list[Timing]) -> str:
    cpu = [t for t in timings if t.option.kind == "cpu" and not t.error]
    base = cpu[0].samples_per_s if cpu else None
    rows = []
    for t in timings:
        if t.error:
            rows.append([t.option.label, t.option.name, "failed", "-", "-"])
            continue
        speedup = f"{t.samples_per_s / base:.2f}x" if base else "-"
        rows.append(
            [t.option.label, t.option.name, f"{t.seconds:.2f}", f"{t.samples_per_s:,.0f}", speedup]
        )
    table = metrics.format_table(["device", "name", "epoch (s)", "samples/s", "vs CPU"], rows)
    failures = [f"{t.option.label} failed: {t.error}" for t in timings if t.error]
    return "\n".join([table, *failures])


build_parser = parsers.benchmark  # in machinery/parsers.py: --help answers before torch loads


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    write_out("Looking for devices ...")
    found = devices.discover()
    try:
        options = [devices.choose(r, found) for r in args.device] if args.device else found.options
    except devices.DeviceNotAvailable as error:
        write_err(f"error: {error}")
        return 2
    if not args.device:  # devices the user named need no note about the others
        for note in missing_notes(found, options, _accelerator()):
            write_out(note)
    samples = args.batches * args.batch_size
    write_out(
        f"Timing one epoch of {args.batches} batches x {args.batch_size} = {samples} SYNTHETIC "
        f"digits on {len(options)} device(s), after {args.warmup} warm-up batches ..."
    )
    try:
        timings = run_benchmark(
            options,
            args.batches,
            args.batch_size,
            args.warmup,
            write_out,
        )
    except KeyboardInterrupt:
        write_err("Interrupted.")
        return 130
    write_out(format_timings(timings))
    return 1 if all(t.error for t in timings) else 0


if __name__ == "__main__":
    sys.exit(main())
