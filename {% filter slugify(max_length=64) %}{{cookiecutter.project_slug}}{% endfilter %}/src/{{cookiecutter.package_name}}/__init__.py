"""LeNet-5 on MNIST with PyTorch on any device: DirectML, CUDA/ROCm, Intel XPU, Apple MPS or CPU.

This package must import with the standard library alone: ``python -m <package>.verify_install``
imports it before torch is known to work. It stands without the doctor (``doctor.pyz``):
only ``verify_install`` imports it.
"""

import sys

__version__ = "0.1.0"

# ``python -m <package>.<command>`` (Python names the option "-m" while it finds the module):
# from here on, Ctrl+C while the command loads says "Interrupted." in one line.
if sys.argv[:1] == ["-m"]:
    from .machinery.command_entry import quiet_ctrl_c_while_loading

    quiet_ctrl_c_while_loading()
elif "-h" in sys.argv or "--help" in sys.argv:  # a console script (<project>-train --help)
    from .machinery.quick_help import answer_console_script_help

    answer_console_script_help()  # at once, before torch loads
