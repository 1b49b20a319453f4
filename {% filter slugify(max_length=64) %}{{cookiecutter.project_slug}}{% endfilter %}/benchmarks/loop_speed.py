"""How fast is the training loop? This project's epoch vs the tutorial loop vs bare compute.

    python benchmarks/loop_speed.py                      # one MNIST-sized epoch, on the CPU
    python benchmarks/loop_speed.py --samples 20000 --repeats 5 --device directml

All three loops train the same LeNet-5 (same initial weights, same SGD settings) on the same
synthetic digits, one epoch of ``--samples`` images in batches of ``--batch-size``:

- **this project**: ``train.train_epoch`` exactly as ``train`` runs it: the whole set is
  one uint8 tensor on the device, one shuffle per epoch, batches are slices, converted and
  normalised on the device, loss and accuracy summed there, a progress bar, one readback.
- **tutorial loop**: what most tutorials (and pytorch/examples' MNIST) do: torchvision's
  ``MNIST`` dataset (the synthetic digits written in MNIST's file format) with per-sample
  ``ToTensor`` and ``Normalize`` transforms, a ``DataLoader`` (batch 128, shuffled, no
  workers, as on Windows and in the CPU examples), ``.to(device)`` per batch, ``loss.item()``
  every 10 batches.
- **bare compute**: forward, loss, backward and optimizer step on batches that are already
  normalised float32 tensors on the device: the floor no data pipeline can beat.

Each loop runs ``--repeats`` times, in rotating order, after a warm-up; the best time counts
(the least disturbed by other programs). A readback ends each timing: it waits for all
queued device work, and DirectML has no ``synchronize``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.nn import functional as F

from {{ cookiecutter.package_name }} import (
    data,
    train,
)
from {{ cookiecutter.package_name }}.datasets import (
    mnist,
)
from {{ cookiecutter.package_name }}.machinery import (
    devices,
    startup,
    stopping,
)
from {{ cookiecutter.package_name }}.model import (
    LeNet5,
    to_device,
)

TUTORIAL_LOG_INTERVAL = 10


def make_model(device: torch.device):
    torch.manual_seed(0)  # the same initial weights for every loop
    model = to_device(LeNet5(), device)  # channels-last on the CPU, as in training
    optimizer = train.build_optimizer("sgd", model.parameters(), 0.01, device.type)
    return model, optimizer


def time_project(split: data.Split, option: devices.DeviceOption, batch_size: int) -> float:
    small = data.synthetic_digits(batch_size, seed=99)
    dataset = data.Dataset("synthetic", "benchmark", split, small, small)
    with tempfile.TemporaryDirectory() as out:
        cfg = train.TrainConfig(
            epochs=1, batch_size=batch_size, dataset="synthetic", output_dir=Path(out)
        )
        found = devices.Discovery([option], [])
        ready = startup.Started(option, found, dataset, stopping.StopSignal(), None, batch_size)
        run = train.setup(cfg, ready)
        start = time.perf_counter()
        train.train_epoch(run, 0)  # ends with a readback of the summed loss
        return time.perf_counter() - start


def time_tutorial(root: Path, device: torch.device, batch_size: int) -> float:
    from torchvision import datasets, transforms

    transform = transforms.Compose(
        [transforms.ToTensor(), transforms.Normalize((data.MNIST_MEAN,), (data.MNIST_STD,))]
    )
    dataset = datasets.MNIST(str(root), train=True, download=False, transform=transform)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True)
    model, optimizer = make_model(device)
    model.train()
    start = time.perf_counter()
    loss = torch.zeros(())
    for batch_idx, (images, labels) in enumerate(loader):
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        if batch_idx % TUTORIAL_LOG_INTERVAL == 0:
            loss.item()  # the tutorials print it
    loss.item()
    return time.perf_counter() - start


def time_bare(batches: list, device: torch.device) -> float:
    model, optimizer = make_model(device)
    model.train()
    start = time.perf_counter()
    loss = torch.zeros((), device=device)
    for images, labels in batches:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    loss.item()
    return time.perf_counter() - start


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--samples", type=int, default=60000, help="images per epoch (MNIST: 60000)"
    )
    parser.add_argument("--batch-size", type=int, default=128, help="batch size")
    parser.add_argument("--repeats", type=int, default=3, help="timed epochs per loop")
    parser.add_argument("--device", default="cpu", help="auto, cpu, cuda, directml, ...")
    args = parser.parse_args(argv)
    try:
        option = devices.choose(args.device)
    except devices.DeviceNotAvailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    device = option.device
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs; "
        f"device {option.describe()}"
    )
    print(
        f"one epoch of {args.samples} SYNTHETIC digits, batch {args.batch_size}, "
        f"best of {args.repeats}"
    )
    split = data.synthetic_digits(args.samples, seed=0)
    on_device = split.to(device)
    order = torch.randperm(len(split), generator=torch.Generator().manual_seed(0)).to(device)
    prepared = [
        (data.to_model_input(images, device), labels)
        for images, labels in data.batches(
            data.Split(on_device.images[order], on_device.labels[order]), args.batch_size
        )
    ]
    times: dict = {"this project": [], "tutorial loop": [], "bare compute": []}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        mnist.write_mnist_raw(root, split, data.synthetic_digits(10, seed=1))
        loops = {
            "this project": lambda: time_project(split, option, args.batch_size),
            "tutorial loop": lambda: time_tutorial(root, device, args.batch_size),
            "bare compute": lambda: time_bare(prepared, device),
        }
        time_bare(prepared[:20], device)  # warm-up: kernels chosen, libraries paged in
        names = list(loops)
        for repeat in range(args.repeats):
            for name in names[repeat % 3 :] + names[: repeat % 3]:
                times[name].append(loops[name]())
                print(f"  {name:14s} run {repeat + 1}: {times[name][-1]:.2f} s", flush=True)
    best = {name: min(values) for name, values in times.items()}
    ours = best["this project"]
    print()
    print(
        f"{'loop':14s}  {'best (s)':>8s}  {'median (s)':>10s}  {'samples/s':>9s}  vs this project"
    )
    for name, values in times.items():
        ratio = best[name] / ours
        print(
            f"{name:14s}  {best[name]:8.2f}  {statistics.median(values):10.2f}  "
            f"{args.samples / best[name]:9.0f}  {ratio:.2f}x the time"
        )
    speedup = best["tutorial loop"] / ours
    overhead = ours / best["bare compute"] - 1.0
    print()
    print(
        f"this project vs tutorial loop: {speedup:.2f}x faster (goal: at least 3x) "
        f"-> {'met' if speedup >= 3.0 else 'NOT met'}"
    )
    print(
        f"this project vs bare compute : {100 * overhead:+.1f} % time (goal: within 10 %) "
        f"-> {'met' if overhead <= 0.10 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
