"""LeNet-5 on MNIST with PyTorch on any device: DirectML, CUDA/ROCm, Intel XPU, Apple MPS or CPU.

This package must import with the standard library alone: the project generator's hook and
``verify_install`` import ``envcheck`` before torch is known to work.
"""

__version__ = "0.1.0"
