"""Is this machine ready to train? ``python -m <package>.verify_install`` (``--help``, ``-v``,
``--json``).

The checks are the doctor's, a package of its own beside this one (``src/gpu_doctor``); this
module is their command.
"""

import sys

try:
    from gpu_doctor.checkup import main
except KeyboardInterrupt:  # Ctrl+C while the checks load (0.3 s): as during the checks
    sys.stderr.write("Interrupted.\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
