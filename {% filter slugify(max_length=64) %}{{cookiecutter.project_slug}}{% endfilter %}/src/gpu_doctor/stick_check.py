"""verify_install --bundle: does a workshop stick hold what this machine needs?

The stick answers for itself: the instructor's ``python -m instructor.stick make`` copies its
installer, ``install.py`` (standard library only), onto the stick, and that file knows the
stick's manifest. So the doctor carries none of the stick's code, and a stick is checked by
the same code that will install from it. Standard library only.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def ask_stick(stick: Path, stack: str) -> str:
    """One line: whether ``stick`` holds ``stack`` for this machine, in the stick's words."""
    stick = Path(stick)
    installer = stick / "install.py"
    if not stick.is_dir():
        return (
            f"Workshop stick: there is no folder {stick}: is the stick plugged in, and is that "
            "its drive letter?"
        )
    if not installer.is_file():
        return (
            f"Workshop stick: {installer} is missing, so {stick} is no workshop stick: ask the "
            "instructor for the stick, or install with the network."
        )
    try:
        spec = importlib.util.spec_from_file_location("workshop_stick_install", installer)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.stick_verdict(stick, stack))
    except Exception as error:  # a damaged or foreign install.py: say so, never a traceback
        return f"Workshop stick: {installer} could not check the stick ({error!r})."
