"""The project's package stands without the doctor (``doctor.pyz``): every module imports,
and every command answers ``--help``, in a Python where the doctor cannot be imported at all.
Only ``verify_install``, the doctor's command, imports it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from gpu_doctor.project import load_project

from {{ cookiecutter.package_name }} import data
from {{ cookiecutter.package_name }}.machinery import this_project

PACKAGE = Path(data.__file__).resolve().parent
DOCTOR = "gpu_doctor"
ENTRY_POINT = "verify_install.py"  # the doctor's command: the one module that may import it
COMMANDS = {"train", "evaluate", "export", "draw", "benchmark", "data"}  # and predict, with one

# A child Python in which any import of the doctor fails, as where it was never installed; it
# imports every module of the package, then runs each command as ``python -m`` would.
WITHOUT_DOCTOR = """
import contextlib, importlib, io, json, pkgutil, runpy, sys

doctor, package_name, commands = sys.argv[1], sys.argv[2], sys.argv[3:]


class LeftOut:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == doctor:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, LeftOut())
package = importlib.import_module(package_name)
found = dict(imported=[], failed=dict(), helps=dict())
for module in pkgutil.walk_packages(package.__path__, package_name + "."):
    try:
        importlib.import_module(module.name)
        found["imported"].append(module.name)
    except Exception as error:
        found["failed"][module.name] = f"{type(error).__name__}: {error}"
for name in commands:
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [name, "--help"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(f"{package_name}.{name}", run_name="__main__", alter_sys=True)
            code = None
        except SystemExit as done:
            code = done.code
        except Exception as error:
            code = f"{type(error).__name__}: {error}"
    found["helps"][name] = [code, out.getvalue(), err.getvalue()]
print("RESULT " + json.dumps(found))
"""


def commands_of_the_package() -> set:
    """The package's modules that run as ``python -m``: an ``if __name__ == "__main__":``."""
    found = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
                found.add(path.stem)
    return found - {Path(ENTRY_POINT).stem}


def doctor_imports(path: Path) -> list:
    """Lines of ``path`` that import the doctor: ``import gpu_doctor...``, ``from gpu_doctor...
    import``, or ``importlib.import_module("gpu_doctor...")``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = getattr(node.func, "attr", getattr(node.func, "id", ""))
            is_import = called in ("import_module", "__import__")
            names = [str(node.args[0].value)] if is_import else []
        else:
            continue
        if any(name.split(".")[0] == DOCTOR for name in names):
            lines.append(node.lineno)
    return lines


def test_every_module_and_every_commands_help_work_where_the_doctor_cannot_be_imported(
    tmp_path, child_limit
):
    commands = sorted(commands_of_the_package())
    assert set(commands) >= COMMANDS
    path = os.pathsep.join(p for p in (str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_DOCTOR, DOCTOR, data.__package__, *commands],
        cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=path),
        capture_output=True,
        text=True,
        timeout=child_limit,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.split("RESULT ", 1)[1])

    entry_point = f"{data.__package__}.{Path(ENTRY_POINT).stem}"
    assert found["failed"] == {entry_point: f"ModuleNotFoundError: No module named '{DOCTOR}'"}
    assert f"{data.__package__}.machinery.cli" in found["imported"]
    assert len(found["imported"]) >= 30  # every module but verify_install
    for name, (exit_code, out, err) in found["helps"].items():
        assert exit_code == 0, f"{name}: {err}"
        assert out.startswith(f"usage: python -m {data.__package__}.{name}"), out
        assert "Traceback" not in err


def test_only_verify_install_imports_the_doctor():
    importing = {
        path.relative_to(PACKAGE).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := doctor_imports(path))
    }
    assert list(importing) == [ENTRY_POINT], f"modules that import {DOCTOR}: {importing}"


def test_an_import_of_the_doctor_is_found_however_it_is_written(tmp_path):
    module = tmp_path / "module.py"
    for line in (
        "import gpu_doctor",
        "import os, gpu_doctor.safe_text as text",
        "from gpu_doctor.commands import command",
        "def f():\n    from gpu_doctor import project",
        "import importlib\nimportlib.import_module('gpu_doctor.project')",
        "__import__('gpu_doctor')",
    ):
        module.write_text(line + "\n", encoding="utf-8")
        assert doctor_imports(module), line
    module.write_text("from .machinery import cli\nimport gpu_doctors\n", encoding="utf-8")
    assert doctor_imports(module) == []


def test_the_packages_answers_are_the_ones_the_doctor_reads():
    """The package's copy of what the project was generated with (its name in a run's header,
    its stack in the device notes, the ROCm targets ``--device auto`` ranks by) agrees with the
    doctor's project.json."""
    project = load_project()

    assert this_project.project_name() == project.project_name
    assert this_project.accelerator() == project.accelerator
    targets = project.stacks.get("rocm-windows", {}).get("gfx_targets", [])
    assert this_project.rocm_gfx_targets() == frozenset(targets)
    uv = this_project.pip_command("install onnxruntime") == "uv pip install onnxruntime"
    assert uv == (project.env_manager == "uv")  # a uv .venv has no pip of its own


def test_the_packages_install_advice_speaks_the_projects_environment_manager(monkeypatch):
    answers = {"env_manager": "uv"}
    monkeypatch.setattr(this_project, "_answer", lambda key, default: answers.get(key, default))
    assert this_project.pip_command("install onnxruntime") == "uv pip install onnxruntime"
    answers["env_manager"] = "venv"
    assert this_project.pip_command("uninstall x") == f'"{sys.executable}" -m pip uninstall x'
