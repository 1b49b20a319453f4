"""The project the instructor's tests run against: the template baked once with its default
answers (cookiecutter --no-input), as an instructor has it. The package under test is this
repository's top-level ``instructor/``; the doctor it reads the project with is the baked
project's (its ``doctor.pyz``, or ``src/gpu_doctor`` in a project that has no doctor.pyz).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # instructor/ is a package at its top
SAMPLES = Path(__file__).resolve().parent / "reports"


def _bake() -> Path:
    from cookiecutter.main import cookiecutter

    out = Path(tempfile.mkdtemp(prefix="instructor-tests-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    return Path(cookiecutter(str(REPO), no_input=True, output_dir=str(out)))


PROJECT_DIR = _bake()
# Where `import gpu_doctor` finds the doctor: the project's one file, else its source folder.
DOCTOR_PATH = [
    str(place) for place in (PROJECT_DIR / "doctor.pyz", PROJECT_DIR / "src") if place.exists()
]
IMPORT_PATH = [str(REPO), *DOCTOR_PATH]  # PYTHONPATH for a child that runs the instructor
for entry in reversed(IMPORT_PATH):
    if entry not in sys.path:
        sys.path.insert(0, entry)
