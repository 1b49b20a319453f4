"""torchrun at its edges: more processes than validation pictures, and a process that dies.
The runs through torchrun are real (marker ``torchrun``, Linux and macOS only, as in
test_distributed.py)."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest
import torch

from {{ cookiecutter.package_name }} import data, evaluate
from {{ cookiecutter.package_name }}.machinery import distributed, ranks, stopping
from {{ cookiecutter.package_name }}.model import LeNet5
from test_distributed import ARGS, ROOT, finish, not_on_windows, start, torchrun_command
from test_folder import _pictures


def test_a_process_beyond_the_last_validation_picture_adds_zero_to_the_sums(tmp_path, monkeypatch):
    # Which pictures validate depends on their bytes (a content hash), and PNG encoders differ
    # between platforms: keep the first validation picture, whatever the folder's split gave.
    validation = data.load_folder(_pictures(tmp_path / "few", per_class=6)).val
    one_picture = validation.reordered(torch.arange(1))
    assert len(one_picture) == 1
    sums = []
    monkeypatch.setattr(distributed, "summed", lambda *totals: sums.append(totals) or totals)
    for rank in range(3):
        monkeypatch.setattr(ranks, "_current", distributed.Processes(rank, rank, 3))
        assert len(distributed.my_share(one_picture, whole=True)) == (1, 0, 0)[rank]
        evaluate.evaluate_split(LeNet5(), one_picture)
    assert [seen for _, _, seen in sums] == [1, 0, 0]
    assert [float(loss) for loss, _, _ in sums[1:]] == [0.0, 0.0]
    assert [int(correct) for _, correct, _ in sums[1:]] == [0, 0]
    assert sums[1][0].dtype == torch.float32  # the same tensors as a process with pictures


@pytest.mark.slow  # starts processes: the fast set leaves it out
@pytest.mark.torchrun
@not_on_windows
def test_three_processes_train_on_a_folder_with_one_validation_picture(tmp_path, child_limit):
    pictures, out = _pictures(tmp_path / "few", per_class=6), tmp_path / "run"
    args = ["--dataset", f"folder:{pictures}", "--device", "cpu", "--epochs", "1"]
    run = start(
        torchrun_command("--standalone", "--nproc-per-node=3")
        + [*args, "--batch-size", "3", "--output-dir", str(out)],
        ROOT,
    )
    output = finish(run, child_limit)
    assert run.returncode == 0, output[-3000:]
    assert re.search(r"10 train / 1 validation / 1 test", output), output[-3000:]
    assert "Traceback" not in output and "epoch 1/1" in output
    assert (out / "best.pt").is_file() and (out / "last.pt").is_file()


def wait_until(condition, limit: float) -> bool:
    """Whether ``condition()`` came true within ``limit`` seconds (looked at 20 times a second)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_gone_process_is_named_in_one_sentence_and_other_errors_are_not():
    reset = RuntimeError(
        "[../gloo/transport/tcp/pair.cc:545] Read error [127.0.0.1]:8073: Connection reset by "
        "peer. This is typically caused by a remote worker hanging or bugs in the application."
    )
    sentence = distributed.lost_process(reset)
    assert sentence is not None and "Another process of this run stopped" in sentence
    assert "--resume" in sentence and "\n" not in sentence
    taken_for_a_gpu_failure = stopping.DeviceFailed("cuda:0 failed while training")
    taken_for_a_gpu_failure.__cause__ = RuntimeError("NCCL communicator was aborted on rank 1.")
    assert distributed.lost_process(taken_for_a_gpu_failure) is not None
    assert distributed.lost_process(RuntimeError("mat1 and mat2 shapes cannot be")) is None


@pytest.mark.slow  # starts processes: the fast set leaves it out
@pytest.mark.torchrun
@not_on_windows
def test_when_one_process_is_killed_the_other_says_so_in_one_sentence(tmp_path, child_limit):
    exited = tmp_path / "exited"
    exited.mkdir()
    run = start(
        # torchrun stops the other processes as soon as it sees one gone, which may be before
        # the survivor has met the gone one: here it looks only once an hour, and the test
        # ends it once the survivor has finished.
        torchrun_command("--standalone", "--nproc-per-node=2", "--monitor-interval=3600")
        + [*ARGS, "--output-dir", str(tmp_path / "run")],
        ROOT,
        KILL_AT_STEP="1:3",  # rank 1 dies as its third step starts; rank 0 waits for it there
        EXIT_FOLDER=str(exited),
    )
    try:
        survivor_done = wait_until(lambda: any(exited.iterdir()), child_limit)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # torchrun, idle until its next look
    output = finish(run, child_limit)
    assert survivor_done, f"the surviving process did not finish:\n{output[-3000:]}"
    assert output.count("Another process of this run stopped") == 1, output[-3000:]
    assert 'train.py", line' not in output and "[rank0]: Traceback" not in output, output[-3000:]
    assert "[rank1]: Traceback" not in output, output[-3000:]
