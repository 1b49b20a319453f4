"""What this project was generated with, as its commands need it: the project's name (the
header of a run), its stack ("directml", "cuda", "cpu"...: whether installing torch-directml is
advice or noise) and the gfx targets AMD's ROCm builds for Windows run (which GPU ``auto``
picks). Written into ``this_project.json`` when the project was made, so that this package
stands without the doctor, which keeps its own fuller copy (``environments/project.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ANSWERS = Path(__file__).with_name("this_project.json")


def _answer(key: str, default: Any) -> Any:
    try:
        return json.loads(ANSWERS.read_text(encoding="utf-8")).get(key, default)
    except (OSError, ValueError, AttributeError):  # gone or damaged: messages lose a detail
        return default


def project_name() -> str:
    """The name the project was given; "" when unknown."""
    return str(_answer("project_name", ""))


def accelerator() -> str:
    """The stack the project was generated for; "" when unknown."""
    return str(_answer("accelerator", ""))


def pip_command(arguments: str) -> str:
    """A pip command for this project's environment (``arguments``: "install onnxruntime"):
    ``uv pip`` in a uv project, whose .venv has no pip; else this Python's own pip."""
    if _answer("env_manager", "") == "uv":
        return f"uv pip {arguments}"
    return f'"{sys.executable}" -m pip {arguments}'


def directml_torch() -> str:
    """The torch version torch-directml pins ("2.4.1"); "" when unknown."""
    return str(_answer("directml_torch", ""))


def rocm_gfx_targets() -> frozenset[str]:
    """The gfx targets (gfx1100...) the pinned ROCm build for Windows runs; the doctor
    recommends a GPU by the same list."""
    return frozenset(map(str, _answer("rocm_windows_gfx_targets", [])))
