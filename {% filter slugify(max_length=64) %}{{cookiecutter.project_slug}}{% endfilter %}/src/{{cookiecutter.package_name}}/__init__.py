"""LeNet-5 on MNIST with PyTorch on any device: DirectML, CUDA/ROCm, Intel XPU, Apple MPS or CPU.

This package must import with the standard library alone: the project generator's hook and
``verify_install`` import ``envcheck`` before torch is known to work.
"""

import sys

__version__ = "0.1.0"

# ``python -m <package>.<command>`` (Python names the option "-m" while it finds the module):
# from here on, Ctrl+C while the command loads says "Interrupted." in one line.
if sys.argv[:1] == ["-m"]:
    from .machinery.cli import quiet_ctrl_c_while_loading

    quiet_ctrl_c_while_loading()
