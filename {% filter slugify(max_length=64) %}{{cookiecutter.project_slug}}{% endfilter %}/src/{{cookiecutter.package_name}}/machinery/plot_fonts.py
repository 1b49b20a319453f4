"""Fonts for the plots' text: class and folder names in any script, drawn readably.

matplotlib's own font (DejaVu Sans) has Latin, Greek and Cyrillic, not Chinese: a class
named 手写 would be empty boxes and a "Glyph ... missing from font" warning per character.
matplotlib (3.6 and later) takes each character from the first font in ``font.family``
that has it, so the plots name DejaVu Sans first and then the fonts for other scripts that
this computer has. A character none of them has is written as its code (``\\u624b``)."""

from __future__ import annotations

import contextlib
import functools
from typing import Iterator

# Fonts with the scripts DejaVu Sans lacks, as Windows, macOS and Linux name them.
OTHER_SCRIPTS = (
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Yu Gothic",
    "Meiryo",
    "Malgun Gothic",
    "Noto Sans CJK KR",
    "Nirmala UI",
    "Segoe UI",
    "Noto Sans Devanagari",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Thai",
)
MAIN = "DejaVu Sans"  # matplotlib ships it: every computer has it


@functools.lru_cache(maxsize=None)
def families() -> tuple[str, ...]:
    """DejaVu Sans, then the fonts for other scripts that this computer has (none where
    matplotlib is older than 3.6: it would use only the first)."""
    import matplotlib
    from matplotlib import font_manager

    version = tuple(int(part) for part in matplotlib.__version__.split(".")[:2] if part.isdigit())
    if version < (3, 6):
        return (MAIN,)
    installed = {font.name for font in font_manager.fontManager.ttflist}
    return (MAIN, *(name for name in OTHER_SCRIPTS if name in installed))


@functools.lru_cache(maxsize=None)
def _characters(family: str) -> frozenset[int]:
    """The characters ``family``'s font has (empty if it cannot be read)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    try:
        path = font_manager.findfont(
            font_manager.FontProperties(family=family), fallback_to_default=False
        )
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


def drawable(character: str) -> bool:
    return character.isspace() or any(ord(character) in _characters(f) for f in families())


def readable(text: str) -> str:
    """``text`` with each character no plot font has written as its code: readable, and no
    warning from matplotlib."""
    return "".join(
        c if drawable(c) else (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        for c in text
    )


@contextlib.contextmanager
def in_use() -> Iterator[None]:
    """Text made (and drawn) inside takes each character from the first of ``families``
    that has it; matplotlib's settings are as they were afterwards."""
    import matplotlib

    with matplotlib.rc_context({"font.family": list(families())}):
        yield
