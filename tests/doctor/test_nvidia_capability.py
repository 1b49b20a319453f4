"""Every NVIDIA GPU in the room gets a stack that runs on it: the compute capability decides.

PyTorch 2.14's CUDA 13.0 build (the cuda stack) runs compute capability 7.5 and newer; its CUDA
12.6 build (cuda-legacy, the last one: 2.15 has none) runs 5.0 to 9.0; nothing runs Kepler or
Fermi any more, so DirectML (Windows, WSL2) or the CPU (Linux) takes those. The capability
comes from nvidia-smi (with and without the compute_cap field), from the model name (DXGI and
sysfs give names only) or from torch. The machines are data; the rules run for real.
"""

from __future__ import annotations

import datetime
import re

import pytest

from gpu_doctor import (
    dxgi,
    envcheck,
    nvidia,
    recommend,
    sysfs,
)
from gpu_doctor.bounded import CommandResult
from gpu_doctor.findings import OK, WARN
from gpu_doctor.gpus import Gpu, GpuScan
from gpu_doctor.os_info import OsInfo
from gpu_doctor.project import Project, load_project
from gpu_doctor.rules import cuda as cuda_rules

WINDOWS = OsInfo("Windows", "10", "10.0.26100", "AMD64", windows_build=26100)
LINUX = OsInfo("Linux", "6.11.0-19-generic", "#19~24.04.1-Ubuntu SMP", "x86_64")
TODAY = datetime.date(2026, 12, 2)
GB = 2**30

# (name as DXGI and nvidia-smi report it, compute capability, stack on Windows, on Linux)
FAMILIES = [
    ("NVIDIA GeForce GTX 470", "2.0", "directml", "cpu"),  # Fermi: Wine's adapter too
    ("NVIDIA GeForce GTX 980M", "5.2", "cuda-legacy", "cuda-legacy"),  # Maxwell laptop
    ("NVIDIA GeForce GTX 1060 6GB", "6.1", "cuda-legacy", "cuda-legacy"),  # Pascal
    ("Tesla P100-PCIE-16GB", "6.0", "cuda-legacy", "cuda-legacy"),  # Pascal, data centre
    ("Tesla V100-SXM2-16GB", "7.0", "cuda-legacy", "cuda-legacy"),  # Volta
    ("NVIDIA GeForce GTX 1650", "7.5", "cuda", "cuda"),  # Turing without RT cores
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6", "cuda", "cuda"),  # Ampere laptop
    ("NVIDIA GeForce RTX 5090", "12.0", "cuda", "cuda"),  # Blackwell: cu126 has no kernels
    ("NVIDIA A100-SXM4-80GB", "8.0", "cuda", "cuda"),
    ("NVIDIA H100 80GB HBM3", "9.0", "cuda", "cuda"),
]
IDS = [family[0] for family in FAMILIES]


def dxgi_adapter(name: str) -> Gpu:
    """A DXGI adapter: a name and ids, no compute capability."""
    return Gpu(name, 0x10DE, 0x1C03, 8 * GB, "32.0.15.8129", source="DXGI")  # driver 581.29


def smi(name: str, capability: str = "") -> Gpu:
    """nvidia-smi's line on Linux, with the compute_cap field when the driver knows it."""
    return Gpu(name, 0x10DE, None, 8 * GB, "580.95.05", driver="nvidia", source="nvidia-smi",
               compute_capability=capability,
               capability_source=nvidia.SMI_SOURCE if capability else "")  # fmt: skip


def stack_project(accelerator: str) -> Project:
    stacks = load_project().stacks
    stack = stacks[accelerator]
    return Project("LeNet test", "lenet_test", accelerator, "3.11", stack["python_min"],
                   stack["python_max"], "", dict(stack["pins"]), stack["index_url"], "",
                   "lenet-test", stacks)  # fmt: skip


def fake_nvidia_smi(monkeypatch, lines: list[str], knows_compute_cap: bool = True) -> list:
    """nvidia-smi as ``sysfs.run_tool`` sees it; returns the queries asked."""
    asked = []

    def run_tool(args, timeout):
        asked.append(args[1])
        if "compute_cap" in args[1] and not knows_compute_cap:
            message = 'Field "compute_cap" is not a valid field to query.\n'
            return CommandResult(tuple(args), 2, stdout=message)
        fields = args[1].count(",") + 1
        text = "".join(", ".join(line.split(", ")[:fields]) + "\n" for line in lines)
        return CommandResult(tuple(args), 0, stdout=text)

    monkeypatch.setattr(sysfs, "run_tool", run_tool)
    return asked


# ---------------------------------------------------------- where the capability comes from


@pytest.mark.parametrize("name,capability,_windows,_linux", FAMILIES, ids=IDS)
def test_nvidia_smi_with_compute_cap_gives_the_capability(
    monkeypatch, name, capability, _windows, _linux
):
    fake_nvidia_smi(monkeypatch, [f"{name}, 580.95.05, 8192, {capability}"])

    (gpu,), problem = sysfs.nvidia_smi_gpus(5.0)

    assert problem == ""
    assert (gpu.name, gpu.compute_capability, gpu.capability_source) == (
        name,
        capability,
        "nvidia-smi",
    )


@pytest.mark.parametrize("name,capability,_windows,_linux", FAMILIES, ids=IDS)
def test_a_driver_without_compute_cap_is_asked_again_and_the_model_name_tells(
    monkeypatch, name, capability, _windows, _linux
):
    asked = fake_nvidia_smi(monkeypatch, [f"{name}, 470.256.02, 8192"], knows_compute_cap=False)

    found, problem = sysfs.nvidia_smi_gpus(5.0)
    (gpu,) = nvidia.with_capabilities(found)

    assert problem == "" and len(asked) == 2 and "compute_cap" not in asked[1]
    assert (gpu.compute_capability, gpu.capability_source) == (capability, "model name")


@pytest.mark.parametrize("name,capability,_windows,_linux", FAMILIES, ids=IDS)
def test_a_windows_adapter_list_gets_the_capability_from_nvidia_smi_else_the_name(
    monkeypatch, name, capability, _windows, _linux
):
    adapters = [
        Gpu("Intel(R) UHD Graphics 630", 0x8086, 0x3E9B, 0, source="DXGI"),
        dxgi_adapter(name),
    ]
    monkeypatch.setattr(dxgi, "nvidia_smi_capabilities", lambda: {})
    named = dxgi.with_capabilities(adapters)
    monkeypatch.setattr(dxgi, "nvidia_smi_capabilities", lambda: {name: capability})
    measured = dxgi.with_capabilities(adapters)

    assert named[0].compute_capability == "" and measured[0].compute_capability == ""
    assert (named[1].compute_capability, named[1].capability_source) == (capability, "model name")
    assert (measured[1].compute_capability, measured[1].capability_source) == (
        capability,
        "nvidia-smi",
    )


def test_a_name_the_table_does_not_know_has_no_capability_and_the_advice_says_how_to_read_it():
    gpu = smi("NVIDIA Some Future GPU")

    best = recommend.recommend(LINUX, [gpu])

    assert nvidia.capability_of(gpu) == ""
    assert best.stack == "cuda" and "--query-gpu=name,compute_cap" in best.why


# ------------------------------------------------------------ the stack each family gets


@pytest.mark.parametrize("name,capability,windows,linux", FAMILIES, ids=IDS)
def test_each_family_gets_a_stack_whose_build_runs_it(name, capability, windows, linux):
    for info, gpu, stack in ((WINDOWS, dxgi_adapter(name), windows), (LINUX, smi(name), linux)):
        best = recommend.recommend(info, [gpu])

        assert best.stack == stack, (info.system, name)
        if stack in nvidia.CUDA_STACKS:
            assert nvidia.runs_on(capability, nvidia.CUDA_ARCHS[stack])
        else:
            assert nvidia.stacks_running(capability) == []


@pytest.mark.parametrize("active", ["cuda", "cuda-legacy"])
@pytest.mark.parametrize("name,capability,windows,linux", FAMILIES, ids=IDS)
def test_on_either_cuda_stack_every_fix_names_the_recommended_environment(
    active, name, capability, windows, linux
):
    for info, gpu, stack in ((WINDOWS, dxgi_adapter(name), windows), (LINUX, smi(name), linux)):
        details: dict = {}
        findings = envcheck.run_checks(
            "project",
            stack_project(active),
            (3, 11, 9),
            64,
            info,
            GpuScan([gpu], gpu.source),
            TODAY,
            details=details,
            active=active,  # the environment in use, not the one this test runs in
        )
        fixes = " ".join(finding.fix for finding in findings)
        named = set(re.findall(r"\b(?:Create|Use) the ([\w-]+) environment\b", fixes))
        runs = nvidia.runs_on(capability, nvidia.CUDA_ARCHS[active])
        warned = [f for f in findings if f.code == "GPU-CUDA-CAPABILITY-UNSUPPORTED"]

        assert details["recommendation"]["stack"] == stack
        assert details["recommendation"]["gpu"]["compute_capability"] == capability
        assert bool(warned) is not runs, (info.system, name, active)
        assert named <= {stack}, (info.system, name, active, fixes)
        if stack != active:
            assert f"Create the {stack} environment" in fixes
        assert not any("CUDA trains on it" in f.found for f in findings if not runs)


def test_the_gpu_line_shows_the_capability_and_where_it_came_from():
    (line,) = [
        f.found
        for f in envcheck.run_checks(
            "project",
            stack_project("cuda"),
            (3, 11, 9),
            64,
            WINDOWS,
            GpuScan([dxgi_adapter("NVIDIA GeForce GTX 1060 6GB")], "DXGI"),
            TODAY,
        )  # fmt: skip
        if f.code == "GPU-FOUND"
    ]
    assert "compute capability 6.1 by its model name" in line


# ------------------------------------------------ the smoke test's failure names the cause

TORCH_WARNING = (
    "NVIDIA GeForce GTX 1060 6GB with CUDA capability sm_61 is not compatible with the current "
    "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_75 sm_80 "
    "sm_86 sm_90 sm_100 sm_120 compute_120."
)
TOO_OLD_WARNING = (
    "Found GPU0 NVIDIA GeForce GTX 470 which is of cuda capability 2.0.\nPyTorch no longer "
    "supports this GPU because it is too old.\nThe minimum cuda capability supported by this "
    "library is 7.5."
)


def test_no_kernel_image_with_torchs_warning_names_gpu_capability_builds_and_file():
    found, fix, follows = cuda_rules.no_kernel_image(
        "CUDA error: no kernel image is available for execution on the device " + TORCH_WARNING,
        {"system": "Linux", "stack": "cuda-legacy", "gpus": []},
        stack_project("cuda"),
    )

    assert "NVIDIA GeForce GTX 1060 6GB has compute capability 6.1 (Pascal)" in found
    assert "this torch (2.14.1+cu130) has no kernels" in found
    assert "PyTorch 2.14.1+cu126 (the cuda-legacy environment; final" in found
    assert fix.startswith("Use the cuda-legacy environment, as the Environment fix says")
    assert follows == "ENV-OTHER-BEST"  # the summary merges it into that fix by this code
    assert "environments/cuda-legacy.txt" in fix and "environments/cuda-legacy.yml" in fix


def test_torchs_too_old_warning_alone_sends_a_fermi_to_directml_on_windows():
    found, fix, follows = cuda_rules.no_kernel_image(
        TOO_OLD_WARNING, {"system": "Windows", "stack": "directml"}, stack_project("cuda")
    )

    assert "NVIDIA GeForce GTX 470 has compute capability 2.0 (Fermi)" in found
    assert "no current PyTorch build" in found
    assert "Use the directml environment" in fix and follows == "ENV-OTHER-BEST"


def test_the_report_gpus_capability_comes_first_and_torchs_reading_last():
    gpus = [{"vendor": "NVIDIA", "name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}]
    error = "CUDA error: no kernel image is available for execution on the device"
    from_report = cuda_rules.no_kernel_image(error, {"system": "Linux", "gpus": gpus})
    from_torch = cuda_rules.no_kernel_image(error, {}, None, [("Tesla P100-PCIE-16GB", "6.0")])
    unknown = cuda_rules.no_kernel_image(error, {}, None)

    assert "Tesla V100-SXM2-16GB has compute capability 7.0" in from_report[0]
    assert "Tesla P100-PCIE-16GB has compute capability 6.0" in from_torch[0]
    assert "nvidia-smi --query-gpu=name,compute_cap" in unknown[1]
    assert cuda_rules.no_kernel_image("CUDA out of memory", {}) is None


# -------------------------------------------------------- driver minimums per CUDA build


@pytest.mark.parametrize(
    "active,info,gpu,warns",
    [
        # cu126: 527.41 on Windows (31.0.15.2737 is 527.37), 525.60.13 on Linux.
        (
            "cuda-legacy",
            WINDOWS,
            Gpu(
                "NVIDIA GeForce GTX 1060 6GB", 0x10DE, 0x1C03, 6 * GB, "31.0.15.2737", source="DXGI"
            ),
            "527.41",
        ),  # fmt: skip
        (
            "cuda-legacy",
            WINDOWS,
            Gpu(
                "NVIDIA GeForce GTX 1060 6GB", 0x10DE, 0x1C03, 6 * GB, "31.0.15.2741", source="DXGI"
            ),
            None,
        ),  # fmt: skip
        (
            "cuda-legacy",
            LINUX,
            Gpu(
                "Tesla P100-PCIE-16GB",
                0x10DE,
                None,
                16 * GB,
                "525.60.11",
                driver="nvidia",
                source="nvidia-smi",
            ),
            "525.60.13",
        ),  # fmt: skip
        (
            "cuda-legacy",
            LINUX,
            Gpu(
                "Tesla P100-PCIE-16GB",
                0x10DE,
                None,
                16 * GB,
                "535.183.01",
                driver="nvidia",
                source="nvidia-smi",
            ),
            None,
        ),  # fmt: skip
        # cu130: the R580 branch on both systems.
        (
            "cuda",
            LINUX,
            Gpu(
                "NVIDIA GeForce RTX 3060 Laptop GPU",
                0x10DE,
                None,
                6 * GB,
                "575.64.05",
                driver="nvidia",
                source="nvidia-smi",
            ),
            "580",
        ),  # fmt: skip
        (
            "cuda",
            WINDOWS,
            Gpu(
                "NVIDIA GeForce RTX 3060 Laptop GPU",
                0x10DE,
                0x2520,
                6 * GB,
                "32.0.15.8129",
                source="DXGI",
            ),
            None,
        ),  # 581.29  # fmt: skip
        # A V100 in the cuda environment: the driver that matters is cuda-legacy's.
        (
            "cuda",
            LINUX,
            Gpu(
                "Tesla V100-SXM2-16GB",
                0x10DE,
                None,
                16 * GB,
                "470.256.02",
                driver="nvidia",
                source="nvidia-smi",
            ),
            "525.60.13",
        ),  # fmt: skip
        # A GTX 470: no CUDA build runs it, so no driver makes CUDA work.
        (
            "cuda",
            WINDOWS,
            Gpu("NVIDIA GeForce GTX 470", 0x10DE, 0x06CD, GB, "23.21.13.9135", source="DXGI"),
            None,
        ),  # fmt: skip
    ],
)
def test_each_cuda_build_has_its_driver_minimum_per_system(active, info, gpu, warns):
    findings = envcheck.run_checks(
        "project", stack_project(active), (3, 11, 9), 64, info, GpuScan([gpu], gpu.source), TODAY
    )
    too_old = [f for f in findings if f.code == "DRIVER-TOO-OLD-FOR-CUDA"]

    if warns is None:
        assert too_old == []
    else:
        (finding,) = too_old
        assert finding.status == WARN and f"Install NVIDIA driver {warns} or newer" in finding.fix


# ------------------------------------------------------ the doctor and the support table


def test_the_doctors_cuda_archs_and_builds_are_the_support_tables():
    stacks = load_project().stacks
    for name in nvidia.CUDA_STACKS:
        stack = stacks[name]
        assert nvidia.CUDA_ARCHS[name] == tuple(stack["cuda_archs"]), name
        assert nvidia.CUDA_BUILDS[name] == stack["pins"]["torch"] + stack["local_version"]
        assert set(stack["driver_min"]) == {"Windows", "Linux"}
    assert stacks["cuda-legacy"]["final"] is True


def test_a_gpu_the_active_build_runs_is_ok():
    findings = envcheck.run_checks(
        "project", stack_project("cuda"), (3, 11, 9), 64, LINUX,
        GpuScan([smi("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6")], "nvidia-smi"), TODAY,
    )  # fmt: skip
    (line,) = [f for f in findings if f.code == "GPU-CUDA-OK"]

    assert line.status == OK and "compute capability 8.6" in line.found
