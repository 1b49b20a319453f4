"""Text from a file the user did not write, or a name from a driver, made safe to print.

A participant's report, or a lock file left by another process, may hold escape sequences
that retitle the window, clear the screen, move the cursor to rewrite lines already shown,
write the clipboard (OSC 52) or hide text; carriage returns and backspaces that overwrite
what is shown; bidi overrides (U+202E) that show text reversed. ``printable`` shows every such
character as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``), so that nothing reaches the
terminal and the reader sees that the text is odd, and it cuts very long text. Standard
library only.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# The most characters of one field that are printed; the cut is marked where it happens.
FIELD_LIMIT = 400

# Controls (C0, C1, DEL), format characters (bidi overrides and isolates, zero-width
# characters), lone surrogates (undecodable file names) and the line/paragraph separators.
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\x1b": "\\x1b"}


def _escape(char: str) -> str:
    code = ord(char)
    if char in NAMED:
        return NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    try:
        return str(value)
    except ValueError:  # an int of more than 4,300 digits
        return "(a number too long to show)"


def printable(value: Any, limit: int | None = FIELD_LIMIT) -> str:
    """``value`` as one line that shows what it holds and cannot steer a terminal.

    Every control, format or separator character is shown escaped, line breaks and tabs
    included (no field can start a line of its own); text longer than ``limit`` characters
    is cut, with its length said. None is ""."""
    if value is None:
        return ""
    text = _as_text(value)
    total = len(text)
    cut = limit is not None and total > limit
    if cut:
        text = text[:limit]
    shown = "".join(
        _escape(char) if unicodedata.category(char) in ESCAPED_CATEGORIES else char for char in text
    )
    return f"{shown}... [cut: {total:,} characters]" if cut else shown


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
