"""The command line of ``python -m <package>.train``: options, and errors as exit codes.

The options are the fields of ``train.TrainConfig``, with its defaults (``build_parser``); a
problem the user can fix ends in one sentence on stderr and an exit code, never a traceback:
0 done, 2 a bad option or setting, 3 training diverged, 4 the GPU failed, 130 stopped with
Ctrl+C. A console that is gone changes none of them: the run trains and saves without it.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Sequence

from .cli import (
    add_data_dir_option,
    add_device_option,
    command_parser,
    momentum,
    non_negative_float,
    positive_float,
    positive_int,
    seed,
    whole_number,
)
from .command_entry import command, write_err
from .console import say
from .parsers import EVAL_BATCH_SIZE  # noqa: F401 (train's validation batch, as evaluate's)
from .stopping import EXIT_INTERRUPTED, Interrupted, TrainError

TrainConfig = Any  # train.py's settings: passed in (``config_class``), never imported here

# Beyond these a run cannot be meant: a year of epochs, a batch larger than any dataset here.
MAX_EPOCHS = 100_000
MAX_BATCH_SIZE = 1_000_000
EPOCHS = whole_number(1, MAX_EPOCHS)
BATCH_SIZE = whole_number(1, MAX_BATCH_SIZE)


def dataset_name(text: str) -> str:
    """--dataset: mnist, synthetic or folder:PATH."""
    from .. import data  # imports torch: here, so that --help alone answers without it

    if not data.is_dataset(text) or text == "folder:":
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a dataset: use mnist, synthetic or folder:PATH (a folder with one "
            "subfolder of images per class)"
        )
    return text


def _lr_help(defaults: TrainConfig) -> str:
    peaks = ", ".join(f"{v:g} for {k}" for k, v in defaults.DEFAULT_LR.items())
    return f"peak learning rate of the one-cycle schedule (default: {peaks})"


# How each setting of ``TrainConfig`` reads on the command line: its parser and its help. A
# setting not named here still gets its option, parsed after its type (``_by_type``).
OPTIONS: dict[str, dict[str, Any]] = {
    "epochs": {"type": EPOCHS, "help": "number of epochs"},
    "batch_size": {
        "type": BATCH_SIZE,
        "help": "training batch size: images per optimizer step; under torchrun, of all "
        "processes together (each takes an equal share, so it must divide evenly)",
    },
    "lr": {"type": positive_float, "help": _lr_help},
    "optimizer": {
        "choices": lambda defaults: tuple(defaults.DEFAULT_LR),  # the optimizers train.py builds
        "help": "sgd: SGD with Nesterov momentum (--momentum); adam: Adam (a lerp-free version "
        "on DirectML)",
    },
    "momentum": {
        "type": momentum,
        "help": "SGD's momentum, from 0 (plain SGD) up to, not including, 1 (not used by Adam)",
    },
    "weight_decay": {"type": non_negative_float, "help": "L2 weight decay"},
    "seed": {"type": seed, "help": "random seed (initial weights, shuffling)"},
    "dataset": {
        "type": dataset_name,
        "help": "mnist; synthetic: digits generated here (no download); folder:PATH: your own "
        "images, one subfolder per class (docs/own-images.md)",
    },
    # Not add_output_dir_option: train writes the folder that the other commands read.
    "output_dir": {
        "type": Path,
        "help": "this run's folder: checkpoints (last.pt, best.pt), metrics.csv/json and "
        "curves.png go here (default: a new folder in runs/, or in --runs-dir, named after the "
        "time and the settings that differ from the defaults, so every run keeps its own)",
    },
    "runs_dir": {
        "type": Path,
        "help": "where each new run gets its own folder, and compare.png shows the latest runs "
        "side by side",
    },
    "resume": {
        "help": "continue a run with its own settings: the one in --output-dir, or by default "
        "the latest run in runs/ (or in --runs-dir)",
    },
    "dry_run": {
        "help": lambda defaults: (
            f"run {defaults.DRY_RUN_BATCHES} training batches and a quick evaluation, save nothing"
        )
    },
    "log_interval": {
        "type": positive_int,
        "help": "read the running loss back from the device every N batches",
    },
}


def _by_type(annotation: str) -> dict[str, Any]:
    """The parser of a setting that OPTIONS does not name, from its annotation's text."""
    kind = annotation.replace(" | None", "").replace("Optional[", "").rstrip("]")
    parsers = {"int": whole_number(0, 2**31 - 1), "float": non_negative_float, "Path": Path}
    return {"type": parsers.get(kind, str)}


def build_parser(config_class: type[TrainConfig]) -> argparse.ArgumentParser:
    """The parser: one option per field of ``config_class``, defaulting to the field's
    default, so that a new setting gets its option."""
    defaults = config_class()
    package = (__package__ or "<package>.").rpartition(".")[0]
    parser = command_parser(
        f"{package}.train",
        "Train LeNet-5 on MNIST (or synthetic digits) on the best available device: DirectML, "
        "CUDA/ROCm, Intel XPU, Apple MPS or the CPU.",
    )
    for setting in fields(config_class):
        name, default = setting.name, getattr(defaults, setting.name)
        if name == "device":  # the options several commands share, in their one wording
            add_device_option(parser, "train on")
            parser.set_defaults(device=default)
            continue
        if name == "data_dir":
            add_data_dir_option(parser, default=default)
            continue
        annotation = str(getattr(setting.type, "__name__", setting.type))
        spec = dict(OPTIONS.get(name) or _by_type(annotation))
        spec.setdefault("help", f"the setting {name} of TrainConfig in train.py")
        for key in ("help", "choices"):
            if callable(spec.get(key)):
                spec[key] = spec[key](defaults)
        if isinstance(default, bool):
            spec = {"action": "store_false" if default else "store_true", "help": spec["help"]}
        else:
            spec["default"] = default
        parser.add_argument("--" + name.replace("_", "-"), **spec)
    return parser


def typed_options(config_class: type[TrainConfig], argv: Sequence[str] | None) -> list[str]:
    """The settings the user typed, also those typed with their default value (``--epochs 5``
    with --resume must be named, not taken for the default)."""
    untyped = object()  # argparse sets no default where the namespace has a value already
    blank = argparse.Namespace(**{setting.name: untyped for setting in fields(config_class)})
    typed = build_parser(config_class).parse_args(argv, namespace=blank)
    return [name for name, value in vars(typed).items() if value is not untyped]


def main(
    argv: Sequence[str] | None, train: Callable[..., Any], config_class: type[TrainConfig]
) -> int:
    """Parse ``argv``, run ``train(config, explicit=...)``, turn its errors into exit codes."""
    from . import distributed  # torch: imported here, so that the parser (--help) needs none

    code = command(lambda args: _main(args, train, config_class))(argv)
    return distributed.end_process(code)  # TORCHRUN: ends here, without Python's finalization


def _main(
    argv: Sequence[str] | None, train: Callable[..., Any], config_class: type[TrainConfig]
) -> int:
    from ..datasets import folder
    from . import distributed

    parser = build_parser(config_class)
    args = parser.parse_args(argv)
    explicit = typed_options(config_class, argv)
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
    except folder.FolderUnavailable as error:  # a picture changed after the check, mid-epoch
        write_err(f"error: {folder.one_sentence(error)}")
        return 2
    return 0
