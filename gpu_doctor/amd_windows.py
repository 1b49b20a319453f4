"""AMD GPUs on Windows: the gfx target each one runs, and the pip command of its GPU kernels.

Standard library only; nothing Windows-specific runs at import time. The Adrenalin driver
installs the HIP runtime, ``C:\\Windows\\System32\\amdhip64_7.dll`` (``_6`` before), without any
ROCm: ``hipGetDeviceCount``, then ``hipGetDevicePropertiesR0600`` gives ``gcnArchName``, and
``hipGetDevicePropertiesR0000`` answers where R0600 fails. Like LLVM's ``offload-arch``
(clang/tools/offload-arch/AMDGPUArchByHIP.cpp), the newest ``amdhip64_N.dll`` present is used:
a future driver's ``_8`` is read without a change here. Without that DLL a table of PCI device
ids kept here names the target; else only the name is known.

AMD's ROCm wheels for Windows (the rocm-windows stack) carry each GPU's kernels in an extra,
``torch[device-gfx1100]``: one project serves a room of different GPUs, so the environment file
installs torch without kernels and ``device_command`` gives each machine its own line.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from .gpus import AMD, Gpu
from .install_commands import PYTHON_PIP
from .safe_text import clean_name

STACK = "rocm-windows"
# amdhip64_<N>.dll, N the HIP major version: a driver installs one, an upgrade may leave two.
HIP_DLL_NAME = re.compile(r"amdhip64_(\d{1,4})\.dll", re.IGNORECASE)
HIP_ERROR_NO_DEVICE = 100  # hipErrorNoDevice
# hipError_t (HIP's include/hip/hip_runtime_api.h): the statuses a device query may answer,
# named and said in words, since a bare number tells the user nothing.
HIP_ERRORS = {
    1: ("hipErrorInvalidValue", "the runtime refused the call's arguments"),
    2: ("hipErrorOutOfMemory", "the runtime ran out of memory"),
    3: ("hipErrorNotInitialized", "the runtime could not start"),
    4: ("hipErrorDeinitialized", "the runtime was shut down"),
    35: ("hipErrorInsufficientDriver", "the driver is older than this HIP runtime"),
    100: ("hipErrorNoDevice", "it sees no AMD GPU"),
    101: ("hipErrorInvalidDevice", "it has no device with that number"),
    209: ("hipErrorNoBinaryForGpu", "it has no code for this GPU"),
    801: ("hipErrorNotSupported", "this GPU or driver does not support the call"),
    999: ("hipErrorUnknown", "an unknown error in the runtime"),
}
HIP_TIMEOUT = 5.0
# hipDeviceProp_t: R0600 is 1472 bytes with gcnArchName[256] at 1160; R0000 has it at 396.
# The buffer is larger than either, so a newer runtime writing a longer struct stays inside.
# R0600 first; an older runtime, or one whose R0600 fails, answers R0000 (as offload-arch asks).
PROPERTY_CALLS = (("hipGetDevicePropertiesR0600", 1160), ("hipGetDevicePropertiesR0000", 396))
PROPERTIES_SIZE = 4096
NAME_SIZE = 256
MAX_DEVICES = 16

FROM_HIP, FROM_TABLE = "HIP runtime", "PCI id table"

# PCI device id -> gfx target, for machines without the HIP runtime. Sources: the ids in
# AMD's and Mesa's (amdgpu) tables as collected in the project's notes; incomplete, third-party.
# 0x1114 (Krackan Point): sources disagree between gfx1151 and gfx1152; AMD's own list names the
# Ryzen AI 7 350 (Krackan) gfx1152, so this table does.
PCI_TARGETS = {
    0x744C: "gfx1100",  # RX 7900 XT/XTX/GRE
    0x7448: "gfx1100",  # Radeon Pro W7900
    0x747E: "gfx1101",  # RX 7800 XT, RX 7700 XT
    0x7480: "gfx1102",  # RX 7600, RX 7600 XT
    0x15BF: "gfx1103",  # Radeon 780M/760M (Phoenix)
    0x15C8: "gfx1103",  # Radeon 740M (Phoenix 2)
    0x150E: "gfx1150",  # Radeon 890M/880M (Strix Point)
    0x1586: "gfx1151",  # Radeon 8060S/8050S (Strix Halo)
    0x1114: "gfx1152",  # Radeon 860M/840M (Krackan Point); see above
    0x7590: "gfx1200",  # RX 9060 XT
    0x7550: "gfx1201",  # RX 9070 XT, RX 9070
    0x73DF: "gfx1031",  # RX 6700 XT, RX 6750 XT
    0x73BF: "gfx1030",  # RX 6800/6900 XT
    0x73FF: "gfx1032",  # RX 6600/6650 XT
    0x164E: "gfx1036",  # Radeon Graphics of Ryzen 7000 desktop (Raphael)
    0x1681: "gfx1035",  # Radeon 680M/660M (Rembrandt)
    0x67DF: "gfx803",  # RX 470/480/570/580 (Polaris)
    0x15D8: "gfx902",  # Vega 8/11 of Ryzen 3000 (Picasso; Raven2 shares the id and is gfx909)
    0x15DD: "gfx902",  # Radeon Vega 8/11 of Ryzen 2000 mobile (Raven Ridge)
    0x1636: "gfx90c",  # Radeon Vega of Ryzen 4000/5000 mobile (Renoir, Lucienne)
    0x1638: "gfx90c",  # Radeon Vega of Ryzen 5000 (Cezanne)
}


@dataclass(frozen=True)
class HipDevice:
    """One device as the HIP runtime lists it."""

    name: str
    target: str  # "gfx1100", feature suffixes (":xnack-") stripped


def system32() -> Path:
    return Path(os.environ.get("SYSTEMROOT", r"C:\Windows")) / "System32"


def strip_features(arch: str) -> str:
    """'gfx1100:sramecc-:xnack-' -> 'gfx1100' (the pip extra names the bare target)."""
    return arch.split(":", 1)[0].strip()


def _c_string(buffer: ctypes.Array, offset: int) -> str:
    raw = bytes(buffer[offset : offset + NAME_SIZE]).split(b"\0", 1)[0]
    return clean_name(raw.decode("utf-8", errors="replace"))


def dll_search_folders() -> list[Path]:
    """Where Windows finds the driver's DLLs: System32, then the folders of PATH. Relative
    entries ('.') are left out: a DLL in whatever folder the doctor runs from is not loaded."""
    entries = (entry.strip('"') for entry in os.environ.get("PATH", "").split(os.pathsep))
    return [system32()] + [Path(entry) for entry in entries if entry and Path(entry).is_absolute()]


def hip_version(name: str) -> int | None:
    """'amdhip64_7.dll' -> 7; None for any other name."""
    match = HIP_DLL_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def newest_hip_dll(folders: Iterable[Path]) -> Path | None:
    """The ``amdhip64_N.dll`` with the highest N in ``folders``; on a tie, the first folder's
    (System32 before PATH). None when there is none."""
    best: tuple[int, Path] | None = None
    for folder in folders:
        try:
            names = os.listdir(folder)
        except (OSError, ValueError):  # a PATH entry that is gone, not a folder, or garbled
            continue
        for name in names:
            version = hip_version(name)
            newer = version is not None and (best is None or version > best[0])
            if newer and (folder / name).is_file():
                best = (version, folder / name)
    return best[1] if best else None


class HipError(OSError):
    """A HIP call that returned an error status; the message says which and what it means."""

    def __init__(self, dll: str, function: str, status: int) -> None:
        self.dll, self.function, self.status = dll, function, status
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.status == HIP_ERROR_NO_DEVICE:
            # The PCI id table still names the target; what the user can change is the driver.
            return (
                f"the HIP runtime of AMD's driver ({self.dll}) sees no AMD GPU, so AMD's ROCm "
                "build of PyTorch cannot use one either: in Device Manager > Display adapters, "
                "enable the AMD GPU if it is disabled, or install AMD's Adrenalin driver if it "
                "runs on Microsoft Basic Display Adapter, then restart"
            )
        name, meaning = HIP_ERRORS.get(self.status, ("", ""))
        said = f"{name}, {meaning}" if name else "a HIP error status"
        return f"HIP runtime: {self.dll}: {self.function} failed with {self.status} ({said})"


def read_hip(
    folders: Iterable[Path] | None = None, load: Callable[[str], Any] | None = None
) -> list[HipDevice]:
    """Every device of the newest HIP runtime in ``folders`` (System32, then PATH); [] without
    one (off Windows, or no AMD driver). Raises OSError when the DLL is there and fails.
    ``load``: ctypes.CDLL, replaced in tests."""
    if sys.platform != "win32" and load is None:
        return []
    dll = newest_hip_dll(dll_search_folders() if folders is None else folders)
    if dll is None:
        return []
    hip = (load or ctypes.CDLL)(str(dll))
    count = ctypes.c_int(0)
    hip.hipGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
    hip.hipGetDeviceCount.restype = ctypes.c_int
    status = hip.hipGetDeviceCount(ctypes.byref(count))
    if status != 0:
        raise HipError(dll.name, "hipGetDeviceCount", status)
    return [_device(hip, index, dll.name) for index in range(min(count.value, MAX_DEVICES))]


def _device(hip: Any, index: int, dll: str) -> HipDevice:
    """The device's name and target from the first property call that gives a target. A call
    that fails, or answers without a target, passes to the next (R0600, then R0000); the first
    failure is raised when every call fails."""
    answered: HipDevice | None = None
    failure: OSError | None = None
    for function, offset in PROPERTY_CALLS:
        call = getattr(hip, function, None)
        if call is None:
            continue
        properties = (ctypes.c_ubyte * PROPERTIES_SIZE)()
        call.argtypes = [ctypes.c_void_p, ctypes.c_int]
        call.restype = ctypes.c_int
        status = call(ctypes.cast(properties, ctypes.c_void_p), index)
        if status != 0:
            failure = failure or HipError(dll, f"{function}(device {index})", status)
            continue
        device = HipDevice(_c_string(properties, 0), strip_features(_c_string(properties, offset)))
        if device.target:
            return device
        answered = answered or device
    if answered is not None:  # named, without a target: the PCI id table may still know it
        return answered
    raise failure or OSError(f"{dll} has no hipGetDeviceProperties")


def with_targets(gpus: list[Gpu], hip: Iterable[HipDevice] | None) -> list[Gpu]:
    """AMD GPUs get their gfx target: the HIP runtime's (matched by name; the devices left over
    by order, when as many are left on both sides), else the PCI id table's; ``target_source``
    says which."""
    hip = [device for device in hip or () if device.target.startswith("gfx")]
    amd = [gpu for gpu in gpus if gpu.vendor_id == AMD and not gpu.gfx_target]
    by_name = {device.name.lower(): device for device in hip}
    named = {id(gpu): by_name[gpu.name.lower()] for gpu in amd if gpu.name.lower() in by_name}
    left_hip = [device for device in hip if device not in named.values()]
    left_gpus = [gpu for gpu in amd if id(gpu) not in named]
    if len(left_hip) == len(left_gpus):
        named.update((id(gpu), device) for gpu, device in zip(left_gpus, left_hip))
    result = []
    for gpu in gpus:
        if gpu.vendor_id != AMD or gpu.gfx_target:
            result.append(gpu)
            continue
        device = named.get(id(gpu))
        if device is not None:
            gpu = replace(gpu, gfx_target=device.target, target_source=FROM_HIP)
        elif gpu.device_id in PCI_TARGETS:
            gpu = replace(gpu, gfx_target=PCI_TARGETS[gpu.device_id], target_source=FROM_TABLE)
        result.append(gpu)
    return result


def scan_targets(
    gpus: list[Gpu], read: Callable[[], list[HipDevice]] | None = None
) -> tuple[list[Gpu], str]:
    """(the GPUs with their targets, what went wrong reading HIP or ''). Only asks HIP when an
    AMD GPU is there; a missing DLL is no problem (the table answers), a failing one is named."""
    if not any(gpu.vendor_id == AMD for gpu in gpus):
        return gpus, ""
    from .bounded import call_with_timeout

    def read_in_words() -> tuple[list[HipDevice], str]:
        try:
            return (read or read_hip)(), ""
        except HipError as error:  # its own sentence, without the exception's name
            return [], error.describe()

    answer, problem = call_with_timeout(read_in_words, HIP_TIMEOUT)
    devices, explained = answer or ([], "")
    return with_targets(gpus, devices), explained or (problem and f"HIP runtime: {problem}")


@functools.lru_cache(maxsize=1)
def _stack() -> dict:
    try:
        from .project import load_project

        return dict(load_project().stacks.get(STACK, {}))
    except Exception:  # no readable project.json: no target is known to be supported
        return {}


def stack_of(stacks: dict | None = None) -> dict:
    return (stacks or {}).get(STACK) or _stack()


def supported(target: str, stacks: dict | None = None) -> bool:
    return bool(target) and target in stack_of(stacks).get("gfx_targets", ())


def device_packages(target: str, stacks: dict | None = None) -> list[str]:
    """['torch[device-gfx1151]==2.14.0+rocm10.1.0', 'torchvision[device-gfx1151]==...']."""
    stack = stack_of(stacks)
    extra = stack.get("device_extra", "device-{gfx}").format(gfx=target)
    tag = stack.get("local_version", "")
    pins = stack.get("pins", {})
    return [
        f"{name}[{extra}]=={pins[name]}{tag}" for name in ("torch", "torchvision") if name in pins
    ]


def device_arguments(target: str, stacks: dict | None = None) -> str:
    """What pip installs to add this GPU's kernels: the device packages and AMD's index."""
    stack = stack_of(stacks)
    quoted = " ".join(f'"{package}"' for package in device_packages(target, stacks))
    index = stack.get("index_url", "")
    where = f" --index-url {index} --extra-index-url https://pypi.org/simple" if index else ""
    return f"{quoted}{where}"


def device_command(target: str, stacks: dict | None = None) -> str:
    """The one pip command that adds this GPU's kernels to an activated conda or venv
    environment (install_commands.kernels speaks the project's environment manager)."""
    return f"{PYTHON_PIP} install {device_arguments(target, stacks)}"


def recommended_first(options: list[Any], properties: Callable[[int], Any]) -> list[Any]:
    """torch's GPUs with the one the doctor would recommend first: on ROCm an integrated GPU can
    be ``cuda:0`` before the discrete one (ROCm/TheRock #5543), so the order is a gfx target the
    pinned build runs, then a discrete GPU, then torch's index, never the index alone.
    ``options``: the project's DeviceOptions; ``properties``: torch.cuda.get_device_properties,
    whose ``gcnArchName`` (ROCm builds only) and ``is_integrated`` decide."""

    def rank(position: int) -> tuple[int, int, int]:
        try:
            found = properties(options[position].index)
            target = strip_features(str(getattr(found, "gcnArchName", "") or ""))
            integrated = bool(getattr(found, "is_integrated", False))
        except Exception:  # a device whose properties fail keeps its place, after the rest
            return (1, 1, position)
        return (not supported(target), integrated, position)

    if len(options) < 2:
        return options
    return [options[position] for position in sorted(range(len(options)), key=rank)]


def distribution_names() -> list[str]:
    """The names of the distributions installed in this Python (package metadata)."""
    from importlib import metadata

    names = []
    for distribution in metadata.distributions():
        try:
            names.append(distribution.metadata["Name"] or "")
        except Exception:  # damaged metadata of one package: the others still count
            continue
    return names


def installed_targets(distributions: Iterable[str]) -> list[str]:
    """The gfx targets whose device packages are installed ('amd-torch-device-gfx1100')."""
    prefix = "amd-torch-device-"
    names = {name.lower().replace("_", "-") for name in distributions}
    return sorted(name[len(prefix) :] for name in names if name.startswith(prefix))
