"""Your own images: a folder with one subfolder per class, read by a DataLoader.

    my_shapes/
      circle/    001.png, 002.jpg, ...
      square/    ...
      triangle/  ...

    python -m <package>.train --dataset folder:my_shapes

``folder_scan`` finds the classes (the subfolder names, sorted) and the pictures, and checks
each one before training; what cannot be used is skipped and named. Each picture is turned
grey and resized to 28x28, the input LeNet-5 was built for. A fixed part of the pictures is
held out for validation and test, chosen by each picture's content (``data.load_folder``).

MNIST is small enough to sit on the device as one tensor (``data.py``); a folder of photos
may not be, and decoding JPEG/PNG files is work for the CPU. So images are read batch by
batch by a ``DataLoader``, whose settings ``loader_settings`` chooses per device and system.
A split of the folder is a ``LoaderSplit``: the images' indices in reading order; the training
loop shuffles and batches it as it does a tensor split (``data.shuffled``, ``data.batches``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch

from ..machinery.terminal_text import printable
from . import folder_scan

PREFIX = "folder:"
MAX_CLASSES = 10  # LeNet-5 here has 10 outputs (model.NUM_CLASSES)
MIN_PER_CLASS = 5  # usable pictures per class, or training stops with one sentence
SMALL_FOLDER = 2000  # images: below this, worker processes cost more than they save


class FolderUnavailable(ValueError):
    """The folder cannot be used; the message says why and what to do."""


def one_sentence(error: FolderUnavailable) -> str:
    """The message alone: a DataLoader worker's error arrives with the worker's traceback
    around it, and its last line holds the message."""
    last = str(error).strip().splitlines()[-1] if str(error).strip() else ""
    prefix = f"{FolderUnavailable.__module__}.{FolderUnavailable.__name__}: "
    return last[len(prefix) :] if last.startswith(prefix) else last


def folder_path(dataset: str) -> Path | None:
    """The path in ``folder:<path>``, or None for another dataset name."""
    if not dataset.startswith(PREFIX):
        return None
    return Path(dataset[len(PREFIX) :]).expanduser()


def folder_now(dataset: str, given: Path | None, again: str) -> Path | None:
    """Where the pictures of a model trained on your own images are now: ``given`` (evaluate's
    and export's --data-dir, for a folder that moved) or the folder its run recorded. None for
    another dataset; FolderUnavailable when it is not a folder, advising ``again`` (the command
    to run) with --data-dir."""
    recorded = folder_path(dataset)
    if recorded is None:
        return None
    root = recorded if given is None else Path(given).expanduser()
    try:
        there = root.is_dir()
    except (OSError, ValueError):  # a name this system cannot look up
        there = False
    if there:
        return root
    what = (
        f"--data-dir {printable(given, 300)} is not a folder"
        if given is not None
        else f"the pictures this model was trained on are no longer in {printable(recorded, 300)}"
    )
    raise FolderUnavailable(
        f"{what}. Name the folder they are in now (one subfolder per class): {again} "
        "--data-dir <folder>"
    )


class PictureFolder:
    """The checked pictures of a folder as a dataset: item ``i`` is (uint8 (1, 28, 28), class
    index), grey and resized as MNIST's digits are. Picklable: spawned DataLoader workers
    (Windows, macOS) receive it."""

    def __init__(self, root: Path, classes: list[str], pictures: list[folder_scan.Picture]):
        self.root, self.classes, self.pictures = root, classes, pictures
        self.targets = [picture.label for picture in pictures]

    def __len__(self) -> int:
        return len(self.pictures)

    def __getitem__(self, index: int):
        from PIL import Image
        from torchvision import transforms

        picture = self.pictures[index]
        # uint8 like the MNIST tensors, so that ``data.to_model_input`` serves both.
        transform = transforms.Compose(
            [
                transforms.Grayscale(num_output_channels=1),
                transforms.Resize((28, 28), antialias=True),
                transforms.PILToTensor(),
            ]
        )
        try:
            with Image.open(picture.path) as image:
                grey = transform(image.convert("RGB"))
        except Exception as error:  # changed since the check before the first epoch
            raise FolderUnavailable(
                f"{printable(picture.path)} could not be read any more "
                f"({printable(str(error), 200)}); it was readable when the run started. "
                "Put it back, or remove it and start again."
            ) from None
        return grey, picture.label


def image_folder(root: Path) -> folder_scan.Scan:
    """The scan of ``root``: its usable pictures (each checked once) and classes, what was
    skipped and why, which folders were left out; FolderUnavailable if too few are usable."""
    root = Path(root)
    layout = "one subfolder per class, e.g. cats/ and dogs/, with the images inside"
    if not root.is_dir():
        raise FolderUnavailable(
            f"{printable(root, 200)} is not a folder: --dataset folder:<path> needs {layout}."
        )
    try:
        found = folder_scan.scan(root)
    except OSError as error:
        raise FolderUnavailable(
            f"{printable(root)} cannot be read ({error.strerror or error}): --dataset "
            f"folder:<path> needs {layout}."
        ) from error
    if not found.pictures:
        raise FolderUnavailable(
            f"No images found in {printable(root)}: --dataset folder:<path> needs {layout} "
            f"(PNG, JPEG, BMP...)." + _skipped_in_short(found)
        )
    if len(found.classes) < 2:
        raise FolderUnavailable(
            f"{printable(root)} has {len(found.classes)} class folder; a classifier needs at "
            f"least two ({layout})."
        )
    if len(found.classes) > MAX_CLASSES:
        raise FolderUnavailable(
            f"{printable(root)} has {len(found.classes)} class folders; this LeNet-5 has "
            f"{MAX_CLASSES} outputs, so use at most {MAX_CLASSES} (or raise NUM_CLASSES in "
            "model.py)."
        )
    counts = [0] * len(found.classes)
    for picture in found.pictures:
        counts[picture.label] += 1
    few = [(name, n) for name, n in zip(found.classes, counts) if n < MIN_PER_CLASS]
    if few:
        listed = ", ".join(f"{printable(name, 60)} {n}" for name, n in few)
        raise FolderUnavailable(
            f"Too few usable pictures in {printable(root)}: {listed}; each class needs at "
            f"least {MIN_PER_CLASS} (tens are better). Add pictures, or remove the class "
            "folder." + _skipped_in_short(found)
        )
    return found


def _skipped_in_short(found: folder_scan.Scan) -> str:
    return f" ({len(found.skipped)} files were skipped.)" if found.skipped else ""


@dataclass(frozen=True)
class LoaderSettings:
    num_workers: int
    pin_memory: bool
    persistent_workers: bool


def loader_settings(device_type: str, images: int, cpus: int | None = None) -> LoaderSettings:
    """DataLoader settings for training on ``device_type`` from a folder of ``images``.

    - ``num_workers``: worker processes decode and resize images while the device trains.
      Each is a new Python process that imports torch: on Windows (and macOS) they are
      spawned, which costs seconds, so a small folder is read faster by the main process
      alone. A GPU leaves the CPU free for workers (one core stays with the training loop);
      training on the CPU itself uses every core, so it gets few workers.
    - ``pin_memory``: page-locked batches make copies to a CUDA (or ROCm) GPU faster and
      asynchronous; other devices do not use it (DirectML, XPU, MPS, CPU).
    - ``persistent_workers``: keep the workers from one epoch to the next instead of spawning
      them again every epoch.

    Workers on Windows start by importing the script that started training: that is why
    ``train.py`` runs only under ``if __name__ == "__main__":``.
    """
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    if images < SMALL_FOLDER:
        workers = 0
    elif device_type == "cpu":
        workers = min(2, cpus // 4)
    else:
        workers = min(4, max(cpus - 1, 0))
    return LoaderSettings(
        num_workers=workers,
        pin_memory=device_type == "cuda",
        persistent_workers=workers > 0,
    )


class LoaderSplit:
    """A split of an image folder, read from its files batch by batch by a DataLoader.

    It holds the images' indices in the folder, in the order they will be read; ``shuffled``
    gives a new order, ``batches`` reads them. One DataLoader per batch size is kept and
    reused every epoch, so that persistent workers stay alive between epochs: the sampler
    (in this process) hands them each epoch's order."""

    def __init__(
        self,
        images: Any,  # a PictureFolder: (uint8 (1, 28, 28), class index) per item
        order: torch.Tensor,
        device: torch.device | None = None,
        loaders: dict[int, Any] | None = None,
    ) -> None:
        self.images, self.order, self.device = images, order, device
        self.loaders = {} if loaders is None else loaders  # shared by reordered views

    def __len__(self) -> int:
        return len(self.order)

    @property
    def labels(self) -> torch.Tensor:
        """The class indices in reading order, from the folder names: no image is opened."""
        targets = torch.as_tensor(self.images.targets, dtype=torch.int64)
        return targets[self.order]

    def to(self, device: torch.device) -> LoaderSplit:
        """The same split, with batches delivered on ``device``."""
        return LoaderSplit(self.images, self.order, torch.device(device))

    def reordered(self, order: torch.Tensor) -> LoaderSplit:
        return LoaderSplit(self.images, self.order[order], self.device, self.loaders)

    def batches(
        self, batch_size: int, start: int, stop: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        loader = self.loaders.get(batch_size)
        if loader is None:
            loader = self.loaders[batch_size] = self._loader(batch_size)
        loader.sampler.indices = self.order[start * batch_size : stop * batch_size].tolist()
        device = self.device or torch.device("cpu")
        for images, labels in loader:
            # Pinned memory (CUDA only) lets the copy overlap the previous step's work.
            yield (
                images.to(device, non_blocking=loader.pin_memory),
                labels.to(device, non_blocking=loader.pin_memory),
            )

    def _loader(self, batch_size: int) -> torch.utils.data.DataLoader:
        device_type = (self.device or torch.device("cpu")).type
        settings = loader_settings(device_type, len(self.images))
        return torch.utils.data.DataLoader(
            self.images,
            batch_size=batch_size,
            sampler=_Order(),  # the order comes from ``shuffled``: one generator, exact resume
            num_workers=settings.num_workers,
            pin_memory=settings.pin_memory,
            persistent_workers=settings.persistent_workers,
        )


class _Order(torch.utils.data.Sampler):
    """The indices of the next epoch, set before each pass (see ``LoaderSplit.batches``)."""

    def __init__(self) -> None:
        self.indices: list[int] = []

    def __iter__(self) -> Iterator[int]:
        return iter(list(self.indices))

    def __len__(self) -> int:
        return len(self.indices)
