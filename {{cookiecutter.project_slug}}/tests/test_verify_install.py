"""verify_install: the verdicts and exit codes a user (or an instructor's script) relies on.

The device list is replaced with ``devices.Discovery`` objects describing other machines; a
"DirectML adapter" there is a CPU device in disguise, so the smoke test, the training step
and the timing run for real. One test runs the real thing end to end on this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from {{ cookiecutter.package_name }} import (
    model,
    train,
)
from {{ cookiecutter.package_name }}.doctor import (
    verify_install,
)
from {{ cookiecutter.package_name }}.doctor.envcheck import (
    FAIL,
    OK,
    WARN,
)
from {{ cookiecutter.package_name }}.machinery import (
    devices,
)
from {{ cookiecutter.package_name }}.machinery.project import (
    Project,
)

LIBD3D12 = (
    "torch_directml failed to load: OSError: libd3d12.so: cannot open shared object file: "
    "No such file or directory"
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
    monkeypatch.setattr(verify_install, "TIMED_STEPS", 1)

    def describe(accelerator="directml", options=(), unavailable=(), lenet=None, trainer=None):
        found = devices.Discovery(list(options) + [CPU], list(unavailable))
        monkeypatch.setattr(verify_install, "load_project", lambda: project(accelerator))
        fake_devices = SimpleNamespace(discover=lambda: found, choose=devices.choose)
        fake_model = SimpleNamespace(LeNet5=lenet or model.LeNet5)
        modules = (fake_devices, fake_model, trainer or train)
        monkeypatch.setattr(verify_install, "load_modules", lambda: modules)

    return describe


def run_json(capsys, *args):
    code = verify_install.main(["--json", *args])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["exit_code"] == code
    return code, report


def findings(report, check, status=None):
    return [f for f in report["findings"] if f["check"] == check and status in (None, f["status"])]


def test_directml_that_cannot_load_falls_back_to_the_cpu_with_exit_3(machine, capsys):
    machine(unavailable=[devices.Unavailable("directml", LIBD3D12)])
    code, report = run_json(capsys)
    assert code == verify_install.EXIT_CPU_FALLBACK == 3
    assert report["verdict"]["status"] == "cpu-fallback"
    assert report["chosen"]["label"] == "cpu"
    (device,) = findings(report, "Device", WARN)
    assert "libd3d12.so" in device["found"] and "Direct3D 12" in device["fix"]


def test_a_working_directml_adapter_exits_0_with_its_float64_support(machine, capsys):
    machine(options=[RADEON])
    assert verify_install.main([]) == verify_install.EXIT_OK == 0
    out = capsys.readouterr().out
    assert "directml:1: AMD Radeon RX 6700 XT, float64 NOT supported" in out
    assert "LeNet forward+backward on cpu vs the CPU: largest relative difference" in out
    assert "Verdict (exit 0): WORKS: training runs on directml:1 (AMD Radeon RX 6700 XT)." in out
    assert "ms on the CPU (" in out  # device against CPU timing


def test_the_table_comes_first_then_the_verdict_then_the_fixes(machine, capsys):
    machine(unavailable=[devices.Unavailable("directml", LIBD3D12)])
    verify_install.main([])
    out = capsys.readouterr().out
    assert out.index("Smoke test") < out.index("Verdict (exit 3)") < out.index("Fixes:")


def test_a_device_that_computes_wrong_is_a_broken_install(machine, capsys):
    class DriftingLeNet(model.LeNet5):
        """A LeNet whose copy on the 'device' is off, as a buggy driver would make it."""

        def to(self, *args, **kwargs):
            moved = super().to(*args, **kwargs)
            with torch.no_grad():
                moved.fc3.bias.add_(0.5)
            return moved

    machine(options=[RADEON], lenet=DriftingLeNet)
    code, report = run_json(capsys)
    assert code == verify_install.EXIT_BROKEN == 4
    (smoke,) = findings(report, "Smoke test", FAIL)
    assert "largest relative difference" in smoke["found"] and "--device cpu" in smoke["fix"]
    assert report["smoke_test"]["passed"] is False
    assert report["smoke_test"]["max_relative_error"] > verify_install.SMOKE_TOLERANCE
    assert "BROKEN" in report["verdict"]["message"]


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
    machine(unavailable=[devices.Unavailable("directml", LIBD3D12)])
    code, report = run_json(capsys, "--device", "directml:0")
    assert code == 3
    (chosen,) = findings(report, "Chosen", WARN)
    assert "not available" in chosen["found"] and "cpu (CPU" in chosen["found"]


def test_missing_torch_is_a_finding_with_exit_4(machine, capsys, monkeypatch):
    machine()

    def no_torch():
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr(verify_install, "import_torch", no_torch)
    code, report = run_json(capsys)
    assert code == 4 and report["verdict"]["status"] == "broken"
    (finding,) = findings(report, "torch", FAIL)
    assert "cannot be imported" in finding["found"] and "requirements.txt" in finding["fix"]


def test_a_torch_whose_dlls_do_not_load_gives_the_fix_and_no_traceback(tmp_path):
    shadow = tmp_path / "torch"
    shadow.mkdir()
    message = (
        "[WinError 126] The specified module could not be found. Error loading "
        '"C:\\env\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.'
    )
    (shadow / "__init__.py").write_text(f"raise OSError({message!r})\n")
    src = Path(verify_install.__file__).resolve().parents[2]  # src/<package>/doctor/
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(src)]))
    done = subprocess.run(
        [sys.executable, "-m", verify_install.__name__, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    (finding,) = findings(report, "torch", FAIL)
    assert "WinError 126" in finding["found"] and "vc_redist.x64.exe" in finding["fix"]


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
    found, packages = verify_install.check_packages(project(), installed.get)
    assert [f.check for f in found] == ["torch", "torch-directml", "torchvision"]
    assert [f.status for f in found] == status
    assert any(text in f.found for f in found)
    assert packages["torch-directml"]["pinned"] == "0.2.5.dev240914"
    assert all("torch-directml==0.2.5.dev240914" in f.fix for f in found if f.status != OK)


def test_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as stopped:
        verify_install.main(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out and "--json" in out
    assert "  0  the chosen accelerator works" in out
    assert "  3  training would fall back to the CPU" in out
    assert "  4  the install is broken" in out


def test_the_real_thing_on_this_machine():
    """No fakes: whatever this machine has, a verdict consistent with the chosen device."""
    src = Path(verify_install.__file__).resolve().parents[2]  # src/<package>/doctor/
    paths = [str(src)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run(
        [sys.executable, "-m", verify_install.__name__, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    accelerator = report["project"]["accelerator"]
    chosen = report["chosen"]["kind"]
    expected = 3 if chosen == "cpu" and accelerator != "cpu" else 0
    assert done.returncode == report["verdict"]["exit_code"] == expected, report["verdict"]
    assert report["smoke_test"]["passed"] and report["timing"]["device_ms"] > 0
    if expected == 3:  # then the report says why the accelerator is not usable
        assert any(u["kind"] == accelerator and u["reason"] for u in report["unavailable"])


@pytest.mark.parametrize("device", ["xyz", "cuda:x", "directml:"])
def test_a_device_that_is_no_device_name_is_a_usage_error(capsys, device):
    with pytest.raises(SystemExit) as stopped:
        verify_install.main(["--device", device])
    assert stopped.value.code == 2  # like every other command's bad argument, not 3
    assert f"unknown device {device!r}" in capsys.readouterr().err


@pytest.mark.parametrize("encoding", ["ascii", "cp1252", "cp936"])
def test_json_reads_back_the_same_on_a_console_that_cannot_show_every_name(
    machine, monkeypatch, encoding
):
    """A Chinese project name through an ASCII pipe or a Western Windows console."""
    import io

    name = "手写数字识别 – Ünïcode 😀"
    machine(unavailable=[devices.Unavailable("directml", LIBD3D12)])
    named = Project(name, "lenet_test", "directml", "3.11", "3.8", "3.12", "", PINS["directml"], "")
    monkeypatch.setattr(verify_install, "load_project", lambda: named)
    raw = io.BytesIO()
    console = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", console)
    verify_install.main(["--json"])
    console.flush()
    report = json.loads(raw.getvalue().decode(encoding))
    assert report["project"]["name"] == name


def test_a_reader_that_stops_early_ends_the_json_quietly():
    """`verify_install --json | head -c 10`: no BrokenPipeError, the verdict's exit code."""
    src = Path(verify_install.__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(src))
    child = subprocess.Popen(
        [sys.executable, "-m", verify_install.__name__, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    child.stdout.close()  # the reader is gone before the report is written
    _out, err = child.communicate(timeout=300)
    text = err.decode("utf-8", "replace")
    assert "BrokenPipeError" not in text and "Traceback" not in text
    assert child.returncode in (verify_install.EXIT_OK, verify_install.EXIT_CPU_FALLBACK)


def test_json_names_the_best_environment_for_a_faked_intel_arc_laptop(machine, capsys, monkeypatch):
    from {{ cookiecutter.package_name }}.doctor import envcheck
    from {{ cookiecutter.package_name }}.doctor.gpus import Gpu, GpuScan
    from {{ cookiecutter.package_name }}.doctor.os_info import OsInfo

    arc = Gpu("Intel(R) Arc(TM) Graphics", 0x8086, 0x7D55, 2**27, "31.0.101.5590", source="DXGI")
    windows = OsInfo("Windows", "10", "10.0.22631", "AMD64", windows_build=22631)
    monkeypatch.setattr(envcheck.os_info, "detect", lambda: windows)
    monkeypatch.setattr(envcheck, "scan_gpus", lambda info: GpuScan([arc], source="DXGI"))
    monkeypatch.setattr(envcheck.recommend, "installed_stack", lambda: "directml")
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
