"""verify_install: the verdicts and exit codes a user (or an instructor's script) relies on.

The device list is replaced with ``devices.Discovery`` objects describing other machines; a
"DirectML adapter" there is a CPU device in disguise, so the smoke test, the training step
and the timing run for real, with the default project's package (lenet_mnist: conftest.py
bakes it). The project runs the real thing end to end (its tests/test_verify_install.py).
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from lenet_mnist import (  # the default project's package (conftest.py)
    model,
    train,
)
from lenet_mnist.machinery import (
    devices,
    directml_probe,
    discovery,
)

from gpu_doctor import (
    active_environment,
    areas,
    checkup,
    envcheck,
    facts,
    first_look,
    probes,
    project_venv,
    render,
    stepwise,
)
from gpu_doctor.codes import (
    CODES,
)
from gpu_doctor.findings import (
    FAIL,
    NO_ACTION,
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
from gpu_doctor.render import (
    AREA_LINE_WIDTH,
    display_width,
)
from gpu_doctor.rules import (
    packages as package_rules,
)
from gpu_doctor.verdict import (
    Report,
)

# DirectML on Linux outside WSL2, as the project's probe reports it
LIBD3D12 = directml_probe.load_failure(
    "OSError: libd3d12.so: cannot open shared object file: No such file or directory"
)
CPU = devices.DeviceOption(
    "cpu", None, "CPU, x86_64, 8 threads", torch.device("cpu"), {"float64": True}
)
RADEON = devices.DeviceOption(  # an adapter as torch_directml reports it, computing on the CPU
    "directml", 1, "AMD Radeon RX 6700 XT", torch.device("cpu"),
    {"float64": False, "adapter_rank": 2},
)  # fmt: skip
DML_WARNING = (
    "The operator '{}' is not currently supported on the DML backend and will fall back to "
    "run on the CPU. This may have performance implications."
)
PINS = {
    "directml": {"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
    "cpu": {"torch": "2.14.1", "torchvision": "0.29.1"},
}


def project(accelerator="directml"):
    return Project(
        "LeNet test", "lenet_test", accelerator, "3.11", "3.8", "3.12", "", PINS[accelerator], ""
    )


@pytest.fixture
def machine(monkeypatch):
    """Describe the machine: machine(accelerator, options, unavailable, lenet=..., train=...)."""
    monkeypatch.setattr(probes, "TIMED_STEPS", 1)

    def describe(accelerator="directml", options=(), unavailable=(), lenet=None, trainer=None):
        found = devices.Discovery(list(options) + [CPU], list(unavailable))
        monkeypatch.setattr(checkup, "load_project", lambda: project(accelerator))
        fake_devices = SimpleNamespace(discover=lambda: found, choose=devices.choose)
        fake_model = SimpleNamespace(LeNet5=lenet or model.LeNet5)
        modules = (fake_devices, fake_model, trainer or train)
        monkeypatch.setattr(checkup, "load_modules", lambda: modules)

    return describe


def run_json(capsys, *args):
    code = checkup.main(["--json", *args])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["exit_code"] == code
    return code, report


def findings(report, check, status=None):
    return [f for f in report["findings"] if f["check"] == check and status in (None, f["status"])]


def test_directml_that_cannot_load_falls_back_to_the_cpu_with_exit_3(machine, capsys):
    machine(unavailable=[LIBD3D12])
    code, report = run_json(capsys)
    assert code == checkup.EXIT_CPU_FALLBACK == 3
    assert report["verdict"]["status"] == "cpu-fallback"
    assert report["chosen"]["label"] == "cpu"
    (device,) = findings(report, "Device", WARN)
    assert "libd3d12.so" in device["found"] and "Direct3D 12" in device["fix"]


def test_a_working_directml_adapter_exits_0_with_its_float64_support(machine, capsys):
    machine(options=[RADEON])
    assert checkup.main(["-v"]) == checkup.EXIT_OK == 0
    out = capsys.readouterr().out
    # Rows wrap where their text is long: the timing row's is as long as the times measured
    # (1913.5 ms a step on a busy machine), so every row is read as words.
    words = " ".join(out.split())
    assert "directml:1: AMD Radeon RX 6700 XT, float64 NOT supported" in words
    # The device as --device names it, never torch's privateuseone:N.
    assert "LeNet forward+backward on directml:1 vs the CPU: largest relative difference" in words
    assert "Verdict (exit 0): Ready to train on directml:1 (AMD Radeon RX 6700 XT)." in words
    assert re.search(r"ms on directml:1, [\d.]+ ms on the CPU \([\d.]+x\)", words)  # both timed


def test_several_gpus_of_the_chosen_kind_name_the_torchrun_command(machine, capsys):
    gpus = [
        devices.DeviceOption("cuda", index, "NVIDIA RTX 4090", torch.device("cpu"), {})
        for index in (0, 1)
    ]
    machine(options=gpus)  # the project's stack is no matter: auto picks the GPU
    _code, report = run_json(capsys)
    (count,) = [f for f in report["findings"] if f["code"] == "DEVICE-COUNT"]
    assert count["check"] == "Chosen" and count["status"] == OK
    assert count["found"].startswith("2 cuda devices on this machine: `torchrun --standalone ")
    assert report["chosen"]["count"] == 2
    torchrun = report["chosen"]["torchrun"]
    assert "--nproc-per-node=2" in torchrun and f"`{torchrun}`" in count["found"]

    machine(options=gpus[:1])
    _code, report = run_json(capsys)
    (count,) = [f for f in report["findings"] if f["code"] == "DEVICE-COUNT"]
    assert count["found"] == "1 cuda device on this machine."
    assert (report["chosen"]["count"], report["chosen"]["torchrun"]) == (1, None)


def test_the_table_comes_first_then_the_verdict_then_the_fixes(machine, capsys):
    machine(unavailable=[LIBD3D12])
    checkup.main(["-v"])
    out = capsys.readouterr().out
    assert out.index("Smoke test") < out.index("Verdict (exit 3)") < out.index("Fixes:")


def test_a_device_that_computes_wrong_is_a_broken_install(machine, capsys):
    machine(options=[RADEON], lenet=DriftingLeNet)
    code, report = run_json(capsys)
    assert code == checkup.EXIT_BROKEN == 4
    (smoke,) = findings(report, "Smoke test", FAIL)
    assert "largest relative difference" in smoke["found"] and "--device cpu" in smoke["fix"]
    assert report["smoke_test"]["passed"] is False
    assert report["smoke_test"]["max_relative_error"] > probes.SMOKE_TOLERANCE
    assert report["verdict"]["message"].startswith("Not ready to train")


@pytest.mark.filterwarnings("ignore:The operator")  # the timed steps after the capture
def test_cpu_fallback_warnings_are_reported_by_operator_once_each(machine, capsys):
    def train_step(*args):
        for name in ("aten::lerp.Scalar_out", "aten::_foreach_add_.List", "aten::lerp.Scalar_out"):
            warnings.warn(DML_WARNING.format(name), UserWarning, stacklevel=1)
        return train.train_step(*args)

    trainer = SimpleNamespace(
        TrainConfig=train.TrainConfig, build_optimizer=train.build_optimizer, train_step=train_step
    )
    machine(options=[RADEON], trainer=trainer)
    code, report = run_json(capsys)
    assert report["fallback_operators"] == ["aten::lerp.Scalar_out", "aten::_foreach_add_.List"]
    (warning,) = findings(report, "CPU fallback", WARN)
    assert "2 operator(s)" in warning["found"] and "aten::lerp.Scalar_out" in warning["found"]
    assert code == 0  # slower, but the device computes right


def test_without_fallback_warnings_the_step_is_clean(machine, capsys):
    machine(options=[RADEON])
    _code, report = run_json(capsys)
    assert report["fallback_operators"] == []
    assert findings(report, "CPU fallback", OK)
    assert report["timing"]["device_ms"] > 0 and report["timing"]["cpu_ms"] > 0


@pytest.mark.parametrize(
    ("accelerator", "args", "code"),
    [("cpu", [], 0), ("directml", ["--device", "cpu"], 0), ("directml", [], 3)],
)
def test_the_cpu_is_a_success_only_when_it_was_the_choice(machine, capsys, accelerator, args, code):
    machine(accelerator)
    assert run_json(capsys, *args)[0] == code


def test_asking_for_a_device_that_is_not_there_names_the_available_ones(machine, capsys):
    machine(unavailable=[LIBD3D12])
    code, report = run_json(capsys, "--device", "directml:0")
    assert code == 3
    (chosen,) = findings(report, "Chosen", WARN)
    assert "not available" in chosen["found"] and "cpu (CPU" in chosen["found"]


def test_a_device_that_is_not_there_is_said_without_a_class_name(machine, capsys):
    """verify_install's line once began "DeviceNotAvailable: ..."."""
    machine(unavailable=[LIBD3D12])
    checkup.main(["--verbose", "--device", "directml:0"])
    said = capsys.readouterr().out

    assert "Device 'directml:0' is not available" in said and "DeviceNotAvailable" not in said


def test_an_adapter_name_is_printed_and_written_without_the_nul_of_its_c_string(machine, capsys):
    """torch_directml.device_name() gave 'NVIDIA GeForce GTX 470\\x00' on a real machine."""
    fake_directml = SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        device_name=lambda index: "NVIDIA GeForce GTX 470\x00",
        device=lambda index=None: torch.device("cpu"),
        has_float64_support=lambda index: True,
    )
    options, unavailable = devices.probe_directml(load=lambda: fake_directml)
    machine(options=options, unavailable=unavailable)

    checkup.main(["-v"])
    out = capsys.readouterr().out
    _code, report = run_json(capsys)

    assert "directml:0: NVIDIA GeForce GTX 470, float64 supported." in out
    assert "Chosen          directml:0 (NVIDIA GeForce GTX 470)." in out
    assert "Ready to train on directml:0 (NVIDIA GeForce GTX 470)." in out
    assert "\x00" not in out
    assert report["chosen"]["name"] == report["devices"][0]["name"] == "NVIDIA GeForce GTX 470"


def test_missing_torch_is_a_finding_with_exit_4(machine, capsys, monkeypatch):
    machine()

    def no_torch():
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr(checkup, "import_torch", no_torch)
    code, report = run_json(capsys)
    assert code == 4 and report["verdict"]["status"] == "broken"
    (finding,) = findings(report, "torch", FAIL)
    assert "cannot be imported" in finding["found"] and "requirements.txt" in finding["fix"]


@pytest.mark.parametrize(
    ("module", "distribution"),
    [("tqdm", "tqdm"), ("PIL", "pillow"), ("yaml", "PyYAML"), ("matplotlib", "matplotlib"),
     ("torchvision", "torchvision")],
)  # fmt: skip
def test_a_missing_dependency_of_the_project_is_named_and_torch_is_not_blamed(
    machine, capsys, monkeypatch, tmp_path, module, distribution
):
    """torch imports, but a module of the project imports a package that is not installed."""
    machine()
    package = f"fake_project_{module.lower()}"  # a name of its own: imports are cached
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "console.py").write_text(f"import {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, module, None)  # `import <module>` now fails
    monkeypatch.setattr(
        checkup, "load_modules", lambda: importlib.import_module(f"{package}.console")
    )

    assert checkup.main(["-v"]) == 4
    out = read_output(capsys.readouterr().out)

    assert ("FAIL", "torch") not in out.rows and "force-reinstall" not in out.text
    (found,) = [text for check, text in out.row_texts if check == "Requirements"]
    assert f"imports {module} (package {distribution}), which is not installed" in found
    assert out.verdict == (
        f"Verdict (exit 4): Not ready to train: the project's code needs {module}, which is not "
        "installed."
    )
    (fix,) = [fix for label, fix in out.fixes if label == "Environment"]
    assert fix.startswith("Install the project's requirements: `")
    assert "requirements.txt" in fix or "environment.yml" in fix
    assert "Traceback" not in out.text


def test_the_requirements_fix_names_the_environment_file_of_the_active_stack():
    stacks = {"xpu": {"python_min": "3.10", "python_max": "3.14", "pins": PINS["cpu"]}}
    room = Project("LeNet test", "lenet_test", "directml", "3.11", "3.8", "3.12", "",
                   PINS["directml"], "", "venv", stacks=stacks)  # fmt: skip
    error = ModuleNotFoundError("No module named 'tqdm'", name="tqdm")

    default = package_rules.project_import_finding(error, room)
    other = package_rules.project_import_finding(error, room.for_stack("xpu"))

    assert "`python -m pip install -r requirements.txt`" in default.fix
    assert "`python -m pip install -r environments/xpu.txt`" in other.fix


@pytest.mark.parametrize(
    ("installed", "status", "text"),
    [
        ({"torch": "2.4.1+cpu", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
         [OK, OK, OK], "pinned 2.4.1"),
        ({"torch": "2.14.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
         [WARN, OK, OK], "torch 2.14.1 is installed; this project pins 2.4.1"),
        ({"torch": "2.4.1", "torchvision": "0.19.1"},
         [OK, WARN, OK], "torch-directml is not installed (pinned: 0.2.5.dev240914)"),
        ({"torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
         [FAIL, OK, OK], "torch is not installed"),
    ],
)  # fmt: skip
def test_installed_packages_against_the_pins(installed, status, text):
    found, packages = package_rules.check_packages(project(), installed.get)
    assert [f.check for f in found] == ["torch", "torch-directml", "torchvision"]
    assert [f.status for f in found] == status
    assert any(text in f.found for f in found)
    assert packages["torch-directml"]["pinned"] == "0.2.5.dev240914"
    assert all("torch-directml==0.2.5.dev240914" in f.fix for f in found if f.status != OK)


def test_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as stopped:
        checkup.main(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out and "--json" in out
    assert "  0  the chosen accelerator works" in out
    assert "  3  training would fall back to the CPU" in out
    assert "  4  the install is broken" in out


@pytest.mark.parametrize("device", ["xyz", "cuda:x", "directml:"])
def test_a_device_that_is_no_device_name_is_a_usage_error(capsys, device):
    with pytest.raises(SystemExit) as stopped:
        checkup.main(["--device", device])
    assert stopped.value.code == 2  # like every other command's bad argument, not 3
    assert f"unknown device {device!r}" in capsys.readouterr().err


@pytest.mark.parametrize("encoding", ["ascii", "cp1252", "cp936"])
def test_json_reads_back_the_same_on_a_console_that_cannot_show_every_name(
    machine, monkeypatch, encoding
):
    """A Chinese project name through an ASCII pipe or a Western Windows console."""
    import io

    name = "手写数字识别 – Ünïcode 😀"
    machine(unavailable=[LIBD3D12])
    named = Project(name, "lenet_test", "directml", "3.11", "3.8", "3.12", "", PINS["directml"], "")
    monkeypatch.setattr(checkup, "load_project", lambda: named)
    raw = io.BytesIO()
    console = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", console)
    checkup.main(["--json"])
    console.flush()
    report = json.loads(raw.getvalue().decode(encoding))
    assert report["project"]["name"] == name


@pytest.mark.slow
def test_a_reader_that_stops_early_ends_the_json_quietly(child_limit):
    """`verify_install --json | head -c 10`: no BrokenPipeError, the verdict's exit code (the
    default project's doctor.pyz, in a child Python)."""
    paths = [str(PROJECT_ROOT / "doctor.pyz"), str(PROJECT_ROOT / "src")]
    child = subprocess.Popen(
        [sys.executable, "-m", checkup.__name__, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(paths)),
        cwd=PROJECT_ROOT,  # not this repository, whose gpu_doctor/ would come first
    )
    child.stdout.close()  # the reader is gone before the report is written
    child.stdout = None  # so that communicate() reads stderr only (Windows reads both)
    _out, err = child.communicate(timeout=child_limit)
    text = err.decode("utf-8", "replace")
    assert "BrokenPipeError" not in text and "Traceback" not in text
    assert child.returncode in (checkup.EXIT_OK, checkup.EXIT_CPU_FALLBACK)


# ------------------------------------------------------------------------------ the advice
# Every fix and verdict may point only at lines that are printed, and every install command
# it suggests must keep the project's pinned stack. Each phrasing that points elsewhere is
# listed here with what it needs to be true; any other "the ... line" or "above" fails.

REFERENCES = {
    r"the \[!\] lines above say why": lambda out: any(s == "WARN" for s, _ in out.rows),
    r"the fixes below": lambda out: bool(out.fixes),
    r"the pins above": lambda out: any("pinned" in text for _, text in out.row_texts),
    r"the GPU fix says how PyTorch can use your GPU": lambda out: any(
        "GPU" in label and ("ROCm" in fix or "XPU" in fix) for label, fix in out.fixes
    ),
    r"report the reason on this line": lambda out: any("Device" in label for label, _ in out.fixes),
    r"the Environment line": lambda out: any(check == "Environment" for _, check in out.rows),
    # a fix names another by its area, as the fixes are labelled
    **{
        rf"the {area} fix": lambda out, area=area: any(area in label for label, _ in out.fixes)
        for area in areas.AREAS
    },
}
POINTER = re.compile(
    r"\bthe [\w-]+ (?:lines?|fix(?:es)?)\b|\babove\b|\bbelow\b|\bthis line\b", re.IGNORECASE
)
ROW = re.compile(r"^  (\[.\])  (\S.*?)  +(\S.*)$")
STATUS_OF_MARK = {"[\u2713]": "ok", "[!]": "WARN", "[\u2717]": "FAIL"}  # rows: the JSON's words
FIX = re.compile(r"^  \d+\. \[([^\]]+)\] (.*)$")
DETAIL = re.compile(r"^     - ([\w, -]+): (.*)$")
PIP = re.compile(r"`(?:python -m |uv )?pip install ([^`]*)`")


@dataclass
class Printed:
    """verify_install's text output, read back the way a person reads it."""

    rows: list  # (status, check) per table row
    row_texts: list  # (check, text) per row, continuation lines joined
    verdict: str
    go_on: str
    fixes: list  # (label, fix text)
    text: str


def read_output(text: str) -> Printed:
    lines = text.splitlines()
    rows, row_texts, fixes, verdict, go_on = [], [], [], "", ""
    in_fixes = False
    for number, line in enumerate(lines):
        if line.startswith("Verdict (exit"):  # the verdict, then "You can ...", both wrapped
            said = lines[number : lines.index("", number) if "" in lines[number:] else None]
            start = next(i for i, text in enumerate(said) if text.startswith("You "))
            verdict, go_on = " ".join(said[:start]), " ".join(said[start:])
        elif line == "Fixes:":
            in_fixes = True
        elif in_fixes and FIX.match(line):
            fixes.append(list(FIX.match(line).groups()))
        elif in_fixes and DETAIL.match(line):  # -v: the words of a fix that follows this one
            fixes.append(list(DETAIL.match(line).groups()))
        elif in_fixes and line.startswith("     ") and fixes:
            fixes[-1][1] += " " + line.strip()
        elif not in_fixes and ROW.match(line):
            mark, check, found = ROW.match(line).groups()
            rows.append((STATUS_OF_MARK[mark], check))
            row_texts.append([check, found])
        elif not in_fixes and line.startswith(" " * 10) and row_texts:
            row_texts[-1][1] += " " + line.strip()
    return Printed(rows, row_texts, verdict, go_on, [tuple(f) for f in fixes], text)


def unresolved_pointers(out: Printed) -> list:
    """Phrases in the fixes and the verdict that point at a line which is not printed."""
    problems = []
    for where, text in [("verdict", out.verdict + " " + out.go_on)] + out.fixes:
        covered = []
        for phrase, holds in REFERENCES.items():
            for match in re.finditer(phrase, text, re.IGNORECASE):
                covered.append(match.span())
                if not holds(out):
                    problems.append(f"[{where}] {phrase!r}, but no such line is printed")
        for match in POINTER.finditer(text):
            if not any(start <= match.start() < end for start, end in covered):
                problems.append(f"[{where}] points at {match.group()!r}: {text}")
    return problems


def broken_installs(out: Printed, pins: dict, stacks: dict | None = None) -> list:
    """Install commands that would move a package off the project's pins, or off the pins of
    the stack whose environment they make (AMD's device command for rocm-windows)."""
    problems = []
    for command in PIP.findall(" ".join(text for _, text in out.fixes)):
        stack = stack_of_install(f"pip install {command}", "")
        wanted = (stacks or {}).get(stack, {}).get("pins", pins)
        words = iter(command.split())
        for word in words:
            if word in ("-r", "--index-url", "--extra-index-url"):
                next(words, None)
            elif not word.startswith("-"):
                name, _, version = word.strip('"').partition("==")
                name = name.split("[")[0]  # 'torch[device-gfx1101]': the pinned torch, one extra
                if wanted.get(name) != version.split("+")[0]:  # '2.14.1+xpu' is the pin's build
                    problems.append(f"`pip install {command}` installs {word}")
    return problems


WINDOWS = OsInfo("Windows", "10", "10.0.22631", "AMD64", windows_build=22631)
LINUX_X86 = OsInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "x86_64")
WSL2_NO_DXG = OsInfo(
    "Linux", "5.15.153.1-microsoft-standard-WSL2", "#1 SMP", "x86_64", wsl=2, windows_build=22631
)
OLD_RADEON = Gpu("AMD Radeon R9 200 Series", 0x1002, 0x6658, 2 * 2**30, "15.201.1151.1008",
                 datetime.date(2015, 11, 4), source="DXGI")  # fmt: skip
NEW_RADEON = Gpu("AMD Radeon RX 6700 XT", 0x1002, 0x73DF, 12 * 2**30, "32.0.12033.1030",
                 datetime.date(2025, 2, 20), source="DXGI")  # fmt: skip
OLD_GEFORCE = Gpu("NVIDIA GeForce GTX 1060", 0x10DE, 0x1C03, 6 * 2**30, "31.0.15.1694",
                  datetime.date(2022, 7, 21), source="DXGI")  # fmt: skip
LINUX_AMD = Gpu("AMD GPU 0x73df", 0x1002, 0x73DF, 12 * 2**30, driver="amdgpu")
LINUX_INTEL = Gpu("Intel GPU 0x56a0", 0x8086, 0x56A0, driver="i915")
NOUVEAU = Gpu("NVIDIA GPU 0x2504", 0x10DE, 0x2504, driver="nouveau", source="/sys/class/drm/card1")
ASPEED = Gpu("ASPEED GPU 0x2000", 0x1A03, 0x2000, driver="ast")
BASIC = Gpu("Microsoft Basic Render Driver", 0x1414, 0x008C, 0, software=True, source="DXGI")
NOT_INSTALLED = {
    "directml": devices.directml_missing_reason("directml"),
    "cpu": devices.directml_missing_reason("cpu"),
    "cuda": devices.directml_missing_reason("cuda"),
}
DML_FAILED = directml_probe.init_failure("RuntimeError: Unknown error -2107306512")
# (kind, reason, installed, code[, torch's error]): backends as the project's probes report them
DML_ABSENT = {key: ("directml", reason, False, discovery.NOT_INSTALLED)
              for key, reason in NOT_INSTALLED.items()}  # fmt: skip
CPU_TORCH = ("cuda", "this torch build has no CUDA or ROCm support", False, discovery.NOT_BUILT)
CUDA_NONE = ("cuda", "torch has CUDA support but sees no GPU", False, discovery.NO_DEVICE)
CUDA_NONE_INSTALLED = CUDA_NONE[:2] + (True, discovery.NO_DEVICE)
NO_ADAPTER = ("directml", "torch_directml sees no DirectX 12 adapter", True, discovery.NO_DEVICE)
XPU_NONE = ("xpu", "no Intel XPU (needs Intel's torch build, 2.5 or later)", False,
            discovery.NO_DEVICE)  # fmt: skip
# AMD on Linux, as the kernel's KFD topology names them (no ROCm installed to name them better).
LINUX_RX_6700_XT = Gpu("AMD GPU 0x73df", 0x1002, 0x73DF, 12 * 2**30, driver="amdgpu",
                       source="/sys/class/drm", gfx_target="gfx1031",
                       render_node="/dev/dri/renderD128")  # fmt: skip
LINUX_780M = Gpu("AMD GPU 0x15bf", 0x1002, 0x15BF, 512 * 2**20, driver="amdgpu",
                 source="/sys/class/drm", gfx_target="gfx1103",
                 render_node="/dev/dri/renderD128")  # fmt: skip
LINUX_B580 = Gpu("Intel GPU 0xe20b", 0x8086, 0xE20B, driver="xe", source="/sys/class/drm")
RX_7800 = Gpu("AMD Radeon RX 7800 XT", 0x1002, 0x747E, 16 * 2**30, "32.0.21013.1000",
              datetime.date(2025, 1, 20), source="DXGI")  # fmt: skip
ROCM_RX_6700 = devices.DeviceOption(  # torch's ROCm build lists it as cuda:0 (a CPU in disguise)
    "cuda", 0, "AMD Radeon RX 6700 XT", torch.device("cpu"), {"float64": True}
)
DML_RX_7800 = devices.DeviceOption(
    "directml", 0, "AMD Radeon RX 7800 XT", torch.device("cpu"),
    {"float64": False, "adapter_rank": 2},
)  # fmt: skip
HIP_ERROR = (
    "HIP error: invalid device function\nHIP kernel errors might be asynchronously reported at "
    "some other API call, so the stacktrace below might be incorrect.\nFor debugging consider "
    "passing AMD_SERIALIZE_KERNEL=3\nCompile with `TORCH_USE_HIP_DSA` to enable device-side "
    "assertions.\n"
)
HIP_FAILED = "RuntimeError: " + HIP_ERROR.splitlines()[0]
HIP_SMOKE = ("cuda", f"cuda:0 failed a smoke test: {HIP_FAILED}", True, discovery.SMOKE_FAILED,
             HIP_FAILED)  # fmt: skip


def lenet_failing_on_the_device(error: str, layer: str = "conv1", base=model.LeNet5) -> type:
    """A LeNet whose ``layer`` raises ``error`` once moved to the 'device'."""

    class FailingLeNet(base):
        def to(self, *args, **kwargs):
            moved = super().to(*args, **kwargs)

            def forward(x):
                raise RuntimeError(error)

            getattr(moved, layer).forward = forward
            return moved

    return FailingLeNet


# ROCm without kernels for the GPU's gfx target: the first layer on the 'device' fails.
HipLeNet = lenet_failing_on_the_device(HIP_ERROR)
INVALID_IMAGE = "HIP error: invalid device image (hipErrorInvalidImage)"
# AMD's ROCm build for Windows without this GPU's kernels: every kernel fails.
InvalidImageLeNet = lenet_failing_on_the_device(INVALID_IMAGE)


ROCM_RX_7800 = devices.DeviceOption(  # AMD's Windows build lists it as cuda:0
    "cuda", 0, "AMD Radeon RX 7800 XT", torch.device("cpu"), {"float64": True}
)
AMD_WINDOWS_PINS = {"torch": "2.14.0+rocm10.1.0", "torchvision": "0.29.0a0+rocm10.1.0"}
CUDA_OLD = "RuntimeError: CUDA driver version is insufficient"
CUDA_INIT = ("cuda", f"CUDA failed to initialise: {CUDA_OLD}", True, discovery.INIT_FAILED,
             CUDA_OLD)  # fmt: skip
NO_IMAGE = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
NO_KERNEL_IMAGE = ("cuda", f"cuda:0 failed a smoke test: {NO_IMAGE}", True,
                   discovery.SMOKE_FAILED, NO_IMAGE)  # fmt: skip
GTX_1060_SMI = Gpu("NVIDIA GeForce GTX 1060 6GB", 0x10DE, 0x1C03, 6 * 2**30, "580.95.05",
                   driver="nvidia", source="nvidia-smi", compute_capability="6.1",
                   capability_source="nvidia-smi")  # fmt: skip
V100_OLD_SMI = Gpu("Tesla V100-SXM2-16GB", 0x10DE, 0x1DB1, 16 * 2**30, "470.256.02",
                   driver="nvidia", source="nvidia-smi")  # R470: no compute_cap field  # fmt: skip
GTX_470_DXGI = Gpu("NVIDIA GeForce GTX 470", 0x10DE, 0x06CD, 1280 * 2**20, "23.21.13.9135",
                   source="DXGI")  # Fermi's last driver, 391.35  # fmt: skip
RTX_5090_SMI = Gpu("NVIDIA GeForce RTX 5090", 0x10DE, 0x2B85, 32 * 2**30, "580.95.05",
                   driver="nvidia", source="nvidia-smi", compute_capability="12.0",
                   capability_source="nvidia-smi")  # fmt: skip
CUDA_PINS = {"torch": "2.14.1", "torchvision": "0.29.1"}

# (name, accelerator, OS, GPUs, found devices, unavailable (kind, reason, installed), request,
#  a LeNet class or None, the installed packages: "pins" or a dict)
SITUATIONS = [
    ("linux-no-gpu-no-d3d12", "directml", LINUX_X86, [ASPEED], [],
     [LIBD3D12], "auto", None, "pins"),
    ("linux-amd-no-d3d12", "directml", LINUX_X86, [LINUX_AMD], [],
     [LIBD3D12], "auto", None, "pins"),
    ("linux-intel-no-d3d12", "directml", LINUX_X86, [LINUX_INTEL], [],
     [LIBD3D12], "auto", None, "pins"),
    ("linux-nouveau-dml-missing", "directml", LINUX_X86, [NOUVEAU], [],
     [DML_ABSENT["directml"]], "auto", None,
     {"torch": "2.4.1", "torchvision": "0.19.1"}),
    ("wsl2-without-dxg", "directml", WSL2_NO_DXG, [], [],
     [LIBD3D12], "auto", None, "pins"),
    ("windows-old-driver-dml-fails", "directml", WINDOWS, [OLD_RADEON], [],
     [DML_FAILED], "auto", None, "pins"),
    ("windows-dml-fails", "directml", WINDOWS, [NEW_RADEON], [],
     [DML_FAILED], "auto", None, "pins"),
    ("windows-software-adapter", "directml", WINDOWS, [BASIC], [],
     [NO_ADAPTER], "auto", None, "pins"),
    ("windows-dml-works", "directml", WINDOWS, [NEW_RADEON], [RADEON], [], "auto", None, "pins"),
    ("windows-dml-computes-wrong", "directml", WINDOWS, [NEW_RADEON], [RADEON], [], "auto",
     "drifting", "pins"),
    ("windows-cpu-chosen", "directml", WINDOWS, [NEW_RADEON], [RADEON], [], "cpu", None, "pins"),
    ("windows-asks-for-a-missing-device", "directml", WINDOWS, [NEW_RADEON], [],
     [DML_FAILED], "directml:1", None, "pins"),
    ("cpu-project-on-windows", "cpu", WINDOWS, [NEW_RADEON], [],
     [DML_ABSENT["cpu"]], "auto", None, "pins"),
    ("cpu-project-newer-torch", "cpu", LINUX_X86, [LINUX_INTEL], [],
     [DML_ABSENT["cpu"]], "auto", None,
     {"torch": "2.15.0", "torchvision": "0.29.1"}),
    ("cuda-project-cpu-torch", "cuda", WINDOWS, [OLD_GEFORCE], [],
     [CPU_TORCH, DML_ABSENT["cuda"]], "auto",
     None, "pins"),
    ("cuda-project-old-driver", "cuda", WINDOWS, [OLD_GEFORCE], [],
     [CUDA_INIT], "auto", None, "pins"),
    ("cuda-project-linux-amd", "cuda", LINUX_X86, [LINUX_AMD], [],
     [CUDA_NONE], "auto", None, "pins"),
    ("torch-missing", "directml", WINDOWS, [NEW_RADEON], [], [], "auto", None,
     {"torchvision": "0.19.1"}),
    ("linux-no-gpu-directml-missing", "directml", LINUX_X86, [ASPEED], [],
     [DML_ABSENT["directml"]], "auto", None,
     {"torch": "2.4.1", "torchvision": "0.19.1"}),
    ("linux-rx-6700-xt-rocm-smoke-fails", "rocm", LINUX_X86, [LINUX_RX_6700_XT], [ROCM_RX_6700],
     [], "auto", HipLeNet, "pins"),
    ("linux-rx-6700-xt-directml-project", "directml", LINUX_X86, [LINUX_RX_6700_XT], [],
     [LIBD3D12], "auto", None, "pins"),
    ("linux-780m-rocm-kernels-fail", "rocm", LINUX_X86, [LINUX_780M], [],
     [HIP_SMOKE], "auto", None, "pins"),
    ("linux-780m-directml-project", "directml", LINUX_X86, [LINUX_780M], [],
     [LIBD3D12], "auto", None, "pins"),
    ("windows-rx-7800-dml-works", "directml", WINDOWS, [RX_7800], [DML_RX_7800], [], "auto",
     None, "pins"),
    ("windows-rocm-windows-works", "rocm-windows", WINDOWS, [RX_7800], [ROCM_RX_7800], [],
     "auto", None, {**AMD_WINDOWS_PINS, "amd-torch-device-gfx1101": "2.14.0"}),
    ("windows-rocm-windows-no-kernels", "rocm-windows", WINDOWS, [RX_7800], [ROCM_RX_7800], [],
     "auto", InvalidImageLeNet, AMD_WINDOWS_PINS),
    ("windows-rocm-windows-wrong-kernels", "rocm-windows", WINDOWS, [RX_7800], [ROCM_RX_7800],
     [], "auto", InvalidImageLeNet, {**AMD_WINDOWS_PINS, "amd-torch-device-gfx1100": "2.14.0"}),
    ("windows-rocm-windows-no-gpu-visible", "rocm-windows", WINDOWS, [RX_7800], [],
     [CUDA_NONE_INSTALLED], "auto", None,
     {**AMD_WINDOWS_PINS, "amd-torch-device-gfx1101": "2.14.0"}),
    ("cuda-project-gtx-1060-no-kernel-image", "cuda", LINUX_X86, [GTX_1060_SMI], [],
     [NO_KERNEL_IMAGE], "auto", None, "pins"),
    ("cuda-project-v100-old-driver-no-kernel-image", "cuda", LINUX_X86, [V100_OLD_SMI], [],
     [NO_KERNEL_IMAGE], "auto", None, "pins"),
    ("cuda-project-windows-gtx-470", "cuda", WINDOWS, [GTX_470_DXGI], [],
     [NO_KERNEL_IMAGE], "auto", None, "pins"),
    ("cuda-legacy-project-rtx-5090-no-kernel-image", "cuda-legacy", LINUX_X86, [RTX_5090_SMI],
     [], [NO_KERNEL_IMAGE], "auto", None, "pins"),
    ("cuda-legacy-project-gtx-1060-cpu-torch", "cuda-legacy", WINDOWS, [OLD_GEFORCE], [],
     [CPU_TORCH, DML_ABSENT["cuda"]], "auto",
     None, {"torch": "2.14.1", "torchvision": "0.29.1"}),
    ("xpu-project-with-a-cuda-build", "xpu", LINUX_X86, [LINUX_B580], [],
     [XPU_NONE,
      CUDA_NONE], "auto", None,
     {"torch": "2.14.1+cu130", "torchvision": "0.29.1+cu130"}),
]  # fmt: skip


class DriftingLeNet(model.LeNet5):
    """A LeNet whose copy on the 'device' is off, as a buggy driver would make it."""

    def to(self, *args, **kwargs):
        moved = super().to(*args, **kwargs)
        with torch.no_grad():
            moved.fc3.bias.add_(0.5)
        return moved


def advice_project(accelerator, env_manager):
    """A project of the support table's stacks (this project's own), as generated for
    ``accelerator``."""
    stack = load_project().stacks[accelerator]
    return Project("LeNet test", "lenet_test", accelerator, "3.11", stack["python_min"],
                   stack["python_max"], "", dict(stack["pins"]), stack["index_url"],
                   env_manager, "lenet-test", load_project().stacks)  # fmt: skip


def installed_pins(project):
    """The pins as the stack's environment file installs them: torch with its build tag."""
    tag = project.stacks[project.accelerator].get("local_version", "")
    built = ("torch", "torchvision")
    return {
        name: version + (tag if name in built else "") for name, version in project.pins.items()
    }


@pytest.fixture
def situation(monkeypatch):
    """Print verify_install's text for one situation; returns (exit code, Printed, Project)."""
    monkeypatch.setattr(probes, "TIMED_STEPS", 1)
    check_environment = envcheck.run_checks
    check_packages = package_rules.check_packages

    def describe(name, accelerator, os_facts, gpus, options, unavailable, request, lenet,
                 installed, env_manager, args=(), verbose=True):  # fmt: skip
        chosen = advice_project(accelerator, env_manager)
        packages = installed_pins(chosen) if installed == "pins" else installed
        # The environment this test runs in must not leak in: its name and its torch.
        monkeypatch.setattr(active_environment, "environment_stack", lambda *args, **kwargs: None)
        # ...nor its Python, which is no project's .venv: the student's is (uv's fixes act on it).
        monkeypatch.setattr(project_venv, "check_interpreter", lambda project: [])
        directml = "torch-directml" in packages
        faked_stack = active_environment.stack_of_torch(packages.get("torch"), directml)
        monkeypatch.setattr(active_environment, "installed_stack", lambda *args: faked_stack)
        found = devices.Discovery(
            list(options) + [CPU],
            [
                u if isinstance(u, devices.Unavailable) else devices.Unavailable(*u)
                for u in unavailable
            ],
        )
        scan = GpuScan(list(gpus), "DXGI" if os_facts.is_windows else "/sys/class/drm")
        monkeypatch.setattr(checkup, "load_project", lambda: chosen)
        monkeypatch.setattr(
            checkup.envcheck,
            "run_checks",
            lambda context, project, **extra: check_environment(
                context,
                project,
                (3, 11, 9),
                64,
                os_facts,
                scan,
                datetime.date(2025, 11, 1),
                **extra,
            ),
        )
        monkeypatch.setattr(
            package_rules, "check_packages", lambda project: check_packages(project, packages.get)
        )
        monkeypatch.setattr(checkup.amd_windows, "distribution_names", lambda: list(packages))
        hip = packages.get("hip", "7.1.52802" if "+rocm" in packages.get("torch", "") else None)
        monkeypatch.setattr(torch.version, "hip", hip)  # a stand-in for AMD's HIP build
        fake_devices = SimpleNamespace(discover=lambda: found, choose=devices.choose)
        lenet = lenet if isinstance(lenet, type) else DriftingLeNet if lenet else model.LeNet5
        modules = (fake_devices, SimpleNamespace(LeNet5=lenet), train)
        monkeypatch.setattr(checkup, "load_modules", lambda: modules)
        if "torch" not in packages:
            monkeypatch.setattr(checkup, "import_torch", no_torch)
        shown = ["-v"] if verbose else []  # -v: every finding, the table the tests read
        code = checkup.main([*shown, "--device", request, *args])
        return code, chosen

    return describe


def no_torch():
    raise ModuleNotFoundError("No module named 'torch'", name="torch")


@pytest.mark.slow
@pytest.mark.parametrize("env_manager", ["conda", "venv", "uv"])
@pytest.mark.parametrize("case", SITUATIONS, ids=[case[0] for case in SITUATIONS])
def test_every_fix_points_only_at_printed_lines_and_keeps_the_stack(
    situation, capsys, case, env_manager
):
    code, chosen = situation(*case, env_manager)
    out = read_output(capsys.readouterr().out)

    assert out.verdict and out.go_on, out.text
    assert unresolved_pointers(out) == [], out.text
    assert broken_installs(out, chosen.pins, chosen.stacks) == [], out.text
    if chosen.accelerator != "directml":  # torch-directml would bring torch 2.4.1
        assert "torch-directml==" not in out.text, out.text
    other_files = {
        "conda": ["requirements.txt"],
        "venv": ["environment.yml"],
        "uv": ["requirements.txt", "environment.yml"],
    }[env_manager]
    for other_file in other_files:
        assert other_file not in out.text, out.text  # the project does not have that file
    can = out.go_on.startswith("You can go on")
    assert can == (code in (checkup.EXIT_OK, checkup.EXIT_CPU_FALLBACK)), out.text
    if not can:
        assert out.go_on.startswith("You cannot train yet") and out.fixes, out.text


MAC_ARM = OsInfo("Darwin", "24.1.0", "15.1", "arm64")
LINUX_ARM = OsInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "aarch64")


@pytest.mark.parametrize("os_facts", [MAC_ARM, LINUX_ARM], ids=["macos-arm64", "linux-aarch64"])
@pytest.mark.parametrize("env_manager", ["conda", "venv", "uv"])
def test_a_mac_or_arm_student_with_the_default_file_is_sent_to_the_cpu_file(
    situation, capsys, monkeypatch, os_facts, env_manager
):
    """The default file of a directml project installs there without torch-directml (it has no
    wheel there): verify_install names the cpu environment's files and never asks to install
    torch-directml, which pip could not find."""
    monkeypatch.setattr(directml_probe, "directml_has_wheels", lambda: False)
    missing = devices.directml_missing_reason("directml")
    code, _ = situation("arm-default-file", "directml", os_facts, [], [],
                        [("directml", missing, False, discovery.NOT_INSTALLED)], "auto", None,
                        {"torch": "2.4.1", "torchvision": "0.19.1"}, env_manager)  # fmt: skip
    out = read_output(capsys.readouterr().out)

    assert code == checkup.EXIT_CPU_FALLBACK and out.go_on.startswith("You can go on")
    (environment,) = [found for check, found in out.row_texts if check == "Environment"]
    assert environment.startswith("Best for this machine: cpu, but ")
    cpu_file = {
        "conda": "environments/cpu.yml",
        "venv": "environments/cpu.txt",
        "uv": "--no-default-groups --group dev --group cpu",
    }[env_manager]
    assert any(cpu_file in fix for _, fix in out.fixes), out.text
    assert "pip install torch-directml" not in out.text and "torch-directml==" not in "".join(
        fix for _, fix in out.fixes
    ), out.text


# ------------------------------------------------- the default report: one line per area

AREA_LINE = re.compile(r"^\[(.)\] ([^:]+): (.*)$")
SUMMARY_FIX = re.compile(r"^  (\d+)\. \[([^\]]+)\] (.*)$")
ISSUES = re.compile(r"found issues in (\d+) areas?")


@dataclass
class Summary:
    """verify_install's default output, read back: area lines, fixes, the verdict line."""

    areas: list  # (mark, area, text)
    fixes: list  # (areas, fix text)
    verdict: str
    lines: list


def read_summary(text: str) -> Summary:
    lines = text.splitlines()
    areas, fixes, verdict = [], [], ""
    for line in lines:
        if AREA_LINE.match(line):
            areas.append(AREA_LINE.match(line).groups())
        elif SUMMARY_FIX.match(line):
            number, where, fix = SUMMARY_FIX.match(line).groups()
            assert int(number) == len(fixes) + 1, text
            fixes.append([where.split(", "), fix])
        elif line.startswith("     ") and fixes:
            fixes[-1][1] += " " + line.strip()
        elif line.startswith(("Ready to train", "Not ready to train")):
            verdict = line
        elif verdict and line and not line.startswith("("):
            verdict += " " + line  # the verdict went on
        elif line.startswith(" ") and areas and "Fixes:" not in lines[: lines.index(line)]:
            areas[-1] = (*areas[-1][:2], areas[-1][2] + " " + line.strip())  # an area went on
    return Summary(areas, [(where, fix) for where, fix in fixes], verdict, lines)


@pytest.mark.parametrize("case", SITUATIONS, ids=[case[0] for case in SITUATIONS])
def test_the_default_report_is_one_line_per_area_the_fixes_to_do_and_a_verdict(
    situation, capsys, case, monkeypatch
):
    """Like Flutter's doctor: one marked line per area, only the fixes that ask for an action
    (each one also in -v), one verdict line that counts the areas with issues."""
    checked, check = [], checkup.run

    def once(request):  # one check-up, shown both ways: timings differ from run to run
        if not checked:
            checked.append(check(request))
        return checked[0]

    monkeypatch.setattr(checkup, "run", once)
    code, _ = situation(*case, "venv", verbose=False)
    printed = capsys.readouterr().out
    summary = read_summary(printed)
    situation(*case, "venv")
    verbose = read_output(capsys.readouterr().out)

    names = [area for _mark, area, _text in summary.areas]
    assert len(names) == len(set(names)), summary.lines  # one line per area
    known = [name for name in names if name in areas.AREAS]
    assert known == sorted(known, key=list(areas.AREAS).index), names  # in the areas' order
    assert summary.lines[0].startswith("verify_install: ")
    shown = {" ".join(fix.split()) for _label, fix in verbose.fixes}
    explains = {f.fix for f in checked[0].findings if f.role == NO_ACTION}
    for where, fix in summary.fixes:
        assert " ".join(fix.split()) in shown, fix  # the same words as -v
        assert fix not in explains, fix  # a fix that asks nothing is no numbered fix
        assert set(where) <= set(names), (where, names)
    area_lines = [line for line in printed.splitlines()[1 : len(names) + 1]]
    for line in area_lines:  # each area in one line, written whole, not cut
        assert AREA_LINE.match(line) and display_width(line) <= AREA_LINE_WIDTH, line
        assert not line.endswith("..."), line
    issues = [area for mark, area, _text in summary.areas if mark in "!\u2717"]
    for area in issues:  # no warning without an action: each area with issues has its fix
        mark = next(m for m, a, _t in summary.areas if a == area)
        if mark == "!":
            assert any(area in where for where, _fix in summary.fixes), summary.lines
    counted = ISSUES.search(summary.verdict)
    assert (int(counted.group(1)) if counted else 0) == len(issues), summary.verdict
    assert summary.verdict.startswith("Not ready" if code == checkup.EXIT_BROKEN else "Ready")
    assert "accelerator=" not in "\n".join(summary.lines + [verbose.text])  # template words


def test_on_linux_without_a_gpu_the_default_report_fits_twenty_lines(situation, capsys):
    """The issue's measure: this laptop's default report is at most 20 lines, one fix."""
    case = next(case for case in SITUATIONS if case[0] == "linux-no-gpu-no-d3d12")
    code, _ = situation(*case, "venv", verbose=False)
    text = capsys.readouterr().out
    summary = read_summary(text)

    assert code == checkup.EXIT_CPU_FALLBACK
    assert len(text.splitlines()) <= 20, text
    # ONNX Runtime has its line where it is installed (the environment files install it)
    onnx = importlib.util.find_spec("onnxruntime") is not None
    expected = [area for area in areas.AREAS if area != "ONNX Runtime" or onnx]
    assert [area for _mark, area, _text in summary.areas] == expected
    (only,) = summary.fixes  # the OS, GPU, torch and device fixes all say "create cpu"
    assert only[1].startswith("Create the cpu environment") and "Environment" in only[0]
    assert summary.verdict.startswith("Ready to train on the CPU only (slower): found issues")
    assert "Verdict (exit" not in text  # the table is -v's


def test_a_warning_whose_fix_asks_nothing_is_information_by_its_role_not_its_words():
    """The role says a fix asks nothing; the same words without it are a fix to do."""
    words = "Compare with the benchmark first."
    python = Finding("Python", OK, "Python 3.11.9 (64-bit) is supported.")
    explains = Finding("GPU", WARN, "Only an integrated GPU.", words, role=NO_ACTION)
    asks = Finding("GPU", WARN, "Only an integrated GPU.", "Nothing to install: " + words)
    report = Report(project={"name": "Digits", "accelerator": "directml"})
    report.exit_code = checkup.EXIT_OK
    report.chosen = {"kind": "directml", "label": "directml:0", "name": "Intel UHD"}

    report.findings = [python, explains]
    quiet = render.render_summary(report)
    report.findings = [python, asks]
    loud = render.render_summary(report)

    assert "[\u2713] GPU: Only an integrated GPU." in quiet and "[!]" not in quiet
    assert "Fixes:" not in quiet and areas.actions([python, explains]) == []
    assert quiet.splitlines()[-2] == "Ready to train on directml:0 (Intel UHD)."
    assert "[!] GPU: Only an integrated GPU." in loud and "Nothing to install: " + words in loud
    report.findings = [python, explains]
    assert words in render.render_text(report)  # -v keeps it


def test_a_fix_that_follows_another_adds_its_area_to_that_fix_by_code():
    create = "Create the cpu environment: `pip install -r environments/cpu.txt`."
    findings = [
        Finding("Environment", WARN, "Best for this machine: cpu.", create, code="ENV-OTHER-BEST"),
        Finding("torch", WARN, "torch 2.14.1 is installed.", "Make the cpu one, not this.",
                code="TORCH-PIN-MISMATCH", follows="ENV-OTHER-BEST"),
        Finding("OS", WARN, "Linux.", "Run on Windows; here, train on the CPU.",
                code="OS-LINUX-NO-DIRECTML", follows="ENV-OTHER-BEST"),
    ]  # fmt: skip

    (fix,) = areas.actions(findings)

    assert (fix.text, fix.areas) == (create, ["Environment", "PyTorch", "OS"])


def test_a_fix_that_follows_one_not_shown_stands_alone_whatever_it_says():
    findings = [
        Finding("torch", WARN, "torch 2.14.1.", "As the Environment fix says, make cpu.",
                code="TORCH-PIN-MISMATCH", follows="ENV-OTHER-BEST"),
        Finding("OS", WARN, "Linux.", "Use the environment the Environment line names.",
                code="OS-LINUX-NO-DIRECTML"),
    ]  # fmt: skip

    fixes = areas.actions(findings)

    assert [(fix.areas, fix.text) for fix in fixes] == [
        (["PyTorch"], "As the Environment fix says, make cpu."),
        (["OS"], "Use the environment the Environment line names."),
    ]


def test_an_area_line_is_its_findings_brief_whole_and_counts_the_other_issues():
    """The rule writes the line (``brief``); what does not fit goes on, never cut."""
    build = Finding(
        "torch build",
        WARN,
        "torch 2.14.1 is PyPI's build (+cu130, CUDA), not the CPU build: it trains on the CPU "
        "too, but carries GPU libraries the cpu environment does not need.",
        "Reinstall from the CPU index.",
        brief="torch 2.14.1 is a GPU build, not the CPU build.",
    )
    pins = Finding("torch", WARN, "torch 2.14.1 is installed; the project pins 2.4.1.", "Pin.")
    report = Report(project={"name": "Digits", "accelerator": "cpu"}, findings=[build, pins])
    long = Finding("Python", WARN, "word " * 30, "Do it.")

    (pytorch,) = areas.by_area(report.findings)
    line = render.area_line(pytorch, report, render.AREA_MARKS)
    (python,) = areas.by_area([long])
    wrapped = render.area_line(python, report, render.AREA_MARKS)

    assert line.startswith("[!] PyTorch: torch 2.14.1 is a GPU build, not the CPU build.")
    assert line.endswith("(+1 issue)")
    assert " ".join(wrapped.split()) == "[!] Python: " + " ".join(long.found.split())
    assert all(display_width(row) <= AREA_LINE_WIDTH for row in wrapped.splitlines())


def test_the_area_marks_fall_back_to_ascii_on_a_console_that_cannot_show_them():
    assert render.marks_for("utf-8") == render.AREA_MARKS
    assert render.marks_for("cp1252") == render.ASCII_MARKS
    for mark in render.marks_for("cp1252").values():
        mark.encode("cp1252")


def test_verbose_shows_every_finding_and_every_fix(machine, capsys):
    machine(options=[RADEON])
    checkup.main(["--json"])
    report = json.loads(capsys.readouterr().out)
    checkup.main(["--verbose"])
    words = " ".join(capsys.readouterr().out.split())

    assert len(report["findings"]) > 8 and "Timing" in words
    for finding in report["findings"]:
        if finding["check"] == "Timing":  # measured again by the second run: other numbers
            continue
        assert " ".join(finding["found"].split()) in words, finding
        assert " ".join(finding["fix"].split()) in words, finding


def test_output_writes_the_report_in_utf8_whatever_the_console(
    machine, capsys, tmp_path, monkeypatch
):
    """PowerShell 5's `>` writes UTF-16: --output writes UTF-8, which the room summary reads."""
    machine()
    named = dataclasses.replace(project(), project_name="\u624b\u5199\u6570\u5b57")
    monkeypatch.setattr(checkup, "load_project", lambda: named)
    report_file, text_file = tmp_path / "ann.json", tmp_path / "ann.txt"

    code = checkup.main(["--json", "--output", str(report_file)])
    said = capsys.readouterr().out
    checkup.main(["--output", str(text_file)])
    capsys.readouterr()

    data = report_file.read_bytes()
    assert not data.startswith(codecs.BOM_UTF8) and not data.startswith(codecs.BOM_UTF16_LE)
    report = json.loads(data.decode("utf-8"))
    assert report["project"]["name"] == "\u624b\u5199\u6570\u5b57"
    assert report["verdict"]["exit_code"] == code
    assert said == f"Report written to {report_file}: cpu-fallback.\n"
    text = text_file.read_text(encoding="utf-8")
    assert text.startswith("verify_install: \u624b\u5199\u6570\u5b57") and "[\u2713]" in text


def test_output_into_a_folder_that_is_not_there_is_a_usage_error(machine, capsys, tmp_path):
    machine()
    with pytest.raises(SystemExit) as done:
        checkup.main(["--json", "--output", str(tmp_path / "missing" / "ann.json")])
    assert done.value.code == 2
    assert "cannot write --output" in capsys.readouterr().err


# Files that --output must never replace: a project file, one of the doctor's own modules, an
# empty file (an empty __init__.py is a module too).
NOT_REPORTS = {
    "pyproject.toml": '[project]\nname = "lab"\n',
    "checkup.py": '"""Does this setup work."""\nimport sys\n',
    "__init__.py": "",
}


@pytest.mark.parametrize("name", sorted(NOT_REPORTS))
def test_output_never_replaces_a_file_it_did_not_write(machine, capsys, tmp_path, name):
    machine()
    other = tmp_path / name
    other.write_text(NOT_REPORTS[name], encoding="utf-8")

    with pytest.raises(SystemExit) as done:
        checkup.main(["--output", str(other)])

    assert done.value.code == 2
    assert other.read_text(encoding="utf-8") == NOT_REPORTS[name]
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.endswith(
        f".verify_install: error: --output {other} is a file that verify_install did not write, "
        "so it is left as it is: name another file (such as report.txt), or delete this one "
        "first if you no longer need it"
    )


@pytest.mark.parametrize("first", [[], ["-v"], ["--markdown"], ["--json"], ["utf-16"]])
def test_output_replaces_a_report_it_wrote_in_any_format(machine, capsys, tmp_path, first):
    machine()
    report_file = tmp_path / "ann.txt"
    if first == ["utf-16"]:  # PowerShell 5's `verify_install > ann.txt`
        checkup.main([])
        report_file.write_text(capsys.readouterr().out, encoding="utf-16")
    else:
        checkup.main([*first, "--output", str(report_file)])

    code = checkup.main(["--json", "--output", str(report_file)])

    assert json.loads(report_file.read_text(encoding="utf-8"))["verdict"]["exit_code"] == code
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"Report written to {report_file}")
    assert [path.name for path in tmp_path.iterdir()] == ["ann.txt"]


def an_earlier_report(folder: Path) -> tuple[Path, bytes]:
    """The report an earlier `verify_install --json --output` wrote into ``folder``."""
    report_file = folder / "ann.json"
    checkup.main(["--json", "--output", str(report_file)])
    return report_file, report_file.read_bytes()


def only_the_earlier_report_is_there(report_file: Path, earlier: bytes) -> bool:
    """The earlier report, whole, and nothing beside it (no part of a new one)."""
    beside = [path.name for path in report_file.parent.iterdir()]
    return report_file.read_bytes() == earlier and beside == [report_file.name]


def test_ctrl_c_during_the_checks_leaves_the_earlier_report_whole(
    machine, capsys, tmp_path, monkeypatch
):
    machine()
    report_file, earlier = an_earlier_report(tmp_path)

    def interrupted(request):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkup, "run", interrupted)
    code = checkup.main(["--json", "--output", str(report_file)])

    assert code == 130 and capsys.readouterr().err == "Interrupted.\n"
    assert only_the_earlier_report_is_there(report_file, earlier)


class FullDisk:
    """A file whose disk fills up after ``room`` characters, as a USB stick does mid-write."""

    def __init__(self, stream, room=100):
        self.stream, self.room = stream, room

    def write(self, text):
        self.stream.write(text[: self.room])
        self.stream.flush()
        raise OSError(28, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()


def full_disk_open(*args, **kwargs):
    return FullDisk(open(*args, **kwargs))  # noqa: SIM115 (FullDisk closes it)


def test_a_full_disk_leaves_the_earlier_report_whole_and_says_so(
    machine, capsys, tmp_path, monkeypatch
):
    machine()
    report_file, earlier = an_earlier_report(tmp_path)
    capsys.readouterr()

    monkeypatch.setattr(checkup, "open", full_disk_open, raising=False)
    code = checkup.main(["--json", "--output", str(report_file)])

    assert code == 74
    assert capsys.readouterr().err == (
        f"error: the report could not be written to {report_file} (No space left on device), "
        "so that file is as it was: free some space on that disk, or name a file on another one "
        "with --output.\n"
    )
    assert only_the_earlier_report_is_there(report_file, earlier)


def test_the_run_configuration_option_turns_a_cpu_fallback_into_exit_0(situation, capsys):
    code, _ = situation(*SITUATIONS[0], "conda")
    plain = read_output(capsys.readouterr().out)
    relaxed_code, _ = situation(*SITUATIONS[0], "conda", args=["--cpu-fallback-ok"])
    relaxed = read_output(capsys.readouterr().out)

    assert (code, relaxed_code) == (3, 0)
    assert plain.verdict.startswith("Verdict (exit 3): Ready to train on the CPU only (slower)")
    assert relaxed.verdict.startswith("Verdict (exit 0): Ready to train on the CPU only (slower)")
    assert relaxed.go_on == plain.go_on
    assert relaxed.go_on.startswith("You can go on to training: it will use the CPU, only slower.")


def test_a_broken_install_is_never_exit_0_with_the_run_configuration_option(situation, capsys):
    broken = next(case for case in SITUATIONS if case[0] == "torch-missing")
    assert situation(*broken, "venv", args=["--cpu-fallback-ok"])[0] == 4
    assert read_output(capsys.readouterr().out).go_on.startswith("You cannot train yet")


def test_help_documents_the_run_configuration_option(capsys):
    with pytest.raises(SystemExit):
        checkup.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--cpu-fallback-ok" in out and "exit 0 instead of 3" in out


def test_the_reference_check_catches_a_fix_that_points_at_a_missing_line():
    out = read_output(
        "  [!]  OS      Linux: DirectML runs only on Windows.\n"
        "  [!]  GPU     No GPU for compute found.\n\n"
        "Verdict (exit 3): Ready to train on the CPU only (slower); the [!] lines above say why.\n"
        "You can go on to training: it will use the CPU, only slower.\n\n"
        "Fixes:\n"
        "  1. [OS] Nothing is needed; the GPU line says how to use an AMD or Intel GPU.\n"
        "  2. [GPU] `pip install torch-directml==0.2.5.dev240914`\n"
    )
    assert len(unresolved_pointers(out)) == 1 and "GPU line" in unresolved_pointers(out)[0]
    assert broken_installs(out, CUDA_PINS) == [
        "`pip install torch-directml==0.2.5.dev240914` installs torch-directml==0.2.5.dev240914"
    ]


def test_json_names_the_best_environment_for_a_faked_intel_arc_laptop(machine, capsys, monkeypatch):
    from gpu_doctor.gpus import Gpu, GpuScan
    from gpu_doctor.os_info import OsInfo

    arc = Gpu("Intel(R) Arc(TM) Graphics", 0x8086, 0x7D55, 2**27, "31.0.101.5590", source="DXGI")
    windows = OsInfo("Windows", "10", "10.0.22631", "AMD64", windows_build=22631)
    monkeypatch.setattr(facts.os_info, "detect", lambda: windows)
    monkeypatch.setattr(facts, "scan_gpus", lambda info: GpuScan([arc], source="DXGI"))
    monkeypatch.setattr(active_environment, "installed_stack", lambda: "directml")
    machine(options=[])

    code, report = run_json(capsys)

    advice = report["recommendation"]
    assert (advice["stack"], advice["active"]) == ("xpu", "directml")
    assert advice["gpu"]["device_id"] == "0x7d55" and advice["gpu"]["vendor_id"] == "0x8086"
    assert advice["conda_file"] == "environments/xpu.yml"
    assert "conda env create -f environments/xpu.yml" in advice["commands"]["conda"]
    warned = findings(report, "Environment")
    assert [f["status"] for f in warned] == ["warn"]
    assert "environments/xpu.txt" in warned[0]["fix"]


def test_an_environment_of_another_stack_is_judged_by_that_stacks_pins(
    machine, capsys, monkeypatch
):
    """One project for a room: a directml project whose student created environments/xpu.yml
    is checked against xpu's pins, with no advice to go back to torch 2.4.1."""
    xpu_pins = {"torch": "2.14.1", "torchvision": "0.29.1"}
    stacks = {
        "directml": {"python_min": "3.8", "python_max": "3.12", "pins": PINS["directml"]},
        "xpu": {"python_min": "3.10", "python_max": "3.14", "pins": xpu_pins,
                "index_url": "https://download.pytorch.org/whl/xpu"},
    }  # fmt: skip
    room = Project("LeNet test", "lenet_test", "directml", "3.11", "3.8", "3.12", "",
                   PINS["directml"], "", stacks=stacks)  # fmt: skip
    machine(options=[])
    monkeypatch.setattr(checkup, "load_project", lambda: room)
    monkeypatch.setattr(checkup, "active_stack", lambda project=None: "xpu")
    installed = {"torch": "2.14.1+xpu", "torchvision": "0.29.1+xpu"}
    check = package_rules.check_packages
    monkeypatch.setattr(package_rules, "check_packages", lambda p: check(p, installed.get))

    code, report = run_json(capsys)

    assert report["project"]["accelerator"] == "xpu"
    assert report["project"]["default_accelerator"] == "directml"
    assert report["packages"]["torch"] == {"installed": "2.14.1+xpu", "pinned": "2.14.1"}
    assert "torch-directml" not in report["packages"]
    assert not [f for f in report["findings"] if "2.4.1" in f["fix"]]


# --------------------------------------------------------------- the step a GPU fails
# On a GeForce GTX 470, DirectML ran convolutions, pooling and linear layers but failed in the
# cross-entropy loss with a message that names no operator. The fakes raise that message as a
# Python error, only for the work on the "device" (a C++ error can crash Wine's unwinder).

COMPILE_GRAPH = "device1->CompileGraph(&graphDesc, flags, IID_PPV_ARGS(&compiledGraph))"
GTX_470 = devices.DeviceOption(
    "directml", 0, "NVIDIA GeForce GTX 470", torch.device("cpu"),
    {"float64": True, "adapter_rank": 2},
)  # fmt: skip


class GpuLeNet(model.LeNet5):
    """A LeNet whose copy on the 'device' marks its logits, so a fake can fail there only."""

    on_device = False

    def to(self, *args, **kwargs):
        moved = super().to(*args, **kwargs)
        moved.on_device = True
        return moved

    def forward(self, x):
        logits = super().forward(x)
        logits.on_device = self.on_device
        return logits


# conv2 fails on the 'device'; conv1 and everything on the CPU work.
Conv2FailsLeNet = lenet_failing_on_the_device(COMPILE_GRAPH, "conv2", GpuLeNet)


@pytest.fixture
def loss_fails_on_the_device(monkeypatch):
    real_cross_entropy = torch.nn.functional.cross_entropy

    def cross_entropy(logits, *args, **kwargs):
        if getattr(logits, "on_device", False):
            raise RuntimeError(COMPILE_GRAPH)
        return real_cross_entropy(logits, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "cross_entropy", cross_entropy)


def failing_row(out, check):
    (found,) = [text for label, text in out.row_texts if label == check]
    area = areas.area_of(Finding(check, FAIL, ""))  # fixes are labelled by area
    (fix,) = [fix for label, fix in out.fixes if label.split(", ")[0] == area]
    return found, fix


def test_a_smoke_test_that_fails_in_the_loss_names_the_loss(
    machine, capsys, loss_fails_on_the_device
):
    machine(options=[GTX_470], lenet=GpuLeNet)
    code = checkup.main(["-v"])
    out = read_output(capsys.readouterr().out)
    _code, report = run_json(capsys)

    assert code == 4
    found, fix = failing_row(out, "Smoke test")
    assert found == (
        "LeNet forward+backward on directml:0 failed in the loss (cross-entropy): "
        f"RuntimeError: {COMPILE_GRAPH}."
    )
    assert fix.startswith("This device runs LeNet's layers but not the cross-entropy loss")
    assert "`--device cpu`" in fix
    assert out.verdict.startswith(
        "Verdict (exit 4): Not ready to train on directml:0: it fails in the loss"
    )
    assert report["failed_step"] == {
        "during": "smoke test",
        "step": "loss",
        "what": "the loss (cross-entropy)",
        "error": f"RuntimeError: {COMPILE_GRAPH}",
        "read_back": False,
        "timed_out": False,
    }


def test_a_layer_that_fails_on_the_device_is_named(machine, capsys):
    machine(options=[GTX_470], lenet=Conv2FailsLeNet)
    code = checkup.main(["-v"])
    out = read_output(capsys.readouterr().out)
    _code, report = run_json(capsys)

    assert code == 4
    found, fix = failing_row(out, "Smoke test")
    assert found.startswith(
        "LeNet forward+backward on directml:0 failed in the forward pass in conv2"
    )
    assert fix.startswith("This device fails in the forward pass in conv2 (Conv2d), while")
    assert report["failed_step"]["step"] == "forward"
    assert report["failed_step"]["what"] == "the forward pass in conv2 (Conv2d)"


class FailingSgd(torch.optim.SGD):
    def step(self, closure=None):
        raise RuntimeError(COMPILE_GRAPH)


def test_a_training_step_that_fails_in_the_optimizer_names_it(machine, capsys):
    trainer = SimpleNamespace(
        TrainConfig=train.TrainConfig,
        build_optimizer=lambda name, params, lr, device_type: FailingSgd(params, lr=lr),
        train_step=train.train_step,
    )
    machine(options=[GTX_470], trainer=trainer)
    code = checkup.main(["-v"])
    out = read_output(capsys.readouterr().out)
    _code, report = run_json(capsys)

    assert code == 4
    found, fix = failing_row(out, "Train step")
    assert found.startswith(
        "One training step on directml:0 failed in the optimizer step (FailingSgd):"
    )
    assert "`--optimizer sgd` or `--optimizer adam`" in fix
    assert report["failed_step"]["during"] == "train step"
    assert report["smoke_test"]["passed"] is True


def test_a_passing_device_is_not_run_step_by_step(machine, capsys, monkeypatch):
    """The step-by-step run costs time: only a failure pays for it."""

    def locate(*args, **kwargs):
        raise AssertionError("stepwise.locate ran although nothing failed")

    monkeypatch.setattr(stepwise, "locate", locate)
    machine(options=[GTX_470])
    code, report = run_json(capsys)
    assert code == 0 and report["failed_step"] is None


def test_the_step_by_step_run_is_bounded_in_time():
    """A driver that hangs in a step: the run gives up and names where it stood."""
    release = threading.Event()

    class HangingLeNet(model.LeNet5):
        def to(self, *args, **kwargs):  # the first step: where it stands does not depend on speed
            release.wait(60)
            raise RuntimeError("released")  # so the abandoned thread ends at once, in Python

    try:
        started = time.perf_counter()
        failed = stepwise.locate(
            torch, HangingLeNet, torch.device("cpu"), lambda x: x.float(),
            lambda net: torch.optim.SGD(net.parameters(), lr=0.1), timeout=1,
        )  # fmt: skip
        assert time.perf_counter() - started < 30
    finally:
        release.set()
    assert (failed.step, failed.what) == ("model", "copying the model to the device")
    assert (failed.error, failed.timed_out) == ("no answer within 1 s", True)


def test_a_step_that_hangs_keeps_the_first_error_in_the_finding(
    machine, capsys, monkeypatch, loss_fails_on_the_device
):
    hung = stepwise.FailingStep("loss", "the loss (cross-entropy)", "no answer within 60 s",
                                timed_out=True)  # fmt: skip
    monkeypatch.setattr(stepwise, "locate", lambda *args, **kwargs: hung)
    machine(options=[GTX_470], lenet=GpuLeNet)
    _code, report = run_json(capsys)

    (smoke,) = findings(report, "Smoke test", FAIL)
    assert smoke["found"] == (
        f"LeNet forward+backward on directml:0 failed: RuntimeError: {COMPILE_GRAPH}. Run one "
        "step at a time, the loss (cross-entropy) gave no answer within 60 s."
    )
    assert report["failed_step"]["timed_out"] is True


def test_an_error_that_shows_only_when_a_result_is_read_back_says_so():
    progress = stepwise.Progress()
    progress.at("loss")

    def to(device):
        raise RuntimeError("DirectML: device removed")

    with pytest.raises(RuntimeError):
        progress.read_back(SimpleNamespace(detach=lambda: SimpleNamespace(to=to)))
    failed = progress.failed("RuntimeError: DirectML: device removed")
    assert failed.describe().endswith("(cross-entropy) (when its result was read back to the CPU)")


# ------------------------------------------------------------- advice that agrees with itself
# Over every situation above: the fixes name one environment to create and never install
# another stack's packages beside it, and none says "nothing to install" while another installs.

CREATE = re.compile(r"\b(?:Create|Use) the ([\w-]+) environment\b")
NOTHING = re.compile(r"\bnothing (?:to install|is needed)\b", re.IGNORECASE)
INSTALLS = re.compile(r"`(?:python -m )?pip install [^`]*`|`conda env (?:create|update)[^`]*`")


def stack_of_install(command: str, default: str) -> str:
    """The stack an install command puts into the environment."""
    file = re.search(r"environments/([\w-]+)\.(?:txt|yml)", command)
    if file:
        return file.group(1)
    if "[device-gfx" in command or "+rocm10" in command:  # AMD's build for Windows
        return "rocm-windows"
    if "torch-directml" in command or "torch==2.4.1" in command:
        return "directml"
    tag = re.search(r"torch==[\d.]+\+([a-z]+)(\d*)", command)
    if tag and tag.group(1) == "cu":
        return "cuda-legacy" if tag.group(2) == "126" else "cuda"
    if tag:
        return tag.group(1)
    return default


def contradictions(out: Printed, default: str) -> list:
    problems = []
    created = {stack for _, fix in out.fixes for stack in CREATE.findall(fix)}
    if len(created) > 1:
        problems.append(f"fixes create {sorted(created)}")
    for label, fix in out.fixes:
        deferring = "rather than repairing" in fix  # the repair is offered as the other way
        for command in INSTALLS.findall(fix):
            stack = stack_of_install(command, default)
            if created and stack not in created and not deferring:
                problems.append(f"[{label}] installs {stack} beside creating {sorted(created)}")
    installs = [label for label, fix in out.fixes if INSTALLS.search(fix) or CREATE.search(fix)]
    for label, fix in out.fixes:
        if NOTHING.search(fix) and installs:
            problems.append(f"[{label}] says nothing to install, [{installs[0]}] installs")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("env_manager", ["conda", "venv"])
@pytest.mark.parametrize("case", SITUATIONS, ids=[case[0] for case in SITUATIONS])
def test_no_two_fixes_contradict_each_other(situation, capsys, case, env_manager):
    _code, chosen = situation(*case, env_manager)
    out = read_output(capsys.readouterr().out)

    assert contradictions(out, chosen.accelerator) == [], out.text


def test_the_contradiction_check_catches_the_cpu_environment_beside_the_directml_pins():
    out = read_output(
        "  [!]  Environment  Best for this machine: cpu, but this environment runs directml.\n"
        "  [!]  torch-directml  torch-directml is not installed (pinned: 0.2.5.dev240914).\n\n"
        "Verdict (exit 3): Ready to train on the CPU only (slower): directml is not usable here.\n"
        "You can go on to training: it will use the CPU, only slower.\n\n"
        "Fixes:\n"
        "  1. [Environment] Create the cpu environment in the project folder.\n"
        "  2. [torch-directml] `pip install torch==2.4.1 torch-directml==0.2.5.dev240914`\n"
        "  3. [OS] Nothing is needed to train on this machine.\n"
    )
    assert contradictions(out, "directml") == [
        "[torch-directml] installs directml beside creating ['cpu']",
        "[OS] says nothing to install, [Environment] installs",
    ]


def test_a_fresh_directml_environment_on_linux_without_a_gpu_is_sent_to_the_cpu_one(
    situation, capsys
):
    case = next(case for case in SITUATIONS if case[0] == "linux-no-gpu-directml-missing")
    situation(*case, "venv")
    out = read_output(capsys.readouterr().out)

    label, first = out.fixes[0]
    assert label.startswith("Environment") and "Create the cpu environment" in first
    (missing,) = [fix for label, fix in out.fixes if "torch-directml" in label]
    assert "rather than repairing this directml one: directml cannot train on Linux" in missing
    assert "pip install" not in missing


# ------------------------------------------------------------------ AMD GPUs on Linux (ROCm)


def test_invalid_device_function_in_the_smoke_test_names_the_target_and_the_override(
    situation, capsys, monkeypatch
):
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    case = next(case for case in SITUATIONS if case[0] == "linux-rx-6700-xt-rocm-smoke-fails")
    code, _ = situation(*case, "venv")
    out = read_output(capsys.readouterr().out)

    assert code == checkup.EXIT_BROKEN
    (found,) = [text for check, text in out.row_texts if check == "Smoke test"]
    assert "invalid device function" in found and "gfx1031" in found
    (fix,) = [fix for label, fix in out.fixes if label.startswith("Device")]
    assert "`export HSA_OVERRIDE_GFX_VERSION=10.3.0`" in fix and "Unofficial" in fix
    assert len(out.fixes) == 1  # the GPU line gives the same fix: printed once
    gpu = [text for check, text in out.row_texts if check == "GPU" and "gfx1031 is not" in text]
    assert gpu and "unofficial" in gpu[0]


def test_invalid_device_function_at_device_discovery_names_the_780ms_override(
    situation, capsys, monkeypatch
):
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    case = next(case for case in SITUATIONS if case[0] == "linux-780m-rocm-kernels-fail")
    code, _ = situation(*case, "conda")
    out = read_output(capsys.readouterr().out)

    assert code == checkup.EXIT_CPU_FALLBACK
    (row,) = [text for check, text in out.row_texts if check == "Device" and "HIP" in text]
    assert "gfx1103" in row and "gfx1100" in row
    assert any("HSA_OVERRIDE_GFX_VERSION=11.0.0" in fix for label, fix in out.fixes)


def test_an_override_that_is_set_and_still_fails_says_to_train_on_the_cpu(
    situation, capsys, monkeypatch
):
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    case = next(case for case in SITUATIONS if case[0] == "linux-rx-6700-xt-rocm-smoke-fails")
    situation(*case, "venv")
    found, fix = failing_row(read_output(capsys.readouterr().out), "Smoke test")
    assert "is set (10.3.0)" in found and "--device cpu" in fix


# A room of AMD laptops, as DXGI names them, on each system and with each Python.
AMD_ROOM = [
    ("AMD Radeon RX 7900 XTX", 0x744C, 24, "gfx1100"),
    ("AMD Radeon RX 7800 XT", 0x747E, 16, "gfx1101"),
    ("AMD Radeon RX 9070 XT", 0x7550, 16, "gfx1201"),
    ("AMD Radeon(TM) 780M Graphics", 0x15BF, 0, "gfx1103"),
    ("AMD Radeon(TM) 890M Graphics", 0x150E, 0, "gfx1150"),
    ("AMD Radeon(TM) 8060S Graphics", 0x1586, 0, "gfx1151"),
    ("AMD Radeon RX 6700 XT", 0x73DF, 12, ""),
    ("Radeon RX 580 Series", 0x67DF, 8, ""),
    ("AMD Radeon(TM) Vega 8 Graphics", 0x15D8, 0, ""),
]
AMD_SYSTEMS = {
    "windows-11": WINDOWS,
    "windows-10": OsInfo("Windows", "10", "10.0.19045", "AMD64", windows_build=19045),
    "wsl2": OsInfo("Linux", "5.15.153.1-microsoft-standard-WSL2", "#1 SMP", "x86_64",
                   wsl=2, windows_build=22631, dxg=True, d3d12=True),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("python", ["3.10", "3.13"])
@pytest.mark.parametrize("system", list(AMD_SYSTEMS))
@pytest.mark.parametrize("name,device,memory,native", AMD_ROOM, ids=[g[0] for g in AMD_ROOM])
def test_no_two_fixes_contradict_on_any_amd_laptop_of_the_room(
    situation, capsys, monkeypatch, name, device, memory, native, system, python
):
    made_for = advice_project
    monkeypatch.setitem(
        globals(),
        "advice_project",
        lambda *args: dataclasses.replace(made_for(*args), python_version=python),
    )
    gpu = Gpu(name, 0x1002, device, (memory or 0.5) * 2**30, "32.0.21013.1000", source="DXGI")
    adapter = devices.DeviceOption("directml", 0, name, torch.device("cpu"), {"float64": False})
    info = AMD_SYSTEMS[system]
    code, chosen = situation(
        "amd-room", "directml", info, [gpu] if info.is_windows else [], [adapter], [], "auto",
        None, "pins", "venv",
    )  # fmt: skip
    out = read_output(capsys.readouterr().out)

    assert contradictions(out, chosen.accelerator) == [], out.text
    assert unresolved_pointers(out) == [], out.text
    assert broken_installs(out, chosen.pins, chosen.stacks) == [], out.text
    text = " ".join(out.text.split())
    if native and system == "windows-11" and python == "3.13":
        assert "Best for this machine: rocm-windows" in text, out.text
        assert f'`python -m pip install "torch[device-{native}]==2.14.0+rocm10.1.0"' in text
    else:
        assert "[device-" not in text and "Best for this machine: directml" in text, out.text


def test_a_radeon_rx_7800_on_windows_11_is_sent_to_amds_build_with_its_kernels(situation, capsys):
    case = next(case for case in SITUATIONS if case[0] == "windows-rx-7800-dml-works")
    code, _ = situation(*case, "venv")
    out = read_output(capsys.readouterr().out)

    assert code == checkup.EXIT_OK  # DirectML works; the native build is better
    text = " ".join(out.text.split())  # rows, wrapped
    assert "Best for this machine: rocm-windows, but this environment runs the directml" in text
    assert "gfx1101 from the PCI id table" not in text  # a fake scan: the table fills it in
    (fix,) = [fix for label, fix in out.fixes if "Environment" in label]
    assert "`python -m pip install -r environments/rocm-windows.txt`" in fix
    assert '`python -m pip install "torch[device-gfx1101]==2.14.0+rocm10.1.0"' in fix


def amd_windows_run(situation, capsys, name):
    case = next(case for case in SITUATIONS if case[0] == name)
    code, _ = situation(*case, "venv")
    return code, read_output(capsys.readouterr().out)


DEVICE_FIX = (
    "Install this GPU's kernels in this environment: `python -m pip install "
    '"torch[device-gfx1101]==2.14.0+rocm10.1.0" "torchvision[device-gfx1101]==0.29.0a0+rocm10.1.0" '
    "--index-url https://stable.repo.amd.com/rocm/whl-next/ --extra-index-url "
    "https://pypi.org/simple`"
)


def test_amds_build_with_this_gpus_kernels_works(situation, capsys):
    code, out = amd_windows_run(situation, capsys, "windows-rocm-windows-works")

    assert code == checkup.EXIT_OK, out.text
    rows = dict(out.row_texts)
    assert any("HIP 7.1.52802" in text for check, text in out.row_texts if check == "torch build")
    assert "(device-gfx1101) are this GPU's (gfx1101)" in rows["GPU kernels"]
    assert "Verdict (exit 0): Ready to train on" in out.text
    # at most the Timing's fix, in the Device area: the fake GPU is a CPU
    assert [label for label, _ in out.fixes] in ([], ["Device"]), out.text


@pytest.mark.parametrize(
    "name,found",
    [
        ("windows-rocm-windows-no-kernels", "No GPU kernels are installed for this GPU's gfx1101"),
        ("windows-rocm-windows-wrong-kernels", "(device-gfx1100) are not this GPU's gfx1101"),
    ],
)
def test_missing_or_wrong_kernels_give_the_one_command_with_the_gpus_target(
    situation, capsys, name, found
):
    code, out = amd_windows_run(situation, capsys, name)

    assert code == checkup.EXIT_BROKEN, out.text
    (kernels,) = [text for check, text in out.row_texts if check == "GPU kernels"]
    assert found in kernels and "hipErrorInvalidImage" in kernels
    (smoke,) = [text for check, text in out.row_texts if check == "Smoke test"]
    assert "hipErrorInvalidImage" in smoke and "not this GPU's gfx1101" in smoke
    assert [fix for _, fix in out.fixes] == [DEVICE_FIX]  # the same fix, printed once
    assert "device-all" not in out.text


def test_the_short_report_puts_the_gpu_kernels_under_pytorch_with_their_one_command(
    situation, capsys
):
    case = next(case for case in SITUATIONS if case[0] == "windows-rocm-windows-no-kernels")
    situation(*case, "venv", verbose=False)
    summary = read_summary(capsys.readouterr().out)

    assert "GPU kernels" not in [area for _, area, _ in summary.areas]
    (pytorch,) = [text for _, area, text in summary.areas if area == "PyTorch"]
    assert "No GPU kernels are installed for this GPU's gfx1101" in pytorch
    assert any('"torch[device-gfx1101]==2.14.0+rocm10.1.0"' in fix for _, fix in summary.fixes)


def test_amds_build_that_sees_no_gpu_falls_back_to_the_cpu(situation, capsys):
    code, out = amd_windows_run(situation, capsys, "windows-rocm-windows-no-gpu-visible")

    assert code == checkup.EXIT_CPU_FALLBACK, out.text
    assert any("sees no GPU" in text for check, text in out.row_texts if check == "Device")
    (fix,) = [fix for label, fix in out.fixes if "Device" in label]
    assert "Adrenalin driver" in fix and "NVIDIA" not in fix


def test_a_torch_without_hip_in_the_rocm_windows_environment_says_to_reinstall(
    situation, capsys, monkeypatch
):
    case = next(case for case in SITUATIONS if case[0] == "windows-rocm-windows-works")
    installed = {**case[-1], "hip": None}  # AMD's version number, yet no HIP in the build
    situation(*case[:-1], installed, "venv")
    out = read_output(capsys.readouterr().out)

    rows = out.row_texts
    (row,) = [text for check, text in rows if check == "torch build" and "version.hip" in text]
    assert "no ROCm build (torch.version.hip is None)" in row
    reinstall = "`python -m pip install --force-reinstall -r environments/rocm-windows.txt`"
    assert any(reinstall in fix for label, fix in out.fixes if "PyTorch" in label), out.text


def test_another_builds_torch_in_the_rocm_windows_environment_is_named_once(
    situation, capsys, monkeypatch
):
    case = next(case for case in SITUATIONS if case[0] == "windows-rocm-windows-works")
    installed = {**case[-1], "torch": "2.14.0+cpu"}
    # the environment is .venv-rocm-windows, into which a CPU torch was installed
    monkeypatch.setattr(active_environment, "stack_of_torch", lambda *args: "rocm-windows")
    situation(*case[:-1], installed, "venv")
    out = read_output(capsys.readouterr().out)

    builds = [text for check, text in out.row_texts if check == "torch build"]
    assert len(builds) == 1 and "version.hip" not in builds[0], builds


# --------------------------------------------------------------------- the build, not the version
PYPI_LINUX_VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.14.1+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = '5c4886908584029761b579af026dcfb627c84070'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""
PYPI_WINDOWS_VERSION_PY = PYPI_LINUX_VERSION_PY.replace("+cu130", "+cpu").replace("'13.0'", "None")
PYPI_MACOS_VERSION_PY = PYPI_LINUX_VERSION_PY.replace("+cu130", "").replace("'13.0'", "None")


@pytest.mark.parametrize(
    "stack,torch_version,version_py,status",
    [
        ("xpu", "2.14.1", PYPI_LINUX_VERSION_PY, FAIL),  # the extra index lost: PyPI's CUDA build
        ("xpu", "2.14.1+cu130", "", FAIL),
        ("xpu", "2.14.1+xpu", "", OK),
        ("rocm", "2.14.1+rocm7.14", "", OK),
        ("rocm", "2.14.1+rocm7.2", "", OK),  # another ROCm version is still ROCm
        ("rocm", "2.14.1", PYPI_LINUX_VERSION_PY, FAIL),
        ("cuda", "2.14.1", PYPI_LINUX_VERSION_PY, OK),  # PyPI's Linux wheel is the CUDA 13.0 one
        ("cuda", "2.14.1", PYPI_WINDOWS_VERSION_PY, FAIL),  # PyPI's Windows wheel has no CUDA
        ("cuda", "2.14.1+cu126", "", FAIL),  # the cuda-legacy stack's build: no Blackwell
        ("cuda-legacy", "2.14.1+cu126", "", OK),
        ("cuda-legacy", "2.14.1+cu130", "", FAIL),  # no kernels for Maxwell, Pascal, Volta
        ("cuda-legacy", "2.14.1", PYPI_LINUX_VERSION_PY, FAIL),  # PyPI's is the CUDA 13 one
        ("cpu", "2.14.1+cpu", "", OK),
        ("cpu", "2.14.1", PYPI_MACOS_VERSION_PY, OK),
        ("cpu", "2.14.1", PYPI_LINUX_VERSION_PY, WARN),  # trains, with 3 GB of CUDA unused
    ],
)
def test_the_build_of_torch_is_checked_as_well_as_its_version(
    stack, torch_version, version_py, status
):
    chosen = advice_project(stack, "venv")
    versions = {"torch": torch_version, "torchvision": "0.29.1" + torch_version[6:]}
    findings, _ = package_rules.check_packages(chosen, versions.get, lambda: version_py)

    assert [f.status for f in findings if f.check == "torch"] == [OK]  # the version is right
    (build,) = [f for f in findings if f.check == "torch build"]
    assert build.status == status, build
    if status != OK:
        tag = chosen.stacks[stack]["local_version"]
        assert build.code == "TORCH-WRONG-BUILD"
        assert f"torch==2.14.1{tag} torchvision==0.29.1{tag}" in build.fix
        assert f"--index-url {chosen.index_url}" in build.fix


def test_a_cuda_build_in_an_xpu_environment_is_a_fail_with_the_fix(machine, capsys, monkeypatch):
    """The room's xpu environment whose index could not be reached: pip took PyPI's torch."""
    room = advice_project("directml", "venv")
    machine(options=[])
    monkeypatch.setattr(checkup, "load_project", lambda: room)
    monkeypatch.setattr(sys, "prefix", str(Path.home() / "lenet-test" / ".venv-xpu"))
    installed = {"torch": "2.14.1", "torchvision": "0.29.1"}
    check = package_rules.check_packages
    monkeypatch.setattr(
        package_rules,
        "check_packages",
        lambda p: check(p, installed.get, PYPI_LINUX_VERSION_PY.strip),
    )

    code, report = run_json(capsys)

    assert report["project"]["accelerator"] == "xpu"  # the environment's name says xpu
    (build,) = findings(report, "torch build")
    assert build["status"] == "fail" and "PyPI's build (+cu130, CUDA)" in build["found"]
    assert "--index-url https://download.pytorch.org/whl/xpu" in build["fix"]


@pytest.mark.parametrize(
    "prefix,conda,stack",
    [
        ("/home/ann/lenet-test/.venv-xpu", "", "xpu"),
        ("C:\\Users\\Ann\\lenet-test\\.venv-rocm", "", "rocm"),
        ("/home/ann/miniforge3/envs/lenet-test-cuda", "lenet-test-cuda", "cuda"),
        ("/home/ann/lenet-test/.venv", "", None),
        ("/home/ann/miniforge3/envs/lenet-test", "lenet-test", None),  # the default environment
    ],
)
def test_the_stack_an_environment_serves_is_read_from_its_name(prefix, conda, stack):
    stacks = load_project().stacks
    if "\\" in prefix and os.sep == "/":
        prefix = prefix.replace("\\", "/")
    assert active_environment.environment_stack(stacks, "lenet-test", prefix, conda) == stack


# ------------------------------------------------------------------ --json: codes for programs


@pytest.mark.slow
@pytest.mark.parametrize("case", SITUATIONS, ids=[case[0] for case in SITUATIONS])
def test_every_finding_of_every_situation_has_a_registered_code(situation, capsys, case):
    code, _ = situation(*case, "venv", args=["--json"])
    report = json.loads(capsys.readouterr().out)

    assert report["schema_version"] == 2 and report["verdict"]["exit_code"] == code
    unknown = [(f["check"], f["code"]) for f in report["findings"] if f["code"] not in CODES]
    assert unknown == []
    assert "WARN lines above" not in report["verdict"]["message"]  # JSON has no lines above


# ------------------------------------------- one renderer: the same fixes, numbered alike

NUMBERED = re.compile(r"^  (\d+)\. \[([^\]]+)\] ", re.MULTILINE)
# Areas only verify_install checks: the hook and the first look run before torch exists.
WITH_TORCH = {"PyTorch", "Device", "ONNX Runtime"}


def numbered_fixes(text: str) -> list:
    """(number, [areas], the fix's words) of each numbered fix, wrapped lines joined."""
    fixes = text.split("\nFixes:\n", 1)[-1].split("\n\n", 1)[0]
    found = []
    for entry in re.split(r"\n(?=  \d+\. \[)", fixes):
        match = NUMBERED.match(entry)
        if match:
            words = " ".join(entry[match.end() :].split("\n     - ", 1)[0].split())
            found.append((int(match.group(1)), match.group(2).split(", "), words))
    return found


@pytest.mark.parametrize(
    "case",
    [("linux-no-gpu-no-torch", "directml", LINUX_X86, [ASPEED], [], [], "auto", None, {}),
     *[case for case in SITUATIONS if case[0] in ("linux-no-gpu-no-d3d12", "torch-missing",
                                                   "cuda-project-old-driver")]],
    ids=lambda case: case[0],
)  # fmt: skip
def test_the_hook_the_first_look_the_summary_and_v_give_the_same_fixes_the_same_numbers(
    situation, capsys, monkeypatch, case
):
    """Fix 1 in the summary is fix 1 in -v, in the hook's report and in the first look, in
    the same words and under the same areas (those before torch exists have no PyTorch)."""
    monkeypatch.setenv("COLUMNS", "81")  # one width for all: 80 columns
    situation(*case, "venv", verbose=False)
    summary = capsys.readouterr().out
    _code, chosen = situation(*case, "venv", verbose=True)
    verbose = capsys.readouterr().out
    faked = envcheck.run_checks  # the situation's machine, for the checks without torch
    monkeypatch.setattr(envcheck, "run_checks",
                        lambda context="project", project=None, **extra:
                        faked(context, project or chosen, **extra))  # fmt: skip
    monkeypatch.setattr(first_look, "run_checks", envcheck.run_checks)
    monkeypatch.setattr(first_look, "load_project", lambda: chosen)
    hook = envcheck.format_findings(envcheck.run_checks(context="hook"))  # as the hook prints
    assert first_look.main([]) == 0
    first = capsys.readouterr().out

    assert numbered_fixes(summary), summary
    assert numbered_fixes(verbose) == numbered_fixes(summary), verbose
    for before_torch in (hook, first):
        expected = [(number, [area for area in names if area not in WITH_TORCH], words)
                    for number, names, words in numbered_fixes(summary)]  # fmt: skip
        assert numbered_fixes(before_torch) == [fix for fix in expected if fix[1]], before_torch
    assert hook.strip() in first  # the hook prints what the first look prints


# ------------------------------------------------------------- --output: pipes, devices, folders


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX's")
def test_output_into_a_fifo_runs_the_checks_and_writes_the_report_into_it(machine, tmp_path):
    """`--output >(cat)` or a FIFO: never opened to be read (that blocked before any check),
    written to when the checks are done."""
    machine()
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received, codes = [], []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text(encoding="utf-8")))
    doctor = threading.Thread(target=lambda: codes.append(checkup.main(["--output", str(fifo)])))
    for thread in (reader, doctor):
        thread.daemon = True
        thread.start()

    doctor.join(60)
    hung = doctor.is_alive()
    if hung:  # a writer that comes and goes lets the blocked readers return
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(60)

    assert not hung, "verify_install --output FIFO hung"
    assert codes == [3] and received and received[0].startswith("verify_install: ")


@pytest.mark.skipif(not os.path.exists(os.devnull) or os.name != "posix", reason="POSIX device")
def test_output_to_dev_null_writes_there_and_never_says_to_delete_it(machine, capsys):
    machine()

    code = checkup.main(["--output", os.devnull])

    said = capsys.readouterr()
    assert code == 3 and "delete" not in said.err + said.out
    assert said.out == f"Report written to {os.devnull}: cpu-fallback.\n"
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)


def test_output_with_a_trailing_slash_names_a_folder_never_a_file(machine, capsys, tmp_path):
    """argparse's Path drops the slash: `--output newdir/` once wrote a file called newdir."""
    machine()
    folder = str(tmp_path / "newdir") + "/"

    with pytest.raises(SystemExit) as done:
        checkup.main(["--output", folder])

    assert done.value.code == 2 and list(tmp_path.iterdir()) == []
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(
            f"error: --output {folder} ends with a slash but there is no folder "
            f"{tmp_path / 'newdir'}: name a file, such as report.txt, or a folder that is there"
        )
    )
