"""The instructor's tools, kept out of the students' package: run them in the project folder.

    python -m instructor.stick make E:\\     a workshop stick: every wheel, MNIST, install.py
    python -m instructor.room reports        a room's verify_install --json reports, summarised

docs/workshop.md says when to use each. They use the doctor (``gpu_doctor``, in the project's
doctor.pyz) for the project's settings and safe printing; nothing of the students' package
imports them.
"""

import sys
from pathlib import Path

# The doctor is one file beside this folder: a zip file on the path is importable.
_DOCTOR = Path(__file__).resolve().parent.parent / "doctor.pyz"
if _DOCTOR.is_file() and str(_DOCTOR) not in sys.path:
    sys.path.append(str(_DOCTOR))
