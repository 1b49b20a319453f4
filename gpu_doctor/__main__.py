"""The doctor before anything is installed: which environment fits this machine.

A project carries the doctor as one file, ``doctor.pyz`` in its root folder (built from this
package by the template's tools/one_file.py). From the project folder, with any Python 3.8 or
later and nothing installed:

    python doctor.pyz

It checks this Python, the OS, the GPUs and their drivers with the standard library only,
names the environment file that fits this machine, and prints the commands that create it, so
nobody downloads a PyTorch stack their laptop cannot use. Once an environment exists,
``python -m <package>.verify_install`` checks everything, PyTorch included.
"""

import sys
from pathlib import Path

if not __package__:
    # Run as a folder (python gpu_doctor): Python put this folder first on the path, where
    # its modules would shadow others; the folder above it makes `gpu_doctor` importable.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from gpu_doctor.first_look import main  # noqa: E402 (the path above comes first)

if __name__ == "__main__":
    sys.exit(main())
