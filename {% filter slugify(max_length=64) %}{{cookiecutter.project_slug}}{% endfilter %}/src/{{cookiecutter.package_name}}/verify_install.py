"""Is this machine ready to train? ``python -m <package>.verify_install`` (``--help``, ``-v``,
``--json``).

The checks are the doctor's: ``doctor.pyz`` in the project folder, one file (a zip of its
package, importable from there); this module is their command, and the only one of this
package that imports the doctor.
"""

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

import sys
from pathlib import Path

from .machinery.command_entry import give_ctrl_c_back

DOCTOR_FILE = "doctor.pyz"


def doctor_file():
    """The project's doctor.pyz: in the project folder that holds src/, or in the current
    folder (where the package was installed elsewhere and runs from the project); else None."""
    for folder in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (folder / DOCTOR_FILE).is_file():
            return folder / DOCTOR_FILE
    return None


give_ctrl_c_back()  # the doctor's command handles Ctrl+C itself, as KeyboardInterrupt
doctor = doctor_file()
if doctor is None:
    sys.stderr.write(
        f"{DOCTOR_FILE} is not in the project folder: restore it (git checkout -- {DOCTOR_FILE}), "
        "or copy it from a project generated again from the template, then run this again.\n"
    )
    sys.exit(2)
if str(doctor) not in sys.path:
    sys.path.insert(0, str(doctor))  # a zip file on the path is importable
try:
    from gpu_doctor.checkup import main
except KeyboardInterrupt:  # Ctrl+C while the checks load (0.3 s): as during the checks
    sys.stderr.write("Interrupted.\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
