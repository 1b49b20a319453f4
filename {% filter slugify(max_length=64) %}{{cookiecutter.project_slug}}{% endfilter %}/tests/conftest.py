"""Shared fixtures: small data, a CPU-only device list, and one trained run to look at.

Everything runs on the CPU in seconds; the fixtures shrink runs, they never fake results.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import (
    data,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    devices,
)

SRC = Path(__file__).resolve().parents[1] / "src"

# How long a test lets a child Python run: a guard against hangs, never a speed goal. A child
# that imports torch takes 5-45 s on a slow or busy machine (an antivirus scanning torch's
# files, an emulator); set TEST_TIMEOUT_SCALE (e.g. 3) where even this is too short.
CHILD_LIMIT_S = 300 * float(os.environ.get("TEST_TIMEOUT_SCALE", "1"))


@pytest.fixture(scope="session")
def tiny_dataset() -> data.Dataset:
    """Synthetic digits, small: 1382 train / 154 validation / 512 test."""
    return data.load_synthetic(train_size=1536, test_size=512, seed=3)


@pytest.fixture
def cpu_discovery() -> devices.Discovery:
    """What discovery finds on a machine with nothing but a CPU."""
    return devices.discover(probes=[devices.probe_cpu])


@pytest.fixture
def cpu_only(monkeypatch, cpu_discovery) -> devices.Discovery:
    """Command-line runs see only the CPU (and spend no time probing accelerators)."""
    monkeypatch.setattr(devices, "discover", lambda probes=None: cpu_discovery)
    return cpu_discovery


@pytest.fixture
def small_synthetic(monkeypatch) -> None:
    """``--dataset synthetic`` on the command line generates a small set."""
    monkeypatch.setattr(data, "SYNTHETIC_TRAIN_SIZE", 1536)
    monkeypatch.setattr(data, "SYNTHETIC_TEST_SIZE", 512)


@pytest.fixture
def offline(monkeypatch) -> None:
    """No network: every URL torchvision opens fails as it does behind a firewall."""

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network is unreachable (blocked by the test)")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def _config(output_dir: Path, **overrides) -> train.TrainConfig:
    values = {"epochs": 2, "dataset": "synthetic", "output_dir": output_dir, "device": "cpu"}
    values["batch_size"] = 64  # 22 steps per epoch on tiny_dataset: enough to learn (~95 %)
    values.update(overrides)
    return train.TrainConfig(**values)


@pytest.fixture
def tiny_config():
    """A factory: TrainConfig for a 2-epoch CPU run on synthetic digits into ``output_dir``
    (batch 64 on ``tiny_dataset``: 22 steps per epoch)."""
    return _config


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, tiny_dataset) -> Path:
    """The output directory of a finished 2-epoch run on the tiny dataset."""
    out = tmp_path_factory.mktemp("trained-run")
    cpu = devices.discover(probes=[devices.probe_cpu])
    train.train(_config(out), discovery=cpu, dataset=tiny_dataset)
    return out


@pytest.fixture(scope="session")
def child_limit() -> float:
    """Seconds a test lets a child Python run: CHILD_LIMIT_S."""
    return CHILD_LIMIT_S


@pytest.fixture
def run_module():
    """A factory: run ``python -m <package>.<module> args`` in a child process, as a user does."""

    def run(module: str, *args: str, cwd: Path, timeout: float = CHILD_LIMIT_S):
        path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
        return subprocess.run(
            [sys.executable, "-m", f"{data.__package__}.{module}", *args],
            cwd=str(cwd),
            env=dict(os.environ, PYTHONPATH=path),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run
