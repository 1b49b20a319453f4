"""Is this machine ready to train? ``python -m <package>.verify_install`` (``--help``, ``--json``).

The doctor's code lives in ``doctor/``; this module is its command.
"""

import sys

try:
    from .doctor.verify_install import main
except KeyboardInterrupt:  # Ctrl+C while the checks load (0.3 s): as during the checks
    sys.stderr.write("Interrupted.\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
