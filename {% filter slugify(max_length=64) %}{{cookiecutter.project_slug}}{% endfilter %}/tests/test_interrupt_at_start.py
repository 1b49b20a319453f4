"""Ctrl+C in the first seconds of a command, while torch loads (several seconds on Windows):
one line, "Interrupted.", and exit code 130, as later on; never the traceback of an import."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from {{ cookiecutter.package_name }} import data
from test_draw import SRC, ctrl_c_as_from_a_terminal

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX only: Windows has no SIGINT to send to a child"
)

# A torch that takes its time to load, as the real one does on a slow disk: it says when it
# has started, so the Ctrl+C surely comes while the command imports it.
SLOW_TORCH = """\
import pathlib, time
pathlib.Path({started!r}).write_text("loading")
time.sleep(60)
"""


def interrupted_while_torch_loads(module: str, folder, child_limit) -> tuple:
    """``python -m <package>.<module>`` sent a terminal's Ctrl+C while it imports torch: its
    exit code, standard error and standard output."""
    started = folder / "started"
    slow = folder / "slow" / "torch"
    slow.mkdir(parents=True)
    (slow / "__init__.py").write_text(SLOW_TORCH.format(started=str(started)))
    path = os.pathsep.join([str(slow.parent), str(SRC), os.environ.get("PYTHONPATH", "")])
    child = subprocess.Popen(
        [sys.executable, "-m", f"{data.__package__}.{module}"],
        cwd=str(folder),
        env=dict(os.environ, PYTHONPATH=path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + child_limit
        while not started.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the command never started to load torch"
        child.send_signal(signal.SIGINT)  # a terminal's Ctrl+C
        out, err = child.communicate(timeout=child_limit)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, err.strip(), out


def test_ctrl_c_while_torch_loads_says_interrupted_and_exits_130(tmp_path, child_limit):
    for module in ("train", "evaluate", "export", "draw", "benchmark"):
        folder = tmp_path / module
        folder.mkdir()
        said = interrupted_while_torch_loads(module, folder, child_limit)
        assert said == (130, "Interrupted.", ""), module
