"""One process or several? The time of an epoch with 1 and with N training processes.

    python benchmarks/processes.py                        # 1 and 2 processes on the CPU
    python benchmarks/processes.py --processes 4 --device cuda --dataset mnist

The runs are the project's own commands, as a user types them, with the same settings:
``python -m {{ cookiecutter.package_name }}.train`` and ``torchrun --standalone
--nproc-per-node=N -m {{ cookiecutter.package_name }}.train``. torchrun gives each of its
processes one thread (``OMP_NUM_THREADS=1``), so the single process runs twice: with torch's
own number of threads, and with one thread, like each of the N. Their epoch times (training
and validation, from each run's metrics.json) are printed side by side; the first epoch also
warms up. Then the share of a step that the gradients' all-reduce takes: N processes time
the same training steps with DDP's all-reduce and without it (``no_sync``). On a CPU the
processes share the cores; on N GPUs each has its own device.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "{{ cookiecutter.package_name }}"
STEPS = 40  # timed training steps for the all-reduce's share
SRC = Path(__file__).resolve().parents[1] / "src"


def environment() -> dict:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path)


def train_command(processes: int) -> list[str]:
    if processes <= 1:
        return [sys.executable, "-m", f"{PACKAGE}.train"]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    return launcher + [f"--nproc-per-node={processes}", "-m", f"{PACKAGE}.train"]


def epoch_seconds(processes: int, settings: list[str], folder: Path, **env: str) -> list[float]:
    """Each epoch's seconds in a run with ``processes`` processes (0: one, with one thread)."""
    out = folder / f"{processes}-processes"
    command = train_command(processes) + settings + ["--output-dir", str(out)]
    shown = " ".join(f"{k}={v}" for k, v in env.items())
    print(f"$ {shown + ' ' if shown else ''}python " + " ".join(command[1:]), flush=True)
    done = subprocess.run(command, env={**environment(), **env}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return [row["seconds"] for row in metrics["epochs"]]


def allreduce_share(args: argparse.Namespace) -> None:
    """Started by torchrun: time steps with and without DDP's all-reduce (rank 0 prints)."""
    import torch
    from torch.nn import functional as F

    from {{ cookiecutter.package_name }} import data, model
    from {{ cookiecutter.package_name }}.machinery import devices, distributed

    option = devices.choose(args.device)
    with distributed.processes(option) as option:
        torch.manual_seed(0)
        net = distributed.shared(model.to_device(model.LeNet5(), option.device))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        per_process = args.batch_size // distributed.current().world_size
        images = data.synthetic_digits(per_process * STEPS, seed=5).to(option.device)
        batches = list(data.batches(images, per_process))

        def steps(sync: bool) -> float:
            started = time.perf_counter()
            for pixels, labels in batches:
                inputs = data.to_model_input(pixels, option.device)
                loss = F.cross_entropy(net(inputs), labels)
                optimizer.zero_grad(set_to_none=True)
                if sync:
                    loss.backward()
                else:
                    with net.no_sync():  # the gradients stay local: no all-reduce
                        loss.backward()
                optimizer.step()
            float(loss.item())  # a readback: the end of the device's queued work
            return time.perf_counter() - started

        steps(True)  # warm-up
        timed: dict = {True: [], False: []}
        for _ in range(5):  # alternating, the best of each: the least disturbed by others
            for sync in (True, False):
                timed[sync].append(steps(sync))
        if distributed.is_main():
            best = {sync: min(times) / STEPS for sync, times in timed.items()}
            share = 1 - best[False] / best[True]
            print(
                f"all-reduce: {100 * share:.0f} % of a step ({1000 * best[True]:.1f} ms with it, "
                f"{1000 * best[False]:.1f} ms without; {per_process} images per process, "
                f"{distributed.current().world_size} processes)"
            )


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2, help="N, compared with 1")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or xpu")
    parser.add_argument("--dataset", default="synthetic", help="synthetic or mnist")
    parser.add_argument("--epochs", type=int, default=2, help="the first one warms up")
    parser.add_argument("--batch-size", type=int, default=128, help="of all processes")
    parser.add_argument("--all-reduce", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.all_reduce:  # this script, started again by torchrun
        allreduce_share(args)
        return 0
    settings = ["--dataset", args.dataset, "--device", args.device]
    settings += ["--epochs", str(args.epochs), "--batch-size", str(args.batch_size)]
    rows = {
        "1 process": (1, {}),
        "1 process, 1 thread": (0, {"OMP_NUM_THREADS": "1"}),
        f"{args.processes} processes": (args.processes, {}),
    }
    with tempfile.TemporaryDirectory() as folder:
        times = {
            row: epoch_seconds(n, settings, Path(folder), **env) for row, (n, env) in rows.items()
        }
    print(f"\nseconds per epoch ({args.dataset}, {args.device}, batch {args.batch_size} in all)")
    print(f"{'':<22}" + "".join(f"{'epoch ' + str(e + 1):>10}" for e in range(args.epochs)))
    for row, seconds in times.items():
        print(f"{row:<22}" + "".join(f"{s:10.2f}" for s in seconds))
    if args.epochs > 1:
        later = {row: sum(s[1:]) / len(s[1:]) for row, s in times.items()}
        many = later[f"{args.processes} processes"]
        print(
            f"{args.processes} processes vs 1 after the first epoch: "
            f"{later['1 process'] / many:.2f}x, vs 1 with one thread: "
            f"{later['1 process, 1 thread'] / many:.2f}x faster"
        )
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command = launcher + [f"--nproc-per-node={args.processes}", __file__, "--all-reduce"]
    command += ["--device", args.device, "--batch-size", str(args.batch_size)]
    subprocess.run(command, env=environment(), check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
