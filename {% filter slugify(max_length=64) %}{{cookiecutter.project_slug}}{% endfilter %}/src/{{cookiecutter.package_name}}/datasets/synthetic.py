"""Synthetic digits: strokes of 0-9 drawn with random handwriting-like distortions.

Not MNIST, but close enough in look (white strokes on black, 20 px tall in a 28x28 image) that
LeNet-5 learns them the same way: for offline machines, quick demos and tests. The distortions
are strong enough that one epoch of the default recipe reaches about 97 % on the held-out
test digits, not 99.6 %: a change to the model or the settings then shows in the numbers.
Each digit is a few polylines; every copy is rotated, slanted, scaled, shifted and wobbled,
then drawn with an anti-aliased pen whose width and ink vary. Vectorised: a batch of images
per digit at once.

Drawing 14,000 digits costs a few CPU-seconds, so ``digits(..., folder=<data-dir>)`` keeps them
in ``<data-dir>/synthetic/``, and reads them back on the next run. A kept file is trusted only
if it is whole (a hash of its images) and was made by this very code (a hash of this file and
the torch version): anything else is drawn again and replaced.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
from pathlib import Path

import torch

SEED = 0


def _arc(cx: float, cy: float, rx: float, ry: float, start: float, end: float, n: int = 12):
    """Points on an ellipse arc; angles in degrees, 0 = right, 90 = down (image y axis)."""
    return [
        (
            cx + rx * math.cos(math.radians(start + (end - start) * i / n)),
            cy + ry * math.sin(math.radians(start + (end - start) * i / n)),
        )
        for i in range(n + 1)
    ]


# Each digit: polylines in a unit box (x right, y down); drawn 20 px tall like MNIST digits.
_STROKES: dict[int, list[list[tuple[float, float]]]] = {
    0: [_arc(0.5, 0.5, 0.42, 0.5, 0, 360, 16)],
    1: [[(0.3, 0.18), (0.56, 0.0), (0.56, 1.0)]],
    2: [_arc(0.5, 0.3, 0.42, 0.3, 200, 400, 10) + [(0.05, 1.0), (0.98, 1.0)]],
    3: [_arc(0.5, 0.26, 0.38, 0.26, 200, 450, 10), _arc(0.5, 0.75, 0.44, 0.25, 270, 495, 10)],
    4: [[(0.72, 0.0), (0.02, 0.66), (1.0, 0.66)], [(0.74, 0.28), (0.74, 1.0)]],
    5: [[(0.92, 0.0), (0.22, 0.0), (0.17, 0.47)] + _arc(0.5, 0.7, 0.44, 0.3, 225, 495, 10)],
    6: [_arc(0.62, 0.5, 0.48, 0.5, 290, 180, 6) + _arc(0.5, 0.72, 0.4, 0.28, 180, 540, 12)],
    7: [[(0.0, 0.0), (1.0, 0.0), (0.35, 1.0)]],
    8: [_arc(0.5, 0.24, 0.34, 0.24, 90, 450, 12), _arc(0.5, 0.74, 0.42, 0.26, 270, 630, 12)],
    9: [_arc(0.5, 0.3, 0.42, 0.3, 0, 360, 12), [(0.92, 0.3), (0.85, 0.65), (0.72, 1.0)]],
}


def _segments(digit: int) -> torch.Tensor:
    """(S, 2, 2) segment end points of a digit, centred, in pixels (20 px tall, 14 wide)."""
    segs = []
    for line in _STROKES[digit]:
        for a, b in zip(line[:-1], line[1:]):
            segs.append(
                [
                    [(a[0] - 0.5) * 14.0, (a[1] - 0.5) * 20.0],
                    [(b[0] - 0.5) * 14.0, (b[1] - 0.5) * 20.0],
                ]
            )
    return torch.tensor(segs, dtype=torch.float32)


def _render(segs: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Draw ``segs`` (N, S, 2, 2), already distorted, as uint8 (N, 28, 28) images."""
    n = segs.shape[0]
    coords = torch.arange(28, dtype=torch.float32) - 13.5
    px = coords.repeat(28).reshape(1, 1, 784)  # pixel centres, row by row
    py = coords.repeat_interleave(28).reshape(1, 1, 784)
    ax, ay = segs[:, :, None, 0, 0], segs[:, :, None, 0, 1]  # (N, S, 1)
    abx, aby = segs[:, :, None, 1, 0] - ax, segs[:, :, None, 1, 1] - ay
    inv_len2 = 1.0 / (abx * abx + aby * aby).clamp_min(1e-6)
    # In-place arithmetic on full-size tensors: broadcasting both operands of an
    # out-of-place op is many times slower in older torch versions.
    size = (n, segs.shape[1], 784)
    apx = px.expand(size).contiguous().sub_(ax)  # (N, S, 784): pixel minus segment start
    apy = py.expand(size).contiguous().sub_(ay)
    # Distance from each pixel centre to the nearest point of each segment, then the minimum.
    t = apx.mul(abx).addcmul_(apy, aby).mul_(inv_len2).clamp_(0.0, 1.0)
    apx.addcmul_(t, abx, value=-1.0)
    apy.addcmul_(t, aby, value=-1.0)
    dist = apx.mul_(apx).addcmul_(apy, apy).amin(dim=1).sqrt_()  # (N, 784)
    half_width = torch.empty(n, 1).uniform_(0.9, 1.7, generator=g)
    ink = (half_width + 0.5 - dist).clamp_(0.0, 1.0)  # 1 px anti-aliased edge
    peak = torch.empty(n, 1).uniform_(200.0, 255.0, generator=g)
    return ink.mul_(peak).round_().to(torch.uint8).reshape(n, 28, 28)


def _distort(digit: int, n: int, g: torch.Generator) -> torch.Tensor:
    """``n`` randomly distorted copies of a digit's segments: (n, S, 2, 2) in pixel units."""
    segs = _segments(digit)
    points = segs.reshape(1, -1, 2).expand(n, -1, -1).clone()  # (n, 2S, 2)
    # Wobbly strokes: each end point moves a little (shared points move independently, which
    # also opens small gaps as in real handwriting).
    points += torch.randn(points.shape, generator=g) * 1.0

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return torch.empty(n).uniform_(lo, hi, generator=g)

    angle = uniform(-0.3, 0.3)  # about +-17 degrees
    shear = uniform(-0.4, 0.4)  # slant
    sx, sy = uniform(0.65, 1.15), uniform(0.7, 1.0)  # a little smaller: margins stay
    cos, sin = angle.cos(), angle.sin()
    # matrix = rotation @ shear @ scale
    m00, m01 = sx * cos, sy * (cos * shear - sin)
    m10, m11 = sx * sin, sy * (sin * shear + cos)
    matrix = torch.stack([torch.stack([m00, m01], -1), torch.stack([m10, m11], -1)], -2)
    shift = torch.stack([uniform(-2.2, 2.2), uniform(-2.2, 2.2)], -1)
    points = points @ matrix.transpose(1, 2) + shift[:, None, :]
    return points.reshape(n, -1, 2, 2)


@functools.lru_cache(maxsize=4)
def _cached(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 10
    labels = labels[torch.randperm(n, generator=g)]
    images = torch.zeros(n, 28, 28, dtype=torch.uint8)
    for digit in range(10):
        index = (labels == digit).nonzero().squeeze(1)
        if len(index) == 0:  # fewer than ten images: not every digit is drawn
            continue
        for chunk in index.split(64):
            images[chunk] = _render(_distort(digit, len(chunk), g), g)
    return images.unsqueeze(1), labels


def digits(
    n: int, seed: int = SEED, folder: Path | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` synthetic digit images like MNIST's: (uint8 images (n, 1, 28, 28), white on black;
    int64 labels 0-9, balanced), deterministic for a given ``seed``. The global random
    generator is left untouched (an explicit generator draws everything). With ``folder``,
    they are kept there once drawn, and read back from there (``_kept``)."""
    if n < 1:
        raise ValueError(f"n must be positive, not {n}")
    if folder is None:
        return _cached(int(n), int(seed))
    path = Path(folder) / "synthetic" / f"digits-{int(n)}-seed{int(seed)}.pt"
    kept = _kept(path, _maker(int(n), int(seed)))
    if kept is not None:
        return kept
    images, labels = _cached(int(n), int(seed))
    _keep(path, _maker(int(n), int(seed)), images, labels)
    return images, labels


def _maker(n: int, seed: int) -> str:
    """What made a kept file: this code, this torch, these arguments (a hash of them)."""
    code = Path(__file__).read_bytes()
    return hashlib.sha256(code + f"|{torch.__version__}|{n}|{seed}".encode()).hexdigest()


def _content(images: torch.Tensor, labels: torch.Tensor) -> str:
    return hashlib.sha256(images.numpy().tobytes() + labels.numpy().tobytes()).hexdigest()


def _kept(path: Path, maker: str) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The digits kept at ``path``, or None when there are none, or they are damaged, or
    were made by other code: they are then drawn again."""
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
        images, labels = state["images"], state["labels"]
        if state["maker"] == maker and state["content"] == _content(images, labels):
            return images, labels
    except Exception:  # missing, truncated, not ours: drawn again, never trusted
        pass
    return None


def _keep(path: Path, maker: str, images: torch.Tensor, labels: torch.Tensor) -> None:
    """Write the digits to ``path`` through a temporary file; a folder that cannot be
    written only means they are drawn again next time."""
    state = {"maker": maker, "content": _content(images, labels)}
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({**state, "images": images, "labels": labels}, str(temporary))
        os.replace(str(temporary), str(path))
    except (OSError, RuntimeError):  # read-only, full, or a path the system refuses
        with contextlib.suppress(OSError):
            temporary.unlink()
