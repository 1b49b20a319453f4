"""The environment checks: what a user is told about their Python, OS, GPUs and drivers.

Every machine here is described by data (an OsInfo, a GpuScan of Gpu records as DXGI,
PowerShell or /sys/class/drm report them); the decisions run for real.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_doctor import (
    envcheck,
    facts,
    render,
)
from gpu_doctor.findings import (
    FAIL,
    OK,
    WARN,
    Finding,
)
from gpu_doctor.gpus import (
    Gpu,
    GpuScan,
)
from gpu_doctor.os_info import (
    OsInfo,
)
from gpu_doctor.project import (
    PROJECT_ROOT,
    Project,
    load_project,
)
from gpu_doctor.rules import (
    python,
    system,
)

STACKS = {
    "directml": {
        "python_min": "3.8",
        "python_max": "3.12",
        "python_note": "torch-directml 0.2.5.dev240914 ships wheels for CPython 3.8-3.12 only "
        "(no 3.13 wheel); 3.11 or 3.12 is recommended.",
        "pins": {"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
        "index_url": "",
    },
    "cuda": {
        "python_min": "3.10",
        "python_max": "3.14",
        "python_note": "PyTorch 2.14 ships wheels for CPython 3.10-3.14.",
        "pins": {"torch": "2.14.1", "torchvision": "0.29.1"},
        "index_url": "https://download.pytorch.org/whl/cu130",
    },
    "cpu": {
        "python_min": "3.10",
        "python_max": "3.14",
        "python_note": "PyTorch 2.14 ships wheels for CPython 3.10-3.14.",
        "pins": {"torch": "2.14.1", "torchvision": "0.29.1"},
        "index_url": "",
    },
}
TODAY = datetime.date(2025, 11, 1)

WINDOWS_11 = OsInfo("Windows", "10", "10.0.22631", "AMD64", windows_build=22631)
LINUX = OsInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "x86_64")

INTEL_UHD = Gpu(
    "Intel(R) UHD Graphics 630",
    0x8086,
    0x3E92,
    128 * 2**20,
    "31.0.101.2125",
    datetime.date(2025, 3, 14),
    source="DXGI",
)
RADEON = Gpu(
    "AMD Radeon RX 6700 XT",
    0x1002,
    0x73DF,
    12 * 2**30,
    "32.0.12033.1030",
    datetime.date(2025, 2, 20),
    source="DXGI",
)
BASIC_RENDER = Gpu("Microsoft Basic Render Driver", 0x1414, 0x008C, 0, software=True, source="DXGI")


def project(accelerator: str = "directml", python_version: str = "3.11", env_manager="") -> Project:
    return Project(
        project_name="LeNet test",
        package_name="lenet_test",
        accelerator=accelerator,
        python_version=python_version,
        env_manager=env_manager,
        **STACKS[accelerator],
    )


def statuses(findings, check=None):
    return [f.status for f in findings if check is None or f.check == check]


def only(findings, status, check=None):
    found = [f for f in findings if f.status == status and (check is None or f.check == check)]
    assert found, f"no {status} finding for {check}: {findings}"
    return found[0] if len(found) == 1 else found


# ----------------------------------------------------------------------------------- Python


def test_python_3_13_with_directml_fails_and_says_there_is_no_wheel():
    findings = python.check_python(project(), (3, 13, 1), 64)
    finding = only(findings, FAIL, "Python")
    assert "3.13.1" in finding.found and "no 3.13 wheel" in finding.found
    assert "Python 3.11" in finding.fix and "environment.yml" in finding.fix


@pytest.mark.parametrize(
    ("env_manager", "told", "not_told"),
    [
        ("conda", "`conda env create -f environment.yml`", "requirements.txt"),
        ("venv", "`python -m pip install -r requirements.txt`", "environment.yml"),
    ],
)
def test_a_new_environment_is_made_from_the_file_the_project_has(env_manager, told, not_told):
    fix = only(python.check_python(project(env_manager=env_manager), (3, 13, 1), 64), FAIL).fix
    assert told in fix and not_told not in fix
    assert "-m venv .venv" in fix if env_manager == "venv" else "venv" not in fix


def test_python_in_range_is_ok_and_names_the_range():
    findings = python.check_python(project(), (3, 12, 4), 64)
    assert statuses(findings) == [OK]
    assert "3.8 to 3.12" in findings[0].found


def test_python_3_9_is_too_old_for_the_cuda_stack():
    finding = only(python.check_python(project("cuda"), (3, 9, 18), 64), FAIL)
    assert "3.10 to 3.14" in finding.found


def test_32_bit_python_fails():
    finding = only(python.check_python(project(), (3, 11, 9), 32), FAIL)
    assert "32-bit" in finding.found and "64-bit" in finding.fix


def test_in_the_hook_an_unsupported_python_only_warns_and_notes_the_other_python():
    findings = python.check_python(project(python_version="3.11"), (3, 13, 0), 64, "hook")
    assert FAIL not in statuses(findings)
    assert "generator runs on Python 3.13.0" in only(findings, WARN).found
    notes = [f.found for f in findings if f.status == OK]
    assert any("will use Python 3.11" in note for note in notes)


def test_in_the_hook_the_same_python_needs_no_note():
    findings = python.check_python(project(python_version="3.11"), (3, 11, 7), 64, "hook")
    assert len(findings) == 1


# --------------------------------------------------------------------------------------- OS


@pytest.mark.parametrize(
    ("build", "status"), [(15063, FAIL), (16299, OK), (19045, OK), (26100, OK)]
)
def test_directml_needs_windows_10_1709(build, status):
    info = OsInfo("Windows", "10", f"10.0.{build}", "AMD64", windows_build=build)
    findings = system.check_os(project(), info)
    assert statuses(findings) == [status]
    if status == FAIL:
        assert "16299" in findings[0].found and "Windows Update" in findings[0].fix


def test_an_old_windows_build_does_not_matter_for_the_cpu_stack():
    info = OsInfo("Windows", "10", "10.0.15063", "AMD64", windows_build=15063)
    assert statuses(system.check_os(project("cpu"), info)) == [OK]


def test_windows_names_windows_11_from_the_build():
    assert "Windows 11 build 22631" in system.check_os(project(), WINDOWS_11)[0].found


def test_arm64_python_cannot_install_torch_directml():
    info = OsInfo("Windows", "10", "10.0.26100", "ARM64", windows_build=26100)
    finding = only(system.check_os(project(), info), FAIL)
    assert "win_amd64" in finding.found and "x64" in finding.fix


def test_plain_linux_explains_that_directml_is_not_there_and_what_runs_instead():
    finding = only(system.check_os(project(), LINUX), WARN)
    assert "DirectML runs only on Windows 10/11 and in WSL2" in finding.found
    # the directml file installs PyTorch's CPU build on Linux x86_64: CPU, and where CUDA is
    assert "uses the CPU" in finding.found and "cuda environment" in finding.found
    assert statuses(system.check_os(project("cuda"), LINUX)) == [OK]


def test_wsl2_with_gpu_access_is_ok():
    info = OsInfo(
        "Linux", "5.15.153.1-microsoft-standard-WSL2", "#1", "x86_64", None, 2, True, True
    )
    finding = only(system.check_os(project(), info), OK)
    assert "/dev/dxg" in finding.found and "libd3d12.so" in finding.found


def test_wsl2_on_windows_10_says_windows_11_is_needed():
    info = OsInfo(
        "Linux", "5.10.16.3-microsoft-standard-WSL2", "#1", "x86_64", 19045, 2, False, False
    )
    finding = only(system.check_os(project(), info), WARN)
    assert "/dev/dxg" in finding.found and "CPU" in finding.found
    assert "22000" in finding.fix and "19045" in finding.fix


def test_wsl2_on_windows_11_without_dxg_says_to_update_wsl():
    info = OsInfo(
        "Linux", "5.15.90.1-microsoft-standard-WSL2", "#1", "x86_64", 22631, 2, False, False
    )
    assert "wsl --update" in only(system.check_os(project(), info), WARN).fix


def test_wsl1_has_no_gpu():
    info = OsInfo("Linux", "4.4.0-19041-Microsoft", "#1", "x86_64", 19041, 1)
    finding = only(system.check_os(project(), info), WARN)
    assert "WSL 1" in finding.found and "wsl --set-version" in finding.fix
    assert statuses(system.check_os(project("cpu"), info)) == [OK]


def test_macos_on_apple_silicon_uses_mps_and_intel_macs_have_no_wheels():
    arm = OsInfo("Darwin", "23.5.0", "14.5", "arm64")
    assert "MPS" in only(system.check_os(project(), arm), WARN).found
    intel = OsInfo("Darwin", "21.6.0", "12.7.6", "x86_64")
    assert "Intel Macs" in only(system.check_os(project("cpu"), intel), FAIL).found


# ------------------------------------------------------------------------- GPUs on Windows


def windows_gpus(*gpus, accelerator="directml", problems=(), today=TODAY):
    scan = GpuScan(list(gpus), "DXGI", list(problems))
    return envcheck.gpu_findings(project(accelerator), WINDOWS_11, scan, today)


def test_integrated_plus_discrete_lists_both_and_does_not_warn():
    findings = windows_gpus(INTEL_UHD, RADEON, BASIC_RENDER)
    assert WARN not in statuses(findings) and FAIL not in statuses(findings)
    text = "\n".join(f.found for f in findings)
    assert "Intel(R) UHD Graphics 630 (Intel, integrated" in text
    assert "AMD Radeon RX 6700 XT (AMD, discrete, 12.0 GB" in text
    assert "Basic Render" not in text  # the software adapter is skipped
    assert "picks a discrete GPU" in text


def test_only_an_integrated_gpu_warns_and_points_to_the_benchmark():
    finding = only(windows_gpus(INTEL_UHD, BASIC_RENDER), WARN)
    assert "Only an integrated GPU (Intel(R) UHD Graphics 630)" in finding.found
    assert "lenet_test.benchmark" in finding.fix and "--device cpu" in finding.fix


def test_only_the_software_adapter_warns_that_no_gpu_driver_is_active():
    finding = only(windows_gpus(BASIC_RENDER), WARN)
    assert "Only the software adapter (Microsoft Basic Render Driver)" in finding.found
    assert "driver" in finding.fix


def test_a_gpu_without_its_driver_is_named_by_vendor():
    no_driver = Gpu("Microsoft Basic Display Adapter", 0x10DE, 0x2484, source="PowerShell")
    findings = windows_gpus(BASIC_RENDER, no_driver)
    warning = [f for f in findings if "driver is not installed" in f.found]
    assert len(warning) == 1 and "NVIDIA" in warning[0].found
    assert "nvidia.com/drivers" in warning[0].fix


def test_a_driver_dated_over_two_years_ago_warns_with_the_vendor_download():
    old = Gpu("Intel(R) UHD Graphics 620", 0x8086, 0x5917, 128 * 2**20, "27.20.100.8681",
              datetime.date(2020, 9, 10), source="PowerShell")  # fmt: skip
    finding = only(windows_gpus(old, RADEON), WARN, "Driver")
    assert "27.20.100.8681" in finding.found and "dated 2020-09-10" in finding.found
    assert "about 5 years old" in finding.found
    assert "Intel Driver & Support Assistant" in finding.fix


def test_recent_drivers_do_not_warn():
    assert "Driver" not in [f.check for f in windows_gpus(INTEL_UHD, RADEON)]


def test_an_undated_nvidia_driver_is_aged_from_its_version():
    old = Gpu("NVIDIA GeForce RTX 3060", 0x10DE, 0x2503, 12 * 2**30, "31.0.15.2849")  # 528.49
    new = Gpu("NVIDIA GeForce RTX 4070", 0x10DE, 0x2786, 12 * 2**30, "32.0.15.8097")  # 580.97
    finding = only(windows_gpus(old, new), WARN, "Driver")
    assert "RTX 3060" in finding.found and "NVIDIA 528.49" in finding.found


def test_an_undated_wddm_2_driver_is_old_by_its_version_family():
    amd = Gpu("AMD Radeon R9 200 Series", 0x1002, 0x6810, 2 * 2**30, "27.20.20913.2000")
    finding = only(windows_gpus(amd), WARN, "Driver")
    assert "WDDM 2.x" in finding.found and "AMD Software" in finding.fix
    # The version rule only says "released before": two years after that it warns, not sooner.
    assert windows_gpus(amd, today=datetime.date(2024, 6, 1)) == windows_gpus(amd)[:1]


def test_the_cuda_stack_without_an_nvidia_gpu_warns_and_suggests_directml():
    finding = only(windows_gpus(INTEL_UHD, RADEON, accelerator="cuda"), WARN)
    assert "No NVIDIA GPU" in finding.found and "the directml environment" in finding.fix
    assert "accelerator=" not in finding.fix  # the template's words, which a student never saw


def test_the_cuda_13_stack_needs_nvidia_driver_580():
    gpu = Gpu("NVIDIA GeForce RTX 4070", 0x10DE, 0x2786, 12 * 2**30, "32.0.15.6094")  # 560.94
    finding = only(windows_gpus(gpu, accelerator="cuda"), WARN, "Driver")
    assert "560.94" in finding.found and "580" in finding.fix
    assert "Driver" not in [f.check for f in windows_gpus(gpu, accelerator="directml")]


def test_nothing_listed_says_what_went_wrong():
    problems = ["DXGI: OSError: CreateDXGIFactory1 returned 0x887A0004",
                "PowerShell: powershell.exe did not answer within 10 s"]  # fmt: skip
    finding = only(windows_gpus(problems=problems), WARN)
    assert "0x887A0004" in finding.found and "did not answer within 10 s" in finding.found
    assert "Device Manager" in finding.fix


# --------------------------------------------------------------------------- GPUs on Linux


def linux_gpus(*gpus, accelerator="directml", problems=()):
    scan = GpuScan(list(gpus), "/sys/class/drm", list(problems))
    return envcheck.gpu_findings(project(accelerator), LINUX, scan, TODAY)


def test_linux_nvidia_on_nouveau_warns_that_cuda_needs_nvidias_driver():
    gpu = Gpu("NVIDIA GPU 0x2504", 0x10DE, 0x2504, driver="nouveau", source="/sys/class/drm/card1")
    finding = only(linux_gpus(gpu), WARN)
    assert "nouveau" in finding.found and "nvidia-smi" in finding.fix


def test_linux_nvidia_with_the_directml_stack_trains_through_cuda():
    gpu = Gpu("NVIDIA GeForce RTX 3080", 0x10DE, 0x2206, 10 * 2**30, "550.120", driver="nvidia",
              source="nvidia-smi")  # fmt: skip
    findings = linux_gpus(gpu)
    assert statuses(findings) == [OK, OK]
    assert "includes CUDA" in findings[1].found


@pytest.mark.parametrize("accelerator", ["directml", "cuda"])
def test_linux_amd_is_pointed_at_the_rocm_environment_the_environment_line_names(accelerator):
    gpu = Gpu("AMD GPU 0x73df", 0x1002, 0x73DF, 12 * 2**30, driver="amdgpu")
    finding = only(linux_gpus(gpu, accelerator=accelerator), WARN)
    assert "ROCm" in finding.found and finding.code == "GPU-AMD-NO-ROCM-BUILD"
    assert "environments/rocm.txt" in finding.fix and "Environment fix" in finding.fix
    assert "pip install" not in finding.fix  # never ROCm into another stack's environment


def test_linux_intel_arc_is_pointed_at_the_xpu_environment_and_only_noted_for_the_cpu_stack():
    gpu = Gpu("Intel GPU 0x56a0", 0x8086, 0x56A0, driver="i915")  # Arc A770
    assert "environments/xpu.txt" in only(linux_gpus(gpu), WARN).fix
    findings = linux_gpus(gpu, accelerator="cpu")
    assert WARN not in statuses(findings)
    assert "environments/xpu.txt" in findings[-1].fix


def test_linux_without_a_compute_gpu_names_the_display_controller():
    aspeed = Gpu("ASPEED GPU 0x2000", 0x1A03, 0x2000, driver="ast")
    finding = only(linux_gpus(aspeed), WARN)
    assert "No GPU for compute" in finding.found and "ASPEED" in finding.found
    assert statuses(linux_gpus(aspeed, accelerator="cpu")) == [OK]


# --------------------------------------------------------------------------------- running


def test_run_checks_gives_python_os_and_gpu_findings_for_a_described_machine():
    findings = envcheck.run_checks(
        project=project(),
        version_info=(3, 11, 9),
        pointer_bits=64,
        os_facts=WINDOWS_11,
        gpu_scan=GpuScan([INTEL_UHD, RADEON, BASIC_RENDER], "DXGI"),
        today=TODAY,
    )
    checks = [f.check for f in findings]
    assert checks[:2] == ["Python", "OS"] and "GPU" in checks
    assert all(isinstance(f, Finding) for f in findings)


def test_a_check_that_crashes_becomes_a_warning_and_the_others_still_run(monkeypatch):
    def broken_scan(info):
        raise ValueError("unexpected answer from the GPU query")

    monkeypatch.setattr(facts, "scan_gpus", broken_scan)
    findings = envcheck.run_checks(project=project(), os_facts=LINUX)
    internal = only(findings, WARN, "internal")
    assert "ValueError: unexpected answer" in internal.found
    assert [f.check for f in findings][:2] == ["Python", "OS"]


def test_an_unreadable_project_json_is_reported_not_raised(monkeypatch):
    def missing():
        raise FileNotFoundError("project.json")

    monkeypatch.setattr(envcheck, "load_project", missing)
    finding = only(envcheck.run_checks(), FAIL, "Project")
    assert "FileNotFoundError" in finding.found


def test_the_hook_call_works_on_this_machine():
    # Exactly what hooks/post_gen_project.py does, on the real machine: it must not raise.
    findings = envcheck.run_checks(context="hook")
    text = render.format_findings(findings)
    assert findings[0].check == "Python" and "Python" in text


# ------------------------------------------------------------------------------ formatting


def test_format_findings_shows_every_finding_and_the_fixes_numbered_as_the_summary_does():
    same_fix = "pip install -r requirements.txt"
    findings = [
        Finding("Python", OK, "Python 3.11.9 (64-bit) is supported."),
        Finding("torch", WARN, "torch 2.14.1 is installed; this project pins 2.4.1.", same_fix),
        Finding("torchvision", WARN, "torchvision is not installed.", same_fix),
        Finding("OS", FAIL, "Windows 10 build 15063 " + "is too old " * 20, "Update Windows."),
    ]
    text = render.format_findings(findings, width=80, marks=render.AREA_MARKS)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["[\u2713]", "Python"]  # the summary's marks
    assert lines[1].split()[:2] == ["[!]", "torch"]
    assert all(len(line) <= 80 for line in lines)
    fixes = text[text.index("Fixes:") :]
    assert "1. [OS] Update Windows." in fixes  # failures first
    assert "2. [PyTorch] pip install" in fixes  # one fix, listed once, labelled by its area
    assert fixes.count(same_fix) == 1


def test_format_findings_without_fixes_has_no_fix_section():
    assert "Fixes" not in render.format_findings([Finding("Python", OK, "fine")])


# Imports each module of the doctor first, in a fresh tree of the package, and then checks
# that none of them brought torch, or the project's own package, along.
FIRST_IMPORTS = """
import importlib, sys
package, project, names = sys.argv[1], sys.argv[2], sys.argv[3:]
for name in names:
    for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[loaded]
    importlib.import_module(name)
print("torch" in sys.modules, any(m.split(".")[0] == project for m in sys.modules))
"""


def test_every_module_of_the_doctor_imports_first_without_torch_or_the_project(child_limit):
    """The generator's hook imports the doctor before torch exists, and any module may be the
    first one a command or a script imports: an import cycle would show only then. The doctor
    is a package of its own: none of its modules imports the project's package."""
    doctor = Path(envcheck.__file__).resolve().parent
    package = envcheck.__name__.split(".")[0]
    names = sorted(
        ".".join(path.relative_to(doctor.parent).with_suffix("").parts)
        for path in doctor.rglob("*.py")
        if path.name != "__init__.py"
    )
    source = str(doctor.parent)
    paths = [source, str(PROJECT_ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    project = load_project().package_name
    done = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORTS, package, project, *names],
        capture_output=True,
        text=True,
        timeout=child_limit,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False"]
