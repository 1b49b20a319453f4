"""What device discovery answers: the usable devices, the unusable ones with a reason, and the
tiny smoke test every device must pass before it is offered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, Tuple

import torch

from .terminal_text import clean_name


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


# Why a backend cannot be used, as a code beside the reason's words. The doctor (gpu_doctor)
# chooses its advice by the code alone, so the words are free to change; docs/report.md lists
# the codes as the --json report's "unavailable" entries carry them.
NOT_INSTALLED = "not-installed"  # the backend's package is not installed (torch-directml)
NOT_BUILT = "not-built"  # this torch build has no support for it (a CPU-only torch: no CUDA)
NO_DEVICE = "no-device"  # the backend works but sees no GPU
NO_ROCM_DEVICE = "no-rocm-device"  # a ROCm build of torch works but sees no GPU
LIBRARY_MISSING = "library-missing"  # a system library it loads is missing (libd3d12.so)
LOAD_FAILED = "load-failed"  # its module failed to import for another reason
INIT_FAILED = "init-failed"  # it raised while starting or counting its GPUs (a broken driver)
SMOKE_FAILED = "smoke-failed"  # a device failed the smoke test (or could not be named)
CHECK_FAILED = "check-failed"  # the check itself failed, hung or crashed
REASON_CODES = (
    NOT_INSTALLED,
    NOT_BUILT,
    NO_DEVICE,
    NO_ROCM_DEVICE,
    LIBRARY_MISSING,
    LOAD_FAILED,
    INIT_FAILED,
    SMOKE_FAILED,
    CHECK_FAILED,
)


@dataclass
class Unavailable:
    """A backend (or one adapter of it) that cannot be used here, and why: ``reason`` in one
    line for people, ``code`` (REASON_CODES) for programs."""

    kind: str
    reason: str
    # False when the backend is simply absent from this install (a CPU-only torch has no
    # CUDA): worth listing in a doctor's report, not worth a warning at every start.
    installed: bool = True
    code: str = CHECK_FAILED
    # The error the backend raised, as it said it ("RuntimeError: HIP error: ..."); "" if none.
    detail: str = ""


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
