"""GPUs and drivers on Windows: DXGI through ctypes first, PowerShell (CIM) as the fallback.

Standard library only; nothing Windows-specific runs at import time. DXGI is fast and needs
no subprocess: ``CreateDXGIFactory1``, then ``IDXGIFactory1::EnumAdapters1`` (vtable slot
12) until DXGI_ERROR_NOT_FOUND, ``IDXGIAdapter1::GetDesc1`` (slot 10) for name, vendor and
memory, ``IDXGIAdapter::CheckInterfaceSupport(IID_IDXGIDevice)`` (slot 9) for the user-mode
driver version, ``Release`` (slot 2). The driver date comes from the display class in the
registry. When DXGI fails or finds no GPU with a driver, ``Get-CimInstance
Win32_VideoController`` runs with a timeout. Tests replace ``dxgi_adapters``,
``registry_display_drivers`` and ``run_powershell`` with fakes.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import json
import re
import sys
import uuid
from dataclasses import replace
from typing import Any, Callable

from . import amd_windows, nvidia
from .bounded import CommandResult, call_with_timeout, run_command
from .gpus import NVIDIA, SOFTWARE, Gpu, GpuScan
from .safe_text import clean_name

DXGI_TIMEOUT = 5.0
REGISTRY_TIMEOUT = 3.0
POWERSHELL_TIMEOUT = 10.0
NVIDIA_SMI_TIMEOUT = 5.0

DXGI_ERROR_NOT_FOUND = 0x887A0002
DXGI_ADAPTER_FLAG_SOFTWARE = 2
IID_IDXGIFACTORY1 = "770aae78-f26f-4dba-a829-253c83d1b387"
IID_IDXGIDEVICE = "54ec77fa-1377-44e6-8c32-88fd5f44c84c"
SLOT_RELEASE, SLOT_CHECK_INTERFACE_SUPPORT, SLOT_GET_DESC1, SLOT_ENUM_ADAPTERS1 = 2, 9, 10, 12
MAX_ADAPTERS = 64
HRESULT = ctypes.c_int32  # negative on failure

DISPLAY_CLASS_KEY = r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
REGISTRY_VALUES = ("DriverDesc", "DriverVersion", "DriverDate", "MatchingDeviceId")

POWERSHELL_SCRIPT = (
    "[Console]::OutputEncoding = [System.Text.Encoding]::UTF8; "
    "$ErrorActionPreference = 'Stop'; "
    "ConvertTo-Json -Compress -InputObject @(Get-CimInstance -ClassName Win32_VideoController | "
    "Select-Object Name, AdapterCompatibility, PNPDeviceID, DriverVersion, AdapterRAM, "
    "@{Name='DriverDate'; Expression={ if ($_.DriverDate) "
    "{ $_.DriverDate.ToString('yyyy-MM-dd') } }})"
)
ADAPTER_RAM_CAP = 0xFFF00000  # Win32_VideoController.AdapterRAM is 32-bit: it stops near 4 GB


class GUID(ctypes.Structure):
    _fields_ = [
        ("Data1", ctypes.c_uint32),
        ("Data2", ctypes.c_uint16),
        ("Data3", ctypes.c_uint16),
        ("Data4", ctypes.c_ubyte * 8),
    ]

    @classmethod
    def parse(cls, text: str) -> GUID:
        return cls.from_buffer_copy(uuid.UUID(text).bytes_le)


class LUID(ctypes.Structure):
    _fields_ = [("LowPart", ctypes.c_uint32), ("HighPart", ctypes.c_int32)]


class DXGI_ADAPTER_DESC1(ctypes.Structure):
    # WCHAR is 16 bits on Windows; c_uint16 keeps the layout identical on every platform.
    _fields_ = [
        ("Description", ctypes.c_uint16 * 128),
        ("VendorId", ctypes.c_uint32),
        ("DeviceId", ctypes.c_uint32),
        ("SubSysId", ctypes.c_uint32),
        ("Revision", ctypes.c_uint32),
        ("DedicatedVideoMemory", ctypes.c_size_t),
        ("DedicatedSystemMemory", ctypes.c_size_t),
        ("SharedSystemMemory", ctypes.c_size_t),
        ("AdapterLuid", LUID),
        ("Flags", ctypes.c_uint32),
    ]

    @property
    def name(self) -> str:
        return bytes(self.Description).decode("utf-16-le", errors="replace").split("\0")[0]


def format_umd_version(value: int) -> str:
    """The 64-bit user-mode driver version: four 16-bit fields, e.g. '31.0.101.4091'."""
    value &= 0xFFFFFFFFFFFFFFFF
    return ".".join(str((value >> shift) & 0xFFFF) for shift in (48, 32, 16, 0))


def gpu_from_desc(desc: DXGI_ADAPTER_DESC1, driver_version: str) -> Gpu:
    return Gpu(
        name=desc.name.strip() or f"adapter 0x{desc.VendorId:04x}:0x{desc.DeviceId:04x}",
        vendor_id=desc.VendorId,
        device_id=desc.DeviceId,
        dedicated_memory=desc.DedicatedVideoMemory,
        driver_version=driver_version,
        software=bool(desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE),
        source="DXGI",
    )


def _function_type() -> Callable[..., Any]:
    # COM uses stdcall; on 64-bit Windows (and off Windows, in tests) that is the C convention.
    return getattr(ctypes, "WINFUNCTYPE", ctypes.CFUNCTYPE)


def _method(obj: ctypes.c_void_p, slot: int, restype: Any, *argtypes: Any) -> Callable[..., int]:
    """The COM method in ``slot`` of ``obj``'s vtable, callable as ``method(obj, *args)``."""
    vtable = ctypes.cast(obj, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p))).contents
    prototype = _function_type()(restype, ctypes.c_void_p, *argtypes)
    return prototype(vtable[slot])


def _release(obj: ctypes.c_void_p) -> None:
    _method(obj, SLOT_RELEASE, ctypes.c_uint32)(obj)


def _failed(hresult: int) -> bool:
    return hresult < 0


def adapters_of_factory(factory: ctypes.c_void_p) -> list[Gpu]:
    """Walk an IDXGIFactory1's adapters; every adapter is released, also on errors."""
    enum_adapters1 = _method(
        factory, SLOT_ENUM_ADAPTERS1, HRESULT, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)
    )
    device_iid = GUID.parse(IID_IDXGIDEVICE)
    gpus = []
    for index in range(MAX_ADAPTERS):
        adapter = ctypes.c_void_p()
        hresult = enum_adapters1(factory, index, ctypes.byref(adapter))
        if hresult & 0xFFFFFFFF == DXGI_ERROR_NOT_FOUND:
            break
        if _failed(hresult) or not adapter.value:
            raise OSError(f"EnumAdapters1({index}) returned 0x{hresult & 0xFFFFFFFF:08X}")
        try:
            desc = DXGI_ADAPTER_DESC1()
            get_desc1 = _method(
                adapter, SLOT_GET_DESC1, HRESULT, ctypes.POINTER(DXGI_ADAPTER_DESC1)
            )
            hresult = get_desc1(adapter, ctypes.byref(desc))
            if _failed(hresult):
                raise OSError(f"GetDesc1 of adapter {index} returned 0x{hresult & 0xFFFFFFFF:08X}")
            check_support = _method(
                adapter,
                SLOT_CHECK_INTERFACE_SUPPORT,
                HRESULT,
                ctypes.POINTER(GUID),
                ctypes.POINTER(ctypes.c_longlong),
            )
            umd = ctypes.c_longlong(0)
            supported = not _failed(
                check_support(adapter, ctypes.byref(device_iid), ctypes.byref(umd))
            )
            gpus.append(gpu_from_desc(desc, format_umd_version(umd.value) if supported else ""))
        finally:
            _release(adapter)
    return gpus


def dxgi_adapters() -> list[Gpu]:
    """Every DXGI adapter of this Windows machine, software adapters included. Raises OSError."""
    if sys.platform != "win32":
        raise OSError("DXGI exists on Windows only")
    dxgi = ctypes.WinDLL("dxgi")  # type: ignore[attr-defined]
    create = dxgi.CreateDXGIFactory1
    create.argtypes = [ctypes.POINTER(GUID), ctypes.POINTER(ctypes.c_void_p)]
    create.restype = HRESULT
    factory = ctypes.c_void_p()
    hresult = create(ctypes.byref(GUID.parse(IID_IDXGIFACTORY1)), ctypes.byref(factory))
    if _failed(hresult) or not factory.value:
        raise OSError(f"CreateDXGIFactory1 returned 0x{hresult & 0xFFFFFFFF:08X}")
    try:
        return adapters_of_factory(factory)
    finally:
        _release(factory)


def parse_driver_date(value: Any) -> datetime.date | None:
    """Driver dates as Windows writes them: '10-10-2023' (registry, month first),
    '2023-10-10', '/Date(1696896000000)/' (old ConvertTo-Json), '20231010000000.000000-000'."""
    text = clean_name(value)
    patterns = (
        (r"(\d{1,2})-(\d{1,2})-(\d{4})$", (3, 1, 2)),
        (r"(\d{4})-(\d{2})-(\d{2})", (1, 2, 3)),
        (r"(\d{4})(\d{2})(\d{2})\d{6}\.", (1, 2, 3)),
    )
    try:
        for pattern, (year, month, day) in patterns:
            match = re.match(pattern, text)
            if match:
                return datetime.date(
                    int(match.group(year)), int(match.group(month)), int(match.group(day))
                )
        match = re.search(r"Date\((-?\d+)", text)
        if match:
            stamp = int(match.group(1)) / 1000
            return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).date()
    except (ValueError, OverflowError, OSError):
        return None
    return None


def pci_ids(text: str) -> tuple[int | None, int | None]:
    """'PCI\\VEN_10DE&DEV_2484&SUBSYS_...' or 'pci\\ven_1002&dev_73df' -> (vendor, device)."""
    vendor = re.search(r"VEN_([0-9A-F]{4})", text or "", re.IGNORECASE)
    device = re.search(r"DEV_([0-9A-F]{4})", text or "", re.IGNORECASE)
    return (
        int(vendor.group(1), 16) if vendor else None,
        int(device.group(1), 16) if device else None,
    )


def registry_display_drivers() -> list[dict[str, str]]:
    """The display drivers Windows installed (registry display class): name, version, date."""
    import winreg  # Windows only; imported here so the module loads everywhere

    records = []
    with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, DISPLAY_CLASS_KEY) as display_class:
        for index in range(MAX_ADAPTERS * 4):
            try:
                subkey = winreg.EnumKey(display_class, index)
            except OSError:
                break
            if not subkey.isdigit():  # "Configuration", "Properties": not drivers
                continue
            try:
                with winreg.OpenKey(display_class, subkey) as key:
                    record = {}
                    for value_name in REGISTRY_VALUES:
                        with contextlib.suppress(OSError):
                            record[value_name] = clean_name(winreg.QueryValueEx(key, value_name)[0])
            except OSError:
                continue
            records.append(record)
    return records


def attach_registry(gpus: list[Gpu], records: list[dict[str, str]]) -> list[Gpu]:
    """Give each adapter the driver date of the registry entry with its version and vendor."""
    dated = []
    for gpu in gpus:
        for record in records:
            vendor, device = pci_ids(record.get("MatchingDeviceId", ""))
            if (
                record.get("DriverVersion", "").strip() != gpu.driver_version
                or not gpu.driver_version
            ):
                continue
            if vendor is not None and vendor != gpu.vendor_id:
                continue
            if device is not None and gpu.device_id is not None and device != gpu.device_id:
                continue
            when = parse_driver_date(record.get("DriverDate"))
            if when is not None:
                gpu = replace(gpu, driver_date=when)
                break
        dated.append(gpu)
    return dated


def run_powershell(script: str, timeout: float) -> CommandResult:
    return run_command(
        ["powershell.exe", "-NoProfile", "-NonInteractive", "-Command", script], timeout
    )


def parse_video_controllers(text: str) -> list[Gpu]:
    """Win32_VideoController objects as JSON (one object or a list). Raises ValueError."""
    data = json.loads(text)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ValueError("not a list of video controllers")
    gpus = []
    for item in data:
        vendor, device = pci_ids(str(item.get("PNPDeviceID") or ""))
        ram = item.get("AdapterRAM")
        memory = ram if isinstance(ram, int) and ram > 0 else None
        gpus.append(
            Gpu(
                name=str(item.get("Name") or "unnamed video controller").strip(),
                vendor_id=vendor,
                device_id=device,
                dedicated_memory=memory,
                memory_capped=memory is not None and memory >= ADAPTER_RAM_CAP,
                driver_version=str(item.get("DriverVersion") or "").strip(),
                driver_date=parse_driver_date(item.get("DriverDate")),
                source="PowerShell",
            )
        )
    return gpus


def _excerpt(text: str, limit: int = 120) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def powershell_adapters(timeout: float = POWERSHELL_TIMEOUT) -> tuple[list[Gpu], str]:
    """(gpus, "") or ([], what went wrong): missing, timed out, failed, or unreadable output."""
    result = run_powershell(POWERSHELL_SCRIPT, timeout)
    if result.problem:
        return [], result.problem
    if result.returncode != 0:
        detail = _excerpt(result.stderr or result.stdout) or "no output"
        return [], f"Get-CimInstance exited with {result.returncode}: {detail}"
    try:
        return parse_video_controllers(result.stdout), ""
    except ValueError:  # json.JSONDecodeError is a ValueError
        return [], f"unreadable output from Get-CimInstance: {_excerpt(result.stdout) or 'empty'!r}"


def nvidia_smi_capabilities(timeout: float = NVIDIA_SMI_TIMEOUT) -> dict[str, str]:
    """The compute capability per GPU name from nvidia-smi (NVIDIA's Windows driver installs it
    in System32); {} when it is missing or too old to know the field."""
    from .sysfs import nvidia_smi_gpus  # the same query and parser on both systems

    found, _problem = nvidia_smi_gpus(timeout)
    return {gpu.name: gpu.compute_capability for gpu in found if gpu.compute_capability}


def with_capabilities(gpus: list[Gpu]) -> list[Gpu]:
    """NVIDIA GPUs get their compute capability: nvidia-smi's, else their model name's."""
    if not any(gpu.vendor_id == NVIDIA for gpu in gpus):
        return gpus
    measured = nvidia_smi_capabilities()
    gpus = [
        replace(gpu, compute_capability=measured[gpu.name], capability_source=nvidia.SMI_SOURCE)
        if gpu.vendor_id == NVIDIA and gpu.name in measured
        else gpu
        for gpu in gpus
    ]
    return nvidia.with_capabilities(gpus)


def scan(timeout: float = POWERSHELL_TIMEOUT) -> GpuScan:
    """DXGI (with registry dates); PowerShell when DXGI fails or sees no GPU with a driver.
    NVIDIA GPUs get their compute capability (``with_capabilities``), AMD GPUs their gfx
    target (``amd_windows.scan_targets``)."""
    found = _scan(timeout)
    gpus, problem = amd_windows.scan_targets(with_capabilities(found.gpus))
    problems = found.problems + ([problem] if problem else [])
    return GpuScan(gpus, found.source, problems, found.denied)


def _scan(timeout: float) -> GpuScan:
    problems = []
    gpus, problem = call_with_timeout(dxgi_adapters, DXGI_TIMEOUT)
    gpus = list(gpus or [])
    if problem:
        problems.append(f"DXGI: {problem}")
    if gpus:
        records, problem = call_with_timeout(registry_display_drivers, REGISTRY_TIMEOUT)
        if problem:
            problems.append(f"driver dates from the registry: {problem}")
        gpus = attach_registry(gpus, list(records or []))
    if any(gpu.kind != SOFTWARE for gpu in gpus):
        return GpuScan(gpus, "DXGI", problems)
    found, problem = powershell_adapters(timeout)
    if problem:
        problems.append(f"PowerShell: {problem}")
    if not found:
        return GpuScan(gpus, "DXGI" if gpus else "", problems)
    names = {gpu.name for gpu in found}
    merged = [gpu for gpu in gpus if gpu.name not in names] + found
    return GpuScan(merged, "DXGI + PowerShell" if gpus else "PowerShell", problems)
