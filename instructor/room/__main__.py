"""python instructor.pyz room FOLDER [--markdown]: see ``summary``."""

import sys

from .summary import main

if __name__ == "__main__":
    sys.exit(main())
