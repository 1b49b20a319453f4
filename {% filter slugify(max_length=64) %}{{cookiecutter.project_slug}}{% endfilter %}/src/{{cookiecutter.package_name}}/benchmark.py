"""Time a training epoch of LeNet-5 on every available device, side by side.

    python -m <package>.benchmark                 # all devices, 200 batches of 128
    python -m <package>.benchmark --device cpu --device directml --batches 100

Each device trains the same freshly initialised model on the same synthetic digits (no
download), with the same training step as ``train``. A few warm-up batches come first (kernel
selection, memory allocation). The clock stops after a readback of the summed loss: DirectML
has no ``synchronize``, and a readback waits for all queued work on every backend.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Callable

import torch

from . import data
from .machinery import devices, reporting
from .machinery.cli import positive_int, safe_console
from .machinery.optim import build_optimizer
from .machinery.project import load_project
from .model import LeNet5, to_device
from .train import train_step

DEFAULT_BATCHES = 200
DEFAULT_WARMUP = 10


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
) -> Timing:
    """Train one pass over ``split`` on ``option``'s device and time it; errors are recorded."""
    timing = Timing(option, data.num_batches(len(split), batch_size), len(split))
    try:
        device = option.device
        torch.manual_seed(0)
        on_device = split.to(device)
        model = to_device(LeNet5(), device)  # to the device first, then the optimizer
        optimizer = build_optimizer("sgd", model.parameters(), 0.01, device.type)
        loss = torch.zeros((), device=device)
        for images, labels in data.batches(on_device, batch_size, limit=warmup):
            loss, _ = train_step(model, optimizer, images, labels)
        float(loss.item())  # wait for the warm-up to finish
        start = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        for images, labels in data.batches(on_device, batch_size):
            batch_loss, _ = train_step(model, optimizer, images, labels)
            loss_sum += batch_loss
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
    split = data.synthetic_digits(batches * batch_size, seed=7)
    timings = []
    for number, option in enumerate(options, 1):
        if progress:
            progress(f"[{number}/{len(options)}] {option.describe()}: timing ...")
        timing = time_epoch(option, split, batch_size, warmup)
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
    try:
        return load_project().accelerator
    except Exception:  # no readable project.json: no project-specific note
        return ""


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
    table = reporting.format_table(["device", "name", "epoch (s)", "samples/s", "vs CPU"], rows)
    failures = [f"{t.option.label} failed: {t.error}" for t in timings if t.error]
    return "\n".join([table, *failures])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__ or '<package>'}.benchmark",
        description="Time one training epoch of LeNet-5 (synthetic digits) on each device.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--batches", type=positive_int, default=DEFAULT_BATCHES, help="batches per epoch"
    )
    parser.add_argument("--batch-size", type=positive_int, default=128, help="batch size")
    parser.add_argument(
        "--warmup", type=positive_int, default=DEFAULT_WARMUP, help="untimed batches first"
    )
    parser.add_argument(
        "--device",
        action="append",
        default=None,
        help="a device to time (repeat for several; default: every available device)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    safe_console()
    args = build_parser().parse_args(argv)
    print("Looking for devices ...", flush=True)
    found = devices.discover()
    try:
        options = [devices.choose(r, found) for r in args.device] if args.device else found.options
    except devices.DeviceNotAvailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not args.device:  # devices the user named need no note about the others
        for note in missing_notes(found, options, _accelerator()):
            print(note)
    samples = args.batches * args.batch_size
    print(
        f"Timing one epoch of {args.batches} batches x {args.batch_size} = {samples} SYNTHETIC "
        f"digits on {len(options)} device(s), after {args.warmup} warm-up batches ..."
    )
    try:
        timings = run_benchmark(
            options,
            args.batches,
            args.batch_size,
            args.warmup,
            lambda line: print(line, flush=True),
        )
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    print(format_timings(timings))
    return 1 if all(t.error for t in timings) else 0


if __name__ == "__main__":
    sys.exit(main())
