"""The figures the README and docs/workshop.md quote, measured on this machine, into
docs/figures.json (tests/test_docs.py holds the documents to that file).

    python benchmarks/figures.py                # 3 times each, the median counts
    python benchmarks/figures.py --runs 5 --output my-figures.json

Each figure comes from the project's own commands, run as a user types them:

- one epoch on the synthetic digits, ``python -m <package>.train --dataset synthetic --epochs 1
  --device cpu``: the seconds from the command to the test accuracy, the epoch's seconds and
  images per second (from the run's metrics.json), and the test accuracy;
- ``python -m <package>.<command> --help`` for each command: how long help takes, next to
  ``import torch`` alone, which is what help waited for before it answered without torch.

A busy machine makes every time longer: the file says how busy it was (the load average, where
the system has one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "{{ cookiecutter.package_name }}"
ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures.json"
COMMANDS = ("train", "predict", "evaluate", "export", "draw", "benchmark", "data")


def environment() -> dict:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path)


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=environment(), check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def synthetic_epoch(runs_dir: Path) -> dict:
    output = runs_dir / f"run{len(list(runs_dir.iterdir()))}"
    command = [sys.executable, "-m", f"{PACKAGE}.train", "--dataset", "synthetic"]
    command += ["--epochs", "1", "--device", "cpu", "--output-dir", str(output)]
    seconds = timed(command)
    metrics = json.loads((output / "metrics.json").read_text(encoding="utf-8"))
    (epoch,) = metrics["epochs"]
    return {
        "command_s": seconds,
        "epoch_s": epoch["seconds"],
        "images_per_s": epoch["samples_per_s"],
        "test_accuracy_percent": 100 * metrics["test"]["accuracy"],
    }


def median_of(samples: list[dict]) -> dict:
    return {key: statistics.median(sample[key] for sample in samples) for key in samples[0]}


def machine() -> str:
    import torch

    system = {"Darwin": "macOS"}.get(platform.system(), platform.system())
    version = torch.__version__.split("+")[0]  # 2.14.1, not 2.14.1+cu130
    return f"{os.cpu_count()}-core {system} {platform.machine()} CPU, torch {version}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="times each figure is measured")
    parser.add_argument("--output", type=Path, default=FIGURES, help="the figures file")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    helps = {
        name: statistics.median(
            timed([sys.executable, "-m", f"{PACKAGE}.{name}", "--help"]) for _ in range(args.runs)
        )
        for name in COMMANDS
    }
    torch_s = statistics.median(
        timed([sys.executable, "-c", "import torch"]) for _ in range(args.runs)
    )
    with tempfile.TemporaryDirectory() as runs_dir:
        epochs = [synthetic_epoch(Path(runs_dir)) for _ in range(args.runs)]
    epoch = median_of(epochs)
    figures = {
        "machine": machine(),
        "measured": time.strftime("%Y-%m-%d"),
        "command": f"python benchmarks/figures.py --runs {args.runs}",
        "runs": args.runs,
        "load_average_at_start": None if load is None else round(load, 1),
        "synthetic_epoch": {
            "command_s": round(epoch["command_s"]),
            "epoch_s": round(epoch["epoch_s"], 1),
            "images_per_s": round(epoch["images_per_s"]),
            "test_accuracy_percent": round(epoch["test_accuracy_percent"], 2),
        },
        "help_s": {name: round(seconds, 2) for name, seconds in helps.items()},
        "import_torch_s": round(torch_s, 1),
    }
    args.output.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
