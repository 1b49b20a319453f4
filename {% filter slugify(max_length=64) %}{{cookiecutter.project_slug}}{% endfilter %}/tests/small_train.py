"""The project's train command on a small synthetic set, for tests that start training in
other processes (torchrun's among them): the same command line, less data.

    torchrun --standalone --nproc-per-node=2 tests/small_train.py --dataset synthetic ...

SMALL_TRAIN_SIZE sets the number of generated training images (default 800: 720 for training,
80 for validation); PID_FOLDER, when set, gets a file named after each process's id, so that
a test can check that none is left running; STEP_DELAY_S makes every training step take that
much longer, so that a test's Ctrl+C lands inside a run that would otherwise end first.
KILL_AT_STEP=RANK:STEP makes the process of that rank kill itself (SIGKILL, as the system's
out-of-memory killer does) as that training step starts: the other processes are then in the
same step, waiting for it, whatever the machine's load. EXIT_FOLDER, when set, gets a file
named after each process's id once its training command has returned (a killed one never does;
under torchrun the command ends its process itself, ``distributed.end_process``, after the file).
LATE_FINISH_S makes the first process (rank 0) take that much longer to finish a run after the
test accuracy, as writing large curves would; with EXIT_FOLDER it then leaves a file named
finished-<its id> there.
"""

import os
import signal
import sys
import time
from pathlib import Path

from {{ cookiecutter.package_name }} import data, train
from {{ cookiecutter.package_name }}.machinery import distributed, run_folders


def wrap_steps(delay: float, kill_at: str) -> None:
    step, done = train.train_step, 0
    rank, _, kill_step = kill_at.partition(":")
    victim = bool(kill_at) and os.environ.get("RANK") == rank

    def test_step(*args):
        nonlocal done
        done += 1
        if victim and done == int(kill_step):
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(delay)
        return step(*args)

    train.train_step = test_step


def finish_late(delay: float) -> None:
    finish = run_folders.finish  # the end of a run: the test result, the files, their list

    def late_finish(*args):
        result = finish(*args)
        if os.environ.get("RANK") == "0":
            time.sleep(delay)
            if os.environ.get("EXIT_FOLDER"):
                (Path(os.environ["EXIT_FOLDER"]) / f"finished-{os.getpid()}").touch()
        return result

    run_folders.finish = late_finish


def mark_exit(folder: str) -> None:
    """EXIT_FOLDER gets this process's file just before it ends."""
    end = distributed.end_process

    def end_process(code):
        (Path(folder) / str(os.getpid())).touch()
        return end(code)

    distributed.end_process = end_process


if __name__ == "__main__":
    data.SYNTHETIC_TRAIN_SIZE = int(os.environ.get("SMALL_TRAIN_SIZE", "800"))
    data.SYNTHETIC_TEST_SIZE = 256
    if os.environ.get("PID_FOLDER"):
        (Path(os.environ["PID_FOLDER"]) / str(os.getpid())).touch()
    delay = float(os.environ.get("STEP_DELAY_S", "0"))
    kill_at = os.environ.get("KILL_AT_STEP", "")
    if delay or kill_at:
        wrap_steps(delay, kill_at)
    if os.environ.get("LATE_FINISH_S"):
        finish_late(float(os.environ["LATE_FINISH_S"]))
    if os.environ.get("EXIT_FOLDER"):
        mark_exit(os.environ["EXIT_FOLDER"])
    sys.exit(train.main(sys.argv[1:]))
