"""The command line the project's commands share: the parser, which states every default the
same way, the options several commands offer, in one wording each, and their checks. Standard
library only: ``python -m <package>.<command>`` imports it before torch. How a command starts
and ends (Ctrl+C, a stdout that is gone) is ``command_entry``'s."""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Callable


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """States defaults, except where the help text explains a None default itself."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or isinstance(action.default, bool):
            return action.help or ""
        return super()._get_help_string(action)


def command_parser(module: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``python -m <module>``: every command states its defaults the same way."""
    return argparse.ArgumentParser(
        prog=f"python -m {module}", description=description, formatter_class=HelpFormatter
    )


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _quoted(text: str) -> str:
    return repr(_short(text))


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An option's parser for a whole number from ``low`` to ``high``: a number of hundreds of
    digits is refused here, before it can overflow a float or an allocation."""

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if not digits.isdigit() or not digits.isascii():
            raise argparse.ArgumentTypeError(f"{_quoted(text)} is not a whole number")
        if len(digits) > len(str(high)) + 1:  # int() of 5,000 digits is refused by Python
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, not {_quoted(text)}")
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:,}, not {value}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, not {_quoted(text)}")
        return value

    return parse


positive_int = whole_number(1, 2**31 - 1)


# The largest float32: the model and the optimizer compute in float32, where a larger
# --lr or --weight-decay is infinite and ends the first step in an overflow.
FLOAT32_MAX = 3.4028234663852886e38


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_quoted(text)} is not a number") from None


def _float_at_least(zero_allowed: bool) -> Callable[[str], float]:
    wanted = "zero or a positive number" if zero_allowed else "a positive number"

    def parse(text: str) -> float:
        value = _number(text)
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {_short(text)}")
        if value > FLOAT32_MAX:
            raise argparse.ArgumentTypeError(
                f"must be at most {FLOAT32_MAX:.4g} (the largest float32), not {_short(text)}"
            )
        return value

    return parse


def momentum(text: str) -> float:
    """--momentum: from 0 (plain SGD) up to, not including, 1: the share of the last step
    that the next one keeps, so 1 or more makes every step larger than the one before."""
    value = _number(text)
    if not 0 <= value < 1:  # NaN fails this too
        raise argparse.ArgumentTypeError(
            f"must be from 0 up to (not including) 1, such as 0.9, not {_short(text)}"
        )
    return value


# torch.manual_seed takes at most 64 bits; 2**63 - 1 keeps every seed also a valid int64.
MAX_SEED = 2**63 - 1


def seed(text: str) -> int:
    try:
        value = whole_number(0, MAX_SEED)(text)
    except argparse.ArgumentTypeError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {MAX_SEED}")
    return value


positive_float = _float_at_least(zero_allowed=False)
non_negative_float = _float_at_least(zero_allowed=True)


# --------------------------------------------------------------------------------------------
# The options several commands share, in one wording each (tests/test_cli.py holds them to it,
# and verify_install's --device to the same words)

# What --device accepts ("dml" and "rocm" are aliases of directml and cuda); whether the device
# exists is checked when it is chosen (devices.choose), where the message can name the devices
# this machine has.
DEVICE_REQUEST = re.compile(r"^(auto|directml|dml|cuda|rocm|xpu|mps|cpu)(?::(\d+))?$")
DEVICE_CHOICES = "auto, directml, directml:N, cuda, cuda:N, xpu, xpu:N, mps or cpu"


def add_device_option(
    parser: argparse.ArgumentParser, purpose: str, note: str = "", several: bool = False
) -> argparse.Action:
    """--device: the device to ``purpose`` ("train on"); ``note`` adds what holds for this
    command only; ``several``: the option may be repeated, and without it every available
    device is used (benchmark)."""
    what = f"{purpose} ({note})" if note else purpose
    text = (
        f"the device to {what}: auto (the best one found), directml, cuda (also ROCm), xpu, mps "
        "or cpu; one GPU of several: directml:N, cuda:N or xpu:N, counted from 0"
    )
    if several:
        text += "; repeat --device for several (default: every available device)"
    return parser.add_argument(
        "--device",
        default=None if several else "auto",
        action="append" if several else "store",
        help=text,
    )


RUNS_DIR = Path("runs")  # where train puts a new folder for each run


def add_output_dir_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """--output-dir of the commands that use a trained model (train's own says where it writes)."""
    return parser.add_argument(
        "--output-dir",
        type=Path,
        default=RUNS_DIR,
        help="the folder train wrote to (its --output-dir): one run's folder, or a folder of "
        "runs, then the latest run in it",
    )


def add_checkpoint_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """--checkpoint: a model file named outright, instead of the latest run's."""
    return parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="the trained model to use: a .pt file that train wrote (default: best.pt, else "
        "last.pt, of the latest run in --output-dir)",
    )


def add_runtime_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """--runtime of the commands that read digits (draw, predict): torch or ONNX Runtime."""
    return parser.add_argument(
        "--runtime",
        choices=("torch", "onnx"),
        default="torch",
        help="torch: the checkpoint; onnx: the exported model.onnx beside it (or --checkpoint "
        "FILE.onnx), run by ONNX Runtime on the best execution provider",
    )


def add_data_dir_option(
    parser: argparse.ArgumentParser, default: Path | None = Path("data")
) -> argparse.Action:
    """--data-dir; a None default (evaluate, export): the folder the model's run trained from,
    so that a model is tested on the files it was trained beside, or where they are now."""
    text = (
        "where MNIST is kept or downloaded to: DIR/MNIST/raw, or DIR itself when it holds "
        "MNIST's .gz files; not used for synthetic digits or your own images"
    )
    if default is None:
        text = (
            "where MNIST is kept or downloaded to (DIR/MNIST/raw, or DIR itself when it holds "
            "MNIST's .gz files), or, for a model trained on your own images, their folder if "
            "it moved; not used for synthetic digits (default: the folder the run trained "
            "from, if it holds them)"
        )
    return parser.add_argument("--data-dir", type=Path, default=default, help=text)
