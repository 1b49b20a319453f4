"""Is this machine ready to train? ``python -m <package>.verify_install`` (``--help``, ``--json``).

The doctor's code lives in ``doctor/``; this module is its command.
"""

import sys

from .doctor.verify_install import main

if __name__ == "__main__":
    sys.exit(main())
