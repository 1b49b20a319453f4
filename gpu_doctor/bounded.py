"""Run an external command or a function with a time limit: never raise, never hang.

Standard library only. Every query of the machine (PowerShell, nvidia-smi, DXGI) goes through
here, so a slow or broken tool becomes a sentence for a finding instead of a hang or a crash.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence


def describe_error(error: BaseException) -> str:
    """'OSError: libd3d12.so: cannot open shared object file' -- the type and the message."""
    text = str(error).strip().rstrip(".")  # callers end the sentence
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@dataclass(frozen=True)
class CommandResult:
    args: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    problem: str = ""  # empty when the command ran to its end; else what went wrong
    timed_out: bool = False  # it ran past its timeout and was ended

    @property
    def ok(self) -> bool:
        return not self.problem and self.returncode == 0


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _creation_flags() -> int:
    # Without this a console window flashes up when a windowed program (PyCharm) runs us.
    return getattr(subprocess, "CREATE_NO_WINDOW", 0) if sys.platform == "win32" else 0


def run_command(args: Sequence[str], timeout: float) -> CommandResult:
    """Run ``args`` without a shell, wait at most ``timeout`` seconds, capture its output.

    Not ``subprocess.run(timeout=...)``: on Windows, after the timeout it kills the child and
    then waits, without a limit, for pipes that a grandchild may still hold open."""
    argv = tuple(str(arg) for arg in args)
    name = argv[0] if argv else "?"
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            creationflags=_creation_flags(),
        )
    except FileNotFoundError:
        return CommandResult(argv, None, problem=f"{name} was not found")
    except (OSError, ValueError) as error:
        return CommandResult(
            argv, None, problem=f"{name} could not start ({describe_error(error)})"
        )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        # A grandchild may still hold the pipes: give up on them rather than wait.
        with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
            process.communicate(timeout=2)
        problem = f"{name} did not answer within {timeout:g} s"
        return CommandResult(argv, None, problem=problem, timed_out=True)
    except (OSError, ValueError) as error:
        process.kill()
        return CommandResult(argv, None, problem=f"{name} failed ({describe_error(error)})")
    return CommandResult(argv, process.returncode, _decode(out), _decode(err))


def call_with_timeout(function: Callable[[], Any], timeout: float) -> tuple[Any, str]:
    """``(value, "")``, or ``(None, problem)`` when ``function`` raised or ran out of time.

    The call runs in a daemon thread; one that is still running after ``timeout`` seconds is
    abandoned (it cannot be stopped from Python) and cannot keep the interpreter alive.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as error:  # reported to the caller, never raised in the thread
            box["error"] = error

    thread = threading.Thread(target=target, name="envcheck-query", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return None, f"did not finish within {timeout:g} s"
    if "error" in box:
        return None, describe_error(box["error"])
    return box.get("value"), ""
