"""Your own images: a folder with one subfolder per class, read by a DataLoader.

    my_shapes/
      circle/    001.png, 002.jpg, ...
      square/    ...
      triangle/  ...

    python -m <package>.train --dataset folder:my_shapes

``torchvision.datasets.ImageFolder`` finds the classes (the subfolder names, sorted) and the
images; each image is turned grey and resized to 28x28, the input LeNet-5 was built for. A
fixed part of the images is held out for validation and test (``data.load_folder``).

MNIST is small enough to sit on the device as one tensor (``data.py``); a folder of photos
may not be, and decoding JPEG/PNG files is work for the CPU. So images are read batch by
batch by a ``DataLoader``, whose settings ``loader_settings`` chooses per device and system.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PREFIX = "folder:"
MAX_CLASSES = 10  # LeNet-5 here has 10 outputs (model.NUM_CLASSES)
SMALL_FOLDER = 2000  # images: below this, worker processes cost more than they save


class FolderUnavailable(ValueError):
    """The folder cannot be used; the message says why and what to do."""


def folder_path(dataset: str) -> Path | None:
    """The path in ``folder:<path>``, or None for another dataset name."""
    if not dataset.startswith(PREFIX):
        return None
    return Path(dataset[len(PREFIX) :]).expanduser()


def image_folder(root: Path):
    """The ImageFolder of ``root``: grey 28x28 uint8 images and their class indices."""
    from torchvision import datasets, transforms

    root = Path(root)
    layout = "one subfolder per class, e.g. cats/ and dogs/, with the images inside"
    if not root.is_dir():
        raise FolderUnavailable(f"{root} is not a folder: --dataset folder:<path> needs {layout}.")
    # uint8 like the MNIST tensors, so that ``data.to_model_input`` serves both.
    transform = transforms.Compose(
        [
            transforms.Grayscale(num_output_channels=1),
            transforms.Resize((28, 28), antialias=True),
            transforms.PILToTensor(),
        ]
    )
    try:
        found = datasets.ImageFolder(str(root), transform=transform)
    except (FileNotFoundError, OSError) as error:  # no class folder, or no image in them
        raise FolderUnavailable(
            f"No images found in {root}: --dataset folder:<path> needs {layout} "
            f"(PNG, JPEG, BMP...). ({error})"
        ) from error
    if len(found.classes) < 2:
        raise FolderUnavailable(
            f"{root} has {len(found.classes)} class folder; a classifier needs at least two "
            f"({layout})."
        )
    if len(found.classes) > MAX_CLASSES:
        raise FolderUnavailable(
            f"{root} has {len(found.classes)} class folders; this LeNet-5 has {MAX_CLASSES} "
            f"outputs, so use at most {MAX_CLASSES} (or raise NUM_CLASSES in model.py)."
        )
    return found


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
