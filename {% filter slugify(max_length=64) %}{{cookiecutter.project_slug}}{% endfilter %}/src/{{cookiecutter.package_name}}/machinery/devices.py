"""Find the torch devices this machine can train on, and choose one.

Backends, in the order ``--device auto`` prefers them:

1. CUDA (NVIDIA; AMD ROCm builds of torch use the same ``torch.cuda`` API),
2. Intel XPU (Intel's torch builds, 2.5 and later),
3. Apple MPS,
4. DirectML (``torch_directml``; any DirectX 12 GPU on Windows or WSL2),
5. the CPU, always.

The native backends come first because on the same card DirectML is reported 2.2-2.8x slower
than CUDA, and torch-directml is frozen at torch 2.4.1. Among several DirectML adapters a
discrete GPU is preferred by name: adapter 0 is often the integrated one.

Every way a backend can fail (not installed, ``OSError`` for a missing ``libd3d12.so``, a
``RuntimeError`` from ``is_available``, a device that fails a tiny smoke operation) becomes an
``Unavailable`` entry with a one-line reason; ``discover()`` never raises. Because importing
torch_directml calls into the graphics driver, and crashes of the whole process were reported
(microsoft/DirectML#503), the first look at DirectML happens in a child process with a timeout;
only when that child succeeded is torch_directml imported here. That costs one extra start of
Python (a few seconds) and only on machines where torch-directml is installed.

Tests replace the probes: ``discover(probes=[...])`` takes any functions that return
``(options, unavailable)``, and ``probe_directml`` takes a fake module loader.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import platform
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, List, Sequence, Tuple

import torch

from ..doctor.bounded import run_command
from .cli import DEVICE_CHOICES, DEVICE_REQUEST, clean_name
from .project import load_project

KINDS = ("cuda", "xpu", "mps", "directml", "cpu")
DIRECTML_PIP = "torch-directml==0.2.5.dev240914"
DIRECTML_PROBE_TIMEOUT_S = 120.0
# Set to False to skip the child process (faster start, but a driver crash takes this process).
ISOLATE_DIRECTML_PROBE = True


@dataclass
class DeviceOption:
    """A device that passed a smoke test."""

    kind: str  # "directml" | "cuda" | "xpu" | "mps" | "cpu"
    index: int | None  # adapter / device index within its kind; None for mps and cpu
    name: str  # human-readable, e.g. the adapter name
    device: torch.device
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """'directml:1', 'cuda:0', 'mps', 'cpu': what --device accepts for this option."""
        return self.kind if self.index is None else f"{self.kind}:{self.index}"

    def describe(self) -> str:
        return f"{self.label} ({self.name})"


@dataclass
class Unavailable:
    """A backend (or one adapter of it) that cannot be used here, and why, in one line."""

    kind: str
    reason: str
    # False when the backend is simply absent from this install (a CPU-only torch has no
    # CUDA): worth listing in a doctor's report, not worth a warning at every start.
    installed: bool = True


@dataclass
class Discovery:
    options: list[DeviceOption]  # in the order "auto" prefers them
    unavailable: list[Unavailable]

    def by_kind(self, kind: str) -> list[DeviceOption]:
        return [o for o in self.options if o.kind == kind]

    def warnings(self) -> list[Unavailable]:
        """Backends that are installed but failed: these deserve a line at start-up."""
        return [u for u in self.unavailable if u.installed]


class DeviceNotAvailable(ValueError):
    """The requested device is unknown or not available; the message names what is."""


Probe = Callable[[], Tuple[List[DeviceOption], List[Unavailable]]]


def one_line(error: BaseException) -> str:
    """'OSError: libd3d12.so: cannot open shared object file ...' on one line."""
    text = clean_name(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def smoke_test(device: torch.device) -> None:
    """A tiny computation on ``device`` that must come back right; raises otherwise."""
    x = torch.arange(1, 5, dtype=torch.float32).to(device)
    value = float((x * 2.0).sum().cpu())
    if value != 20.0:
        raise RuntimeError(f"smoke test computed {value} instead of 20.0")


# --------------------------------------------------------------------------------------------
# Probes for the native backends and the CPU


def _each_gpu(
    kind: str, count: int, name_of: Callable[[int], str], details: dict[str, Any] | None = None
) -> tuple[list[DeviceOption], list[Unavailable]]:
    """The GPUs 0..count-1 of ``kind`` (cuda, xpu): each named, then smoke-tested; one that
    fails is unavailable with the reason, the others stay options."""
    options, unavailable = [], []
    for index in range(count):
        device = torch.device(kind, index)
        try:
            name = clean_name(name_of(index))
            smoke_test(device)
        except Exception as error:
            unavailable.append(
                Unavailable(kind, f"{kind}:{index} failed a smoke test: {one_line(error)}")
            )
            continue
        options.append(
            DeviceOption(kind, index, name, device, {**(details or {}), "float64": True})
        )
    return options, unavailable


def probe_cuda() -> tuple[list[DeviceOption], list[Unavailable]]:
    backend = "ROCm" if getattr(torch.version, "hip", None) else "CUDA"
    if not torch.backends.cuda.is_built() and backend == "CUDA":
        return [], [Unavailable("cuda", "this torch build has no CUDA or ROCm support", False)]
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception as error:  # a broken driver raises here
        return [], [Unavailable("cuda", f"{backend} failed to initialise: {one_line(error)}")]
    if count == 0:
        return [], [Unavailable("cuda", f"torch has {backend} support but sees no GPU", False)]
    return _each_gpu("cuda", count, torch.cuda.get_device_name, {"backend": backend})


def probe_xpu() -> tuple[list[DeviceOption], list[Unavailable]]:
    xpu = getattr(torch, "xpu", None)
    try:
        count = xpu.device_count() if xpu is not None and xpu.is_available() else 0
    except Exception as error:
        return [], [Unavailable("xpu", f"Intel XPU failed to initialise: {one_line(error)}")]
    if count == 0:
        return [], [
            Unavailable("xpu", "no Intel XPU (needs Intel's torch build, 2.5 or later)", False)
        ]
    get_name = getattr(xpu, "get_device_name", None) or (lambda index: f"Intel XPU {index}")
    return _each_gpu("xpu", count, get_name)


def probe_mps() -> tuple[list[DeviceOption], list[Unavailable]]:
    mps = getattr(torch.backends, "mps", None)
    try:
        available = mps is not None and mps.is_available()
    except Exception as error:
        return [], [Unavailable("mps", f"Apple MPS failed to initialise: {one_line(error)}")]
    if not available:
        return [], [Unavailable("mps", "no Apple MPS (Apple silicon Macs only)", False)]
    device = torch.device("mps")
    try:
        smoke_test(device)
    except Exception as error:
        return [], [Unavailable("mps", f"mps failed a smoke test: {one_line(error)}")]
    return [DeviceOption("mps", None, "Apple GPU (Metal)", device, {"float64": False})], []


def probe_cpu() -> tuple[list[DeviceOption], list[Unavailable]]:
    machine = clean_name(platform.machine()) or "unknown"
    name = f"CPU, {machine}, {torch.get_num_threads()} threads"
    return [DeviceOption("cpu", None, name, torch.device("cpu"), {"float64": True})], []


# --------------------------------------------------------------------------------------------
# DirectML

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


# The child process: import torch_directml, count and smoke-test the adapters, print JSON.
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
    out["reason"] = "torch_directml failed to load: " + line(error)
else:
    try:
        available = dml.is_available()
        count = dml.device_count() if available else 0
    except BaseException as error:
        available, out["reason"] = False, "torch_directml.is_available() failed: " + line(error)
    else:
        if not available:
            out["reason"] = "torch_directml.is_available() is False: no DirectX 12 GPU or driver"
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
def _directml_child_verdict() -> str | None:
    """The child's verdict, once per process: the machine does not change while we run."""
    return _probe_directml_in_child()


def _probe_directml_in_child(timeout: float = DIRECTML_PROBE_TIMEOUT_S) -> str | None:
    """None when torch_directml imports and computes in a child process, else the reason.
    The child gets a hard time limit (``run_command``): a hung driver never hangs us."""
    done = run_command([sys.executable, "-c", _CHILD_CODE], timeout)
    if done.timed_out:
        return f"the DirectML check did not finish within {timeout:.0f} s (driver hang?)"
    if done.returncode is None:
        return f"could not start the DirectML check: {done.problem}"
    for line in done.stdout.splitlines():
        if line.startswith("DIRECTML-PROBE "):
            result = json.loads(line[len("DIRECTML-PROBE ") :])
            return None if result.get("ok") else str(result.get("reason", "unknown reason"))
    tail = " ".join(done.stderr.split())[-300:]
    return f"the DirectML check crashed (exit code {done.returncode}){': ' + tail if tail else ''}"


def directml_missing_reason(accelerator: str | None = None) -> str:
    """Why DirectML is absent, with the install only where the project's stack pins it: in a
    cpu or cuda project torch-directml would replace the pinned torch with 2.4.1."""
    if accelerator is None:
        try:
            accelerator = load_project().accelerator
        except Exception:  # no readable project.json: say nothing about installing
            accelerator = ""
    if accelerator == "directml":
        return f"torch-directml is not installed (pip install {DIRECTML_PIP})"
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
            return [], [Unavailable("directml", directml_missing_reason(), False)]
        load = _import_torch_directml
        if ISOLATE_DIRECTML_PROBE if isolate is None else isolate:
            reason = _directml_child_verdict()
            if reason is not None:
                return [], [Unavailable("directml", reason)]
    try:
        dml = load()
    except Exception as error:  # ImportError, OSError (libd3d12.so), RuntimeError, ...
        return [], [Unavailable("directml", f"torch_directml failed to load: {one_line(error)}")]
    try:
        if not dml.is_available():
            return [], [
                Unavailable(
                    "directml",
                    "torch_directml.is_available() is False: no DirectX 12 GPU or driver",
                )
            ]
        count = int(dml.device_count())
    except Exception as error:  # is_available() raises RuntimeError on some machines
        return [], [
            Unavailable("directml", f"torch_directml.is_available() failed: {one_line(error)}")
        ]
    options, unavailable = [], []
    for index in range(count):
        try:
            name = clean_name(dml.device_name(index)) or f"DirectML adapter {index}"
        except Exception as error:
            unavailable.append(
                Unavailable("directml", f"directml:{index}: no name: {one_line(error)}")
            )
            continue
        try:
            device = dml.device(index)
            smoke(device)
        except Exception as error:
            unavailable.append(
                Unavailable(
                    "directml", f"directml:{index} ({name}) failed a smoke test: {one_line(error)}"
                )
            )
            continue
        try:
            float64 = bool(dml.has_float64_support(index))
        except Exception:
            float64 = False
        details = {"float64": float64, "adapter_rank": adapter_rank(name)}
        options.append(DeviceOption("directml", index, name, device, details))
    if count == 0:
        unavailable.append(Unavailable("directml", "torch_directml sees no DirectX 12 adapter"))
    options.sort(key=lambda o: (-o.details["adapter_rank"], o.index))
    return options, unavailable


# --------------------------------------------------------------------------------------------
# Discovery and choice


def default_probes() -> list[Probe]:
    # Looked up at call time, so tests may monkeypatch the module's probe functions.
    module = sys.modules[__name__]
    return [getattr(module, f"probe_{kind}") for kind in KINDS]


def discover(probes: Sequence[Probe] | None = None) -> Discovery:
    """All usable devices, in the order "auto" prefers them, and why the others are not.

    Never raises: a probe that fails unexpectedly becomes an Unavailable entry.
    """
    options: list[DeviceOption] = []
    unavailable: list[Unavailable] = []
    for probe in default_probes() if probes is None else probes:
        kind = getattr(probe, "__name__", "backend").replace("probe_", "")
        try:
            found, missing = probe()
        except Exception as error:
            found, missing = [], [Unavailable(kind, f"the {kind} check failed: {one_line(error)}")]
        options.extend(found)
        unavailable.extend(missing)
    if not any(o.kind == "cpu" for o in options):  # the CPU is always there
        options.extend(probe_cpu()[0])
    return Discovery(options, unavailable)


def _available_text(discovery: Discovery) -> str:
    return "Available: " + ", ".join(o.describe() for o in discovery.options) + "."


def choose(request: str = "auto", discovery: Discovery | None = None) -> DeviceOption:
    """The device for ``request``: "auto", "directml", "directml:1", "cuda", "cuda:0", "xpu",
    "mps" or "cpu" (also "dml" and "rocm" as aliases). Raises DeviceNotAvailable, naming the
    devices that are available, for an unknown or unavailable request."""
    discovery = discover() if discovery is None else discovery
    text = str(request).strip().lower()
    match = DEVICE_REQUEST.match(text)
    if match is None:
        raise DeviceNotAvailable(
            f"Unknown device {request!r}: use {DEVICE_CHOICES}. {_available_text(discovery)}"
        )
    kind = {"dml": "directml", "rocm": "cuda"}.get(match.group(1), match.group(1))
    index = None if match.group(2) is None else int(match.group(2))
    if kind == "auto":
        if index is not None:
            raise DeviceNotAvailable(f"'auto' takes no index. {_available_text(discovery)}")
        return discovery.options[0]
    candidates = discovery.by_kind(kind)
    if index is not None:
        candidates = [o for o in candidates if o.index == index]
    if candidates:
        return candidates[0]
    reasons = "; ".join(u.reason for u in discovery.unavailable if u.kind == kind)
    wanted = kind if index is None else f"{kind}:{index}"
    if index is not None and discovery.by_kind(kind):
        reasons = reasons or f"there is no {kind} device with index {index}"
    raise DeviceNotAvailable(
        f"Device {wanted!r} is not available{': ' + reasons if reasons else ''}. "
        f"{_available_text(discovery)}"
    )
