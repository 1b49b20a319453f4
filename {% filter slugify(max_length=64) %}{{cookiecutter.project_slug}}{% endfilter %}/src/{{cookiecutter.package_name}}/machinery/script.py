"""A command's file run as a script (``python src/<package>/train.py``, or PyCharm's green
arrow beside ``if __name__ == "__main__":``) runs as the module instead: ``python -m
<package>.train``.

Run as a file, a module of the package has no package: its ``from . import data`` fails, and
its folder, first on ``sys.path``, would let its own ``data.py`` or ``datasets/`` hide other
modules of those names. The commands' files therefore start with

    if __name__ == "__main__" and not __package__:
        from machinery.script import run_as_module

        run_as_module(__file__)

which imports this module from the package's folder (first on ``sys.path`` then) by its bare
name: standard library only, and no relative import, so that it works from there.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import NoReturn


def run_as_module(file: str) -> NoReturn:
    """Run the package's module whose file is ``file`` as ``python -m`` runs it, with the same
    command-line arguments, then exit with its exit code."""
    script = Path(file).resolve()
    package, src = script.parent, script.parent.parent
    sys.path[:] = [entry for entry in sys.path if not _same_folder(entry, package)]
    sys.path.insert(0, str(src))
    for name in [m for m in sys.modules if m == "machinery" or m.startswith("machinery.")]:
        del sys.modules[name]  # imported from the package's folder by its bare name
    runpy.run_module(f"{package.name}.{script.stem}", run_name="__main__", alter_sys=True)
    raise SystemExit(0)  # a module whose __main__ part returned without exiting


def _same_folder(entry: str, folder: Path) -> bool:
    try:
        return Path(entry or os.curdir).resolve() == folder
    except (OSError, RuntimeError):  # an entry that cannot be resolved is not the folder
        return False
