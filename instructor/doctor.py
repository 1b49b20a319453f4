"""The project's doctor (``gpu_doctor``), which the room summary prints with: its safe text for
what strangers' reports hold, and its command entry point (Ctrl+C, a stdout that is gone).

The doctor comes with the project as one file, ``doctor.pyz`` in the project folder (a project
generated before that has it as ``src/gpu_doctor``). ``find_doctor`` makes it importable; where
neither is there, the room still runs on the plain equivalents below, which escape more (every
character Python calls unprintable) and say once on stderr what they could not use.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

DOCTOR_FILE = "doctor.pyz"


def doctor_places(folder: Path) -> list[Path]:
    """Where a project in ``folder`` keeps its doctor, the one file first."""
    return [folder / DOCTOR_FILE, folder / "src"]


def find_doctor(folders: Sequence[Path] = ()) -> str:
    """Make ``import gpu_doctor`` work: "" when it does, else the sentence saying it cannot.
    ``folders`` default to the current one and the folder this tool's file is in."""
    try:
        import gpu_doctor  # noqa: F401  (already importable: a test, an installed project)

        return ""
    except ImportError:
        pass
    here = Path(__file__).resolve().parents[1]  # instructor.pyz itself when run from it
    folders = list(folders) or [Path.cwd(), here.parent if here.is_file() else here]
    for folder in folders:
        for place in doctor_places(folder):
            if (place / "gpu_doctor").is_dir() or (place.is_file() and place.suffix == ".pyz"):
                sys.path.insert(0, str(place))
                try:
                    import gpu_doctor  # noqa: F401

                    return ""
                except ImportError:
                    sys.path.remove(str(place))
    return (
        f"note: the project's doctor ({DOCTOR_FILE}) is not in {folders[0]}, so text from the "
        "reports is shown with every non-ASCII character escaped; run this in the project "
        "folder for names as written."
    )


MISSING = find_doctor()

if not MISSING:
    from gpu_doctor.commands import command, command_parser, write_out
    from gpu_doctor.safe_text import FIELD_LIMIT, printable
else:  # the plain equivalents: nothing from a report reaches the terminal unescaped
    FIELD_LIMIT = 400

    def printable(value: Any, limit: int | None = FIELD_LIMIT) -> str:
        if value is None:
            return ""
        try:
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        except ValueError:  # an int of more than 4,300 digits
            text = "(a number too long to show)"
        cut = limit is not None and len(text) > limit
        shown = text[:limit] if cut else text
        shown = "".join(c if c.isprintable() and c.isascii() else ascii(c)[1:-1] for c in shown)
        return f"{shown}... [cut: {len(text):,} characters]" if cut else shown

    def command_parser(
        module: str, description: str, epilog: str | None = None
    ) -> argparse.ArgumentParser:
        return argparse.ArgumentParser(
            prog=f"python -m {module}", description=description, epilog=epilog
        )

    def write_out(text: str, end: str = "\n") -> bool:
        try:
            sys.stdout.write(text + end)
            sys.stdout.flush()
        except BrokenPipeError:  # a reader that left early: the output ends quietly
            return False
        return True

    def command(main: Callable[[Sequence[str] | None], int]) -> Callable[..., int]:
        @functools.wraps(main)
        def entry(argv: Sequence[str] | None = None) -> int:
            print(MISSING, file=sys.stderr)
            try:
                return main(argv)
            except KeyboardInterrupt:
                print("Interrupted.", file=sys.stderr)
                return 130

        return entry
