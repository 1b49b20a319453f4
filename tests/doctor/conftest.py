"""The doctor's own tests run its source (the repository's gpu_doctor/), as a project's
doctor.pyz would, against the data of a default project: one bake, whose
environments/project.json the doctor reads as it reads the project holding doctor.pyz.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

# How long a test lets a child Python run: a guard against hangs, never a speed goal.
CHILD_LIMIT_S = 300 * float(os.environ.get("TEST_TIMEOUT_SCALE", "1"))


def _bake_default_project() -> Path:
    """A default project in a temporary folder, removed when the tests end."""
    from cookiecutter.main import cookiecutter

    out = Path(tempfile.mkdtemp(prefix="doctor-project-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    return Path(cookiecutter(str(REPOSITORY), no_input=True, output_dir=str(out)))


def _doctor_modules() -> dict:
    """The gpu_doctor modules this process holds, by name."""
    return {
        name: module for name, module in sys.modules.items() if name.split(".")[0] == "gpu_doctor"
    }


PROJECT = _bake_default_project()
# Tests collected before these may have imported another doctor (a project's doctor.pyz): from
# here on, the source is the doctor.
for _name in _doctor_modules():
    del sys.modules[_name]
# The project's own package too: the doctor runs its model and asks its predict module; and
# the project folder last, for the instructor's tools that read the doctor's reports.
sys.path[:0] = [str(REPOSITORY), str(PROJECT / "src")]
sys.path.append(str(PROJECT))

from gpu_doctor import project as _project  # noqa: E402 (the path above comes first)

_project.PROJECT_ROOT = PROJECT
_project.PROJECT_FILE = PROJECT / "environments" / "project.json"

# The doctor's modules as these tests imported them: the source, with the project paths above.
SOURCE_DOCTOR: dict = {}


def pytest_collection_finish(session) -> None:
    SOURCE_DOCTOR.update(_doctor_modules())


@pytest.fixture(autouse=True)
def source_doctor() -> None:
    """Each test starts with the doctor its module imported. A test run before it may have
    dropped it: the post-generation hook, which tests/test_hooks.py runs in this process, forgets
    every gpu_doctor module once it has run a project's doctor.pyz. A later `from gpu_doctor
    import ...` would then load a second copy, whose PROJECT_ROOT is not the project above and
    which the modules imported here never see (nor what monkeypatch sets on it)."""
    for name in set(_doctor_modules()) - set(SOURCE_DOCTOR):
        del sys.modules[name]
    sys.modules.update(SOURCE_DOCTOR)


@pytest.fixture(scope="session")
def child_limit() -> float:
    """Seconds a test lets a child Python run: CHILD_LIMIT_S."""
    return CHILD_LIMIT_S
