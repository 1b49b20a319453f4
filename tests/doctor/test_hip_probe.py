"""The HIP probe on Windows: which ``amdhip64_N.dll`` the doctor loads, and how it reads each
device's gfx target when a property call fails, with ctypes' loader replaced by a fake runtime.

The Windows tier (the template's tests/test_amd_windows_tier.py) runs the same paths under Wine
against a real DLL; these tests pin the choices down on any system.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from gpu_doctor import amd_windows, dxgi, envcheck
from gpu_doctor.gpus import Gpu, GpuScan
from gpu_doctor.os_info import OsInfo
from gpu_doctor.project import load_project

HIP_SUCCESS, HIP_ERROR_INVALID_VALUE, HIP_ERROR_NO_DEVICE = 0, 1, 100
WINDOWS_11 = OsInfo("Windows", "10", "10.0.26100", "AMD64", windows_build=26100)
XTX = ("AMD Radeon RX 7900 XTX", "gfx1100")


class FakeHip:
    """A HIP runtime as ctypes.CDLL gives it: hipGetDeviceCount writes the count through the
    pointer, each property call writes its struct's name (offset 0) and gcnArchName (1160 for
    R0600, 396 for R0000) into the caller's buffer and returns its status."""

    def __init__(self, devices, count_status=HIP_SUCCESS, r0600=HIP_SUCCESS, r0000=HIP_SUCCESS):
        self.devices = devices
        self.count_status = count_status
        # Functions as attributes, as on a CDLL: the doctor sets their argtypes and restype.
        self.hipGetDeviceCount = self._count
        self.hipGetDevicePropertiesR0600 = self._properties(1160, r0600)
        self.hipGetDevicePropertiesR0000 = self._properties(396, r0000)

    @property
    def _count(self):
        def count(count_ref):  # ctypes.byref(c_int): its _obj is the c_int
            count_ref._obj.value = len(self.devices)
            return self.count_status

        return count

    def _properties(self, offset, status):
        def properties(buffer, index):
            if status == HIP_SUCCESS:
                name, arch = self.devices[index]
                ctypes.memmove(buffer.value, name.encode(), len(name))
                ctypes.memmove(buffer.value + offset, arch.encode(), len(arch))
            return status

        return properties


class Loader:
    """ctypes.CDLL replaced: records which DLL was loaded and answers with ``runtimes[name]``."""

    def __init__(self, runtimes):
        self.runtimes, self.loaded = runtimes, []

    def __call__(self, path):
        self.loaded.append(Path(path))
        return self.runtimes[Path(path).name]


def dlls(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"MZ")
    return folder


def test_the_newest_hip_runtime_is_read_by_its_number_not_its_spelling(tmp_path):
    system32 = dlls(tmp_path / "System32", "amdhip64_6.dll", "amdhip64_7.dll", "amdhip64_9.dll")
    on_path = dlls(tmp_path / "ROCm" / "bin", "AMDHIP64_10.DLL")  # "_10" sorts before "_9"
    load = Loader({
        "amdhip64_9.dll": FakeHip([("AMD Radeon RX 7900 XTX", "gfx1100")]),
        "AMDHIP64_10.DLL": FakeHip([("AMD Radeon RX 9070 XT", "gfx1201")]),
    })  # fmt: skip

    devices = amd_windows.read_hip([system32, on_path], load)

    assert load.loaded == [on_path / "AMDHIP64_10.DLL"]
    assert [(device.name, device.target) for device in devices] == [
        ("AMD Radeon RX 9070 XT", "gfx1201")
    ]


def test_the_same_number_twice_keeps_system32s_copy(tmp_path):
    system32 = dlls(tmp_path / "System32", "amdhip64_7.dll")
    on_path = dlls(tmp_path / "old-sdk", "amdhip64_7.dll", "amdhip64_6.dll")

    assert amd_windows.newest_hip_dll([system32, on_path]) == system32 / "amdhip64_7.dll"


def test_names_that_are_not_a_hip_runtime_and_folders_that_are_gone_are_passed_over(tmp_path):
    system32 = dlls(tmp_path / "System32", "amdhip64.dll", "amdhip64_7.dll.bak", "amdhip64_x.dll")
    (system32 / "amdhip64_8.dll").mkdir()  # a folder of that name
    load = Loader({})

    devices = amd_windows.read_hip([system32, tmp_path / "gone", system32 / "amdhip64.dll"], load)

    assert devices == [] and load.loaded == []


def test_the_search_starts_in_system32_then_follows_paths_absolute_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSTEMROOT", str(tmp_path / "Windows"))
    entries = [str(tmp_path / "a"), "", ".", "bin", f'"{tmp_path / "b"}"']  # quoted, as some are
    monkeypatch.setenv("PATH", os.pathsep.join(entries))

    assert amd_windows.dll_search_folders() == [
        tmp_path / "Windows" / "System32",
        tmp_path / "a",
        tmp_path / "b",
    ]


def test_a_failing_r0600_call_is_answered_by_r0000(tmp_path):
    system32 = dlls(tmp_path / "System32", "amdhip64_7.dll")
    hip = FakeHip(
        [("AMD Radeon(TM) Graphics", "gfx1036:xnack-"), XTX], r0600=HIP_ERROR_INVALID_VALUE
    )

    devices = amd_windows.read_hip([system32], Loader({"amdhip64_7.dll": hip}))

    assert [(device.name, device.target) for device in devices] == [
        ("AMD Radeon(TM) Graphics", "gfx1036"),
        XTX,
    ]


def test_when_both_property_calls_fail_the_first_failure_is_named(tmp_path):
    system32 = dlls(tmp_path / "System32", "amdhip64_7.dll")
    hip = FakeHip([XTX], r0600=HIP_ERROR_INVALID_VALUE, r0000=801)

    with pytest.raises(OSError) as failed:
        amd_windows.read_hip([system32], Loader({"amdhip64_7.dll": hip}))

    assert str(failed.value) == (
        "HIP runtime: amdhip64_7.dll: hipGetDevicePropertiesR0600(device 0) failed with 1 "
        "(hipErrorInvalidValue, the runtime refused the call's arguments)"
    )


def test_no_device_from_the_hip_runtime_reads_as_what_it_means_and_what_to_do(
    tmp_path, monkeypatch
):
    system32 = dlls(tmp_path / "System32", "amdhip64_7.dll")
    hip = FakeHip([], count_status=HIP_ERROR_NO_DEVICE)
    read_hip = amd_windows.read_hip
    monkeypatch.setattr(
        amd_windows, "read_hip", lambda: read_hip([system32], Loader({"amdhip64_7.dll": hip}))
    )
    xtx = Gpu("AMD Radeon RX 7900 XTX", 0x1002, 0x744C, 24 * 2**30, source="DXGI")
    monkeypatch.setattr(dxgi, "_scan", lambda timeout: GpuScan([xtx], "DXGI"))

    scan = dxgi.scan()
    findings = envcheck.gpu_findings(load_project(), WINDOWS_11, scan)

    (said,) = [f.found for f in findings if f.code == "GPU-QUERY-PARTLY-FAILED"]
    assert said == (
        "Part of the GPU query failed: the HIP runtime of AMD's driver (amdhip64_7.dll) sees no "
        "AMD GPU, so AMD's ROCm build of PyTorch cannot use one either: in Device Manager > "
        "Display adapters, enable the AMD GPU if it is disabled, or install AMD's Adrenalin "
        "driver if it runs on Microsoft Basic Display Adapter, then restart."
    )
    assert scan.hardware[0].gfx_target == "gfx1100"  # the PCI id table still names it


def test_other_hip_failures_keep_the_call_and_its_status(tmp_path):
    system32 = dlls(tmp_path / "System32", "amdhip64_7.dll")
    hip = FakeHip([XTX], count_status=999)
    read = lambda: amd_windows.read_hip([system32], Loader({"amdhip64_7.dll": hip}))  # noqa: E731
    xtx = Gpu("AMD Radeon RX 7900 XTX", 0x1002, 0x744C, 24 * 2**30, source="DXGI")

    _, problem = amd_windows.scan_targets([xtx], read)

    assert problem == (
        "HIP runtime: amdhip64_7.dll: hipGetDeviceCount failed with 999 "
        "(hipErrorUnknown, an unknown error in the runtime)"
    )


def test_an_invalid_device_from_the_property_call_is_named_not_a_bare_number(tmp_path):
    """101 from hipGetDeviceProperties once read "returned 101": the user learns nothing."""
    system32 = dlls(tmp_path / "System32", "amdhip64_7.dll")
    hip = FakeHip([XTX], r0600=101, r0000=101)

    with pytest.raises(OSError) as failed:
        amd_windows.read_hip([system32], Loader({"amdhip64_7.dll": hip}))

    assert str(failed.value) == (
        "HIP runtime: amdhip64_7.dll: hipGetDevicePropertiesR0600(device 0) failed with 101 "
        "(hipErrorInvalidDevice, it has no device with that number)"
    )
