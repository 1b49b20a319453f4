"""torchrun at its edges: more processes than validation pictures, and a process that dies.
The runs through torchrun are real (marker ``torchrun``, Linux and macOS only, as in
test_distributed.py)."""

from __future__ import annotations

import re

import pytest
import torch

from {{ cookiecutter.package_name }} import data, train
from {{ cookiecutter.package_name }}.machinery import distributed, ranks
from {{ cookiecutter.package_name }}.model import LeNet5
from test_distributed import ROOT, finish, not_on_windows, start, torchrun_command
from test_folder import _pictures


def test_a_process_beyond_the_last_validation_picture_adds_zero_to_the_sums(tmp_path, monkeypatch):
    dataset = data.load_folder(_pictures(tmp_path / "few", per_class=6))
    assert len(dataset.val) == 1  # 2 classes of 6 pictures: 10 train / 1 validation / 1 test
    sums = []
    monkeypatch.setattr(distributed, "summed", lambda *totals: sums.append(totals) or totals)
    for rank in range(3):
        monkeypatch.setattr(ranks, "_current", distributed.Processes(rank, rank, 3))
        assert len(distributed.my_share(dataset.val, whole=True)) == (1, 0, 0)[rank]
        train.evaluate_split(LeNet5(), dataset.val)
    assert [seen for _, _, seen in sums] == [1, 0, 0]
    assert [float(loss) for loss, _, _ in sums[1:]] == [0.0, 0.0]
    assert [int(correct) for _, correct, _ in sums[1:]] == [0, 0]
    assert sums[1][0].dtype == torch.float32  # the same tensors as a process with pictures


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
