"""Advice to create an environment checks the NVIDIA driver its CUDA build needs.

The cuda environment's CUDA 13.0 build needs driver 580 or newer; cuda-legacy's CUDA 12.6 build
of the same torch runs on 525.60.13 (Linux) or 527.41 (Windows) and newer. A machine whose
driver runs only cuda-legacy is sent there, with the reason; one whose driver runs neither is
told to update it. The machines are data; the rules run for real.
"""

from __future__ import annotations

import datetime
import re

import pytest

from gpu_doctor import envcheck
from gpu_doctor.gpus import Gpu, GpuScan
from gpu_doctor.os_info import OsInfo
from gpu_doctor.project import Project, load_project

WINDOWS = OsInfo("Windows", "10", "10.0.26100", "AMD64", windows_build=26100)
LINUX = OsInfo("Linux", "6.11.0-19-generic", "#19~24.04.1-Ubuntu SMP", "x86_64")
TODAY = datetime.date(2026, 12, 2)
GB = 2**30


def rtx(name: str, info: OsInfo, driver: str, capability: str) -> Gpu:
    """An NVIDIA GPU as DXGI (Windows: the driver as Windows numbers it) or nvidia-smi lists it."""
    if info is WINDOWS:
        return Gpu(name, 0x10DE, 0x2206, 10 * GB, driver, source="DXGI")
    return Gpu(name, 0x10DE, None, 10 * GB, driver, driver="nvidia", source="nvidia-smi",
               compute_capability=capability, capability_source="nvidia-smi")  # fmt: skip


def stack_project(accelerator: str) -> Project:
    stacks = load_project().stacks
    stack = stacks[accelerator]
    return Project("LeNet test", "lenet_test", accelerator, "3.11", stack["python_min"],
                   stack["python_max"], "", dict(stack["pins"]), stack["index_url"], "",
                   "lenet-test", stacks)  # fmt: skip


def advice(accelerator: str, info: OsInfo, gpu: Gpu, context: str = "hook"):
    """The findings, the recommendation and every fix, for a project of ``accelerator``."""
    details: dict = {}
    active = None if context == "hook" else accelerator
    findings = envcheck.run_checks(context, stack_project(accelerator), (3, 11, 9), 64, info,
                                   GpuScan([gpu], gpu.source), TODAY, details=details,
                                   active=active)  # fmt: skip
    return findings, details["recommendation"], " ".join(f.fix for f in findings)


def created(fixes: str) -> set:
    return set(re.findall(r"\bCreate the ([\w-]+) environment\b", fixes))


# (system, the driver as the system reports it, its NVIDIA number)
DRIVER_570 = [(WINDOWS, "32.0.15.7053", "570.53"), (LINUX, "570.86.10", "570.86.10")]


@pytest.mark.parametrize("info,driver,number", DRIVER_570, ids=["Windows", "Linux"])
@pytest.mark.parametrize("accelerator,context", [("cpu", "hook"), ("cpu", "project"),
                                                 ("directml", "project")])  # fmt: skip
def test_a_driver_older_than_cuda_13_needs_is_sent_to_cuda_legacy(
    info, driver, number, accelerator, context
):
    gpu = rtx("NVIDIA GeForce RTX 3080", info, driver, "8.6")

    findings, best, fixes = advice(accelerator, info, gpu, context)

    assert best["stack"] == "cuda-legacy"
    assert f"NVIDIA driver {number} is older than 580" in best["why"]
    assert "install NVIDIA driver 580 or newer" in best["why"]  # the other way out, named
    assert created(fixes) == {"cuda-legacy"}
    assert [f for f in findings if f.code == "DRIVER-TOO-OLD-FOR-CUDA"] == []


@pytest.mark.parametrize("info,driver", [(WINDOWS, "32.0.15.8129"), (LINUX, "580.95.05")],
                         ids=["Windows", "Linux"])  # fmt: skip
def test_a_driver_that_runs_cuda_13_keeps_cuda(info, driver):
    gpu = rtx("NVIDIA GeForce RTX 3080", info, driver, "8.6")

    _findings, best, fixes = advice("cpu", info, gpu)

    assert best["stack"] == "cuda" and "driver" not in best["why"]
    assert created(fixes) == {"cuda"}


@pytest.mark.parametrize(
    "name,capability,driver,stack",
    [
        ("NVIDIA GeForce RTX 3080", "8.6", "470.256.02", "cuda"),  # too old for both builds
        ("NVIDIA GeForce RTX 5090", "12.0", "570.86.10", "cuda"),  # only CUDA 13 runs it
    ],
)
def test_advice_to_create_an_environment_whose_build_the_driver_cannot_start_says_update_it(
    name, capability, driver, stack
):
    gpu = rtx(name, LINUX, driver, capability)

    findings, best, fixes = advice("cpu", LINUX, gpu)
    (too_old,) = [f for f in findings if f.code == "DRIVER-TOO-OLD-FOR-CUDA"]

    assert best["stack"] == stack and created(fixes) == {stack}
    assert "Install NVIDIA driver 580 or newer" in too_old.fix
    assert f"its CUDA 13.0 build needs NVIDIA driver 580 or newer, not {driver}" in best["why"]
