"""A GPU hidden from torch by an environment variable is named as such, not as a driver fault;
and the advice for any backend torch cannot use is chosen by its reason's code, never its words.

With CUDA_VISIBLE_DEVICES="" (or a value that names no GPU of this machine) torch sees no GPU,
while nvidia-smi and the GPU list still show it with a good driver: the advice names the
variable and its value instead of "check nvidia-smi and update the driver". Likewise
HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES for ROCm, ZE_AFFINITY_MASK for Intel XPU.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from lenet_mnist.machinery import devices, discovery  # the default project's (conftest.py)

from gpu_doctor import visible_devices
from gpu_doctor.findings import WARN
from gpu_doctor.project import Project, load_project
from gpu_doctor.rules import device_checks as device_rules

CPU = devices.DeviceOption("cpu", None, "CPU, x86_64, 8 threads", torch.device("cpu"), {})
# (reason, code) as the project's probes give them when torch sees no GPU
CUDA_NONE = ("torch has CUDA support but sees no GPU", discovery.NO_DEVICE)
ROCM_NONE = ("torch has ROCm support but sees no GPU", discovery.NO_ROCM_DEVICE)
XPU_NONE = ("no Intel XPU (needs Intel's torch build, 2.5 or later)", discovery.NO_DEVICE)
ALL_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                 "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR")  # fmt: skip


def stack_project(accelerator: str) -> Project:
    stacks = load_project().stacks
    stack = stacks[accelerator]
    return Project("LeNet test", "lenet_test", accelerator, "3.11", stack["python_min"],
                   stack["python_max"], "", dict(stack["pins"]), stack["index_url"], "",
                   "lenet-test", stacks)  # fmt: skip


def unavailable_line(accelerator: str, kind: str, reason: tuple, environ: dict):
    """The Device line of ``kind`` that torch could not see, in a project of ``accelerator``."""
    words, code = reason
    found = devices.Discovery([CPU], [devices.Unavailable(kind, words, False, code)])
    findings = device_rules.device_findings(found, stack_project(accelerator),
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
    found = devices.Discovery([CPU], [devices.Unavailable("cuda", CUDA_NONE[0], False,
                                                          CUDA_NONE[1])])  # fmt: skip

    findings = device_rules.device_findings(found, stack_project("cuda"))

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


@pytest.mark.parametrize("value", ["0", "0,1", " 0 "])
def test_a_variable_that_names_the_first_gpu_is_not_blamed_and_the_driver_advice_stays(value):
    """CUDA_VISIBLE_DEVICES=0 on a one-GPU machine is valid: torch seeing no GPU is the driver's."""
    line = unavailable_line("cuda", "cuda", CUDA_NONE, {"CUDA_VISIBLE_DEVICES": value})

    assert "CUDA_VISIBLE_DEVICES" not in line.fix
    assert "check that `nvidia-smi` lists the GPU" in line.fix


def test_a_cuda_failure_with_the_variable_set_keeps_its_own_reason():
    # The variable is set, but torch saw the GPU and failed on it: the failure's advice stands.
    reason = "CUDA failed to initialise: RuntimeError: CUDA driver version is insufficient"
    line = unavailable_line("cuda", "cuda", (reason, discovery.INIT_FAILED),
                            {"CUDA_VISIBLE_DEVICES": "0"})  # fmt: skip

    assert "CUDA_VISIBLE_DEVICES" not in line.fix


def test_a_cpu_project_that_hides_the_gpus_on_purpose_is_not_told_to_show_them():
    # CUDA_VISIBLE_DEVICES="" is the usual way to keep a CUDA torch on the CPU.
    found = devices.Discovery([CPU], [devices.Unavailable("cuda", CUDA_NONE[0], False,
                                                          CUDA_NONE[1])])  # fmt: skip

    findings = device_rules.device_findings(found, stack_project("cpu"),
                                            environ={"CUDA_VISIBLE_DEVICES": ""})  # fmt: skip

    assert not any("CUDA_VISIBLE_DEVICES" in f.fix for f in findings)
    assert [f.code for f in findings] == ["DEVICE-FOUND", "DEVICE-NOT-HERE"]


# ------------------------------------------------ the reason codes: the advice, by code alone

WORDS = "words the doctor must not read"  # a reason's words, shown but never decided on
DRIVER_CODES = [discovery.LOAD_FAILED, discovery.INIT_FAILED, discovery.NO_DEVICE,
                discovery.SMOKE_FAILED, discovery.CHECK_FAILED]  # fmt: skip
DOCTOR = Path(device_rules.__file__).resolve().parents[1]


def advice(accelerator: str, kind: str, code: str, installed: bool = True):
    """The Device finding for ``kind`` unusable for ``code``, in a project of ``accelerator``."""
    found = devices.Discovery([CPU], [devices.Unavailable(kind, WORDS, installed, code)])
    findings = device_rules.device_findings(found, stack_project(accelerator), environ={})
    (line,) = [f for f in findings if f.code.startswith("DEVICE-UNAVAILABLE-")]
    return line


def test_the_doctor_knows_every_reason_code_the_project_gives():
    assert visible_devices.REASON_CODES == discovery.REASON_CODES
    assert set(device_rules.BRIEF) == set(discovery.REASON_CODES)


@pytest.mark.parametrize(
    "accelerator,kind,codes,says",
    [
        ("directml", "directml", [discovery.NOT_INSTALLED], "torch-directml"),
        ("directml", "directml", [discovery.LIBRARY_MISSING], "DirectML needs Direct3D 12"),
        ("directml", "directml", DRIVER_CODES, "Update the GPU driver"),
        ("cuda", "cuda", [discovery.NOT_BUILT], "Install the CUDA build"),
        ("cuda", "cuda", DRIVER_CODES + [discovery.NO_ROCM_DEVICE], "CUDA needs an NVIDIA GPU"),
        ("rocm-windows", "cuda", [discovery.NOT_BUILT], "Reinstall torch from AMD's index"),
        ("rocm-windows", "cuda", DRIVER_CODES, "AMD's current Adrenalin driver"),
        ("xpu", "xpu", DRIVER_CODES + [discovery.NOT_BUILT], "XPU needs an Intel Arc"),
    ],
)  # fmt: skip
def test_each_reason_code_reaches_its_advice(accelerator, kind, codes, says):
    for code in codes:
        line = advice(accelerator, kind, code)
        assert says in line.fix, code
        assert line.brief == f"{kind}: {device_rules.BRIEF[code]}."
        assert line.found == f"{kind} unavailable: {WORDS}."  # the words, shown as they are


def test_a_gpu_hidden_from_rocm_is_told_by_its_code(monkeypatch):
    line = unavailable_line("rocm", "cuda", (WORDS, discovery.NO_ROCM_DEVICE),
                            {"HIP_VISIBLE_DEVICES": "2"})  # fmt: skip
    assert line.fix.startswith("HIP_VISIBLE_DEVICES is set to '2' in this environment")


def test_no_rule_of_the_doctor_reads_the_words_of_a_reason():
    """The project's reasons reach the doctor as ``.reason``: it may only show them (in an
    f-string, or as a value of the --json report), never test or take apart their words."""
    misuses = []
    for path in sorted(DOCTOR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                if isinstance(child, ast.Attribute) and child.attr == "reason":
                    shown = isinstance(parent, ast.FormattedValue) or (
                        isinstance(parent, ast.Dict) and child in parent.values
                    )
                    if not shown:
                        misuses.append(f"{path.relative_to(DOCTOR)}:{child.lineno}")
    assert misuses == []


def nesting(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


def test_the_backends_a_machine_does_not_have_are_listed_without_nested_parentheses():
    unavailable = [
        devices.Unavailable("xpu", "no Intel XPU (needs Intel's torch build, 2.5 or later)",
                            False, discovery.NO_DEVICE),
        devices.Unavailable("mps", "no Apple MPS (Apple silicon Macs only)", False,
                            discovery.NO_DEVICE),
    ]  # fmt: skip
    findings = device_rules.device_findings(devices.Discovery([CPU], unavailable),
                                            stack_project("cpu"), environ={})  # fmt: skip
    (line,) = [f for f in findings if f.code == "DEVICE-NOT-HERE"]
    assert line.found.startswith("Not on this machine or build: xpu: no Intel XPU (needs ")
    assert nesting(line.found) == 1
