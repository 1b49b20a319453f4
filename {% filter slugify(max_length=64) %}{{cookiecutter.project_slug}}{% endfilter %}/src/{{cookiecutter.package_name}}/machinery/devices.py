"""Find the torch devices this machine can train on, and choose one.

Backends, in the order ``--device auto`` prefers them:

1. CUDA (NVIDIA; AMD ROCm builds of torch use the same ``torch.cuda`` API),
2. Intel XPU (Intel's torch builds, 2.5 and later),
3. Apple MPS,
4. DirectML (``torch_directml``; any DirectX 12 GPU on Windows or WSL2),
5. the CPU, always.

The native backends come first because on the same card DirectML is reported 2.2-2.8x slower
than CUDA, and torch-directml is frozen at torch 2.4.1. Device 0 is often an integrated GPU, so
a discrete DirectML adapter wins by name, a ROCm GPU by target (``best_rocm_gpu_first``).

Every way a backend can fail (not installed, ``OSError`` for a missing ``libd3d12.so``, a
``RuntimeError`` from ``is_available``, a device that fails a tiny smoke operation) becomes an
``Unavailable`` entry with a one-line reason; ``discover()`` never raises. DirectML's own probe
is in ``directml_probe.py``; ``discover(probes=[...])`` takes any probes (tests use fakes).
"""

from __future__ import annotations

import platform
import sys
from typing import Any, Callable, Sequence

import torch

from . import this_project
from .cli import DEVICE_CHOICES, DEVICE_REQUEST
from .directml_probe import directml_missing_reason, probe_directml
from .discovery import (
    CHECK_FAILED,
    INIT_FAILED,
    NO_DEVICE,
    NO_ROCM_DEVICE,
    NOT_BUILT,
    SMOKE_FAILED,
    DeviceNotAvailable,
    DeviceOption,
    Discovery,
    Probe,
    Unavailable,
    one_line,
    smoke_test,
)
from .terminal_text import clean_name

__all__ = [
    "DeviceNotAvailable",
    "DeviceOption",
    "Discovery",
    "Unavailable",
    "choose",
    "directml_missing_reason",
    "discover",
    "probe_cpu",
    "probe_cuda",
    "probe_directml",
    "probe_mps",
    "probe_xpu",
    "smoke_test",
]

KINDS = ("cuda", "xpu", "mps", "directml", "cpu")


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
            detail = one_line(error)
            reason = f"{kind}:{index} failed a smoke test: {detail}"
            unavailable.append(Unavailable(kind, reason, True, SMOKE_FAILED, detail))
            continue
        options.append(
            DeviceOption(kind, index, name, device, {**(details or {}), "float64": True})
        )
    return options, unavailable


def best_rocm_gpu_first(
    options: list[DeviceOption], properties: Callable[[int], Any]
) -> list[DeviceOption]:
    """torch's GPUs with the one verify_install recommends first: on ROCm an integrated GPU can
    be ``cuda:0`` before the discrete one (ROCm/TheRock #5543), so a gfx target the pinned build
    runs comes first, then a discrete GPU, then torch's order. ``properties``:
    torch.cuda.get_device_properties, whose ``gcnArchName`` (ROCm builds only) and
    ``is_integrated`` decide."""
    runs = this_project.rocm_gfx_targets()

    def rank(position: int) -> tuple[bool, bool, int]:
        try:
            found = properties(options[position].index)
            target = str(getattr(found, "gcnArchName", "") or "").split(":", 1)[0].strip()
            integrated = bool(getattr(found, "is_integrated", False))
        except Exception:  # a device whose properties fail keeps its place, after the rest
            return (True, True, position)
        return (target not in runs, integrated, position)  # "gfx1100:xnack-" runs as gfx1100

    if len(options) < 2:
        return options
    return [options[position] for position in sorted(range(len(options)), key=rank)]


def probe_cuda() -> tuple[list[DeviceOption], list[Unavailable]]:
    backend = "ROCm" if getattr(torch.version, "hip", None) else "CUDA"
    if not torch.backends.cuda.is_built() and backend == "CUDA":
        reason = "this torch build has no CUDA or ROCm support"
        return [], [Unavailable("cuda", reason, False, NOT_BUILT)]
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception as error:  # a broken driver raises here
        detail = one_line(error)
        reason = f"{backend} failed to initialise: {detail}"
        return [], [Unavailable("cuda", reason, True, INIT_FAILED, detail)]
    if count == 0:
        reason = f"torch has {backend} support but sees no GPU"
        code = NO_ROCM_DEVICE if backend == "ROCm" else NO_DEVICE
        return [], [Unavailable("cuda", reason, False, code)]
    found = _each_gpu("cuda", count, torch.cuda.get_device_name, {"backend": backend})
    return best_rocm_gpu_first(found[0], torch.cuda.get_device_properties), found[1]


def probe_xpu() -> tuple[list[DeviceOption], list[Unavailable]]:
    xpu = getattr(torch, "xpu", None)
    try:
        count = xpu.device_count() if xpu is not None and xpu.is_available() else 0
    except Exception as error:
        detail = one_line(error)
        reason = f"Intel XPU failed to initialise: {detail}"
        return [], [Unavailable("xpu", reason, True, INIT_FAILED, detail)]
    if count == 0:
        reason = "no Intel XPU (needs Intel's torch build, 2.5 or later)"
        return [], [Unavailable("xpu", reason, False, NO_DEVICE)]
    get_name = getattr(xpu, "get_device_name", None) or (lambda index: f"Intel XPU {index}")
    return _each_gpu("xpu", count, get_name)


def probe_mps() -> tuple[list[DeviceOption], list[Unavailable]]:
    mps = getattr(torch.backends, "mps", None)
    try:
        available = mps is not None and mps.is_available()
    except Exception as error:
        detail = one_line(error)
        reason = f"Apple MPS failed to initialise: {detail}"
        return [], [Unavailable("mps", reason, True, INIT_FAILED, detail)]
    if not available:
        return [], [Unavailable("mps", "no Apple MPS (Apple silicon Macs only)", False, NO_DEVICE)]
    device = torch.device("mps")
    try:
        smoke_test(device)
    except Exception as error:
        detail = one_line(error)
        reason = f"mps failed a smoke test: {detail}"
        return [], [Unavailable("mps", reason, True, SMOKE_FAILED, detail)]
    return [DeviceOption("mps", None, "Apple GPU (Metal)", device, {"float64": False})], []


def probe_cpu() -> tuple[list[DeviceOption], list[Unavailable]]:
    machine = clean_name(platform.machine()) or "unknown"
    name = f"CPU, {machine}, {torch.get_num_threads()} threads"
    return [DeviceOption("cpu", None, name, torch.device("cpu"), {"float64": True})], []


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
            detail = one_line(error)
            reason = f"the {kind} check failed: {detail}"
            found, missing = [], [Unavailable(kind, reason, True, CHECK_FAILED, detail)]
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
    if kind == "cpu" and index == 0:  # torch's name for the one CPU, torch.device("cpu:0")
        index = None
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
