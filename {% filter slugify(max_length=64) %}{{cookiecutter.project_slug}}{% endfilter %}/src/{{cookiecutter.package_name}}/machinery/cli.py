"""Small command-line helpers shared by the project's commands. Standard library only."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import re
import sys
import unicodedata
from typing import Any, Callable


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """States defaults, except where the help text explains a None default itself."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or isinstance(action.default, bool):
            return action.help or ""
        return super()._get_help_string(action)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _float_at_least(zero_allowed: bool) -> Callable[[str], float]:
    wanted = "zero or a positive number" if zero_allowed else "a positive number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {text}")
        return value

    return parse


# torch.manual_seed takes at most 64 bits; 2**63 - 1 keeps every seed also a valid int64.
MAX_SEED = 2**63 - 1


def seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {MAX_SEED}")
    return value


positive_float = _float_at_least(zero_allowed=False)
non_negative_float = _float_at_least(zero_allowed=True)


# What --device accepts ("dml" and "rocm" are aliases of directml and cuda).
DEVICE_REQUEST = re.compile(r"^(auto|directml|dml|cuda|rocm|xpu|mps|cpu)(?::(\d+))?$")
DEVICE_CHOICES = "auto, directml, directml:N, cuda, cuda:N, xpu, xpu:N, mps or cpu"


def device_request(text: str) -> str:
    """--device: checked for its form here; whether the device exists is checked later."""
    if not DEVICE_REQUEST.match(text.strip().lower()):
        raise argparse.ArgumentTypeError(f"unknown device {text!r}: use {DEVICE_CHOICES}")
    return text


def json_for(stream: Any, document: Any) -> str:
    """``document`` as indented JSON that ``stream`` can carry unchanged: readable UTF-8 text
    where the stream encodes it, ``\\u`` escapes where it cannot (an ASCII pipe, a cp1252
    console): never ``?`` in place of a name, so the JSON always reads back the same."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return json.dumps(document, indent=2, ensure_ascii=True)
    return text


def write_out(text: str, end: str = "\n") -> None:
    """Print to stdout; a reader that stopped early (``| head``) ends the output quietly."""
    try:
        sys.stdout.write(text + end)
        sys.stdout.flush()
    except OSError as error:
        # A closed pipe: BrokenPipeError, or EINVAL on Windows. Anything else is a real error.
        if not isinstance(error, BrokenPipeError) and error.errno != errno.EINVAL:
            raise
        # Point stdout at nothing, so that the flush at exit cannot fail a second time.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())


def clean_name(value: Any) -> str:
    """A name from a driver, an adapter or the system, fit to print, store and compare.

    C strings arrive with their terminating NUL (torch_directml.device_name() returned
    'NVIDIA GeForce GTX 470\\x00'), registry values with NULs and line breaks. Control
    characters go, whitespace runs become one space, the ends are trimmed."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = "" if value is None else str(value)
    kept = (char for char in text if char.isspace() or unicodedata.category(char) != "Cc")
    return " ".join("".join(kept).split())


def safe_console() -> None:
    """A Windows console may not encode every character of a project or adapter name:
    replace what it cannot show instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="replace")
