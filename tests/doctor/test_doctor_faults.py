"""What the doctor says where a setup half-works: repair commands in the words of the project's
environment manager (a uv .venv has no pip), a GPU tool that hangs (the summary's mark shows
it), and a .venv that an interrupted install left empty.
"""

from __future__ import annotations

import ast
import dataclasses
import errno
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpu_doctor import (
    areas,
    checkup,
    envcheck,
    onnx_runtime_check,
    render,
)
from gpu_doctor.builds import (
    TorchBuild,
)
from gpu_doctor.findings import (
    FAIL,
    NO_ACTION,
    OK,
    WARN,
    Finding,
)
from gpu_doctor.project import (
    PROJECT_ROOT,
    load_project,
)
from gpu_doctor.rules import (
    device_checks,
    packages,
    rocm_windows,
    torch_build,
)
from gpu_doctor.verdict import (
    Report,
)

DOCTOR = Path(checkup.__file__).resolve().parent
COMMAND = re.compile(r"`([^`]+)`")  # a command the user is told to type, in backticks


def project_for(env_manager: str, stack: str):
    """This project as if generated for ``env_manager``, its environment serving ``stack``."""
    project = dataclasses.replace(load_project(), env_manager=env_manager)
    return project.for_stack(stack)


def pip_commands(text: str) -> list[str]:
    """The commands in ``text`` that call pip in any spelling."""
    return [command for command in COMMAND.findall(text) if re.search(r"\bpip\b", command)]


def repair_fixes(project, monkeypatch) -> list[str]:
    """The fixes of the doctor's repairs that install into the environment in use: torch of
    another stack's build, a torch whose libraries do not load or import, the CUDA build
    missing, a torch without ROCm, AMD's kernels of another GPU, ONNX Runtime broken."""
    monkeypatch.setattr(onnx_runtime_check, "this_project", lambda: project)
    wrong_build = TorchBuild("2.14.1", "cu130", from_pypi=True)
    dll = OSError("[WinError 126] Error loading c10.dll")
    fixes = [f.fix for f in torch_build.check_build(project, wrong_build)]
    fixes.append(packages.torch_import_finding(dll, project).fix)
    fixes.append(packages.torch_import_finding(RuntimeError("broken"), project).fix)
    if project.accelerator == "rocm-windows":  # torch calls AMD's GPUs cuda too
        fixes.append(device_checks._cuda_fix("torch was built with no CUDA", project)[0])
    torch = SimpleNamespace(version=SimpleNamespace(hip=None))
    fixes += [f.fix for f in rocm_windows.hip_finding(project, torch)]
    recommendation = {"gpu": {"gfx_target": "gfx1151"}}
    fixes += [
        f.fix
        for f in rocm_windows.kernel_findings(project, recommendation, lambda: ["amd-torch-x"])
    ]
    fixes.append(onnx_runtime_check._broken("onnxruntime 1.32.0", "does not import").fix)
    return fixes


@pytest.mark.parametrize("stack", ["xpu", "rocm-windows"])
def test_a_uv_projects_repairs_sync_its_group_and_never_call_a_pip_it_lacks(stack, monkeypatch):
    """A uv .venv has no pip: a bare `pip` is another Python's, and `.venv` stays as it was.
    The repairs sync the stack's dependency group instead (its pins, each from its index)."""
    project = project_for("uv", stack)
    fixes = repair_fixes(project, monkeypatch)
    text = " ".join(fixes)

    assert len(fixes) >= 4
    assert not [command for command in pip_commands(text) if not command.startswith("uv pip ")]
    group = f"uv sync --no-default-groups --group dev --group {stack}"  # the default: dev alone
    reinstall = f"`{group} --reinstall-package torch --reinstall-package torchvision`"
    assert reinstall in fixes[0]  # another stack's torch build
    assert f"`{group} --reinstall-package torch" in fixes[1]  # its DLLs do not load
    if stack == "rocm-windows":
        assert reinstall in text  # no ROCm in this torch
        kernels = "`uv sync --no-default-groups --group dev --group rocm-windows-gfx1151`"
        assert kernels in text  # this GPU's kernels: the group that holds them
    assert f"`{group} --reinstall-package onnxruntime`" in fixes[-1]


@pytest.mark.parametrize("env_manager", ["venv", "conda", ""])
def test_conda_and_venv_repairs_call_the_pip_of_the_active_python(env_manager, monkeypatch):
    for stack in ("xpu", "rocm-windows"):
        text = " ".join(repair_fixes(project_for(env_manager, stack), monkeypatch))
        commands = pip_commands(text)
        assert commands, text
        assert all(command.startswith("python -m pip ") for command in commands), commands
        assert "uv " not in text


def spelled_pip_commands(path: Path) -> list[str]:
    """The strings of ``path``'s code that spell a pip command (docstrings are prose)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    documents = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    docstrings = {
        id(owner.body[0].value)
        for owner in ast.walk(tree)
        if isinstance(owner, documents) and owner.body and isinstance(owner.body[0], ast.Expr)
    }
    return [
        f"{path.name}:{node.lineno}: {node.value.strip()[:60]}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and re.search(r"\bpip (?:un)?install\b", node.value)
    ]


def test_only_install_commands_spells_a_pip_command():
    """Every fix that installs goes through install_commands, which speaks the project's
    environment manager: no other module of the doctor writes `pip install` itself."""
    modules = [path for path in sorted(DOCTOR.rglob("*.py")) if path.name != "install_commands.py"]
    assert [line for path in modules for line in spelled_pip_commands(path)] == []


# ------------------------------------------------------------- a GPU tool that does not answer


def fake_nvidia_machine(root: Path) -> Path:
    """/sys/class/drm of a Linux machine with an NVIDIA card on NVIDIA's driver, and an
    nvidia-smi that never answers (a driver that waits for a restart, a GPU that hangs)."""
    device = root / "sys" / "class" / "drm" / "card1" / "device"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x10de\n")
    (device / "device").write_text("0x2206\n")
    (device / "uevent").write_text("DRIVER=nvidia\nPCI_ID=10DE:2206\nPCI_SLOT_NAME=0000:01:00.0\n")
    tools = root / "bin"
    tools.mkdir()
    smi = tools / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(3600)\n")
    smi.chmod(0o755)
    return root / "sys" / "class" / "drm"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux GPU scan")
def test_an_nvidia_smi_that_hangs_shows_as_a_warning_in_the_summary(tmp_path, child_limit):
    """verify_install in a child process, on a machine whose nvidia-smi never answers: the
    doctor gives up on it after its timeout, and the GPU area's mark says so, with a fix."""
    drm = fake_nvidia_machine(tmp_path)
    src = DOCTOR.parent
    root = PROJECT_ROOT  # the project the doctor reads (conftest.py)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpu_doctor import checkup, project, sysfs\n"
        f"project.PROJECT_ROOT = Path({str(root)!r})\n"
        "project.PROJECT_FILE = project.PROJECT_ROOT / 'environments' / 'project.json'\n"
        "scan = sysfs.scan\n"
        f"sysfs.scan = lambda **options: scan(Path({str(drm)!r}), **options)\n"
        "sys.exit(checkup.main([]))\n"
    )
    paths = [str(src), str(root / "src")]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    path = os.pathsep.join([str(tmp_path / "bin"), os.environ.get("PATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(paths), PATH=path, PYTHONUTF8="1"),
        timeout=child_limit,
    )

    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    (gpu,) = [line for line in lines if re.match(r"\[.\] GPU: ", line)]
    assert gpu.startswith("[!] GPU: Part of the GPU query failed (nvidia-smi)."), done.stdout
    fixes = " ".join(done.stdout.split("Fixes:", 1)[-1].split())
    assert "[GPU] Run `nvidia-smi` yourself; if it hangs or fails too, restart" in fixes


def test_a_warning_shows_as_a_warning_unless_its_rule_says_it_asks_nothing():
    found = Finding("GPU", OK, "NVIDIA GeForce RTX 3080 (discrete).")
    silent = Finding("GPU", WARN, "Part of the GPU query failed: nvidia-smi did not answer.")
    explains = Finding("GPU", WARN, "Only an integrated GPU.", "Compare.", role=NO_ACTION)

    assert areas.by_area([found, silent])[0].status == WARN
    assert areas.by_area([found, explains])[0].status == OK
    report = Report(project={"name": "Digits", "accelerator": "cuda"})
    report.findings = [found, silent]
    assert "[!] GPU: Part of the GPU query failed" in render.render_summary(report)


def test_an_xpu_that_torch_cannot_use_shows_its_warning_with_a_fix():
    """Now that the Device area shows this warning, it says what to do, as CUDA's does."""
    project = project_for("venv", "xpu")
    reason = "no Intel XPU (needs Intel's torch build, 2.5 or later)"
    discovery = SimpleNamespace(
        options=[], unavailable=[SimpleNamespace(kind="xpu", reason=reason, installed=False)]
    )

    (finding,) = device_checks.device_findings(discovery, project)
    (area,) = areas.by_area([finding])

    assert area.status == WARN and finding.asks_action
    assert finding.fix.startswith("XPU needs an Intel Arc or Core Ultra GPU")


# ------------------------------------------------------------- a .venv an install left empty


def project_folder(tmp_path: Path, python: bool = True, torch: bool = False) -> Path:
    """A project folder whose .venv `uv sync` made and then stopped filling (uv's pyvenv.cfg,
    Python, an empty site-packages), or, without ``python``, left half-made."""
    folder = tmp_path / "digits"
    venv = folder / ".venv"
    packages_folder = venv / "lib" / "python3.12" / "site-packages"
    packages_folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "digits"\n')
    if python:
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.9.9\nversion_info = 3.12.8\n")
        (venv / "bin").mkdir()
        (venv / "bin" / "python").write_text("")
    if torch:
        (packages_folder / "torch").mkdir()
    return folder


def test_an_empty_uv_venv_is_named_with_the_command_that_finishes_it(tmp_path, monkeypatch):
    from gpu_doctor import project_venv  # the subject these two tests check

    folder = project_folder(tmp_path)
    monkeypatch.setattr(project_venv, "project_folder", lambda: folder)
    project = project_for("uv", load_project().accelerator)

    before = envcheck.run_checks(context="first", project=project)
    (finding,) = [f for f in before if f.code == "ENV-VENV-INCOMPLETE"]
    in_use = project_venv.check_venv(project, folder, prefix=str(folder / ".venv"))

    assert finding.status == WARN and in_use[0].status == FAIL  # the Python in use is broken
    assert "`uv sync` stopped before it installed them" in finding.found
    assert '"Failed to fetch"' in finding.found and "every stack" in finding.found
    stack = project.accelerator
    sync = f"uv sync --no-default-groups --group dev --group {stack}"  # a plain one: no stack
    assert finding.fix.startswith(f"Run `{sync}` again once the network reaches")
    assert f"`{sync} --offline`" in finding.fix and f"`{sync} --locked`" in finding.fix
    assert f"`uv pip install -r environments/{stack}.txt --index-strategy unsafe-best-match`" in (
        finding.fix
    )
    assert "delete the empty .venv folder" in finding.fix

    half_made = project_folder(tmp_path / "other", python=False)
    (broken,) = project_venv.check_venv(project, half_made, prefix=sys.prefix)
    assert "no Python in it" in broken.found and broken.fix.startswith("Delete the .venv folder")
    filled = project_folder(tmp_path / "filled", torch=True)
    assert project_venv.check_venv(project, filled, prefix=sys.prefix) == []


def test_an_empty_venv_of_a_pip_project_says_to_install_its_requirements(tmp_path):
    from gpu_doctor import project_venv

    folder = project_folder(tmp_path)
    project = project_for("venv", load_project().accelerator)

    (finding,) = project_venv.check_venv(project, folder, prefix=sys.prefix)

    assert finding.status == WARN and "none of the project's packages" in finding.found
    assert "`python -m pip install -r requirements.txt`" in finding.fix
    assert project_venv.check_venv(project_for("conda", "cpu"), folder, sys.prefix) == []


# ------------------------------------------------------------- --output on a full disk


class FullDisk:
    """A new file on a disk that is full: every write fails with ENOSPC."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()


def full_disk_open(*args, **kwargs):
    return FullDisk(open(*args, **kwargs))  # noqa: SIM115 (FullDisk closes it)


def test_a_full_disk_makes_no_empty_report_and_says_no_file_was_made(tmp_path, capsys, monkeypatch):
    """Where no earlier report is there to keep, nothing is left: no 0-byte file, no part."""
    report = Report(project={"name": "Digits", "accelerator": "cpu"})
    report.add("Python", OK, "Python 3.12.8 (64-bit) is supported.", code="PY-OK")
    monkeypatch.setattr(checkup, "run", lambda request: report)
    monkeypatch.setattr(checkup, "open", full_disk_open, raising=False)
    report_file = tmp_path / "ann.json"

    code = checkup.main(["--json", "--output", str(report_file)])

    assert code == 74 and list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == (
        f"error: the report could not be written to {report_file} (No space left on device), "
        "so no file was made: free some space on that disk, or name a file on another one "
        "with --output.\n"
    )


def test_an_empty_uv_venv_of_the_best_stack_shows_one_environment_row(tmp_path, monkeypatch):
    """Once two rows: "Best for this machine: cpu, which is the default environment" and
    ".venv is empty": the empty .venv is the one thing the Environment area has to say."""
    from gpu_doctor import project_venv
    from gpu_doctor.gpus import GpuScan
    from gpu_doctor.os_info import OsInfo

    linux = OsInfo("Linux", "6.11.0-19-generic", "#19~24.04.1-Ubuntu SMP", "x86_64")
    folder = project_folder(tmp_path)
    monkeypatch.setattr(project_venv, "project_folder", lambda: folder)
    project = project_for("uv", "cpu")

    findings = envcheck.run_checks(
        context="project", project=project, os_facts=linux, gpu_scan=GpuScan([])
    )

    rows = [f.code for f in findings if areas.area_of(f) == "Environment"]
    assert rows == ["ENV-VENV-INCOMPLETE"]


def test_a_uv_project_checked_with_another_python_says_its_fixes_act_on_venv(tmp_path, monkeypatch):
    """uv sync and uv pip install into .venv: run from a conda environment or a system Python,
    the report described one Python and repaired another, without a word."""
    from gpu_doctor import project_venv

    folder = project_folder(tmp_path, torch=True)  # a complete .venv, not the Python in use
    monkeypatch.setattr(project_venv, "project_folder", lambda: folder)
    project = project_for("uv", load_project().accelerator)
    package = project.package_name

    findings = envcheck.run_checks(context="project", project=project)

    (other,) = [f for f in findings if f.code == "ENV-NOT-PROJECT-VENV"]
    assert other.status == WARN and f"This Python ({sys.prefix}) is not the project's .venv" in (
        other.found
    )
    assert f"`uv run python -m {package}.verify_install`" in other.fix
    in_venv = project_venv.check_interpreter(project, folder, prefix=str(folder / ".venv"))
    assert in_venv == []
    assert project_venv.check_interpreter(project_for("venv", "cpu"), folder, sys.prefix) == []
    (no_venv,) = project_venv.check_interpreter(project, tmp_path / "none", sys.prefix)
    assert "create .venv with `uv sync --no-default-groups --group dev" in no_venv.fix
