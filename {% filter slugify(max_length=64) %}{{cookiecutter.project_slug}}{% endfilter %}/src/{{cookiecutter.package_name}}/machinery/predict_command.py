"""The command line of ``python -m <package>.predict digit.png``: the digit in each picture.

Each picture (a PNG, or any picture Pillow opens) is prepared like MNIST's digits, as the
drawing page prepares a drawing (``datasets/handwriting.py``), and the trained model says what
it reads: by default the latest run's best.pt, run by torch; ``--runtime onnx`` runs the
exported model.onnx with ONNX Runtime (``predict.Model``) instead. The models are loaded as
``draw`` loads them, so both commands read a picture the same way.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence

import torch

from .. import draw
from . import parsers
from .command_entry import command, write_err, write_out
from .terminal_text import printable

# Larger pictures are refused before their pixels are decoded: a phone's photo is about 12 M.
MAX_PIXELS = 50_000_000
EXIT_USAGE = 2


class PictureError(Exception):
    """A picture that cannot be read; the message is one sentence for the user."""


def read_picture(path: Path) -> torch.Tensor:
    """The picture at ``path`` as uint8 (H, W) grey, dark ink on white paper, as the drawing
    page sends a drawing. It is read as it is shown: turned as its EXIF tag says (a phone's
    photo), transparent parts as the background that shows the digit. A light digit on a dark
    background (an MNIST picture) is turned around, and paper of any shade becomes white."""
    from PIL import Image  # Pillow comes with torchvision

    path = Path(path)
    if not path.is_file():
        if path.is_dir():
            raise PictureError(f"{printable(path)} is a folder: name a picture in it.")
        raise PictureError(f"There is no picture at {printable(path)}.")
    try:
        with warnings.catch_warnings():  # Pillow's warning of a big picture: MAX_PIXELS says it
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(path)
        with opened as image:
            width, height = image.size  # read from the header, before any pixel is decoded
            if width * height > MAX_PIXELS:
                raise _too_large(path, f" ({width}x{height} pixels)")
            grey = _as_shown(_upright(image))
    except PictureError:
        raise
    except Image.DecompressionBombError:  # bigger than Pillow opens at all
        raise _too_large(path) from None
    except Exception:  # Pillow reports damage as OSError, SyntaxError, ValueError...
        raise PictureError(
            f"{printable(path)} cannot be read as a picture: it is damaged, or not a PNG or "
            "another format Pillow reads."
        ) from None
    width, height = grey.size  # turned: a portrait photo stored as landscape
    canvas = torch.frombuffer(bytearray(grey.tobytes()), dtype=torch.uint8).reshape(height, width)
    return _on_white_paper(canvas)


def _too_large(path: Path, size: str = "") -> PictureError:
    return PictureError(
        f"{printable(path)} is too large a picture{size}; crop it around the digit (at most "
        f"{MAX_PIXELS // 1_000_000} million pixels)."
    )


def _upright(image):
    """``image`` turned as its EXIF tag says: a phone stores a photo as its sensor saw it, and
    a tag that says how to turn it for showing. A damaged tag leaves the picture as it is."""
    from PIL import ImageOps

    try:
        return ImageOps.exif_transpose(image)
    except Exception:  # Pillow raises what the tag's damage makes of it (KeyError, ValueError...)
        return image


def _as_shown(image):
    """The picture in grey (a Pillow image, mode L), its transparent parts filled with the
    background that shows what is drawn: black behind a light drawing (a white digit on a
    transparent background), white behind a dark one."""
    from PIL import Image

    if "A" not in image.getbands() and "transparency" not in image.info:
        return image.convert("L")
    rgba = image.convert("RGBA")
    alpha = torch.frombuffer(bytearray(rgba.getchannel("A").tobytes()), dtype=torch.uint8)
    grey = torch.frombuffer(bytearray(rgba.convert("L").tobytes()), dtype=torch.uint8)
    weight = alpha.float()
    drawn = (grey.float() * weight).sum() / weight.sum().clamp(min=1.0)  # the drawing's shade
    paper = Image.new("RGBA", rgba.size, "black" if drawn > 127 else "white")
    paper.alpha_composite(rgba)
    return paper.convert("L")


def _on_white_paper(canvas: torch.Tensor) -> torch.Tensor:
    """uint8 (H, W) -> dark ink on white paper. The paper is the picture's frame (its median
    shade: a digit may touch the edge); the ink is what differs from it, darker or lighter. Ink
    counts by how much darker than the paper it is, so the paper's shade is scaled to white:
    grey paper, or a dim photo, is not all ink."""
    height, width = canvas.shape
    rim = max(1, min(height, width) // 20)
    frame = torch.cat([canvas[:rim].flatten(), canvas[-rim:].flatten(),
                       canvas[:, :rim].flatten(), canvas[:, -rim:].flatten()])  # fmt: skip
    paper = float(frame.median())
    # How far the picture strays from the paper, darker and lighter: from the counts of its
    # 256 shades, in about a million of its pixels (a phone's photo has 12 million).
    step = max(1, round((height * width / 1_000_000) ** 0.5))
    counts = torch.bincount(canvas[::step, ::step].flatten().long(), minlength=256).double()
    shades = torch.arange(256, dtype=torch.float64)
    darker = float(((paper - shades).clamp(min=0) * counts).sum())
    lighter = float(((shades - paper).clamp(min=0) * counts).sum())
    if lighter > darker or (lighter == darker and paper < 128):  # a light digit on dark
        shades, paper = 255 - shades, 255 - paper
    scaled = shades * (255 / paper) if paper > 0 else shades
    shade_of = scaled.clamp(0, 255).round().to(torch.uint8)  # each shade's new shade
    return shade_of[canvas.long()]


def answer_line(path: Path, answer: dict) -> str:
    """``digit.png: 7  (98.1 %; next 1, 1.2 %)``, or why there is no answer. The file's name
    and the class names are shown escaped: either may hold characters that steer a terminal."""
    if answer["empty"]:
        return f"{printable(path)}: no digit (the picture has no ink)"
    classes = [printable(name, 80) for name in answer["classes"]]
    probabilities = answer["prepared"]["probabilities"][: len(classes)]
    first, second = sorted(range(len(classes)), key=lambda i: -probabilities[i])[:2]
    return (
        f"{printable(path)}: {classes[first]}  ({100 * probabilities[first]:.1f} %; "
        f"next {classes[second]}, {100 * probabilities[second]:.1f} %)"
    )


build_parser = parsers.predict  # in parsers.py: --help answers before torch loads


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
    write_out(f"model: {printable(path)} on {reader.who_answers()}")
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
