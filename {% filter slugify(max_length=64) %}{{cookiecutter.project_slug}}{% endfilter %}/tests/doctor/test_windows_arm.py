"""Windows on ARM (Snapdragon laptops) and old Macs: the machine read apart from the Python,
and what the doctor tells each of them."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

from gpu_doctor import os_info
from gpu_doctor.findings import FAIL, OK, WARN
from gpu_doctor.os_info import OsInfo
from gpu_doctor.project import Project
from gpu_doctor.rules import system

CPU = {
    "python_min": "3.10",
    "python_max": "3.14",
    "python_note": "PyTorch 2.14 ships wheels for CPython 3.10-3.14.",
    "pins": {"torch": "2.14.1", "torchvision": "0.29.1"},
    "index_url": "https://download.pytorch.org/whl/cpu",
}
DIRECTML = {
    "python_min": "3.8",
    "python_max": "3.12",
    "python_note": "torch-directml ships wheels for CPython 3.8-3.12 only.",
    "pins": {"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
    "index_url": "",
}


def project(accelerator: str = "cpu") -> Project:
    stack = DIRECTML if accelerator == "directml" else CPU
    return Project(
        project_name="LeNet test",
        package_name="lenet_test",
        accelerator=accelerator,
        python_version="3.12",
        env_manager="",
        **stack,
    )


def windows(native: str, python_platform: str, machine: str = "ARM64") -> OsInfo:
    """Windows 11 24H2 as the doctor reads it; ``machine``: what platform.machine() said."""
    return os_info.detect(
        "Windows", "11", "10.0.26100", machine,
        native_machine=native, python_platform=python_platform,
    )  # fmt: skip


def codes(findings):
    return [(f.status, f.code) for f in findings]


# ------------------------------------------------------- the machine, through IsWow64Process2


PSEUDO_HANDLE = 2**64 - 1  # GetCurrentProcess(): (HANDLE)-1


def current_process():
    return PSEUDO_HANDLE


def fake_kernel32(process: int, native: int, succeeds: bool = True) -> SimpleNamespace:
    """kernel32 whose IsWow64Process2 fills its two out-parameters as Windows does; its
    ``handles`` list what it was asked about."""
    handles = []

    def is_wow64_process2(handle, process_out, native_out):
        handles.append(handle.value)
        if not succeeds:
            return 0
        process_out.contents.value, native_out.contents.value = process, native
        return 1

    return SimpleNamespace(
        IsWow64Process2=is_wow64_process2, GetCurrentProcess=current_process, handles=handles
    )


def old_kernel32() -> SimpleNamespace:
    """Windows 10 before 1709: no IsWow64Process2."""
    return SimpleNamespace(GetCurrentProcess=current_process)


def test_an_x64_python_on_an_arm64_machine_reads_the_machine_as_arm64():
    kernel32 = fake_kernel32(process=0, native=0xAA64)  # 0: not a WOW64 process
    assert os_info.windows_native_machine(kernel32) == "ARM64"
    assert kernel32.handles == [ctypes.c_void_p(PSEUDO_HANDLE).value]


def test_an_intel_or_amd_machine_reads_as_amd64_and_a_32_bit_python_does_not_change_that():
    assert os_info.windows_native_machine(fake_kernel32(0, 0x8664)) == "AMD64"
    assert os_info.windows_native_machine(fake_kernel32(0x014C, 0x8664)) == "AMD64"


def test_without_iswow64process2_or_when_it_fails_the_machine_is_unknown_not_an_error():
    assert os_info.windows_native_machine(old_kernel32()) == ""
    assert os_info.windows_native_machine(fake_kernel32(0, 0xAA64, succeeds=False)) == ""


def test_an_unknown_machine_value_is_shown_as_its_number():
    assert os_info.windows_native_machine(fake_kernel32(0, 0x1234)) == "0x1234"


def test_off_windows_nothing_is_asked():
    if os_info.sys.platform != "win32":
        assert os_info.windows_native_machine() == ""
        assert os_info.interpreter_platform() == ""


# ----------------------------------------------------------------- what the report says


def test_the_description_names_an_emulated_python_whatever_platform_machine_said():
    for said in ("AMD64", "ARM64"):  # cpython #98962: either, by Python version
        info = windows("ARM64", "win-amd64", machine=said)
        assert info.emulated and info.python_architecture == "AMD64"
        assert info.describe() == (
            "Windows 11 build 26100 (ARM64 machine, x64 Python under emulation)"
        )


def test_a_native_python_is_described_as_before():
    assert windows("ARM64", "win-arm64").describe() == "Windows 11 build 26100 (ARM64)"
    intel = windows("AMD64", "win-amd64", machine="AMD64")
    assert intel.describe() == "Windows 11 build 26100 (AMD64)" and not intel.emulated


def test_the_report_carries_the_machine_and_the_python_apart():
    data = windows("ARM64", "win-amd64").to_dict()
    assert (data["native_machine"], data["interpreter_platform"]) == ("ARM64", "win-amd64")


# ------------------------------------------------------------------------ the situations


def test_snapdragon_with_a_native_arm64_python_3_12_is_fine_for_the_cpu_stack():
    findings = system.check_os(project("cpu"), windows("ARM64", "win-arm64"), (3, 12, 8))
    assert codes(findings) == [(OK, "OS-OK")]


def test_snapdragon_with_an_emulated_x64_python_is_told_to_install_the_arm64_python():
    info = windows("ARM64", "win-amd64", machine="AMD64")
    finding = [f for f in system.check_os(project("cpu"), info, (3, 12, 8)) if f.status != OK]
    assert codes(finding) == [(WARN, "OS-X64-PYTHON-EMULATED")]
    assert "x64 Python under emulation" in finding[0].found
    fix = finding[0].fix
    assert "ARM64 installer" in fix and "uv python install" in fix
    assert "3.11 to 3.13" in fix and "CPU index" in fix


def test_snapdragon_with_an_emulated_python_and_the_directml_stack_hears_there_is_no_arm64_wheel():
    info = windows("ARM64", "win-amd64")
    warned = [f for f in system.check_os(project("directml"), info, (3, 12, 8)) if f.status == WARN]
    assert [f.code for f in warned] == ["OS-X64-PYTHON-EMULATED"]
    assert "torch-directml has no ARM64 wheel" in warned[0].found


def test_an_arm64_python_3_14_has_no_torch_wheel_and_is_sent_to_3_13():
    findings = system.check_os(project("cpu"), windows("ARM64", "win-arm64"), (3, 14, 2))
    failed = [f for f in findings if f.status == FAIL]
    assert [f.code for f in failed] == ["OS-ARM64-NO-TORCH-WHEEL"]
    assert "this is Python 3.14" in failed[0].found
    assert "ARM64 Python 3.13" in failed[0].fix


def test_an_arm64_python_with_the_directml_stack_still_names_its_missing_wheel_once():
    findings = system.check_os(project("directml"), windows("ARM64", "win-arm64"), (3, 12, 8))
    assert [f.code for f in findings if f.status == FAIL] == ["OS-ARM64-PYTHON"]


def test_an_intel_x64_machine_hears_nothing_about_arm():
    info = windows("AMD64", "win-amd64", machine="AMD64")
    for accelerator in ("cpu", "directml"):
        assert codes(system.check_os(project(accelerator), info, (3, 12, 8))) == [(OK, "OS-OK")]


def test_a_mac_on_macos_13_cannot_install_current_torch():
    mac = OsInfo("Darwin", "22.6.0", "13.6.7", "arm64")
    findings = system.check_os(project("cpu"), mac)
    assert codes(findings) == [(FAIL, "OS-MACOS-TOO-OLD")]
    assert "torch 2.14.1's macOS wheels need macOS 14 or later" in findings[0].found
    assert "Update macOS to 14 or later" in findings[0].fix and "another machine" in findings[0].fix


def test_a_mac_on_macos_13_is_fine_for_torch_2_4_and_names_macos_14_for_current_torch():
    mac13 = OsInfo("Darwin", "22.6.0", "13.6.7", "arm64")
    assert [f.code for f in system.check_os(project("directml"), mac13)] == ["OS-MACOS-MPS"]
    mac14 = OsInfo("Darwin", "23.5.0", "14.5", "arm64")
    assert [f.code for f in system.check_os(project("cpu"), mac14)] == ["OS-OK"]
