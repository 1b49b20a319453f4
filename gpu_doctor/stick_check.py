"""verify_install --bundle: does a workshop stick hold what this machine needs?

The stick answers for itself: the instructor's ``python instructor.pyz stick make`` copies its
installer, ``install.py`` (standard library only), onto the stick, and that file knows the
stick's manifest. So the doctor carries none of the stick's code, and a stick is checked by
the same code that will install from it. The doctor adds what it knows of this laptop: the
gfx target of its AMD GPU, which the kernels of an AMD ROCm environment must match.
Standard library only.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from typing import Any

from .bounded import describe_error

STICK_FILES = ("install.py", "manifest.json", "README.txt")


def gfx_target_of(recommendation: dict[str, Any] | None) -> str:
    """The gfx target of the GPU the doctor recommends training on ('gfx1151'); '' for any
    other GPU, or when the target could not be read."""
    gpu = (recommendation or {}).get("gpu") or {}
    target = gpu.get("gfx_target") if isinstance(gpu, dict) else ""
    return target if isinstance(target, str) else ""


def not_a_stick(stick: Path) -> str:
    """What is wrong with the path itself, in the doctor's words; '' for a folder."""
    if stick.is_file():
        folder = stick.parent if stick.name in STICK_FILES else None
        which = f" ({folder})" if folder else ", such as E:\\"
        return (
            f"Workshop stick: {stick} is a file, not a folder: --bundle takes the stick's "
            f"folder{which}."
        )
    if not stick.is_dir():
        return (
            f"Workshop stick: there is no folder {stick}: is the stick plugged in, and is that "
            "its drive letter?"
        )
    return ""


def ask_stick(stick: Path, stack: str, gfx_target: str = "") -> str:
    """One line: whether ``stick`` holds ``stack`` for this machine (for its AMD GPU's
    ``gfx_target``, where the environment carries GPU kernels), in the stick's words."""
    stick = Path(stick)
    installer = stick / "install.py"
    wrong = not_a_stick(stick)
    if wrong:
        return wrong
    if not installer.is_file():
        return (
            f"Workshop stick: {installer} is missing, so {stick} is no workshop stick: copy "
            "install.py again from the instructor's stick (or the whole stick, if it lacks "
            "manifest.json too)."
        )
    try:
        spec = importlib.util.spec_from_file_location("workshop_stick_install", installer)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        verdict = module.stick_verdict
        # A stick made before GPU kernels were compared has an installer without gfx_target.
        if gfx_target and "gfx_target" in inspect.signature(verdict).parameters:
            return str(verdict(stick, stack, gfx_target=gfx_target))
        return str(verdict(stick, stack))
    except Exception as error:  # a damaged or foreign install.py: say so, never a traceback
        reason = (describe_error(error).splitlines() or ["?"])[0]
        return (
            f"Workshop stick: {installer} could not check the stick ({reason}): "
            "copy install.py again from the instructor's stick."
        )
