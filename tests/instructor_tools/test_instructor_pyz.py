"""instructor.pyz, the one file a project carries the instructor's tools in: the committed file
is the build of instructor/, `python instructor.pyz stick ...` and `room ...` run the two
tools from inside the zip, and the stick's install.py comes out of it whole."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .project_under_test import PROJECT_DIR, REPO, SAMPLES

sys.path.insert(0, str(REPO / "tools"))
import one_file  # noqa: E402  (tools/ is not a package)

TOOL = next(tool for tool in one_file.TOOLS if tool.file == "instructor.pyz")
INSTALLER = REPO / "instructor" / "stick" / "install.py"


@pytest.fixture(scope="module")
def pyz(tmp_path_factory) -> Path:
    """A fresh build of instructor/, in a copy of the baked project's root (its doctor beside)."""
    folder = tmp_path_factory.mktemp("project")
    for name in ("environments", "src"):
        shutil.copytree(PROJECT_DIR / name, folder / name)
    shutil.copyfile(PROJECT_DIR / "doctor.pyz", folder / "doctor.pyz")
    (folder / TOOL.file).write_bytes(one_file.archive_bytes(TOOL))
    return folder / TOOL.file


def run(pyz: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only what the zip holds
    return subprocess.run(
        [sys.executable, str(pyz), *args],
        cwd=cwd or pyz.parent,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
    )


def test_the_committed_file_is_the_build_of_the_package():
    committed = one_file.PROJECT_FOLDER / TOOL.file
    assert committed.read_bytes() == one_file.archive_bytes(TOOL), (
        "instructor.pyz differs from instructor/: run python tools/one_file.py"
    )


def test_the_file_names_its_two_commands(pyz):
    done = run(pyz, "--help")
    assert done.returncode == 0
    assert "stick make" in done.stdout and "room FOLDER" in done.stdout

    wrong = run(pyz, "bundle")
    assert wrong.returncode == 2 and "name stick or room" in wrong.stderr


@pytest.mark.parametrize("command", ["stick", "room"])
def test_each_commands_help_names_the_file(pyz, command):
    done = run(pyz, command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python instructor.pyz {command} ")


def test_the_room_is_summarised_from_the_file(pyz):
    done = run(pyz, "room", str(SAMPLES))
    assert done.returncode == 0, done.stderr
    assert "7 machines" in done.stdout and "Verdicts" in done.stdout
    assert done.stderr == ""  # the project's doctor was found: no note


def test_without_the_doctor_the_room_still_runs_and_says_so(pyz, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(pyz, alone / TOOL.file)
    report = tmp_path / "reports" / "zoe.json"
    report.parent.mkdir()
    shutil.copyfile(SAMPLES / "dara-radeon.json", report)
    report.write_text(report.read_text(encoding="utf-8").replace("Radeon", "Radeon\\u001b[2J"))

    done = run(alone / TOOL.file, "room", str(report.parent), cwd=alone)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 machines" in done.stdout and "Radeon\\x1b[2J" in done.stdout
    assert "doctor.pyz" in done.stderr and "Traceback" not in done.stderr


def test_the_stick_outside_a_project_is_one_sentence(pyz, tmp_path):
    shutil.copyfile(pyz, tmp_path / TOOL.file)
    done = run(tmp_path / TOOL.file, "stick", "make", str(tmp_path / "stick"), cwd=tmp_path)
    assert done.returncode == 1
    assert "is not a project folder" in done.stderr and "Traceback" not in done.stderr


def test_make_copies_install_py_out_of_the_file_and_it_runs_alone(pyz, tmp_path):
    wheel = tmp_path / "alpha-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("alpha/__init__.py", "")
    stick = tmp_path / "stick"
    stick.mkdir()
    script = f"""
import sys
sys.path.insert(0, {str(pyz)!r})
from pathlib import Path
from instructor.stick import install, make
from instructor.stick.resolve import Wheel
source = Path({str(wheel)!r})
wheel = Wheel("alpha", "1.0", source.as_uri(), install.sha256_of(source))
part = make.Part("cpu", "win_amd64", "3.11", [wheel])
make.copy_mnist = lambda *args, **kwargs: {{}}
plan = make.Plan([part], {{wheel.filename: source.stat().st_size}}, [wheel])
make.make(Path.cwd(), Path({str(stick)!r}), plan, "my_package", say=lambda text: None)
assert install.__file__.startswith({str(pyz)!r}), install.__file__
"""
    made = subprocess.run(
        [sys.executable, "-c", script], cwd=pyz.parent, capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    assert (stick / "install.py").read_bytes() == INSTALLER.read_bytes()

    alone = subprocess.run(
        [sys.executable, "-I", str(stick / "install.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert alone.returncode == 2 and alone.stderr.startswith("usage: python STICK/install.py")
