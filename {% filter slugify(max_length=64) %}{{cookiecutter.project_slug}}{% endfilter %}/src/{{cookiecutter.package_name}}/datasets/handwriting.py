"""A digit drawn on a page or a canvas, made into an image like MNIST's.

MNIST's digits were prepared the same way, one by one (LeCun, Cortes and Burges, "The MNIST
database"): the ink's bounding box scaled to fit 20x20 keeping its aspect ratio, then placed in
a 28x28 field so that its centre of mass sits at the centre, white on black. A model trained
on MNIST has seen nothing else: a digit drawn small in a corner of a big canvas, or dark on
white, is not a digit to it. ``prepare_like_mnist`` does those steps; ``shrink_as_drawn``
skips them, to show what the model would see without them.

Both take a grey image as a canvas holds it: uint8 (H, W), dark ink on light paper.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

FIELD = 28  # MNIST's image size
BOX = 20  # the size of the box the digit is scaled into
INK_THRESHOLD = 0.1  # ink fainter than this (0..1) does not count towards the bounding box


def ink_of(canvas: torch.Tensor) -> torch.Tensor:
    """uint8 (H, W), dark on light -> float (H, W), ink 1.0 on paper 0.0: white on black."""
    if canvas.dtype != torch.uint8 or canvas.dim() != 2:
        raise ValueError(
            f"expected a uint8 (H, W) grey image, got {canvas.dtype} {tuple(canvas.shape)}"
        )
    return 1.0 - canvas.float() / 255.0


def has_ink(canvas: torch.Tensor) -> bool:
    return bool((ink_of(canvas) > INK_THRESHOLD).any())


def _resize(ink: torch.Tensor, height: int, width: int) -> torch.Tensor:
    # Antialiased: shrinking a 200 px stroke to 20 px averages it instead of sampling it.
    return F.interpolate(ink[None, None], size=(height, width), mode="bilinear", antialias=True)[
        0, 0
    ]


def prepare_like_mnist(canvas: torch.Tensor) -> torch.Tensor:
    """A drawn digit as MNIST's were prepared: uint8 (28, 28), white on black. An empty
    canvas gives an empty (all black) image."""
    ink = ink_of(canvas)
    rows = (ink > INK_THRESHOLD).any(dim=1).nonzero().squeeze(1)
    cols = (ink > INK_THRESHOLD).any(dim=0).nonzero().squeeze(1)
    field = torch.zeros(FIELD, FIELD)
    if len(rows) == 0:
        return field.to(torch.uint8)
    # 1. Cut out the ink's bounding box.
    digit = ink[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    # 2. Scale it so that its longer side is 20 pixels, keeping the aspect ratio.
    scale = BOX / max(digit.shape)
    height = max(1, round(digit.shape[0] * scale))
    width = max(1, round(digit.shape[1] * scale))
    digit = _resize(digit, height, width).clamp(0.0, 1.0)
    # 3. Place it in the 28x28 field so that its centre of mass is at the field's centre.
    mass = digit.sum()
    centre_y = (digit.sum(dim=1) * torch.arange(height)).sum() / mass
    centre_x = (digit.sum(dim=0) * torch.arange(width)).sum() / mass
    top = round(FIELD / 2 - 0.5 - centre_y.item())
    left = round(FIELD / 2 - 0.5 - centre_x.item())
    # A lopsided digit may reach past an edge: keep the part inside the field.
    y0, x0 = max(0, top), max(0, left)
    y1, x1 = min(FIELD, top + height), min(FIELD, left + width)
    field[y0:y1, x0:x1] = digit[y0 - top : y1 - top, x0 - left : x1 - left]
    # 4. White on black, 0..255, as MNIST's files hold it (normalised later, as in training).
    return (field * 255).round().to(torch.uint8)


def shrink_as_drawn(canvas: torch.Tensor) -> torch.Tensor:
    """The whole canvas shrunk to 28x28, white on black, without MNIST's preparation."""
    field = _resize(ink_of(canvas), FIELD, FIELD).clamp(0.0, 1.0)
    return (field * 255).round().to(torch.uint8)
