"""The report files of a folder: which files count, how much of each is read, how it is decoded.

The files come from strangers, so every step has a limit: at most ``MAX_REPORT_BYTES`` of a
file are read, folders are searched ``MAX_DEPTH`` levels down without recursion, numbers
that no report holds end the reading of that file, and whatever is left out is said, with
the reason. Standard library only.
"""

from __future__ import annotations

import codecs
import json
import locale
import math
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..doctor import printable

MAX_REPORT_BYTES = 1_000_000  # a report is a few KB; the limit says so in the reason
MAX_DEPTH = 16  # folders below this level are not searched
MAX_DIGITS = 30  # no number in a report has more digits (a timing, an exit code)
MAX_ENTRIES = 500  # findings or operators: a report holds a few dozen
# The file that marks the sample reports (tests/instructor_tools/reports): they are kept
# out of a summary of a folder above them, such as `reports .` in the project folder.
SAMPLES_MARKER = "SAMPLES.md"
# Notepad saves "report.json" as "report.json.txt" unless told otherwise.
REPORT_SUFFIXES = (".json", ".json.txt")


class ReportError(ValueError):
    """A file that is not a readable verify_install --json report; the message says why."""


# ---------------------------------------------------------------------------- finding


@dataclass
class Found:
    files: list[tuple[Path, str]] = field(default_factory=list)  # (path, name to show)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)


def is_report_name(name: str) -> bool:
    return name.lower().endswith(REPORT_SUFFIXES)


def _not_searched(path: Path, name: str, depth: int) -> str:
    """Why the folder ``path`` is left out, or "" to search it."""
    if depth > MAX_DEPTH:
        return f"more than {MAX_DEPTH} levels deep: not searched"
    if name.startswith("."):
        return "a hidden folder: not searched"
    if (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir():
        return "a Python environment: not searched"
    if (path / SAMPLES_MARKER).is_file():
        return (
            "the project's sample reports, not participants': not counted "
            "(name this folder itself to summarise them)"
        )
    return ""


def find_reports(folder: Path) -> Found:
    """Every report file under ``folder`` (*.json and *.json.txt, in any case), and what was
    left out with the reason. Links to folders are not followed (no loops); a walk with its
    own stack, not recursion, so no depth of folders can crash it."""
    found = Found()
    others, examples = 0, []  # files that are not reports: a count and the first few names
    stack = [(folder, 0)]
    while stack:
        directory, depth = stack.pop()
        shown = printable(directory.relative_to(folder).as_posix()) + "/"
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            found.skipped.append((shown, f"cannot be read ({printable(error.strerror or error)})"))
            continue
        below = []
        for entry in entries:
            path = Path(entry.path)
            source = printable(path.relative_to(folder).as_posix())
            try:
                is_dir, is_link = entry.is_dir(), entry.is_symlink()
                is_file = entry.is_file()
            except OSError:
                is_dir = is_link = is_file = False
            if is_dir and is_link:
                found.skipped.append((source + "/", "a link to a folder: not followed"))
            elif is_dir:
                why = _not_searched(path, entry.name, depth + 1)
                if why:
                    found.skipped.append((source + "/", why))
                else:
                    below.append((path, depth + 1))
            elif entry.name.startswith("."):
                continue  # hidden files (.cookiecutter.json, .DS_Store) are nobody's report
            elif is_report_name(entry.name):
                if is_file:
                    found.files.append((path, source))
                else:
                    found.skipped.append((source, "not a regular file: not read"))
            elif entry.name != SAMPLES_MARKER:
                others += 1
                if len(examples) < 5:
                    examples.append(source)
        stack.extend(reversed(below))
    if others:
        named = ", ".join(examples) + (f" and {others - len(examples)} more" if others > 5 else "")
        what = f"{others} other file" + ("s" if others > 1 else "")
        found.skipped.append((what, f"not named *.json or *.json.txt: {named}"))
    found.files.sort(key=lambda item: item[1])
    return found


# ---------------------------------------------------------------------------- reading


def read_report_bytes(path: Path) -> bytes:
    """At most MAX_REPORT_BYTES of the file: a larger file is refused, not read whole."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_REPORT_BYTES + 1)
    except OSError as error:
        raise ReportError(f"cannot be read ({printable(error.strerror or error)})") from None
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(
            f"larger than {MAX_REPORT_BYTES // 1_000_000} MB, not read: a verify_install "
            "report is a few KB"
        )
    if not data.strip():
        raise ReportError("empty file")
    return data


def _in_gb2312(text: str) -> bool:
    """Simplified Chinese as Windows writes it: every character in the common GB2312 set.
    Western text decoded as GBK gives rare characters ('für' as 'f黵'), which are not."""
    for char in text:
        if ord(char) >= 0x80:
            try:
                char.encode("gb2312")
            except UnicodeEncodeError:
                return False
    return True


WESTERN_PUNCTUATION = frozenset("€‚„…–—‘’“”«»°§µ·¿¡©®™")


def _western(text: str) -> bool:
    """Western European text: letters with accents (ü, é, ß) and common punctuation only.
    Chinese text decoded as cp1252 gives symbols such as ´ × ¶ ±."""
    return all(
        ord(char) < 0x80
        or char in WESTERN_PUNCTUATION
        or unicodedata.category(char).startswith("L")
        for char in text
    )


def _any_text(text: str) -> bool:
    return True


def decode(data: bytes) -> str:
    """Text of a report, whatever console wrote it: UTF-8 (with or without a byte order mark),
    UTF-16 (Windows PowerShell 5's ``>``) or a Windows code page. Between the code pages the
    text decides: Simplified Chinese (GBK) when every character is a common one, Western
    (cp1252) when every character is a letter, else the code page of this computer."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    if len(data) >= 4 and data[1:4:2] == b"\0\0" and data[0:1] != b"\0":
        return data.decode("utf-16-le", errors="replace")  # UTF-16 without a BOM
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    candidates: list[tuple[str, Callable[[str], bool]]] = [
        ("gbk", _in_gb2312),
        ("cp1252", _western),
        (locale.getpreferredencoding(False), _any_text),
        ("gbk", _any_text),
        ("cp1252", _any_text),
    ]
    for encoding, plausible in candidates:
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
        if plausible(text):
            return text
    return data.decode("utf-8", errors="replace")


def _whole_number(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ReportError(f"holds a number of {len(text.lstrip('-')):,} digits: not a report")
    return int(text)


def _real_number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ReportError(f"holds a number too large for a float ({printable(text, 30)})")
    return value


def parse(text: str) -> dict[str, Any]:
    """The JSON object of a report; lines printed before it (a warning, a prompt) are skipped."""
    start = text.find("{")
    if start < 0:
        raise ReportError("no JSON in it: was verify_install run with --json?")
    decoder = json.JSONDecoder(parse_int=_whole_number, parse_float=_real_number)
    try:
        data, _end = decoder.raw_decode(text[start:])
    except json.JSONDecodeError as error:
        raise ReportError(
            f"not valid JSON ({error.msg} at line {error.lineno}): cut short?"
        ) from None
    except RecursionError:  # thousands of nested brackets: no report is built like that
        raise ReportError("JSON nested too deeply to be a verify_install report") from None
    if not isinstance(data, dict) or "verdict" not in data or "findings" not in data:
        raise ReportError("JSON, but not a verify_install --json report")
    return data
