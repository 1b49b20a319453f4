"""How each command of the project starts and ends, whatever happens to its console.

Ctrl+C says "Interrupted." and exits 130, also while torch is still loading; a stdout nobody
reads any more (closed, or ``| head`` that stopped early) ends the output quietly; one that
cannot be written (``> /dev/full``) exits 74 with one sentence; a console that cannot show a
character shows a replacement. Never a traceback. Standard library only: the package imports
this module before torch, to make Ctrl+C while torch loads quiet.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
from typing import Any, Callable, Sequence

EXIT_INTERRUPTED = 130  # Ctrl+C, as a shell reports a process that SIGINT ended
EXIT_OUTPUT_FAILED = 74  # stdout cannot be written (a full disk): sysexits.h's EX_IOERR


class OutputFailed(Exception):
    """stdout is there but cannot take the output (a full disk, an I/O error)."""


_stdout_gone = False


def stdout_gone() -> bool:
    """Whether nobody reads stdout any more: closed from the start, or a reader that left."""
    return _stdout_gone or sys.stdout is None


def silence_stdout() -> None:
    """Point stdout at nothing, so that later output and the flush at exit cannot fail."""
    global _stdout_gone
    _stdout_gone = True
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def write_out(text: str, end: str = "\n") -> bool:
    """Print to stdout; False when nobody reads it any more. A stdout that fails otherwise
    raises OutputFailed, which ``command`` turns into exit code 74."""
    if stdout_gone():
        return False
    try:
        sys.stdout.write(text + end)
        sys.stdout.flush()
    except (OSError, ValueError) as error:
        silence_stdout()
        # A reader that left: a broken pipe, EINVAL on Windows, or a closed file object.
        left = isinstance(error, (BrokenPipeError, ValueError)) or error.errno == errno.EINVAL
        if not left:
            reason = getattr(error, "strerror", None) or str(error)
            raise OutputFailed(f"the output could not be written to stdout ({reason})") from error
        return False
    return True


def write_err(text: str) -> None:
    """A message on stderr; nothing, never an exception, where stderr is closed or broken."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def _interrupted_while_loading(signum: int, frame: Any) -> None:
    sys.stderr.write("Interrupted.\n")
    raise SystemExit(EXIT_INTERRUPTED)


def quiet_ctrl_c_while_loading() -> None:
    """Ctrl+C while the command still loads (torch takes seconds, more on Windows) ends it
    with "Interrupted.", not the traceback of an import. Where Ctrl+C is ignored (a background
    job), it stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_loading)


def give_ctrl_c_back() -> None:
    """From here on Ctrl+C raises KeyboardInterrupt again, for the command to handle."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _fill_closed_descriptors() -> None:
    """Give a closed stdin, stdout or stderr (``>&-``) the null device: otherwise the next
    file opened takes descriptor 1 or 2, and stray output would land in it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                opened = os.open(os.devnull, os.O_RDWR)
                if opened != fd:
                    os.dup2(opened, fd)
                    os.close(opened)


def _show_replacements() -> None:
    """A Windows console may not encode every character of a folder or adapter name."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="replace")


def command(main: Callable[[Sequence[str] | None], int]) -> Callable[..., int]:
    """A command's entry point around ``main(argv)``, whose output goes through ``write_out``:
    Ctrl+C exits 130 with one line, a stdout that cannot be written exits 74 with one line on
    stderr, a reader that left early changes nothing."""

    @functools.wraps(main)
    def entry(argv: Sequence[str] | None = None) -> int:
        give_ctrl_c_back()
        _fill_closed_descriptors()
        _show_replacements()
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
