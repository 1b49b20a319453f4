"""The command line of the doctor's commands: the parser that states its defaults, --device in
the project's wording (tests/test_cli.py holds the two alike), and each command's entry point
(Ctrl+C, a stdout that is gone, a console that cannot show a character). Standard library
only: the project generator's hook imports the doctor before any environment exists."""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import json
import os
import re
import signal
import sys
from typing import Any, Callable, Sequence

EXIT_INTERRUPTED = 130  # Ctrl+C, as a shell reports a process that SIGINT ended
EXIT_OUTPUT_FAILED = 74  # stdout cannot be written (a full disk): sysexits.h's EX_IOERR


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """States defaults, except where the help text explains a None default itself; a text laid
    out by hand (lines of its own, a table of exit codes) is kept as it is."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or isinstance(action.default, bool):
            return action.help or ""
        return super()._get_help_string(action)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def command_parser(
    module: str, description: str, epilog: str | None = None
) -> argparse.ArgumentParser:
    """The parser of ``python -m <module>``: every command states its defaults the same way."""
    return argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=description,
        epilog=epilog,
        formatter_class=HelpFormatter,
    )


# What --device accepts ("dml" and "rocm" are aliases of directml and cuda).
DEVICE_REQUEST = re.compile(r"^(auto|directml|dml|cuda|rocm|xpu|mps|cpu)(?::(\d+))?$")
DEVICE_CHOICES = "auto, directml, directml:N, cuda, cuda:N, xpu, xpu:N, mps or cpu"


def device_request(text: str) -> str:
    """--device checked for its form while parsing (verify_install); whether the device exists
    is checked when it is chosen."""
    if not DEVICE_REQUEST.match(text.strip().lower()):
        raise argparse.ArgumentTypeError(f"unknown device {text!r}: use {DEVICE_CHOICES}")
    return text


def add_device_option(
    parser: argparse.ArgumentParser, purpose: str, note: str = "", several: bool = False
) -> argparse.Action:
    """--device: the device to ``purpose`` ("train on"); ``note`` adds what holds for this
    command only; ``several``: the option may be repeated, and without it every available
    device is used (benchmark). The name is checked when the device is chosen
    (``devices.choose``), where the message can name the devices this machine has."""
    what = f"{purpose} ({note})" if note else purpose
    text = (
        f"the device to {what}: auto (the best one found), directml, cuda (also ROCm), xpu, mps "
        "or cpu; one GPU of several: directml:N, cuda:N or xpu:N, counted from 0"
    )
    if several:
        text += "; repeat --device for several (default: every available device)"
    return parser.add_argument(
        "--device",
        default=None if several else "auto",
        action="append" if several else "store",
        help=text,
    )


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


class OutputFailed(Exception):
    """stdout is there but cannot take the output (a full disk, an I/O error)."""


_stdout_gone = False


def stdout_gone() -> bool:
    """Whether nobody reads stdout any more: closed from the start, or a reader that left."""
    return _stdout_gone or sys.stdout is None


def _reader_left(error: Exception) -> bool:
    # A closed pipe: BrokenPipeError, or EINVAL on Windows; ValueError: a closed file object.
    return isinstance(error, (BrokenPipeError, ValueError)) or error.errno == errno.EINVAL


def silence_stdout() -> None:
    """Point stdout at nothing, so that later output and the flush at exit cannot fail."""
    global _stdout_gone
    _stdout_gone = True
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def write_out(text: str, end: str = "\n") -> bool:
    """Print to stdout; False when nobody reads it (closed, or ``| head`` stopped early): the
    output ends quietly. A stdout that fails otherwise (``> /dev/full``) raises OutputFailed."""
    if stdout_gone():
        return False
    try:
        sys.stdout.write(text + end)
        sys.stdout.flush()
    except (OSError, ValueError) as error:
        silence_stdout()
        if not _reader_left(error):
            reason = getattr(error, "strerror", None) or str(error)
            raise OutputFailed(f"the output could not be written to stdout ({reason})") from error
        return False
    return True


def write_err(text: str) -> None:
    """A message on stderr; nothing, never an exception, where stderr is closed or broken."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def _close_gaps() -> None:
    """Give a closed stdin, stdout or stderr (``>&-``) the null device: otherwise the next file
    opened takes descriptor 1 or 2, and stray output would land in it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                opened = os.open(os.devnull, os.O_RDWR)
                if opened != fd:
                    os.dup2(opened, fd)
                    os.close(opened)


def _interrupted_while_loading(signum: int, frame: Any) -> None:
    sys.stderr.write("Interrupted.\n")
    raise SystemExit(EXIT_INTERRUPTED)


def quiet_ctrl_c_while_loading() -> None:
    """Ctrl+C before the command starts (torch takes seconds to load, more on Windows) ends
    it with "Interrupted.", not with the traceback of an import; ``command`` gives Ctrl+C
    back to the command when it starts. Where Ctrl+C is ignored (a background job), it stays
    ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_loading)


def command(main: Callable[[Sequence[str] | None], int]) -> Callable[..., int]:
    """A command's entry point around ``main(argv)``, whose output goes through ``write_out``:
    a console that cannot show a character shows a replacement (``safe_console``); Ctrl+C
    exits 130 with one line; a stdout that cannot be written exits 74 with one line on stderr;
    a reader that left early changes nothing. Never a traceback for either."""

    @functools.wraps(main)
    def entry(argv: Sequence[str] | None = None) -> int:
        if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # the command's own now
        _close_gaps()
        safe_console()
        try:
            code = main(argv)
            write_out("", end="")  # flushes now, where a failure can still be reported
        except KeyboardInterrupt:
            write_err("Interrupted.")
            return EXIT_INTERRUPTED
        except OutputFailed as error:
            write_err(f"error: {error}.")
            return EXIT_OUTPUT_FAILED
        return code

    return entry


def safe_console() -> None:
    """A Windows console may not encode every character of a project or adapter name:
    replace what it cannot show instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="replace")
