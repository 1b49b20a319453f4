"""The data: every image of a split in one tensor on the training device, batches cut there.

The tutorial pipeline (``ToTensor`` and ``Normalize`` per sample, a ``DataLoader`` collating
128 small tensors per batch, then a host-to-device copy) spends more time in Python than
LeNet spends computing. Here each split is one uint8 tensor (N, 1, 28, 28) that lives on
the training device:

- an epoch's shuffle is one ``torch.randperm`` from a CPU generator (``torch.Generator`` on
  DirectML is unsupported) and one gather on the device (``shuffled``);
- batches are slices of it: views, no copies, no Python per sample (``batches``);
- ``to_model_input`` turns a batch into normalised float32 on the device (never float64:
  many DirectML GPUs have none);
- no workers are needed, so nothing here needs Windows' spawn-safe ``__main__`` dance.

Where the images come from is in ``datasets/``: MNIST through torchvision, or synthetic digits
generated here for offline use. ``python -m <package>.data`` downloads MNIST while online.

Your own images (``--dataset folder:<path>``, ``datasets/folder.py``) are the exception: a
folder of photos may not fit on the device, and its files must be decoded, so its splits are
``LoaderSplit``s, read batch by batch by a ``DataLoader``. ``shuffled`` and ``batches`` take
both kinds, so the training loop is the same for both.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

if __name__ == "__main__":  # --help answers at once, before torch loads (seconds)
    from .machinery.quick_help import answer_help

    answer_help("data")

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Sequence, Union

import torch

from .datasets import folder, folder_scan, mnist, synthetic
from .datasets.folder import LoaderSplit
from .datasets.folder_split import folder_split, split_record
from .machinery import parsers
from .machinery.command_entry import command
from .machinery.terminal_text import printable

# MNIST statistics (training set, pixel values scaled to 0..1): the usual Normalize constants.
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081
# x_norm = (x / 255 - mean) / std = x * SCALE + SHIFT: one multiply and one add on the device.
_SCALE = 1.0 / (255.0 * MNIST_STD)
_SHIFT = -MNIST_MEAN / MNIST_STD

MNIST_VALIDATION_SIZE = 5000
SYNTHETIC_TRAIN_SIZE = 12000
SYNTHETIC_TEST_SIZE = 2000
SYNTHETIC_VALIDATION_FRACTION = 0.1
SYNTHETIC_TEST_SEED = 1_000_003  # added to the seed: the test digits are others than training's
SYNTHETIC_LABEL = "SYNTHETIC digits (generated, not MNIST)"

DATASETS = ("mnist", "synthetic")  # and folder:<path>, your own images


def is_dataset(name: Any) -> bool:
    """True for "mnist", "synthetic" and "folder:<path>"."""
    return isinstance(name, str) and (name in DATASETS or folder.folder_path(name) is not None)


@dataclass
class Split:
    """One split: ``images`` uint8 (N, 1, 28, 28) and ``labels`` int64 (N,), on one device."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def to(self, device: torch.device) -> Split:
        return Split(self.images.to(device), self.labels.to(device))


AnySplit = Union[Split, LoaderSplit]


@dataclass
class Dataset:
    """The three splits of a dataset, and how to present it."""

    name: str  # "mnist", "synthetic" or "folder:<path>"
    description: str  # shown to the user; says SYNTHETIC for generated digits
    train: AnySplit
    val: AnySplit
    test: AnySplit
    classes: list[str] | None = None  # a folder's class names; None: the digits 0-9
    split: dict[str, Any] | None = None  # a folder's split, as checkpoints keep it
    notes: list[str] = field(default_factory=list)  # folders left out, files skipped

    @property
    def synthetic(self) -> bool:
        return self.name == "synthetic"

    def to(self, device: torch.device) -> Dataset:
        moved = (self.train.to(device), self.val.to(device), self.test.to(device))
        return replace(self, train=moved[0], val=moved[1], test=moved[2])


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


def shuffled(split: AnySplit, generator: torch.Generator) -> AnySplit:
    """A shuffled copy of ``split`` on its device: one randperm on the CPU, one gather there
    (for a folder: the order in which its images will be read)."""
    order = torch.randperm(len(split), generator=generator)
    if isinstance(split, LoaderSplit):
        return split.reordered(order)
    order = order.to(split.labels.device)
    return Split(split.images.index_select(0, order), split.labels.index_select(0, order))


def batches(
    split: AnySplit, batch_size: int, start: int = 0, limit: int | None = None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Consecutive (images, labels) slices of ``split``: views, no copies, no Python per sample
    (for a folder: batches its DataLoader reads, delivered on the split's device).

    ``start`` skips that many batches (resuming inside an epoch); ``limit`` caps the count.
    The last batch may be smaller.
    """
    total = num_batches(len(split), batch_size)
    stop = total if limit is None else min(total, start + limit)
    if isinstance(split, LoaderSplit):
        yield from split.batches(batch_size, start, stop)
        return
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


def synthetic_digits(n: int, seed: int = synthetic.SEED, data_dir: Path | None = None) -> Split:
    """``n`` generated digits like MNIST's, the same for a given ``seed`` (see
    ``datasets/synthetic.py``; with ``data_dir``, kept there once drawn). Not MNIST: use it
    offline and in tests."""
    return Split(*synthetic.digits(n, seed, data_dir))


def load_mnist(data_dir: Path, download: bool = True) -> tuple[Split, Split]:
    """(train, test) MNIST splits on the CPU, downloaded first if missing and ``download``
    is true; ``mnist.MNISTUnavailable`` says how to get the files when that fails."""
    train, test = mnist.load_mnist(Path(data_dir), download=download)
    return Split(*train), Split(*test)


def load_digits(
    name: str,
    data_dir: Path | None,
    download: bool = True,
    sizes: tuple[int, int] | None = None,
    seed: int = synthetic.SEED,
) -> Dataset:
    """MNIST ("mnist") or the synthetic digits ("synthetic") on the CPU: train, validation
    and test. The synthetic test part comes from another seed (``synthetic_test_digits``), so
    it is held out in the strict sense; ``sizes`` (train, test) default to SYNTHETIC_TRAIN_SIZE
    and SYNTHETIC_TEST_SIZE. With ``data_dir``, drawn digits are kept there for the next run."""
    if name == "mnist":  # (images, labels) of each part, from datasets/mnist.py or synthetic.py
        full, test = mnist.load_mnist(Path(data_dir), download=download)
        val_size = MNIST_VALIDATION_SIZE
        source = f"MNIST from {mnist.mnist_raw_folder(Path(data_dir))}"
    else:
        train_size, test_size = sizes or (SYNTHETIC_TRAIN_SIZE, SYNTHETIC_TEST_SIZE)
        full = synthetic.digits(train_size, seed, data_dir)
        test = synthetic.digits(test_size, seed + SYNTHETIC_TEST_SEED, data_dir)
        val_size = max(1, int(round(train_size * SYNTHETIC_VALIDATION_FRACTION)))
        source = f"{SYNTHETIC_LABEL}, data seed {seed}"
    train, val = split_off_validation(*full, val_size)
    test = Split(*test)
    parts = f"{len(train)} train / {len(val)} validation / {len(test)} test"
    return Dataset(name, f"{source}: {parts}", train, val, test)


def load_synthetic(
    train_size: int | None = None,
    test_size: int | None = None,
    seed: int = synthetic.SEED,
    data_dir: Path | None = None,
) -> Dataset:
    """The synthetic digits of ``load_digits``, at other sizes or seeds (tests, benchmarks)."""
    train_size = SYNTHETIC_TRAIN_SIZE if train_size is None else train_size
    test_size = SYNTHETIC_TEST_SIZE if test_size is None else test_size
    return load_digits("synthetic", data_dir, sizes=(train_size, test_size), seed=seed)


def synthetic_test_digits(
    size: int | None = None, seed: int = synthetic.SEED, data_dir: Path | None = None
) -> Split:
    """The synthetic test part: drawn from another seed than the training part."""
    size = SYNTHETIC_TEST_SIZE if size is None else size
    return synthetic_digits(size, seed + SYNTHETIC_TEST_SEED, data_dir)


def load_folder(root: Path) -> Dataset:
    """Your own images (``datasets/folder.py``): each picture checked, then 10 % of
    them for validation, as many for test, the rest for training, chosen by each picture's
    content (``datasets/folder_split.py``): adding or removing pictures moves no other picture."""
    found = folder.image_folder(root)
    notes = folder_scan.scan_notes(found)  # the folders left out and the files skipped, said
    if len(found.pictures) < 3:
        raise folder.FolderUnavailable(
            f"{printable(root)} has {len(found.pictures)} usable images: too few to keep some "
            "for validation and test; add more (tens per class at least)."
        )
    parts = folder_split([picture.digest for picture in found.pictures])
    record = split_record(found.classes, found.pictures, parts)  # what checkpoints keep
    images = folder.PictureFolder(root, found.classes, found.pictures)
    train, val, test = (torch.tensor(parts[p], dtype=torch.int64) for p in ("train", "val", "test"))
    classes = ", ".join(printable(name, 60) for name in images.classes)
    description = (
        f"your images in {printable(root)} ({len(images.classes)} classes: {classes}): "
        f"{len(train)} train / {len(val)} validation / {len(test)} test, grey 28x28"
    )
    name = folder.PREFIX + str(root)
    splits = (LoaderSplit(images, part) for part in (train, val, test))
    return Dataset(
        name,
        description,
        *splits,
        classes=list(images.classes),
        split=record,
        notes=notes,
    )


def load_test_split(name: str, data_dir: Path = Path("data")) -> tuple[AnySplit, str]:
    """(test split on the CPU, its description): all that evaluation needs. For MNIST only the
    two test files are read (or downloaded)."""
    root = folder.folder_path(name)
    if root is not None:
        dataset = load_folder(root)
        return dataset.test, dataset.description
    if name == "mnist":
        test = Split(*mnist.load_mnist_test(Path(data_dir)))
        return test, f"MNIST test set from {mnist.mnist_raw_folder(Path(data_dir))}"
    if name == "synthetic":
        test = synthetic_test_digits()  # 2000 digits, drawn in a moment: --data-dir is ignored
        return test, f"{SYNTHETIC_LABEL}, data seed {synthetic.SEED}: {len(test)} test"
    raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")


def load_dataset(
    name: str,
    data_dir: Path = Path("data"),
    device: torch.device | None = None,
    download: bool = True,
) -> Dataset:
    """``name`` is "mnist", "synthetic" or "folder:<path>"; the result lives on ``device``
    (CPU when None; a folder's images are read from their files batch by batch)."""
    if name in DATASETS:  # the digits: MNIST's, or drawn here
        dataset = load_digits(name, None if data_dir is None else Path(data_dir), download)
    elif name.startswith(folder.PREFIX):  # "folder:<path>": your own images
        dataset = load_folder(Path(name[len(folder.PREFIX) :]).expanduser())
    else:
        raise ValueError(
            f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}, folder:<path>"
        )
    return dataset if device is None else dataset.to(device)


# --------------------------------------------------------------------------------------------
# python -m <package>.data: the prefetch step


@command  # Ctrl+C: one line, no traceback
def main(argv: Sequence[str] | None = None) -> int:
    args = parsers.data().parse_args(argv)  # machinery/parsers.py: --help before torch loads
    try:
        train, test = load_mnist(args.data_dir, download=True)
    except mnist.MNISTUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    raw = mnist.mnist_raw_folder(args.data_dir)
    print(f"MNIST is ready in {raw}: {len(train)} training and {len(test)} test images.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
