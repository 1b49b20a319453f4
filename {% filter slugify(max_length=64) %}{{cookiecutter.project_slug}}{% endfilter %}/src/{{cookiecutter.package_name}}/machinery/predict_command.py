"""The command line of ``python -m <package>.predict digit.png``: the digit in each picture.

Each picture (a PNG, or any picture Pillow opens) is prepared like MNIST's digits, as the
drawing page prepares a drawing (``datasets/handwriting.py``), and the trained model says what
it reads: by default the latest run's best.pt, run by torch; ``--runtime onnx`` runs the
exported model.onnx with ONNX Runtime (``predict.Model``) instead. The models are loaded as
``draw`` loads them, so both commands read a picture the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import torch

from .. import draw
from .cli import (
    add_checkpoint_option,
    add_device_option,
    add_output_dir_option,
    add_runtime_option,
    command_parser,
)
from .command_entry import command, write_err, write_out

# Larger pictures are refused before their pixels are decoded: a phone's photo is about 12 M.
MAX_PIXELS = 50_000_000
EXIT_USAGE = 2


class PictureError(Exception):
    """A picture that cannot be read; the message is one sentence for the user."""


def read_picture(path: Path) -> torch.Tensor:
    """The picture at ``path`` as uint8 (H, W) grey, dark ink on light paper, as the drawing
    page sends a drawing; transparent parts are paper. A light digit on a dark background (an
    MNIST picture) is turned around first: the paper is whatever most of the picture is."""
    from PIL import Image  # Pillow comes with torchvision

    path = Path(path)
    if not path.is_file():
        raise PictureError(f"There is no picture at {path}.")
    try:
        with Image.open(path) as image:
            width, height = image.size  # read from the header, before any pixel is decoded
            if width * height > MAX_PIXELS:
                raise PictureError(
                    f"{path} is {width}x{height} pixels; crop it around the digit (at most "
                    f"{MAX_PIXELS // 1_000_000} million pixels)."
                )
            paper = Image.new("RGBA", (width, height), "white")
            paper.alpha_composite(image.convert("RGBA"))
            grey = paper.convert("L")
    except PictureError:
        raise
    except Exception:  # Pillow reports damage as OSError, SyntaxError, ValueError...
        raise PictureError(
            f"{path} cannot be read as a picture: it is damaged, or not a PNG or another "
            "format Pillow reads."
        ) from None
    canvas = torch.frombuffer(bytearray(grey.tobytes()), dtype=torch.uint8).reshape(height, width)
    if canvas.float().mean() < 128:  # mostly dark: a light digit on a dark background
        canvas = 255 - canvas
    return canvas


def answer_line(path: Path, answer: dict) -> str:
    """``digit.png: 7  (98.1 %; next 1, 1.2 %)``, or why there is no answer."""
    if answer["empty"]:
        return f"{path}: no digit (the picture has no ink)"
    classes = answer["classes"]
    probabilities = answer["prepared"]["probabilities"][: len(classes)]
    first, second = sorted(range(len(classes)), key=lambda i: -probabilities[i])[:2]
    return (
        f"{path}: {classes[first]}  ({100 * probabilities[first]:.1f} %; "
        f"next {classes[second]}, {100 * probabilities[second]:.1f} %)"
    )


def build_parser() -> argparse.ArgumentParser:
    package = (__package__ or "<package>.").rpartition(".")[0]
    parser = command_parser(
        f"{package}.predict",
        "Print the digit your trained model reads in each picture (PNG): dark ink on light "
        "paper or a light digit on black, any size; it is prepared like MNIST's digits.",
    )
    parser.add_argument("pictures", nargs="+", type=Path, metavar="PICTURE", help="a PNG file")
    add_output_dir_option(parser)
    add_checkpoint_option(parser)
    add_device_option(parser, "run the model on", "used with --runtime torch")
    add_runtime_option(parser)
    return parser


@command  # a console that cannot show a character, Ctrl+C: one line, no traceback
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        path = args.checkpoint or draw.find_model(args.output_dir)
        if args.runtime == "onnx":
            reader, state = draw.load_onnx_reader(path)
            path = path if Path(path).suffix == ".onnx" else Path(path).with_name(draw.ONNX_NAME)
        else:
            reader, state = draw.load_reader(path, args.device)
    except draw.DrawError as error:
        write_err(f"error: {error}")
        return EXIT_USAGE
    write_out(f"model: {path} on {reader.describe()}")
    note = draw.trained_on_note(state)
    if note is not None:
        write_out(f"note : {note}")
    failed = False
    for picture in args.pictures:
        try:
            write_out(answer_line(picture, reader.read(read_picture(picture))))
        except PictureError as error:
            write_err(f"error: {error}")
            failed = True
    return EXIT_USAGE if failed else 0
