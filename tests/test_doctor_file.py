"""The doctor reaches a project as one file, doctor.pyz, built from the repository's gpu_doctor/
by tools/one_file.py: the committed file is the source's build, a project carries it as it is,
and it runs on every Python it claims (3.8 and later) while older ones get one sentence."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import one_file  # tools/ (conftest.py puts it on the path)
import pytest
from conftest import PROJECT_TEMPLATE, TEMPLATE_DIR

DOCTOR = next(tool for tool in one_file.TOOLS if tool.file == "doctor.pyz")
OLDEST, NEWEST = 8, 13  # the CPython 3 minors the doctor claims, up to the newest one tested

# Imports every module of the doctor file: a name that fails only at run time on an older
# Python (tuple[...] outside an annotation) fails here, whichever command would reach it.
IMPORT_ALL = """
import importlib, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import gpu_doctor
names = [m.name for m in pkgutil.walk_packages(gpu_doctor.__path__, "gpu_doctor.")]
for name in names:
    if not name.endswith("__main__"):
        importlib.import_module(name)
print(len(names))
"""

VERMIN = "import sys; from vermin import main; sys.exit(main())"  # vermin has no __main__


def python(minor: int) -> str | None:
    """A CPython 3.<minor> on this machine: one of pyenv's versions, or one on PATH (not pyenv's
    shim, which answers for versions that are not selected with an error)."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(versions.glob(f"3.{minor}.*/bin/python3.{minor}"))
    if installed:
        return str(installed[-1])
    found = shutil.which(f"python3.{minor}")
    return found if found and "shims" not in Path(found).parts else None


def run(*command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120
    )


@pytest.fixture(scope="module")
def project(bake_once, tmp_path_factory) -> Path:
    """A default project with the doctor file built from the source, as a bake would have it."""
    folder = tmp_path_factory.mktemp("doctor-file") / "project"
    shutil.copytree(bake_once().path, folder)
    (folder / DOCTOR.file).write_bytes(one_file.archive_bytes(DOCTOR))
    return folder


def test_the_committed_doctor_file_is_the_build_of_its_source():
    stale = one_file.stale_files()
    assert DOCTOR.file not in stale, (
        f"{DOCTOR.file} differs from gpu_doctor/: run python tools/one_file.py and commit it"
    )


def test_a_project_carries_the_doctor_file_as_it_is_in_the_template(bake_once):
    baked = bake_once().path / DOCTOR.file
    assert baked.read_bytes() == (PROJECT_TEMPLATE / DOCTOR.file).read_bytes()
    assert not (bake_once().path / "src" / "gpu_doctor").exists()


@pytest.mark.parametrize("minor", range(OLDEST, NEWEST + 1), ids=lambda m: f"3.{m}")
def test_the_doctor_file_runs_on_every_python_it_claims(project, bake_once, minor):
    interpreter = python(minor)
    if interpreter is None:
        pytest.skip(f"no Python 3.{minor} on this machine")
    package = bake_once().package

    first = run(interpreter, DOCTOR.file, cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Traceback" not in first.stdout + first.stderr
    assert "The environment for this machine: " in first.stdout
    assert f"python -m {package}.verify_install" in first.stdout

    checkup = "from gpu_doctor.checkup import main; sys.exit(main(['--json']))"
    code = f"import sys; sys.path.insert(0, {DOCTOR.file!r}); {checkup}"
    report = run(interpreter, "-c", code, cwd=project)
    assert "Traceback" not in report.stderr, report.stderr
    verdict = json.loads(report.stdout)
    assert verdict["project"]["package"] == package
    assert verdict["verdict"]["exit_code"] == report.returncode

    every = run(interpreter, "-c", IMPORT_ALL, DOCTOR.file, cwd=project)
    assert every.returncode == 0, every.stderr
    assert int(every.stdout) >= 40


@pytest.mark.parametrize("minor", [6, 7], ids=lambda m: f"3.{m}")
def test_an_older_python_gets_one_sentence(project, minor):
    interpreter = python(minor)
    if interpreter is None:
        pytest.skip(f"no Python 3.{minor} on this machine")

    done = run(interpreter, DOCTOR.file, cwd=project)

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(f"{DOCTOR.file} needs Python 3.8 or later; this is Python 3.")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_vermin_finds_nothing_newer_than_python_3_8_in_the_doctor():
    """The static guard beside the runs above: the standard library's newer functions and
    syntax, in every module, on paths no run reaches."""
    pytest.importorskip("vermin", reason="requirements-dev.txt installs vermin")
    done = subprocess.run(
        [sys.executable, "-c", VERMIN, "-t=3.8-", "--no-tips", "--violations", "gpu_doctor"],
        cwd=TEMPLATE_DIR,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
