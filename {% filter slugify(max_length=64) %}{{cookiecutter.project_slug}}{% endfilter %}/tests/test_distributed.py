"""Training with several processes: torchrun, DistributedDataParallel, gloo on the CPU.

The runs through torchrun are real: two processes that find each other, average their
gradients and let rank 0 write. They are small (720 synthetic training images, batch 64, one
epoch of 12 steps) and cost mostly the start of torch in every process. PyTorch calls distributed
training on Windows untested, and torchrun there needs USE_LIBUV=0: those tests run on Linux
and macOS only (marker ``torchrun``); the refusals and the sharding are tested everywhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import {{ cookiecutter.package_name }}.machinery.stopping as stopping
from {{ cookiecutter.package_name }} import data, train
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    devices,
    distributed,
    ranks,
)
from {{ cookiecutter.package_name }}.machinery.output_lock import process_alive
from {{ cookiecutter.package_name }}.machinery.stopping import TrainError

ROOT = Path(__file__).resolve().parents[1]
SMALL_TRAIN = ROOT / "tests" / "small_train.py"
SMALL_TRAIN_SIZE = 800  # 720 training images (even: no image left out with 2 processes)
ARGS = ["--dataset", "synthetic", "--device", "cpu", "--epochs", "1", "--batch-size", "64"]
# The weights of 2 processes x 32 images and of 1 process x 64 images after the same 12 steps:
# the same sums in another order, so equal up to float32 rounding (measured: 6e-8 at most).
WEIGHTS_TOLERANCE = 1e-5

not_on_windows = pytest.mark.skipif(
    sys.platform == "win32",
    reason="PyTorch calls distributed training on Windows untested; torchrun there needs "
    "USE_LIBUV=0 (docs/distributed.md)",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def torchrun_command(*args: str) -> list[str]:
    """``torchrun ARGS tests/small_train.py``, as ``python -m torch.distributed.run``: the
    same program, found through this interpreter."""
    return [sys.executable, "-m", "torch.distributed.run", *args, str(SMALL_TRAIN)]


def environment(**extra: str) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, SMALL_TRAIN_SIZE=str(SMALL_TRAIN_SIZE))
    env.update(OMP_NUM_THREADS="1", **extra)  # two processes on a 2-core machine: one thread each
    env.pop("WORLD_SIZE", None)  # a test run under torchrun itself must not pass it on
    return env


def start(command: list[str], cwd: Path, **extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        cwd=str(cwd),
        env=environment(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as torchrun in a terminal has
    )


def finish(process: subprocess.Popen, limit: float) -> str:
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"torchrun did not finish in {limit:.0f} s:\n{output[-3000:]}")
    return output


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return checkpoints.load_checkpoint(folder / checkpoints.LAST)["model"]


def largest_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@contextlib.contextmanager
def small_synthetic_data():
    """The sizes small_train.py sets, for a run in this process."""
    saved = data.SYNTHETIC_TRAIN_SIZE, data.SYNTHETIC_TEST_SIZE
    data.SYNTHETIC_TRAIN_SIZE, data.SYNTHETIC_TEST_SIZE = SMALL_TRAIN_SIZE, 256
    try:
        yield
    finally:
        data.SYNTHETIC_TRAIN_SIZE, data.SYNTHETIC_TEST_SIZE = saved


def train_in_this_process(*args: str) -> int:
    with small_synthetic_data():
        return train.main([*ARGS, *args])


@pytest.fixture(scope="module")
def two_machines(tmp_path_factory, child_limit) -> tuple[Path, list[str]]:
    """Two "machines" on this one: two torchrun commands with one process each that meet at a
    c10d rendezvous on localhost, as on two machines of a cluster. (runs folder, outputs)."""
    folder = tmp_path_factory.mktemp("two-machines")
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [
        start(
            torchrun_command(
                "--nnodes=2",
                f"--node-rank={rank}",
                "--nproc-per-node=1",
                "--rdzv-backend=c10d",
                f"--rdzv-endpoint={endpoint}",
                "--rdzv-id=lenet-test",
            )
            + ARGS,
            folder,  # the runs go to runs/ there
        )
        for rank in (0, 1)
    ]
    outputs = [finish(node, child_limit) for node in nodes]
    for node, output in zip(nodes, outputs):
        assert node.returncode == 0, output[-3000:]
    return folder / "runs", outputs


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> Path:
    """The same run in one process, without torchrun."""
    out = tmp_path_factory.mktemp("one-process") / "run"
    assert train_in_this_process("--output-dir", str(out)) == 0
    return out


# --------------------------------------------------------------------------------------------
# Real runs through torchrun


@pytest.mark.slow
@pytest.mark.torchrun
@not_on_windows
def test_two_processes_write_one_run_folder_and_train_as_one_process(two_machines, one_process):
    runs, outputs = two_machines
    folders = [p for p in runs.iterdir() if p.is_dir()]
    assert len(folders) == 1, folders  # not one per process: rank 0 named and wrote it
    written = sorted(p.name for p in folders[0].iterdir())
    assert written == ["best.pt", "curves.png", "last.pt", "metrics.csv", "metrics.json"]
    both = "".join(outputs)
    assert both.count("torchrun: 2 processes, 32 images each per step (batch 64 in all)") == 1
    assert both.count("epoch 1/1  train loss") == 1 and both.count("test accuracy") == 1
    # DDP averages the gradients of the two halves of every batch of 64: the same step as one
    # process takes on the whole batch, so the same weights and the same accuracy.
    assert largest_difference(weights(folders[0]), weights(one_process)) < WEIGHTS_TOLERANCE
    two = checkpoints.load_checkpoint(folders[0] / checkpoints.LAST)["history"]
    one = checkpoints.load_checkpoint(one_process / checkpoints.LAST)["history"]
    for mine, reference in zip(two, one):
        assert mine["val_accuracy"] == pytest.approx(reference["val_accuracy"], abs=1 / 80)
        assert mine["train_loss"] == pytest.approx(reference["train_loss"], rel=1e-4)


@pytest.mark.slow
@pytest.mark.torchrun
@not_on_windows
def test_ctrl_c_stops_every_process_once_and_the_run_resumes_with_2_or_1_processes(
    tmp_path, two_machines, one_process, child_limit
):
    out, pids = tmp_path / "run", tmp_path / "pids"
    pids.mkdir()
    standalone = torchrun_command("--standalone", "--nproc-per-node=2")
    run = start(
        standalone + [*ARGS, "--output-dir", str(out), "--log-interval", "1"],
        ROOT,
        STEP_DELAY_S="0.25",  # the 12 steps take 3 s at least: Ctrl+C lands inside the epoch
        PID_FOLDER=str(pids),
    )
    header = ""
    for line in run.stdout:  # rank 0's header ends with the output folder: training starts
        header += line
        if line.strip().startswith("output  :"):
            break
    time.sleep(1.0)
    os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl+C reaches torchrun's group
    output = header + finish(run, child_limit)
    assert output.count("Ctrl+C: finishing this batch") == 1, output[-3000:]
    assert output.count("Saved ") == 1 and "--resume continues from there" in output
    workers = [int(p.name) for p in pids.iterdir()]
    assert len(workers) == 2 and not any(process_alive(pid) for pid in workers)
    assert "Stopped in epoch 1 after batch" in output  # inside the epoch: the exact resume
    stopped = checkpoints.load_checkpoint(out / checkpoints.LAST)
    assert stopped["epochs_done"] == 0 and 0 < stopped["position"]["batch"] < 12

    # Another number of processes continues the same steps: --batch-size is the batch of all.
    other = tmp_path / "one-process"
    shutil.copytree(out, other)
    assert train_in_this_process("--resume", "--output-dir", str(other)) == 0
    assert largest_difference(weights(other), weights(one_process)) < WEIGHTS_TOLERANCE

    resumed = start(standalone + [*ARGS, "--resume", "--output-dir", str(out)], ROOT)
    output = finish(resumed, child_limit)
    assert resumed.returncode == 0, output[-3000:]
    assert "resuming:" in output and output.count("test accuracy") == 1
    runs, _ = two_machines
    uninterrupted = next(p for p in runs.iterdir() if p.is_dir())
    assert largest_difference(weights(out), weights(uninterrupted)) == 0.0  # the same sums
    resumed_history = checkpoints.load_checkpoint(out / checkpoints.LAST)["history"]
    whole_history = checkpoints.load_checkpoint(uninterrupted / checkpoints.LAST)["history"]
    assert len(resumed_history) == len(whole_history) == 1
    for mine, reference in zip(resumed_history, whole_history):
        assert mine["train_loss"] == pytest.approx(reference["train_loss"], rel=1e-4)
        assert mine["val_accuracy"] == reference["val_accuracy"]


# --------------------------------------------------------------------------------------------
# What changes, and what is refused, without starting processes


def option(kind: str) -> devices.DeviceOption:
    return devices.DeviceOption(kind, None, f"a {kind} device", torch.device("cpu"))


TWO_PROCESSES = {"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0"}


def test_directml_and_mps_under_torchrun_are_refused_naming_the_stacks_that_can():
    for kind, name in [("directml", "DirectML"), ("mps", "Apple MPS")]:
        with pytest.raises(TrainError) as refused, distributed.processes(
            option(kind), environ=TWO_PROCESSES
        ):
            pass
        message = str(refused.value)
        assert message.startswith(f"{name} cannot train with several processes")
        for able in ("CUDA or ROCm", "Intel XPU", "the CPU (gloo, --device cpu)"):
            assert able in message
        assert "without torchrun" in message
        assert distributed.current() is distributed.SINGLE


def test_without_torchrun_nothing_changes(tiny_dataset):
    assert distributed.from_environment({}) is distributed.SINGLE
    # torchrun with one process sets WORLD_SIZE=1: that run too is the plain one
    assert distributed.from_environment({"WORLD_SIZE": "1", "RANK": "0"}) is distributed.SINGLE
    with distributed.processes(option("directml"), environ={}) as chosen:
        assert chosen.kind == "directml"  # DirectML trains as always in one process
    model = torch.nn.Linear(2, 2)
    assert distributed.shared(model) is model
    assert distributed.my_share(tiny_dataset.train) is tiny_dataset.train
    loss, correct = torch.tensor(1.5), torch.tensor(3)
    assert distributed.summed(loss, correct, 7) == (loss, correct, 7)
    assert distributed.process_batch(127) == 127
    assert isinstance(distributed.stop_signal(), stopping.StopSignal)
    assert not isinstance(distributed.stop_signal(), distributed.AgreedStop)


def test_each_process_takes_its_slice_and_together_they_make_the_whole_batch(monkeypatch):
    images = torch.arange(11 * 784, dtype=torch.int32).reshape(11, 1, 28, 28).to(torch.uint8)
    split = data.Split(images, torch.arange(11))
    shares = []
    for rank in (0, 1):
        monkeypatch.setattr(ranks, "_current", distributed.Processes(rank, rank, 2))
        shares.append(distributed.my_share(split))
        assert len(distributed.my_share(split, whole=True)) == (6, 5)[rank]  # evaluation: all
    assert [len(s) for s in shares] == [5, 5]  # training: the odd image out, equal counts
    assert distributed.process_batch(4) == 2  # --batch-size 4: 2 images per process
    assert distributed.usable(11) == 10
    one_process = list(data.batches(data.Split(images[:10], split.labels[:10]), 4))
    for k, (_, labels) in enumerate(one_process):  # batch k of one process with batch 4 ...
        together = [list(data.batches(share, 2))[k][1] for share in shares]
        assert sorted(torch.cat(together).tolist()) == labels.tolist()  # ... = the 2 batch k's


def test_a_folder_is_shared_out_before_its_dataloader_reads_a_picture(monkeypatch):
    """Your own images: each process's DataLoader reads only its slice of the epoch's order."""

    class Pictures(torch.utils.data.Dataset):
        targets = [i % 3 for i in range(9)]

        def __len__(self):
            return 9

        def __getitem__(self, i):
            return torch.full((1, 28, 28), i, dtype=torch.uint8), self.targets[i]

    split = data.LoaderSplit(Pictures(), torch.arange(9).flip(0))  # reading order 8, 7, ... 0
    read = []
    for rank in (0, 1):
        monkeypatch.setattr(ranks, "_current", distributed.Processes(rank, rank, 2))
        share = distributed.my_share(split)
        read.append([int(p) for images, _ in data.batches(share, 2) for p in images[:, 0, 0, 0]])
    assert read == [[8, 6, 4, 2], [7, 5, 3, 1]]  # the ninth, last in the order, left out


def test_a_batch_that_cannot_be_split_evenly_is_refused_with_a_multiple_to_use():
    expected = r"--batch-size 128 .* over 3 processes: use a multiple of 3, such as 126\."
    with pytest.raises(TrainError, match=expected):
        distributed.process_batch(128, distributed.Processes(0, 0, 3))


def test_a_windows_torch_without_libuv_gets_the_setting_that_works():
    error = RuntimeError("use_libuv was requested but PyTorch was build without libuv support")
    message = distributed._init_failure(error)
    assert "USE_LIBUV=0" in message and "$env:USE_LIBUV = '0'" in message
    assert "without torchrun" in message


def test_the_command_that_uses_every_gpu_is_given_only_for_several():
    package = data.__package__
    assert distributed.devices_to_use("cuda", 4) == (
        f"torchrun --standalone --nproc-per-node=4 -m {package}.train --device cuda"
    )
    assert distributed.devices_to_use("xpu", 2).endswith("--device xpu")
    assert distributed.devices_to_use("cuda", 1) is None
    assert distributed.devices_to_use("directml", 2) is None
    assert distributed.devices_line("cuda", 2) == (
        f"2 cuda devices on this machine: `torchrun --standalone --nproc-per-node=2 -m "
        f"{package}.train --device cuda` trains on all of them "
        "(docs/distributed.md)."
    )
    assert distributed.devices_line("cuda", 1) == "1 cuda device on this machine."


def test_one_ctrl_c_that_reaches_a_process_twice_is_one_press(monkeypatch):
    """With older torch the processes share torchrun's process group: a terminal's Ctrl+C
    reaches each twice, from the terminal and passed on by torchrun. That is one press (save,
    then stop); a press seconds later stops at once, as in one process."""
    stop = distributed.AgreedStop()
    expected = pytest.raises(stopping.Interrupted, match="^Interrupted. kept$")
    with expected, stopping.ctrl_c_stops_gracefully(stop, lambda: "kept"):
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # the same press, passed on by torchrun
        assert stop.pressed and not stop.requested  # not before the processes agree
        stop.agree()
        assert stop.requested
        monkeypatch.setattr(distributed.AgreedStop, "SAME_PRESS_S", -1.0)  # seconds later
        signal.raise_signal(signal.SIGINT)
