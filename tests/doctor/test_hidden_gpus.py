"""A GPU hidden from torch by an environment variable is named as such, not as a driver fault.

With CUDA_VISIBLE_DEVICES="" (or a value that names no GPU of this machine) torch sees no GPU,
while nvidia-smi and the GPU list still show it with a good driver: the advice names the
variable and its value instead of "check nvidia-smi and update the driver". Likewise
HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES for ROCm, ZE_AFFINITY_MASK for Intel XPU.
"""

from __future__ import annotations

import pytest
import torch
from lenet_on_directml.machinery import devices  # the default project's (conftest.py)

from gpu_doctor.findings import WARN
from gpu_doctor.project import Project, load_project
from gpu_doctor.rules import device_checks as device_rules

CPU = devices.DeviceOption("cpu", None, "CPU, x86_64, 8 threads", torch.device("cpu"), {})
CUDA_NONE = "torch has CUDA support but sees no GPU"
ROCM_NONE = "torch has ROCm support but sees no GPU"
XPU_NONE = "no Intel XPU (needs Intel's torch build, 2.5 or later)"
ALL_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                 "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR")  # fmt: skip


def stack_project(accelerator: str) -> Project:
    stacks = load_project().stacks
    stack = stacks[accelerator]
    return Project("LeNet test", "lenet_test", accelerator, "3.11", stack["python_min"],
                   stack["python_max"], "", dict(stack["pins"]), stack["index_url"], "",
                   "lenet-test", stacks)  # fmt: skip


def unavailable_line(accelerator: str, kind: str, reason: str, environ: dict):
    """The Device line of ``kind`` that torch could not see, in a project of ``accelerator``."""
    discovery = devices.Discovery([CPU], [devices.Unavailable(kind, reason, False)])
    findings = device_rules.device_findings(discovery, stack_project(accelerator),
                                            environ=environ)  # fmt: skip
    (line,) = [f for f in findings if f.code == f"DEVICE-UNAVAILABLE-{kind.upper()}"]
    return line


@pytest.mark.parametrize(
    "accelerator,kind,reason,environ,named",
    [
        ("cuda", "cuda", CUDA_NONE, {"CUDA_VISIBLE_DEVICES": ""},
         "CUDA_VISIBLE_DEVICES is set to an empty value"),
        ("cuda", "cuda", CUDA_NONE, {"CUDA_VISIBLE_DEVICES": "-1"},
         "CUDA_VISIBLE_DEVICES is set to '-1'"),
        ("cuda-legacy", "cuda", CUDA_NONE, {"CUDA_VISIBLE_DEVICES": "3"},
         "CUDA_VISIBLE_DEVICES is set to '3'"),
        ("rocm", "cuda", ROCM_NONE, {"HIP_VISIBLE_DEVICES": "2"},
         "HIP_VISIBLE_DEVICES is set to '2'"),
        ("rocm", "cuda", ROCM_NONE, {"ROCR_VISIBLE_DEVICES": "GPU-nonexistent"},
         "ROCR_VISIBLE_DEVICES is set to 'GPU-nonexistent'"),
        ("xpu", "xpu", XPU_NONE, {"ZE_AFFINITY_MASK": "4"}, "ZE_AFFINITY_MASK is set to '4'"),
    ],
)  # fmt: skip
def test_a_variable_that_hides_every_gpu_is_named_with_its_value(
    accelerator, kind, reason, environ, named
):
    line = unavailable_line(accelerator, kind, reason, environ)
    variable = next(iter(environ))

    assert line.status == WARN
    assert line.fix.startswith(f"{named} in this environment, and torch sees no GPU through it")
    assert f"`Remove-Item Env:{variable}`" in line.fix and f"`unset {variable}`" in line.fix
    assert "nvidia-smi" not in line.fix and "driver" not in line.fix


def test_the_variable_is_read_from_the_environment_verify_install_runs_in(monkeypatch):
    for variable in ALL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    discovery = devices.Discovery([CPU], [devices.Unavailable("cuda", CUDA_NONE, False)])

    findings = device_rules.device_findings(discovery, stack_project("cuda"))

    assert any("CUDA_VISIBLE_DEVICES is set to an empty value" in f.fix for f in findings)


@pytest.mark.parametrize(
    "accelerator,kind,reason,environ",
    [
        ("cuda", "cuda", CUDA_NONE, {}),  # nothing hides it: the driver is what to check
        ("cuda", "cuda", CUDA_NONE, {"HIP_VISIBLE_DEVICES": ""}),  # CUDA does not read it
        ("xpu", "xpu", XPU_NONE, {"ZE_AFFINITY_MASK": ""}),  # empty: every device visible
    ],
)
def test_without_a_hiding_variable_the_advice_is_unchanged(accelerator, kind, reason, environ):
    line = unavailable_line(accelerator, kind, reason, environ)

    assert "VISIBLE_DEVICES" not in line.fix and "ZE_AFFINITY_MASK" not in line.fix
    if kind == "cuda":
        assert "check that `nvidia-smi` lists the GPU" in line.fix


def test_a_cuda_failure_with_the_variable_set_keeps_its_own_reason():
    # The variable is set, but torch saw the GPU and failed on it: the failure's advice stands.
    reason = "CUDA failed to initialise: RuntimeError: CUDA driver version is insufficient"
    line = unavailable_line("cuda", "cuda", reason, {"CUDA_VISIBLE_DEVICES": "0"})

    assert "CUDA_VISIBLE_DEVICES" not in line.fix


def test_a_cpu_project_that_hides_the_gpus_on_purpose_is_not_told_to_show_them():
    # CUDA_VISIBLE_DEVICES="" is the usual way to keep a CUDA torch on the CPU.
    discovery = devices.Discovery([CPU], [devices.Unavailable("cuda", CUDA_NONE, False)])

    findings = device_rules.device_findings(discovery, stack_project("cpu"),
                                            environ={"CUDA_VISIBLE_DEVICES": ""})  # fmt: skip

    assert not any("CUDA_VISIBLE_DEVICES" in f.fix for f in findings)
    assert [f.code for f in findings] == ["DEVICE-FOUND", "DEVICE-NOT-HERE"]
