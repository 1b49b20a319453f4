"""MNIST through torchvision: download, read, and the help for offline machines.

torchvision's ``MNIST`` class downloads the four files into ``<data-dir>/MNIST/raw`` and reads
them; this module adds a download timeout and turns every failure (offline, blocked, corrupt
files) into ``MNISTUnavailable`` with a message that says how to get the files.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from pathlib import Path
from typing import Any, Tuple

import torch

from ..machinery.terminal_text import printable

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
    """Where the four files are read from: ``data_dir/MNIST/raw`` (torchvision's layout, and
    where downloads go), or ``data_dir`` itself when it holds the files directly, as when an
    instructor hands them round on a USB stick."""
    data_dir = Path(data_dir)
    nested = data_dir / "MNIST" / "raw"
    if not _any_file(nested) and _any_file(data_dir):
        return data_dir
    return nested


def _any_file(folder: Path) -> bool:
    names = [name for gz in MNIST_FILES for name in (gz, gz[: -len(".gz")])]
    return any((folder / name).is_file() for name in names)


def _prefetch_command(data_dir: Path) -> str:
    package = (__package__ or "<package>.").rpartition(".")[0]  # the project's package
    return f"python -m {package}.data --data-dir {data_dir}"


def has_test_files(folder: Path) -> bool:
    """Whether ``folder`` holds MNIST's two test files (packed or not), in either layout."""
    raw = mnist_raw_folder(folder)
    return all(
        (raw / name).is_file() or (raw / name[: -len(".gz")]).is_file()
        for name in MNIST_FILES
        if name.startswith("t10k")
    )


def folder_with_test_files(given: Path | None, recorded: object, command: str) -> Path:
    """The folder to read the MNIST test files from, for a model trained elsewhere:
    ``given`` (--data-dir), else the folder its run ``recorded``, only where it holds the test
    files already (it names a folder of the machine that trained). MNISTUnavailable
    otherwise, naming ``command`` with ``--data-dir data`` to run instead."""
    package = (__package__ or "<package>.").rpartition(".")[0]
    again = f"{command} --data-dir data"
    if given is not None:
        if Path(given).exists() and not Path(given).is_dir():
            raise MNISTUnavailable(
                f"--data-dir {given} is a file, not a folder. Pass the folder that holds the "
                "MNIST test files (t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz), or "
                f"get them with: python -m {package}.data --data-dir data, then {again}"
            )
        return Path(given)
    where = "from a folder it does not name"
    if isinstance(recorded, str) and recorded:
        where = f"from {printable(recorded, 200)}"
        with contextlib.suppress(OSError, ValueError):  # a name this system cannot look up
            if has_test_files(Path(recorded)):
                return Path(recorded)
    raise MNISTUnavailable(
        f"This checkpoint was trained on MNIST {where}, which does not hold the test files on "
        "this machine; evaluate does not create or download into a folder a checkpoint names. "
        f"Pass --data-dir: a folder with the files, or one to download them into (about 2 MB), "
        f"e.g. {again}"
    )


def mnist_help(data_dir: Path, files: tuple[str, ...] = MNIST_FILES) -> str:
    return (
        f"While online, run once: {_prefetch_command(data_dir)}  (downloads about 11 MB). "
        f"Or copy the files {', '.join(files)} (or their unpacked versions) "
        f"into {Path(data_dir) / 'MNIST' / 'raw'} or into {data_dir} itself, from a machine "
        "that has them. Without network, --dataset synthetic trains on generated digits."
    )


def _reading_from(raw: Path, test_only: bool) -> Any:
    """torchvision's MNIST class, reading and downloading in ``raw`` (either layout); with
    ``test_only`` it needs, checks and downloads the two test files alone."""
    try:
        from torchvision.datasets import MNIST
    except Exception as error:  # a torchvision that does not match torch fails here
        raise MNISTUnavailable(
            f"torchvision could not be imported ({type(error).__name__}: {error}). "
            "Install the torchvision version pinned beside torch in the environment file."
        ) from error

    class MNISTIn(MNIST):
        resources = [r for r in MNIST.resources if r[0].startswith("t10k") or not test_only]

        @property
        def raw_folder(self) -> str:
            return str(raw)

    return MNISTIn


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split()).rstrip(":")


def _tensors(split: Any) -> Images:
    return split.data.unsqueeze(1).contiguous(), split.targets.long()


def load_mnist(data_dir: Path, download: bool = True) -> tuple[Images, Images]:
    """(train, test) as (uint8 images (N, 1, 28, 28), int64 labels) on the CPU, read by
    torchvision from ``mnist_raw_folder(data_dir)``.

    Downloads the files first when they are missing and ``download`` is true. Any failure
    (offline, blocked, corrupt or wrong files) raises MNISTUnavailable with the fix, and
    leaves no empty folder behind.
    """
    return _load(Path(data_dir), download, test_only=False)  # type: ignore[return-value]


def load_mnist_test(data_dir: Path, download: bool = True) -> Images:
    """The test split alone, which needs only the two ``t10k`` files (for evaluation)."""
    return _load(Path(data_dir), download, test_only=True)  # type: ignore[return-value]


def _load(data_dir: Path, download: bool, test_only: bool) -> Any:
    raw = mnist_raw_folder(data_dir)
    files = tuple(f for f in MNIST_FILES if f.startswith("t10k") or not test_only)
    present = _any_file(raw)
    made = [folder for folder in (data_dir, raw.parent, raw) if not folder.exists()]
    mnist_class = _reading_from(raw, test_only)
    previous_timeout = socket.getdefaulttimeout()
    # torchvision opens its URLs without a timeout; a blocked network must not hang for ever.
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)
    try:
        test = _tensors(mnist_class(str(data_dir), train=False, download=download))
        if test_only:
            check_split(raw, "t10k", test)
            return test
        train = _tensors(mnist_class(str(data_dir), train=True, download=download))
        check_split(raw, "train", train)
        check_split(raw, "t10k", test)
        splits = (train, test)
    except MNISTUnavailable:
        _remove_empty(made)
        raise
    except Exception as error:  # URLError, RuntimeError("Error downloading ..."), bad files
        _remove_empty(made)
        if present:  # nothing was downloaded: the files that are there do not read
            raise MNISTUnavailable(
                f"The MNIST files in {raw} could not be read ({_one_line(error)}): "
                f"{_which_file_fails(raw, files)}. Replace them with the original files. "
                f"{mnist_help(data_dir, files)}"
            ) from error
        raise MNISTUnavailable(
            f"MNIST is not in {raw} and could not be {'downloaded' if download else 'read'} "
            f"({_one_line(error)}). {mnist_help(data_dir, files)}"
        ) from error
    finally:
        socket.setdefaulttimeout(previous_timeout)
    return splits


# The real files' sizes; tests that write small MNIST-format files change these.
EXPECTED_IMAGES = {"train": 60000, "t10k": 10000}


def check_split(raw: Path, prefix: str, split: Images) -> None:
    """MNISTUnavailable, naming the file, unless the split ("train" or "t10k") looks like
    MNIST's: 28x28 images, labels 0 to 9, as many labels as images, MNIST's number of images."""
    images, labels = split
    image_file, label_file = f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"
    problem = ""
    if tuple(images.shape[1:]) != (1, 28, 28):
        size = "x".join(str(n) for n in images.shape[2:])
        problem = f"{image_file} holds {size} images; MNIST's are 28x28"
    elif len(images) != EXPECTED_IMAGES[prefix]:
        expected = EXPECTED_IMAGES[prefix]
        problem = f"{image_file} holds {len(images)} images; MNIST's has {expected}"
    elif len(labels) != len(images):
        problem = f"{label_file} holds {len(labels)} labels for {len(images)} images"
    elif len(labels) and not 0 <= int(labels.min()) <= int(labels.max()) <= 9:
        problem = (
            f"{label_file} holds labels from {int(labels.min())} to {int(labels.max())}; "
            "MNIST's are 0 to 9"
        )
    if problem:
        raise MNISTUnavailable(
            f"The MNIST files in {raw} are not MNIST: {problem}. Replace them with the "
            f"original files (or delete them to download again)."
        )


def _which_file_fails(raw: Path, files: tuple[str, ...]) -> str:
    """The first of ``files`` that torchvision's own readers cannot read, and why."""
    from torchvision.datasets.mnist import read_image_file, read_label_file

    for gz in files:
        name = gz[: -len(".gz")]
        path = raw / name
        if not path.is_file():
            packed = " (only the .gz is there)" if (raw / gz).is_file() else ""
            return f"{name} is missing{packed}"
        reader = read_image_file if "images" in name else read_label_file
        try:
            reader(str(path))
        except Exception as error:
            return f"{name} is not an MNIST file ({_one_line(error)})"
    return "each file reads alone, but not together"


def _remove_empty(folders: list[Path]) -> None:
    for folder in reversed(folders):  # innermost first
        try:
            folder.rmdir()
        except OSError:
            return


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
