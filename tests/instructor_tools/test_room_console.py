"""The room summary on a console that goes away (moved from the project's
test_closed_console.py with the instructor's tools): a stdout that is closed or full ends it
with one of its documented exit codes, never a traceback."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys

import pytest

from gpu_doctor import commands
from instructor.room import summary

from .project_under_test import IMPORT_PATH, SAMPLES

HAS_DEV_FULL = os.path.exists("/dev/full")


class FullDisk(io.TextIOBase):
    """A stdout whose every write fails as ``> /dev/full`` does."""

    encoding = "utf-8"

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        raise io.UnsupportedOperation("no descriptor")


@pytest.fixture(autouse=True)
def stdout_not_yet_gone(monkeypatch):
    """Each test starts with a stdout that is there, and leaves the flag (per process, in the
    doctor's commands) as it found it for the tests after it."""
    monkeypatch.setattr(commands, "_stdout_gone", False)


def child_env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(IMPORT_PATH))


def test_reports_with_stdout_closed_exits_as_with_it(capsys, monkeypatch):
    code = summary.main([str(SAMPLES)])
    capsys.readouterr()
    monkeypatch.setattr(commands, "_stdout_gone", False)
    monkeypatch.setattr(sys, "stdout", None)
    assert summary.main([str(SAMPLES)]) == code
    assert capsys.readouterr().err == ""


def test_reports_into_a_full_disk_exits_74_with_one_sentence(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdout", FullDisk())
    assert summary.main([str(SAMPLES), "--markdown"]) == 74
    assert capsys.readouterr().err.startswith("error: the output could not be written")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_DEV_FULL, reason="no /dev/full on this system")
def test_python_m_reports_into_dev_full(child_limit):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", summary.__name__, str(SAMPLES)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            timeout=child_limit,
        )
    assert done.returncode == 74, done.stderr
    assert done.stderr.startswith("error: the output could not be written to stdout")
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
