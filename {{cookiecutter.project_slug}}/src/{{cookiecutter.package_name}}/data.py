"""Data: MNIST through torchvision, or synthetic digits; the whole set as one tensor on the device.

The tutorial pipeline (``ToTensor`` and ``Normalize`` per sample, a ``DataLoader`` collating
128 small tensors per batch, then a host-to-device copy) spends more time in Python than
LeNet spends computing. Here each split is one uint8 tensor (N, 1, 28, 28) that lives on
the training device; an epoch's shuffle is one ``torch.randperm`` from a CPU generator
(``torch.Generator`` on DirectML is unsupported) and one gather, batches are slices (views,
no copy), and ``to_model_input`` converts a batch to normalised float32 on the device. No
workers are needed, so nothing here needs Windows' spawn-safe ``__main__`` dance.

``python -m <package>.data`` downloads MNIST while online (the prefetch step for offline use).
"""

from __future__ import annotations

import argparse
import functools
import math
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import torch

# MNIST statistics (training set, pixel values scaled to 0..1): the usual Normalize constants.
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081
# x_norm = (x / 255 - mean) / std = x * SCALE + SHIFT: one multiply and one add on the device.
_SCALE = 1.0 / (255.0 * MNIST_STD)
_SHIFT = -MNIST_MEAN / MNIST_STD

MNIST_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
MNIST_VALIDATION_SIZE = 5000
DOWNLOAD_TIMEOUT_S = 30.0

SYNTHETIC_TRAIN_SIZE = 12000
SYNTHETIC_TEST_SIZE = 2000
SYNTHETIC_VALIDATION_FRACTION = 0.1
SYNTHETIC_SEED = 0
SYNTHETIC_LABEL = "SYNTHETIC digits (generated, not MNIST)"

DATASETS = ("mnist", "synthetic")


class MNISTUnavailable(RuntimeError):
    """MNIST is not on disk and could not be downloaded; the message says how to get it."""


# --------------------------------------------------------------------------------------------
# Splits on the device, batches, normalisation


@dataclass
class Split:
    """One split: ``images`` uint8 (N, 1, 28, 28) and ``labels`` int64 (N,), on one device."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def to(self, device: torch.device) -> Split:
        return Split(self.images.to(device), self.labels.to(device))


@dataclass
class Dataset:
    """The three splits of a dataset, and how to present it."""

    name: str  # "mnist" or "synthetic"
    description: str  # shown to the user; says SYNTHETIC for generated digits
    train: Split
    val: Split
    test: Split

    @property
    def synthetic(self) -> bool:
        return self.name == "synthetic"

    def to(self, device: torch.device) -> Dataset:
        return Dataset(
            self.name,
            self.description,
            self.train.to(device),
            self.val.to(device),
            self.test.to(device),
        )


def to_model_input(images_uint8: torch.Tensor, device: torch.device) -> torch.Tensor:
    """uint8 (N, 1, 28, 28) -> normalised float32 on ``device``.

    Moves the batch if it is elsewhere (a no-op for data already on the device), converts to
    float32 there (never float64: many DirectML GPUs have none) and normalises with one
    multiply and one add, both native on DirectML.
    """
    x = images_uint8.to(device=device, dtype=torch.float32)
    return x.mul_(_SCALE).add_(_SHIFT)


def num_batches(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


def shuffled(split: Split, generator: torch.Generator) -> Split:
    """A shuffled copy of ``split`` on its device: one randperm on the CPU, one gather there."""
    order = torch.randperm(len(split), generator=generator).to(split.labels.device)
    return Split(split.images.index_select(0, order), split.labels.index_select(0, order))


def batches(
    split: Split, batch_size: int, start: int = 0, limit: int | None = None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Consecutive (images, labels) slices of ``split``: views, no copies, no Python per sample.

    ``start`` skips that many batches (resuming inside an epoch); ``limit`` caps the count.
    The last batch may be smaller.
    """
    total = num_batches(len(split), batch_size)
    stop = total if limit is None else min(total, start + limit)
    for index in range(start, stop):
        lo = index * batch_size
        yield split.images[lo : lo + batch_size], split.labels[lo : lo + batch_size]


def split_off_validation(
    images: torch.Tensor, labels: torch.Tensor, size: int
) -> tuple[Split, Split]:
    """Hold out ``size`` samples, chosen by a fixed permutation (the same for every run)."""
    if not 0 < size < len(labels):
        raise ValueError(f"validation size must be between 1 and {len(labels) - 1}, not {size}")
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(12345))
    train_idx, val_idx = order[size:].sort().values, order[:size].sort().values
    return (
        Split(images[train_idx], labels[train_idx]),
        Split(images[val_idx], labels[val_idx]),
    )


# --------------------------------------------------------------------------------------------
# MNIST through torchvision


def mnist_raw_folder(data_dir: Path) -> Path:
    return Path(data_dir) / "MNIST" / "raw"


def _prefetch_command(data_dir: Path) -> str:
    package = __package__ or "<package>"
    return f"python -m {package}.data --data-dir {data_dir}"


def mnist_help(data_dir: Path) -> str:
    raw = mnist_raw_folder(data_dir)
    return (
        f"While online, run once: {_prefetch_command(data_dir)}  (downloads about 11 MB). "
        f"Or copy the four files {', '.join(MNIST_FILES)} (or their unpacked versions) "
        f"into {raw} from a machine that has them. "
        "Without network, --dataset synthetic trains on generated digits."
    )


def load_mnist(data_dir: Path, download: bool = True) -> tuple[Split, Split]:
    """(train, test) uint8 splits on the CPU, read by torchvision from ``data_dir``/MNIST/raw.

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
        Split(train.data.unsqueeze(1).contiguous(), train.targets.long()),
        Split(test.data.unsqueeze(1).contiguous(), test.targets.long()),
    )


def _write_idx(path: Path, tensor: torch.Tensor) -> None:
    """Write a uint8 tensor in the IDX format of the MNIST files (big-endian header)."""
    data = tensor.to(torch.uint8).contiguous()
    header = struct.pack(">BBBB", 0, 0, 0x08, data.dim()) + struct.pack(
        f">{data.dim()}I", *data.shape
    )
    path.write_bytes(header + bytes(data.numpy().tobytes()))


def write_mnist_raw(data_dir: Path, train: Split, test: Split) -> Path:
    """Write splits as the four unpacked MNIST files torchvision reads, e.g. synthetic digits
    for tools that expect MNIST on disk. Returns the raw folder."""
    raw = mnist_raw_folder(data_dir)
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, split in (("train", train), ("t10k", test)):
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", split.images.squeeze(1).cpu())
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", split.labels.cpu())
    return raw


# --------------------------------------------------------------------------------------------
# Synthetic digits: strokes drawn with random handwriting-like distortions


def _arc(cx: float, cy: float, rx: float, ry: float, start: float, end: float, n: int = 12):
    """Points on an ellipse arc; angles in degrees, 0 = right, 90 = down (image y axis)."""
    return [
        (
            cx + rx * math.cos(math.radians(start + (end - start) * i / n)),
            cy + ry * math.sin(math.radians(start + (end - start) * i / n)),
        )
        for i in range(n + 1)
    ]


# Each digit: polylines in a unit box (x right, y down); drawn 20 px tall like MNIST digits.
_STROKES: dict[int, list[list[tuple[float, float]]]] = {
    0: [_arc(0.5, 0.5, 0.42, 0.5, 0, 360, 16)],
    1: [[(0.3, 0.18), (0.56, 0.0), (0.56, 1.0)]],
    2: [_arc(0.5, 0.3, 0.42, 0.3, 200, 400, 10) + [(0.05, 1.0), (0.98, 1.0)]],
    3: [_arc(0.5, 0.26, 0.38, 0.26, 200, 450, 10), _arc(0.5, 0.75, 0.44, 0.25, 270, 495, 10)],
    4: [[(0.72, 0.0), (0.02, 0.66), (1.0, 0.66)], [(0.74, 0.28), (0.74, 1.0)]],
    5: [[(0.92, 0.0), (0.22, 0.0), (0.17, 0.47)] + _arc(0.5, 0.7, 0.44, 0.3, 225, 495, 10)],
    6: [_arc(0.62, 0.5, 0.48, 0.5, 290, 180, 6) + _arc(0.5, 0.72, 0.4, 0.28, 180, 540, 12)],
    7: [[(0.0, 0.0), (1.0, 0.0), (0.35, 1.0)]],
    8: [_arc(0.5, 0.24, 0.34, 0.24, 90, 450, 12), _arc(0.5, 0.74, 0.42, 0.26, 270, 630, 12)],
    9: [_arc(0.5, 0.3, 0.42, 0.3, 0, 360, 12), [(0.92, 0.3), (0.85, 0.65), (0.72, 1.0)]],
}


def _segments(digit: int) -> torch.Tensor:
    """(S, 2, 2) segment end points of a digit, centred, in pixels (20 px tall, 14 wide)."""
    segs = []
    for line in _STROKES[digit]:
        for a, b in zip(line[:-1], line[1:]):
            segs.append(
                [
                    [(a[0] - 0.5) * 14.0, (a[1] - 0.5) * 20.0],
                    [(b[0] - 0.5) * 14.0, (b[1] - 0.5) * 20.0],
                ]
            )
    return torch.tensor(segs, dtype=torch.float32)


def _render(segs: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Draw ``segs`` (N, S, 2, 2), already distorted, as uint8 (N, 28, 28) images."""
    n = segs.shape[0]
    coords = torch.arange(28, dtype=torch.float32) - 13.5
    px = coords.repeat(28).reshape(1, 1, 784)  # pixel centres, row by row
    py = coords.repeat_interleave(28).reshape(1, 1, 784)
    ax, ay = segs[:, :, None, 0, 0], segs[:, :, None, 0, 1]  # (N, S, 1)
    abx, aby = segs[:, :, None, 1, 0] - ax, segs[:, :, None, 1, 1] - ay
    inv_len2 = 1.0 / (abx * abx + aby * aby).clamp_min(1e-6)
    # In-place arithmetic on full-size tensors: broadcasting both operands of an
    # out-of-place op is many times slower in older torch versions.
    size = (n, segs.shape[1], 784)
    apx = px.expand(size).contiguous().sub_(ax)  # (N, S, 784): pixel minus segment start
    apy = py.expand(size).contiguous().sub_(ay)
    # Distance from each pixel centre to the nearest point of each segment, then the minimum.
    t = apx.mul(abx).addcmul_(apy, aby).mul_(inv_len2).clamp_(0.0, 1.0)
    apx.addcmul_(t, abx, value=-1.0)
    apy.addcmul_(t, aby, value=-1.0)
    dist = apx.mul_(apx).addcmul_(apy, apy).amin(dim=1).sqrt_()  # (N, 784)
    half_width = torch.empty(n, 1).uniform_(0.9, 1.7, generator=g)
    ink = (half_width + 0.5 - dist).clamp_(0.0, 1.0)  # 1 px anti-aliased edge
    peak = torch.empty(n, 1).uniform_(200.0, 255.0, generator=g)
    return ink.mul_(peak).round_().to(torch.uint8).reshape(n, 28, 28)


def _distort(digit: int, n: int, g: torch.Generator) -> torch.Tensor:
    """``n`` randomly distorted copies of a digit's segments: (n, S, 2, 2) in pixel units."""
    segs = _segments(digit)
    points = segs.reshape(1, -1, 2).expand(n, -1, -1).clone()  # (n, 2S, 2)
    # Wobbly strokes: each end point moves a little (shared points move independently, which
    # also opens small gaps as in real handwriting).
    points += torch.randn(points.shape, generator=g) * 0.5

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return torch.empty(n).uniform_(lo, hi, generator=g)

    angle = uniform(-0.26, 0.26)  # about +-15 degrees
    shear = uniform(-0.35, 0.35)  # slant
    sx, sy = uniform(0.75, 1.15), uniform(0.8, 1.1)
    cos, sin = angle.cos(), angle.sin()
    # matrix = rotation @ shear @ scale
    m00, m01 = sx * cos, sy * (cos * shear - sin)
    m10, m11 = sx * sin, sy * (sin * shear + cos)
    matrix = torch.stack([torch.stack([m00, m01], -1), torch.stack([m10, m11], -1)], -2)
    shift = torch.stack([uniform(-2.0, 2.0), uniform(-2.0, 2.0)], -1)
    points = points @ matrix.transpose(1, 2) + shift[:, None, :]
    return points.reshape(n, -1, 2, 2)


@functools.lru_cache(maxsize=4)
def _synthetic_cached(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 10
    labels = labels[torch.randperm(n, generator=g)]
    images = torch.zeros(n, 28, 28, dtype=torch.uint8)
    for digit in range(10):
        index = (labels == digit).nonzero().squeeze(1)
        for chunk in index.split(64):
            images[chunk] = _render(_distort(digit, len(chunk), g), g)
    return images.unsqueeze(1), labels


def synthetic_digits(n: int, seed: int = SYNTHETIC_SEED) -> Split:
    """``n`` synthetic digit images like MNIST's (uint8, 1x28x28, white on black, labels 0-9,
    balanced), deterministic for a given ``seed``. Not MNIST: use it offline and in tests."""
    if n < 1:
        raise ValueError(f"n must be positive, not {n}")
    images, labels = _synthetic_cached(
        int(n), int(seed)
    )  # explicit generator: global RNG untouched
    return Split(images, labels)


def load_synthetic(
    train_size: int | None = None,
    test_size: int | None = None,
    seed: int = SYNTHETIC_SEED,
) -> Dataset:
    """Synthetic train/validation/test splits on the CPU (sizes default to SYNTHETIC_TRAIN_SIZE
    and SYNTHETIC_TEST_SIZE, read when called). The test part comes from another seed, so it is
    held out in the strict sense: not one of its images was seen in training."""
    train_size = SYNTHETIC_TRAIN_SIZE if train_size is None else train_size
    test_size = SYNTHETIC_TEST_SIZE if test_size is None else test_size
    full = synthetic_digits(train_size, seed)
    val_size = max(1, int(round(train_size * SYNTHETIC_VALIDATION_FRACTION)))
    train, val = split_off_validation(full.images, full.labels, val_size)
    test = synthetic_digits(test_size, seed + 1_000_003)
    description = (
        f"{SYNTHETIC_LABEL}, seed {seed}: "
        f"{len(train)} train / {len(val)} validation / {len(test)} test"
    )
    return Dataset("synthetic", description, train, val, test)


def load_dataset(
    name: str,
    data_dir: Path = Path("data"),
    device: torch.device | None = None,
    download: bool = True,
) -> Dataset:
    """``name`` is "mnist" or "synthetic"; the result lives on ``device`` (CPU when None)."""
    if name == "mnist":
        train_full, test = load_mnist(Path(data_dir), download=download)
        train, val = split_off_validation(
            train_full.images, train_full.labels, MNIST_VALIDATION_SIZE
        )
        description = (
            f"MNIST from {mnist_raw_folder(Path(data_dir))}: "
            f"{len(train)} train / {len(val)} validation / {len(test)} test"
        )
        dataset = Dataset("mnist", description, train, val, test)
    elif name == "synthetic":
        dataset = load_synthetic()
    else:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return dataset if device is None else dataset.to(device)


# --------------------------------------------------------------------------------------------
# python -m <package>.data: the prefetch step


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.data" if __package__ else None,
        description="Download MNIST into the data directory (run once while online), "
        "so that training works offline later.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="where to keep MNIST")
    args = parser.parse_args(argv)
    try:
        train, test = load_mnist(args.data_dir, download=True)
    except MNISTUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    raw = mnist_raw_folder(args.data_dir)
    print(f"MNIST is ready in {raw}: {len(train)} training and {len(test)} test images.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
