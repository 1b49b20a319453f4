"""Text the user did not write, made fit to print: a file or folder name, a lock file another
process left, an error that quotes a checkpoint's keys, an adapter's name from its driver.

Such text may hold escape sequences that retitle the window or rewrite lines already shown,
carriage returns, or bidi overrides (U+202E) that show it reversed. ``printable`` shows each
of them as a visible escape, so that nothing steers the terminal and the reader sees that the
text is odd. Standard library only: ``python -m <package>.<command>`` imports the command line
before torch.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# Controls, format characters (bidi, zero-width), lone surrogates (undecodable file names) and
# the line and paragraph separators: none of them reaches the terminal as itself.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _text_of(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    try:
        return str(value)
    except ValueError:  # an int of more than 4,300 digits, read from a damaged file
        return "(a number too long to show)"


def printable(value: Any, limit: int | None = 400) -> str:
    """``value`` on one line that cannot steer a terminal: every hidden character escaped
    (``\\x1b``, ``\\n``, ``\\u202e``), and text longer than ``limit`` cut, with its length said.
    None is ""."""
    if value is None:
        return ""
    text = _text_of(value)
    total = len(text)
    cut = limit is not None and total > limit
    shown = "".join(
        char.encode("unicode_escape").decode("ascii")
        if unicodedata.category(char) in _HIDDEN
        else char
        for char in (text[:limit] if cut else text)
    )
    return f"{shown}... [cut: {total:,} characters]" if cut else shown


def clean_name(value: Any) -> str:
    """A device's name as its driver gave it, fit to print and compare: the NULs of a C string
    ('NVIDIA GeForce GTX 470\\x00' from torch_directml) and other controls dropped, runs of
    white space made one space."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = "" if value is None else str(value)
    kept = "".join(c for c in text if c.isspace() or unicodedata.category(c) != "Cc")
    return " ".join(kept.split())
