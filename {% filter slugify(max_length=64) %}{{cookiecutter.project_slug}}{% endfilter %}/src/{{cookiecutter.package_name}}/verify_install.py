"""Is this machine ready to train? ``python -m <package>.verify_install`` (``--help``, ``-v``,
``--json``).

The checks are the doctor's, a package of its own beside this one (``src/gpu_doctor``); this
module is their command, and the only one of this package that imports the doctor.
"""

if __name__ == "__main__" and not __package__:  # run as a file (PyCharm's arrow): as the module
    from machinery.script import run_as_module

    run_as_module(__file__)

import sys

from .machinery.command_entry import give_ctrl_c_back

give_ctrl_c_back()  # the doctor's command handles Ctrl+C itself, as KeyboardInterrupt
try:
    from gpu_doctor.checkup import main
except KeyboardInterrupt:  # Ctrl+C while the checks load (0.3 s): as during the checks
    sys.stderr.write("Interrupted.\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
