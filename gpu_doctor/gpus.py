"""What a GPU is, whatever found it: vendor, integrated or discrete, a one-line description.

Standard library only. ``dxgi`` (DXGI, PowerShell) and ``sysfs`` (/sys/class/drm,
nvidia-smi, rocm-smi) both return a ``GpuScan`` of ``Gpu`` records; the rules (``rules/``) decide.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from .safe_text import clean_name

AMD, INTEL, NVIDIA, QUALCOMM, MICROSOFT = 0x1002, 0x8086, 0x10DE, 0x5143, 0x1414

VENDORS = {
    AMD: "AMD",
    0x1022: "AMD",
    INTEL: "Intel",
    NVIDIA: "NVIDIA",
    QUALCOMM: "Qualcomm",
    MICROSOFT: "Microsoft",
    0x106B: "Apple",
    # Display controllers that draw a console but do not compute: servers and virtual machines.
    0x1A03: "ASPEED",
    0x102B: "Matrox",
    0x15AD: "VMware",
    0x1AF4: "virtio",
    0x1234: "QEMU",
    0x1B36: "Red Hat QXL",
    0x80EE: "VirtualBox",
}
DISPLAY_ONLY_VENDORS = {0x1A03, 0x102B, 0x15AD, 0x1AF4, 0x1234, 0x1B36, 0x80EE}

DISCRETE, INTEGRATED, SOFTWARE, DISPLAY_ONLY, UNKNOWN = (
    "discrete",
    "integrated",
    "software",
    "display only",
    "unknown",
)

_INTEL_DISCRETE = re.compile(r"\barc\b.*\b[ab]\d{2,3}[a-z]*\b|iris xe max|data center gpu")


def vendor_name(vendor_id: int | None) -> str:
    if vendor_id is None:
        return "unknown vendor"
    return VENDORS.get(vendor_id, f"vendor 0x{vendor_id:04x}")


@dataclass(frozen=True)
class Gpu:
    name: str
    vendor_id: int | None = None
    device_id: int | None = None
    dedicated_memory: int | None = None  # bytes; None when the source cannot tell
    driver_version: str = ""
    driver_date: datetime.date | None = None
    driver: str = ""  # the Linux kernel driver (amdgpu, i915, xe, nvidia, nouveau, ...)
    software: bool = False  # a software adapter such as "Microsoft Basic Render Driver"
    source: str = ""  # DXGI, PowerShell, /sys/class/drm, nvidia-smi, rocm-smi
    memory_capped: bool = False  # Win32_VideoController.AdapterRAM stops at 4 GB
    gfx_target: str = ""  # AMD: the ISA ROCm compiles for ("gfx1031"), from KFD or HIP
    target_source: str = ""  # Windows: "HIP runtime" or "PCI id table" (amd_windows.py)
    render_node: str = ""  # Linux: "/dev/dri/renderD128", which ROCm opens with /dev/kfd
    compute_capability: str = ""  # NVIDIA: "6.1", which CUDA builds of torch run it on
    capability_source: str = ""  # nvidia-smi, model name (nvidia.py's table) or torch

    def __post_init__(self) -> None:
        # Every source's text passes here: DXGI, the registry, PowerShell, sysfs, nvidia-smi.
        for name in ("name", "driver_version", "driver"):
            object.__setattr__(self, name, clean_name(getattr(self, name)))

    @property
    def vendor(self) -> str:
        return vendor_name(self.vendor_id)

    @property
    def kind(self) -> str:
        return classify(self)

    def describe(self) -> str:
        """'Radeon RX 6700 XT (AMD, discrete, 12.0 GB, driver 31.0.22011.4008 of 2023-10-10)'."""
        parts = [self.vendor, self.kind]
        if self.dedicated_memory:
            size = f"{self.dedicated_memory / 2**30:.1f} GB"
            parts.append(f"at least {size}" if self.memory_capped else size)
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.driver_version:
            dated = f" of {self.driver_date.isoformat()}" if self.driver_date else ""
            label = "version" if self.driver else "driver"
            parts.append(f"{label} {self.driver_version}{dated}")
        if self.gfx_target:
            source = f" from the {self.target_source}" if self.target_source else ""
            parts.append(f"{self.gfx_target}{source}")
        if self.compute_capability:
            named = " by its model name" if self.capability_source == "model name" else ""
            parts.append(f"compute capability {self.compute_capability}{named}")
        return f"{self.name} ({', '.join(parts)})"

    def identify(self) -> str:
        """'Intel(R) Arc(TM) Graphics [8086:7d55] (driver 32.0.101.6129)': name, ids, driver."""
        ids = ""
        if self.vendor_id is not None:
            device = "?" if self.device_id is None else f"{self.device_id:04x}"
            ids = f" [{self.vendor_id:04x}:{device}]"
        drivers = [part for part in (self.driver, self.driver_version) if part]
        driver = f" (driver {' '.join(drivers)})" if drivers else ""
        return f"{self.name}{ids}{driver}"

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "vendor_id": None if self.vendor_id is None else f"0x{self.vendor_id:04x}",
            "device_id": None if self.device_id is None else f"0x{self.device_id:04x}",
            "kind": self.kind,
            "dedicated_memory": self.dedicated_memory,
            "driver": self.driver,
            "driver_version": self.driver_version,
            "driver_date": self.driver_date.isoformat() if self.driver_date else None,
            "source": self.source,
            "gfx_target": self.gfx_target,
            "gfx_target_source": self.target_source,
            "compute_capability": self.compute_capability,
            "compute_capability_source": self.capability_source,
        }


@dataclass
class GpuScan:
    """The GPUs one source found, and what went wrong on the way (for a warning)."""

    gpus: list[Gpu] = field(default_factory=list)
    source: str = ""
    problems: list[str] = field(default_factory=list)
    denied: list = field(default_factory=list)  # amd_linux.Access: device files ROCm cannot open

    @property
    def hardware(self) -> list[Gpu]:
        return [gpu for gpu in self.gpus if gpu.kind not in (SOFTWARE, DISPLAY_ONLY)]

    @property
    def software(self) -> list[Gpu]:
        return [gpu for gpu in self.gpus if gpu.kind == SOFTWARE]


# Intel GPUs that PyTorch's XPU build validates (get_start_xpu): Arc A-series (Alchemist),
# Arc B-series (Battlemage) and the Arc graphics of Core Ultra (Meteor Lake, Arrow Lake,
# Lunar Lake, Panther Lake). Matched by name ("Intel(R) Arc(TM) ...") or by PCI device id,
# since some Core Ultra laptops report only "Intel(R) Graphics".
_ARC_NAME = re.compile(r"\barc\b", re.IGNORECASE)
_ARC_DEVICE_IDS = (
    (0x5690, 0x56CF),  # Arc A-series (DG2, Alchemist), desktop and laptop
    (0xE200, 0xE2FF),  # Arc B-series (Battlemage)
    (0x7D40, 0x7DFF),  # Core Ultra series 1 and 2 (Meteor Lake, Arrow Lake)
    (0x6420, 0x6420),  # Core Ultra 200V (Lunar Lake)
    (0x64A0, 0x64B0),  # Core Ultra 200V (Lunar Lake)
    (0xB080, 0xB0FF),  # Core Ultra series 3 (Panther Lake)
)


def is_intel_arc(gpu: Gpu) -> bool:
    """Intel Arc or Core Ultra graphics: the GPUs PyTorch's XPU build supports."""
    if gpu.vendor_id != INTEL:
        return False
    if _ARC_NAME.search(gpu.name):
        return True
    device = gpu.device_id
    return device is not None and any(low <= device <= high for low, high in _ARC_DEVICE_IDS)


def classify(gpu: Gpu) -> str:
    """Integrated or discrete, from the vendor and the marketing name (DXGI has no flag).

    AMD integrated GPUs are named "... Graphics" (Radeon(TM) Graphics, Radeon 780M Graphics,
    Radeon RX Vega 11 Graphics); AMD's discrete names never end so. Intel's discrete GPUs are
    Arc A/B models (Arc A770, Arc B580); "Intel Arc Graphics" and "Arc 140V" are integrated.
    """
    name = gpu.name.strip().lower()
    if gpu.software or gpu.vendor_id == MICROSOFT or name.startswith("microsoft basic"):
        return SOFTWARE
    if gpu.vendor_id in DISPLAY_ONLY_VENDORS:
        return DISPLAY_ONLY
    if gpu.vendor_id == NVIDIA:
        return DISCRETE
    if gpu.vendor_id == QUALCOMM:
        return INTEGRATED
    if gpu.vendor_id == INTEL:
        discrete = _INTEL_DISCRETE.search(name) or _intel_discrete_id(gpu.device_id)
        return DISCRETE if discrete else INTEGRATED
    if gpu.vendor_id in (AMD, 0x1022):
        if not name or name.startswith("amd gpu 0x"):  # only an id: memory decides
            return _by_memory(gpu)
        return INTEGRATED if name.endswith("graphics") else DISCRETE
    return _by_memory(gpu)


def _intel_discrete_id(device_id: int | None) -> bool:
    """PCI ids of Intel's discrete GPUs: DG1 (Iris Xe MAX), Arc A (DG2), Arc B (Battlemage)."""
    if device_id is None:
        return False
    return device_id == 0x4905 or 0x5690 <= device_id <= 0x56CF or 0xE200 <= device_id <= 0xE2FF


def _by_memory(gpu: Gpu) -> str:
    if gpu.memory_capped:  # 4 GB or more of its own memory
        return DISCRETE
    if gpu.dedicated_memory is None:
        return UNKNOWN
    return DISCRETE if gpu.dedicated_memory >= 2 * 2**30 else INTEGRATED
