"""The project's train command on a small synthetic set, for tests that start training in
other processes (torchrun's among them): the same command line, less data.

    torchrun --standalone --nproc-per-node=2 tests/small_train.py --dataset synthetic ...

SMALL_TRAIN_SIZE sets the number of generated training images (default 800: 720 for training,
80 for validation); PID_FOLDER, when set, gets a file named after each process's id, so that
a test can check that none is left running; STEP_DELAY_S makes every training step take that
much longer, so that a test's Ctrl+C lands inside a run that would otherwise end first.
"""

import os
import sys
import time
from pathlib import Path

from {{ cookiecutter.package_name }} import data, train

if __name__ == "__main__":
    data.SYNTHETIC_TRAIN_SIZE = int(os.environ.get("SMALL_TRAIN_SIZE", "800"))
    data.SYNTHETIC_TEST_SIZE = 256
    if os.environ.get("PID_FOLDER"):
        (Path(os.environ["PID_FOLDER"]) / str(os.getpid())).touch()
    delay = float(os.environ.get("STEP_DELAY_S", "0"))
    if delay:
        step = train.train_step

        def slower_step(*args):
            time.sleep(delay)
            return step(*args)

        train.train_step = slower_step
    sys.exit(train.main(sys.argv[1:]))
