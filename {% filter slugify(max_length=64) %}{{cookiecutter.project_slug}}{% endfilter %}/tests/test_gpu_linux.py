"""GPUs on Linux: /sys/class/drm trees built in a temporary folder, nvidia-smi/rocm-smi fakes."""

from __future__ import annotations

import json

import pytest

from {{ cookiecutter.package_name }}.doctor import (
    envcheck,
    gpu_linux,
)
from {{ cookiecutter.package_name }}.doctor.bounded import (
    CommandResult,
)
from {{ cookiecutter.package_name }}.doctor.envcheck import (
    OK,
    WARN,
)
from {{ cookiecutter.package_name }}.doctor.os_info import (
    OsInfo,
)
from {{ cookiecutter.package_name }}.machinery.project import (
    Project,
)

NVIDIA_SMI_OUTPUT = "NVIDIA GeForce RTX 3080, 550.120, 10240\n"
ROCM_SMI_OUTPUT = json.dumps(
    {
        "card0": {
            "Card Series": "Navi 22 [Radeon RX 6700/6700 XT/6750 XT / 6800M/6850M XT]",
            "Card Model": "0x73df",
            "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
            "Card SKU": "EXT94513",
            "GFX Version": "gfx1031",
        }
    }
)


def card(root, name, vendor, device, driver, vram=None, slot="0000:01:00.0"):
    """/sys/class/drm/<name>/device with the files the kernel writes (no symlinks needed)."""
    folder = root / name / "device"
    folder.mkdir(parents=True)
    (folder / "vendor").write_text(f"0x{vendor:04x}\n")
    (folder / "device").write_text(f"0x{device:04x}\n")
    (folder / "uevent").write_text(
        f"DRIVER={driver}\nPCI_CLASS=30000\nPCI_ID={vendor:04X}:{device:04X}\n"
        f"PCI_SLOT_NAME={slot}\n"
    )
    if vram is not None:
        (folder / "mem_info_vram_total").write_text(f"{vram}\n")


@pytest.fixture
def drm(tmp_path):
    root = tmp_path / "sys" / "class" / "drm"
    root.mkdir(parents=True)
    (root / "version").write_text("drm 1.1.0 20060810\n")
    (root / "renderD128").mkdir()
    (root / "card0-eDP-1").mkdir()
    return root


@pytest.fixture
def tools(monkeypatch):
    """Replace nvidia-smi and rocm-smi: answers[name] is a CommandResult; calls are recorded."""
    answers, calls = {}, []

    def run_tool(args, timeout):
        calls.append((args[0], timeout))
        missing = CommandResult(tuple(args), None, problem=f"{args[0]} was not found")
        return answers.get(args[0], missing)

    monkeypatch.setattr(gpu_linux, "run_tool", run_tool)
    return answers, calls


def test_cards_are_read_by_vendor_id_and_driver_ignoring_connectors_and_render_nodes(drm):
    card(drm, "card0", 0x8086, 0x9A49, "i915", slot="0000:00:02.0")
    card(drm, "card1", 0x10DE, 0x2206, "nvidia")
    (drm / "card2" / "device").mkdir(parents=True)  # simpledrm: no PCI vendor file
    gpus = gpu_linux.drm_gpus(drm)
    assert [(g.vendor, g.device_id, g.driver) for g in gpus] == [
        ("Intel", 0x9A49, "i915"),
        ("NVIDIA", 0x2206, "nvidia"),
    ]
    assert gpus[0].name == "Intel GPU 0x9a49" and gpus[0].source.endswith("card0")


def test_card10_sorts_after_card2(drm):
    for number in (10, 2):
        card(drm, f"card{number}", 0x1002, 0x7400 + number, "amdgpu")
    assert [g.source[-6:] for g in gpu_linux.drm_gpus(drm)] == ["/card2", "card10"]


def test_no_drm_folder_means_no_cards(tmp_path):
    assert gpu_linux.drm_gpus(tmp_path / "missing") == []


def test_nvidia_names_and_driver_version_come_from_nvidia_smi(drm, tools):
    answers, calls = tools
    card(drm, "card0", 0x8086, 0x9A49, "i915")
    card(drm, "card1", 0x10DE, 0x2206, "nvidia")
    answers["nvidia-smi"] = CommandResult(("nvidia-smi",), 0, NVIDIA_SMI_OUTPUT)
    scan = gpu_linux.scan(drm, timeout=4)
    assert calls == [("nvidia-smi", 4)]
    nvidia = scan.gpus[0]
    assert nvidia.name == "NVIDIA GeForce RTX 3080" and nvidia.driver_version == "550.120"
    assert nvidia.device_id == 0x2206 and nvidia.dedicated_memory == 10 * 2**30
    assert scan.problems == [] and "nvidia-smi" in scan.source


def test_nvidia_smi_is_not_started_without_an_nvidia_card(drm, tools):
    _answers, calls = tools
    card(drm, "card0", 0x8086, 0x9A49, "i915")
    gpu_linux.scan(drm)
    assert calls == []


@pytest.mark.parametrize(
    ("answer", "seen"),
    [
        (CommandResult(("nvidia-smi",), None, problem="nvidia-smi did not answer within 5 s"),
         "did not answer within 5 s"),
        (CommandResult(("nvidia-smi",), 9, "NVIDIA-SMI has failed because it couldn't "
                       "communicate with the NVIDIA driver."),
         "exited with 9: NVIDIA-SMI has failed"),
        (CommandResult(("nvidia-smi",), 0, "No devices were found"), "unreadable output"),
    ],
)  # fmt: skip
def test_a_failing_nvidia_smi_is_a_warning_and_the_card_stays_listed(drm, tools, answer, seen):
    answers, _calls = tools
    card(drm, "card0", 0x10DE, 0x2206, "nvidia")
    answers["nvidia-smi"] = answer
    scan = gpu_linux.scan(drm)
    assert [g.name for g in scan.gpus] == ["NVIDIA GPU 0x2206"]
    assert len(scan.problems) == 1 and seen in scan.problems[0]
    findings = envcheck.check_gpus(project(), LINUX, scan)
    assert any(f.status == WARN and seen in f.found for f in findings)


def test_amd_names_come_from_rocm_smi_and_its_absence_is_no_problem(drm, tools):
    answers, _calls = tools
    card(drm, "card0", 0x1002, 0x73DF, "amdgpu", vram=12 * 2**30)
    plain = gpu_linux.scan(drm)
    assert plain.problems == [] and plain.gpus[0].dedicated_memory == 12 * 2**30
    answers["rocm-smi"] = CommandResult(("rocm-smi",), 0, ROCM_SMI_OUTPUT)
    named = gpu_linux.scan(drm).gpus[0]
    assert named.name.startswith("Navi 22 [Radeon RX 6700") and "gfx1031" in named.name
    assert named.dedicated_memory == 12 * 2**30


def test_wsl2_has_no_cards_and_asks_nvidia_smi(tmp_path, tools):
    answers, calls = tools
    assert gpu_linux.scan(tmp_path / "drm", wsl=True).problems == []  # no NVIDIA GPU: fine
    answers["nvidia-smi"] = CommandResult(("nvidia-smi",), 0, NVIDIA_SMI_OUTPUT)
    scan = gpu_linux.scan(tmp_path / "drm", wsl=True)
    assert [g.name for g in scan.gpus] == ["NVIDIA GeForce RTX 3080"]
    assert [name for name, _ in calls] == ["nvidia-smi", "nvidia-smi"]


def test_an_amd_laptop_is_told_about_rocm_and_the_intel_igpu_about_xpu(drm, tools):
    card(drm, "card0", 0x8086, 0x46A6, "i915")
    card(drm, "card1", 0x1002, 0x73DF, "amdgpu", vram=12 * 2**30)
    findings = envcheck.check_gpus(project(), LINUX, gpu_linux.scan(drm))
    fixes = " ".join(f.fix for f in findings if f.status == WARN)
    assert "/whl/rocm6.1" in fixes and "/whl/xpu" in fixes


def test_an_old_radeon_driver_card_gets_no_rocm_advice(drm, tools):
    card(drm, "card0", 0x1002, 0x6798, "radeon")
    (finding,) = [f for f in envcheck.check_gpus(project(), LINUX, gpu_linux.scan(drm)) if f.fix]
    assert "'radeon'" in finding.found and "--index-url" not in finding.fix


def test_a_cpu_project_on_a_machine_with_no_gpu_is_fine(drm, tools):
    (finding,) = envcheck.check_gpus(project("cpu"), LINUX, gpu_linux.scan(drm))
    assert finding.status == OK and "CPU" in finding.found


LINUX = OsInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "x86_64")


def project(accelerator="directml"):
    pins = {"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"}
    if accelerator != "directml":
        pins = {"torch": "2.14.1", "torchvision": "0.29.1"}
    return Project("LeNet test", "lenet_test", accelerator, "3.11", "3.8", "3.12", "", pins, "")


def test_names_from_nvidia_smi_and_sysfs_lose_nuls(drm, tools):
    answers, _calls = tools
    card(drm, "card0", 0x10DE, 0x06CD, "nvidia\x00")
    answers["nvidia-smi"] = CommandResult(
        ("nvidia-smi",), 0, "GeForce GTX 470\x00, 390.157\x00, 1280\n"
    )
    (gpu,) = gpu_linux.scan(drm, timeout=4).gpus
    assert (gpu.name, gpu.driver_version, gpu.driver) == ("GeForce GTX 470", "390.157", "nvidia")
