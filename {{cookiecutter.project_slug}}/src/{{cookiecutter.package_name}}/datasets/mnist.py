"""MNIST through torchvision: download, read, and the help for offline machines.

torchvision's ``MNIST`` class downloads the four files into ``<data-dir>/MNIST/raw`` and reads
them; this module adds a download timeout and turns every failure (offline, blocked, corrupt
files) into ``MNISTUnavailable`` with a message that says how to get the files.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import Any, Tuple

import torch

MNIST_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
DOWNLOAD_TIMEOUT_S = 30.0

Images = Tuple[torch.Tensor, torch.Tensor]  # uint8 images (N, 1, 28, 28), int64 labels (N,)


class MNISTUnavailable(RuntimeError):
    """MNIST is not on disk and could not be downloaded; the message says how to get it."""


def mnist_raw_folder(data_dir: Path) -> Path:
    return Path(data_dir) / "MNIST" / "raw"


def _prefetch_command(data_dir: Path) -> str:
    package = (__package__ or "<package>.").rpartition(".")[0]  # the project's package
    return f"python -m {package}.data --data-dir {data_dir}"


def mnist_help(data_dir: Path) -> str:
    raw = mnist_raw_folder(data_dir)
    return (
        f"While online, run once: {_prefetch_command(data_dir)}  (downloads about 11 MB). "
        f"Or copy the four files {', '.join(MNIST_FILES)} (or their unpacked versions) "
        f"into {raw} from a machine that has them. "
        "Without network, --dataset synthetic trains on generated digits."
    )


def load_mnist(data_dir: Path, download: bool = True) -> tuple[Images, Images]:
    """(train, test) as (uint8 images (N, 1, 28, 28), int64 labels) on the CPU, read by
    torchvision from ``data_dir``/MNIST/raw.

    Downloads the files first when they are missing and ``download`` is true. Any failure
    (offline, blocked, corrupt files) raises MNISTUnavailable with the fix.
    """
    try:
        from torchvision.datasets import MNIST
    except Exception as error:  # a torchvision that does not match torch fails here
        raise MNISTUnavailable(
            f"torchvision could not be imported ({type(error).__name__}: {error}). "
            "Install the torchvision version pinned beside torch in the environment file."
        ) from error
    root = Path(data_dir)
    previous_timeout = socket.getdefaulttimeout()
    # torchvision opens its URLs without a timeout; a blocked network must not hang for ever.
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)
    try:
        train = MNIST(str(root), train=True, download=download)
        test = MNIST(str(root), train=False, download=download)
    except Exception as error:  # URLError, RuntimeError("Error downloading ..."), bad files
        reason = " ".join(f"{type(error).__name__}: {error}".split())
        raise MNISTUnavailable(
            f"MNIST is not in {mnist_raw_folder(root)} and could not be "
            f"{'downloaded' if download else 'read'} ({reason}). {mnist_help(root)}"
        ) from error
    finally:
        socket.setdefaulttimeout(previous_timeout)
    return (
        (train.data.unsqueeze(1).contiguous(), train.targets.long()),
        (test.data.unsqueeze(1).contiguous(), test.targets.long()),
    )


def _write_idx(path: Path, tensor: torch.Tensor) -> None:
    """Write a uint8 tensor in the IDX format of the MNIST files (big-endian header)."""
    data = tensor.to(torch.uint8).contiguous()
    header = struct.pack(">BBBB", 0, 0, 0x08, data.dim()) + struct.pack(
        f">{data.dim()}I", *data.shape
    )
    path.write_bytes(header + bytes(data.numpy().tobytes()))


def write_mnist_raw(data_dir: Path, train: Any, test: Any) -> Path:
    """Write two splits (anything with ``images`` and ``labels``) as the four unpacked MNIST
    files torchvision reads, e.g. synthetic digits for tools that expect MNIST on disk.
    Returns the raw folder."""
    raw = mnist_raw_folder(data_dir)
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, split in (("train", train), ("t10k", test)):
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", split.images.squeeze(1).cpu())
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", split.labels.cpu())
    return raw
