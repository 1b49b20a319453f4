"""A console that goes away: a closed terminal, ``| head`` that stopped reading, ``>&-``,
``> /dev/full``, Ctrl+C. Training never loses an epoch to it; no command shows a traceback,
and every command exits with one of its documented codes."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_doctor import (
    checkup,
    commands,
)
from gpu_doctor.verdict import (
    Report,
)

from {{ cookiecutter.package_name }} import (
    data,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    command_entry,
)

SRC = Path(__file__).resolve().parents[1] / "src"
HAS_DEV_FULL = os.path.exists("/dev/full")

# A training run in a child process on a small synthetic set: a few seconds per epoch.
TRAIN_CHILD = f"""
import sys
from {data.__package__} import data, train
data.SYNTHETIC_TRAIN_SIZE, data.SYNTHETIC_TEST_SIZE = 1536, 512
sys.exit(train.main(sys.argv[1:]))
"""


class FullDisk(io.TextIOBase):
    """A stdout whose every write fails as ``> /dev/full`` does."""

    encoding = "utf-8"

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        raise io.UnsupportedOperation("no descriptor")


@pytest.fixture(autouse=True)
def stdout_not_yet_gone(monkeypatch):
    """Each test starts with a stdout that is there (the flag is per process, in the doctor's
    commands and in the project's alike)."""
    monkeypatch.setattr(commands, "_stdout_gone", False)
    monkeypatch.setattr(command_entry, "_stdout_gone", False)


def child_env():
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path)


def train_args(out: Path, epochs: int = 2) -> list[str]:
    options = f"--dataset synthetic --epochs {epochs} --batch-size 64 --device cpu"
    return [*options.split(), "--output-dir", str(out)]


# ------------------------------------------------------------------------------ training


@pytest.mark.slow
def test_a_reader_that_stops_early_costs_no_epoch(tmp_path, child_limit):
    """`train ... | head -2`: the header is read, then the reader is gone."""
    out = tmp_path / "runs"
    child = subprocess.Popen(
        [sys.executable, "-c", TRAIN_CHILD, *train_args(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=str(tmp_path),
    )
    try:
        first = [child.stdout.readline() for _ in range(2)]
        child.stdout.close()  # what `head -2` does after its second line
        err = child.stderr.read().decode("utf-8", "replace")
        code = child.wait(timeout=child_limit)
    finally:
        child.kill()
    assert b"LeNet-5" in first[0]
    assert code == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert checkpoints.load_checkpoint(out / "last.pt")["epochs_done"] == 2


@pytest.mark.slow
@pytest.mark.skipif(not HAS_DEV_FULL, reason="no /dev/full on this system")
def test_training_into_a_full_stdout_trains_and_saves_every_epoch(tmp_path, child_limit):
    out = tmp_path / "runs"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", TRAIN_CHILD, *train_args(out)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            cwd=str(tmp_path),
            timeout=child_limit,
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert checkpoints.load_checkpoint(out / "last.pt")["epochs_done"] == 2


@pytest.mark.slow
def test_training_with_stdout_closed_from_the_start(
    capsys, cpu_only, small_synthetic, monkeypatch, tmp_path
):
    """`train ... >&-`: Python starts with no sys.stdout at all."""
    monkeypatch.setattr(sys, "stdout", None)
    assert train.main(train_args(tmp_path, epochs=1)) == 0
    assert checkpoints.load_checkpoint(tmp_path / "last.pt")["epochs_done"] == 1


# -------------------------------------------------------------------------- verify_install


@pytest.fixture
def quick_report(monkeypatch):
    """verify_install's checks replaced by a finished report: only the output is tested."""
    report = Report(project={"name": "LeNet test", "accelerator": "cpu"})
    report.exit_code, report.verdict = checkup.EXIT_OK, "Ready to train on the CPU, as chosen."
    monkeypatch.setattr(checkup, "run", lambda device: report)
    return report


def test_verify_install_with_stdout_closed_exits_with_its_verdict(
    capsys, monkeypatch, quick_report
):
    verdict = checkup.main([])
    capsys.readouterr()
    monkeypatch.setattr(commands, "_stdout_gone", False)
    monkeypatch.setattr(sys, "stdout", None)
    assert checkup.main(["--json"]) == verdict
    assert "Traceback" not in capsys.readouterr().err


def test_verify_install_into_a_full_disk_exits_74_with_one_sentence(
    capsys, monkeypatch, quick_report
):
    monkeypatch.setattr(sys, "stdout", FullDisk())
    assert checkup.main([]) == command_entry.EXIT_OUTPUT_FAILED == 74
    err = capsys.readouterr().err
    assert err == "error: the output could not be written to stdout (No space left on device).\n"
    assert "74" in checkup.EXIT_CODES_HELP and "130" in checkup.EXIT_CODES_HELP


def test_ctrl_c_during_verify_install_exits_130_without_a_traceback(capsys, monkeypatch):
    def pressed(device):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkup, "run", pressed)
    try:
        code = checkup.main([])
    except KeyboardInterrupt:
        pytest.fail("Ctrl+C left verify_install as a traceback")
    assert code == 130
    assert capsys.readouterr().err == "Interrupted.\n"
