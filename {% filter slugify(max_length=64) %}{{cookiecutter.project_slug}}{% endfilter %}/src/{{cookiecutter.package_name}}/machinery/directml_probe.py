"""DirectML's adapters, found with care.

Importing torch_directml calls into the graphics driver, and crashes of the whole process were
reported (microsoft/DirectML#503), so the first look at DirectML happens in a child process
with a time limit; only when that child succeeded is torch_directml imported here. That costs
one extra start of Python (a few seconds), only where torch-directml is installed. Among several
adapters a discrete GPU is preferred by name: adapter 0 is often the integrated one.

``probe_directml`` takes a fake module loader in tests.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import json
import platform
import re
import subprocess
import sys
from typing import Any, Callable

import torch

from . import this_project
from .discovery import (
    CHECK_FAILED,
    INIT_FAILED,
    LIBRARY_MISSING,
    LOAD_FAILED,
    NO_DEVICE,
    NOT_INSTALLED,
    SMOKE_FAILED,
    DeviceOption,
    Unavailable,
    one_line,
    smoke_test,
)
from .terminal_text import clean_name

DIRECTML_PIP = "torch-directml==0.2.5.dev240914"
TORCH_FOR_DIRECTML = "2.4.1"  # what torch-directml pins, for a project.json unread
DIRECTML_PROBE_TIMEOUT_S = 120.0
# Set to False to skip the child process (faster start, but a driver crash takes this process).
ISOLATE_DIRECTML_PROBE = True


# Integrated GPUs by name; anything matching _DISCRETE wins over these. Unknown names rank
# between the two, the software renderer last.
_DISCRETE = re.compile(
    r"geforce|quadro|tesla|titan|nvidia|rtx|gtx|radeon\s*(\(tm\)\s*)?(rx|pro|vii|r9|r7|hd)"
    r"|arc\s*(\(tm\)\s*)?[ab]\d{3}|firepro|instinct",
    re.IGNORECASE,
)
_INTEGRATED = re.compile(
    r"\buhd\b|\bhd graphics|iris|intel\(r\) graphics|arc\s*(\(tm\)\s*)?(graphics|\d{3}v)"
    r"|radeon\s*(\(tm\)\s*)?(graphics|vega|\d{3}m\b)|adreno|qualcomm|mali",
    re.IGNORECASE,
)
_SOFTWARE = re.compile(r"basic render|microsoft basic|warp", re.IGNORECASE)


def adapter_rank(name: str) -> int:
    """2 = discrete GPU, 1 = unknown, 0 = integrated, -1 = software renderer (by name)."""
    if _SOFTWARE.search(name):
        return -1
    if _DISCRETE.search(name):
        return 2
    if _INTEGRATED.search(name):
        return 0
    return 1


def _import_torch_directml() -> Any:
    return importlib.import_module("torch_directml")


def load_failure(detail: str) -> Unavailable:
    """torch_directml that raised on import: a missing Direct3D 12 library (libd3d12.so,
    libdxcore.so: Linux outside WSL2) or anything else."""
    missing = "libd3d12" in detail or "libdxcore" in detail
    code = LIBRARY_MISSING if missing else LOAD_FAILED
    return Unavailable("directml", f"torch_directml failed to load: {detail}", True, code, detail)


def init_failure(detail: str) -> Unavailable:
    reason = f"torch_directml.is_available() failed: {detail}"
    return Unavailable("directml", reason, True, INIT_FAILED, detail)


def not_available() -> Unavailable:
    reason = "torch_directml.is_available() is False: no DirectX 12 GPU or driver"
    return Unavailable("directml", reason, True, NO_DEVICE)


# The child process: import torch_directml, count and smoke-test the adapters, print JSON
# ("stage": where it failed, "detail": the error).
_CHILD_CODE = """
import json, sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # no stray torch_directml.py from cwd


def line(error):
    text = " ".join(str(error).split())
    return type(error).__name__ + (": " + text if text else "")


out = {"ok": False}
try:
    import torch_directml as dml  # first: a broken install fails before torch is loaded
    import torch
except BaseException as error:
    out["stage"], out["detail"] = "load", line(error)
else:
    try:
        available = dml.is_available()
        count = dml.device_count() if available else 0
    except BaseException as error:
        available, out["stage"], out["detail"] = False, "init", line(error)
    else:
        if not available:
            out["stage"] = "unavailable"
    if available:
        for i in range(count):  # a crash here is what the child is for; errors are per adapter
            try:
                x = torch.arange(1, 5, dtype=torch.float32).to(dml.device(i))
                float((x * 2.0).sum().cpu())
            except Exception:
                pass
        out = {"ok": True, "adapters": count}
print("DIRECTML-PROBE " + json.dumps(out))
"""


@functools.lru_cache(maxsize=1)
def _directml_child_verdict() -> Unavailable | None:
    """The child's verdict, once per process: the machine does not change while we run."""
    return _probe_directml_in_child()


def _probe_directml_in_child(timeout: float = DIRECTML_PROBE_TIMEOUT_S) -> Unavailable | None:
    """None when torch_directml imports and computes in a child process, else why not.
    The child gets a hard time limit: a hung driver never hangs us. Not ``subprocess.run``'s
    timeout: on Windows it kills the child, then waits without a limit for pipes that a
    grandchild may still hold open."""
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD_CODE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # No console window flashing up when a windowed program (PyCharm) runs us.
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
    except (OSError, ValueError) as error:
        detail = one_line(error)
        reason = f"could not start the DirectML check: {detail}"
        return Unavailable("directml", reason, True, CHECK_FAILED, detail)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
            child.communicate(timeout=2)  # a grandchild holding the pipes is not waited for
        reason = f"the DirectML check did not finish within {timeout:.0f} s (driver hang?)"
        return Unavailable("directml", reason, True, CHECK_FAILED)
    for line in out.decode("utf-8", errors="replace").splitlines():
        if line.startswith("DIRECTML-PROBE "):
            result = json.loads(line[len("DIRECTML-PROBE ") :])
            if result.get("ok"):
                return None
            stage, detail = result.get("stage"), str(result.get("detail", ""))
            if stage == "load":
                return load_failure(detail)
            return init_failure(detail) if stage == "init" else not_available()
    tail = " ".join(err.decode("utf-8", errors="replace").split())[-300:]
    reason = f"the DirectML check crashed (exit code {child.returncode})"
    reason += f": {tail}" if tail else ""
    return Unavailable("directml", reason, True, CHECK_FAILED, tail)


def directml_has_wheels(system: str | None = None, machine: str | None = None) -> bool:
    """Whether torch-directml publishes wheels for this machine: Windows x64 and Linux x86_64
    (WSL2 included), as the marker of the environment files says."""
    system = sys.platform if system is None else system
    machine = platform.machine() if machine is None else machine
    return system == "win32" or (system == "linux" and machine == "x86_64")


def directml_missing_reason(
    accelerator: str | None = None, torch_version: str | None = None
) -> str:
    """Why DirectML is absent, with the install only where following it is right: in a
    directml project, on a machine torch-directml has wheels for, and in an environment whose
    torch is the one torch-directml pins. Elsewhere the install would do harm: in a cpu or
    cuda project, or in a directml project's cpu environment, pip would replace the torch
    there with 2.4.1; on a Mac or an ARM machine pip finds none."""
    if accelerator is None:
        accelerator = this_project.accelerator()  # "" when unknown: nothing about installing
    if accelerator == "directml" and not directml_has_wheels():
        system = {"darwin": "macOS", "win32": "Windows"}.get(sys.platform, platform.system())
        return (
            "torch-directml is not installed: it has builds only for Windows x64 and Linux "
            f"x86_64, not for {system} {platform.machine()}"
        )
    if accelerator == "directml":
        pinned = this_project.directml_torch() or TORCH_FOR_DIRECTML
        installed = (torch_version or str(torch.__version__)).split("+")[0]
        if installed == pinned:
            return (
                "torch-directml is not installed "
                f"({this_project.pip_command(f'install {DIRECTML_PIP}')})"
            )
        # Another environment of the project (cpu, for one): DirectML has its own.
        return (
            f"torch-directml is not installed here (torch {installed}): the project's directml "
            "environment has it"
        )
    if accelerator:
        return f"torch-directml is not installed; a {accelerator} project does not use it"
    return "torch-directml is not installed"


def probe_directml(
    load: Callable[[], Any] | None = None,
    isolate: bool | None = None,
    smoke: Callable[[torch.device], None] = smoke_test,
) -> tuple[list[DeviceOption], list[Unavailable]]:
    """DirectML adapters that pass a smoke test, best first (discrete before integrated).

    ``load`` returns the torch_directml module (a fake in tests); ``isolate`` runs the first
    check in a child process (default: ISOLATE_DIRECTML_PROBE, and only with the real module).
    """
    if load is None:
        if importlib.util.find_spec("torch_directml") is None:
            reason = directml_missing_reason()
            return [], [Unavailable("directml", reason, False, NOT_INSTALLED)]
        load = _import_torch_directml
        if ISOLATE_DIRECTML_PROBE if isolate is None else isolate:
            failed = _directml_child_verdict()
            if failed is not None:
                return [], [failed]
    try:
        dml = load()
    except Exception as error:  # ImportError, OSError (libd3d12.so), RuntimeError, ...
        return [], [load_failure(one_line(error))]
    try:
        if not dml.is_available():
            return [], [not_available()]
        count = int(dml.device_count())
    except Exception as error:  # is_available() raises RuntimeError on some machines
        return [], [init_failure(one_line(error))]
    options, unavailable = [], []
    for index in range(count):
        try:
            name = clean_name(dml.device_name(index)) or f"DirectML adapter {index}"
        except Exception as error:
            detail = one_line(error)
            reason = f"directml:{index}: no name: {detail}"
            unavailable.append(Unavailable("directml", reason, True, SMOKE_FAILED, detail))
            continue
        try:
            device = dml.device(index)
            smoke(device)
        except Exception as error:
            detail = one_line(error)
            reason = f"directml:{index} ({name}) failed a smoke test: {detail}"
            unavailable.append(Unavailable("directml", reason, True, SMOKE_FAILED, detail))
            continue
        try:
            float64 = bool(dml.has_float64_support(index))
        except Exception:
            float64 = False
        details = {"float64": float64, "adapter_rank": adapter_rank(name)}
        options.append(DeviceOption("directml", index, name, device, details))
    if count == 0:
        reason = "torch_directml sees no DirectX 12 adapter"
        unavailable.append(Unavailable("directml", reason, True, NO_DEVICE))
    options.sort(key=lambda o: (-o.details["adapter_rank"], o.index))
    return options, unavailable
