"""The command line of ``python -m <package>.train``: options, and errors as exit codes.

The options mirror the fields of ``train.TrainConfig`` (their defaults come from there); a
problem the user can fix ends in one sentence on stderr and an exit code, never a traceback:
0 done, 2 a bad option or setting, 3 training diverged, 4 the GPU failed, 130 stopped with
Ctrl+C. A console that is gone changes none of them: the run trains and saves without it.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import data
from ..datasets import folder
from ..datasets.folder import FolderUnavailable
from . import distributed
from .bookkeeping import DRY_RUN_BATCHES
from .cli import (
    add_data_dir_option,
    add_device_option,
    command,
    command_parser,
    non_negative_float,
    positive_float,
    positive_int,
    seed,
    whole_number,
    write_err,
)
from .console import say
from .optim import OPTIMIZERS
from .stopping import EXIT_INTERRUPTED, Interrupted, TrainError

# Beyond these a run cannot be meant: a year of epochs, a batch larger than any dataset here.
MAX_EPOCHS = 100_000
MAX_BATCH_SIZE = 1_000_000
EPOCHS = whole_number(1, MAX_EPOCHS)
BATCH_SIZE = whole_number(1, MAX_BATCH_SIZE)


def dataset_name(text: str) -> str:
    """--dataset: mnist, synthetic or folder:PATH."""
    if not data.is_dataset(text) or text == "folder:":
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a dataset: use mnist, synthetic or folder:PATH (a folder with one "
            "subfolder of images per class)"
        )
    return text


def build_parser(defaults: Any) -> argparse.ArgumentParser:
    """The parser; ``defaults`` is a ``TrainConfig()``, whose values the options default to."""
    package = (__package__ or "<package>.").rpartition(".")[0]
    parser = command_parser(
        f"{package}.train",
        "Train LeNet-5 on MNIST (or synthetic digits) on the best available device: DirectML, "
        "CUDA/ROCm, Intel XPU, Apple MPS or the CPU.",
    )
    add = parser.add_argument
    add("--epochs", type=EPOCHS, default=defaults.epochs, help="number of epochs")
    add(
        "--batch-size",
        type=BATCH_SIZE,
        default=defaults.batch_size,
        help="training batch size: images per optimizer step; under torchrun, of all "
        "processes together (each takes an equal share, so it must divide evenly)",
    )
    add(
        "--lr",
        type=positive_float,
        default=None,
        help="peak learning rate of the one-cycle schedule (default: "
        + ", ".join(f"{v:g} for {k}" for k, v in defaults.DEFAULT_LR.items())
        + ")",
    )
    add(
        "--optimizer",
        choices=OPTIMIZERS,
        default=defaults.optimizer,
        help="sgd: Nesterov momentum 0.9; adam: Adam (a lerp-free version on DirectML)",
    )
    add(
        "--weight-decay",
        type=non_negative_float,
        default=defaults.weight_decay,
        help="L2 weight decay",
    )
    add("--seed", type=seed, default=defaults.seed, help="random seed (initial weights, shuffling)")
    add_device_option(parser, "train on")
    parser.set_defaults(device=defaults.device)
    add_data_dir_option(parser, default=defaults.data_dir)
    add(
        "--dataset",
        type=dataset_name,
        default=defaults.dataset,
        help="mnist; synthetic: digits generated here (no download); folder:PATH: your own "
        "images, one subfolder per class (README: Your own images)",
    )
    # Not add_output_dir_option: train writes the folder that the other commands read.
    add(
        "--output-dir",
        type=Path,
        default=defaults.output_dir,
        help="this run's folder: checkpoints (last.pt, best.pt), metrics.csv/json and "
        "curves.png go here (default: a new folder in runs/ named after the time and the "
        "settings that differ from the defaults, so every run keeps its own)",
    )
    add(
        "--resume",
        action="store_true",
        help="continue a run with its own settings: the one in --output-dir, or by default "
        "the latest run in runs/",
    )
    add(
        "--dry-run",
        action="store_true",
        help=f"run {DRY_RUN_BATCHES} training batches and a quick evaluation, save nothing",
    )
    add(
        "--log-interval",
        type=positive_int,
        default=defaults.log_interval,
        help="read the running loss back from the device every N batches",
    )
    return parser


def main(argv: Sequence[str] | None, train: Callable[..., Any], config_class: type) -> int:
    """Parse ``argv``, run ``train(config, explicit=...)``, turn its errors into exit codes."""
    return command(lambda args: _main(args, train, config_class))(argv)


def _main(argv: Sequence[str] | None, train: Callable[..., Any], config_class: type) -> int:
    parser = build_parser(config_class())
    args = parser.parse_args(argv)
    explicit = [name for name, value in vars(args).items() if value != parser.get_default(name)]
    settings = {
        f.name: getattr(args, f.name) for f in fields(config_class) if hasattr(args, f.name)
    }
    try:
        train(config_class(**settings), explicit=explicit)
    except Interrupted as error:
        say(str(error))
        return error.exit_code
    except KeyboardInterrupt:  # Ctrl+C before training started (loading data, a download)
        say("Interrupted before training started; nothing was saved.")
        return EXIT_INTERRUPTED
    except TrainError as error:
        if not distributed.keeps_quiet(error):  # under torchrun rank 0 says it, once
            write_err(f"error: {error}")
        return error.exit_code
    except FolderUnavailable as error:  # a picture changed after the check, mid-epoch
        write_err(f"error: {folder.one_sentence(error)}")
        return 2
    return 0
