"""The project folder's ``.venv`` that an install left empty or half-made, and how to finish it.

``uv sync`` makes ``.venv`` first and installs into it last: when one of the project's package
indexes does not answer (without a ``uv.lock``, uv resolves every stack's group at once, so
PyPI, PyTorch's and AMD's indexes must all answer) it stops with "Failed to fetch" and leaves a
``.venv`` with Python and nothing else. ``pip install -r requirements.txt`` into a new venv
does the same when PyTorch's index does not answer. PyCharm and VS Code then pick that
``.venv`` as the interpreter, and every command fails on a torch that is not there. This
subject says so, with the command that finishes the install. Standard library only: the
folders are looked at, nothing is imported from them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import project as where  # where.PROJECT_ROOT: read at each call (tests move it)
from .findings import FAIL, WARN, Finding
from .install_commands import install_file, pip, uv_sync
from .project import Project

CODES = {
    "ENV-VENV-INCOMPLETE": "The project's .venv has no Python, or Python without its packages.",
    "ENV-NOT-PROJECT-VENV": "A uv project checked with a Python that is not its .venv.",
}
VENV = ".venv"
NO_PYTHON, NO_PACKAGES = "no-python", "no-packages"
BRIEFS = {
    NO_PYTHON: ".venv was left half-made: no Python in it.",
    NO_PACKAGES: ".venv is empty: its install stopped.",
}


def project_folder() -> Path | None:
    """The folder of the project this doctor belongs to (the one holding doctor.pyz), or None
    where the doctor runs from elsewhere (its source, outside a project)."""
    folder = where.PROJECT_ROOT
    return folder if (folder / "pyproject.toml").is_file() else None


def site_packages(venv: Path) -> list[Path]:
    """Where a venv keeps its packages: Lib/site-packages (Windows), lib/pythonX.Y/site-packages."""
    return [venv / "Lib" / "site-packages", *sorted((venv / "lib").glob("python*/site-packages"))]


def venv_state(venv: Path) -> str:
    """NO_PYTHON (a venv left half-made), NO_PACKAGES (Python, but no torch in its
    site-packages: the install stopped), or "" (complete, or no venv at all)."""
    if not venv.is_dir():
        return ""
    python = venv / "Scripts" / "python.exe", venv / "bin" / "python"
    if not (venv / "pyvenv.cfg").is_file() or not any(path.exists() for path in python):
        return NO_PYTHON
    if not any(_has_torch(folder) for folder in site_packages(venv)):
        return NO_PACKAGES
    return ""


def _has_torch(folder: Path) -> bool:
    """torch's package folder, or its installed metadata (a wheel that lays it out otherwise)."""
    return (folder / "torch").is_dir() or any(folder.glob("torch-*.dist-info"))


def _same_folder(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == other.resolve()
    except OSError:
        return False


def check_venv(
    project: Project, folder: Path | None = None, prefix: str | None = None
) -> list[Finding]:
    """The project's .venv when it is empty or half-made: a FAIL where this Python is that
    .venv (``prefix``: sys.prefix), else a WARN. A conda project has no .venv to check."""
    folder = project_folder() if folder is None else folder
    if folder is None or project.env_manager == "conda":
        return []
    venv = folder / VENV
    state = venv_state(venv)
    if not state:
        return []
    in_use = _same_folder(Path(sys.prefix if prefix is None else prefix), venv)
    uv = project.env_manager == "uv"
    found, fix = (_uv_words if uv else _pip_words)(state, project)
    brief = BRIEFS[state]
    status = FAIL if in_use else WARN
    return [Finding("Environment", status, found, fix, code="ENV-VENV-INCOMPLETE", brief=brief)]


def check_interpreter(
    project: Project, folder: Path | None = None, prefix: str | None = None
) -> list[Finding]:
    """A uv project whose doctor runs on another Python than its .venv (a conda environment,
    a system Python): every uv fix (``uv sync``, ``uv pip``) acts on .venv, not on the Python
    in use, so the report would describe one environment and repair another. Said once, with
    how to check .venv instead. An empty .venv is check_venv's."""
    folder = project_folder() if folder is None else folder
    if folder is None or project.env_manager != "uv":
        return []
    venv = folder / VENV
    prefix = sys.prefix if prefix is None else prefix
    if _same_folder(Path(prefix), venv) or venv_state(venv):
        return []
    check = f"uv run python -m {project.package_name}.verify_install"
    if venv.is_dir():
        then = f"check .venv instead: `{check}` (in PyCharm or VS Code, select .venv's Python)"
    else:
        then = f"create .venv with `{uv_sync(project)}`, then check it: `{check}`"
    return [
        Finding(
            "Environment",
            WARN,
            f"This Python ({prefix}) is not the project's .venv, which this uv project's fixes "
            "(uv sync, uv pip) install into: they would not change the Python checked here.",
            f"Work in the project's .venv: {then}.",
            code="ENV-NOT-PROJECT-VENV",
            brief="Not the project's .venv: the fixes act on .venv.",
        )
    ]


def _uv_words(state: str, project: Project) -> tuple[str, str]:
    sync = uv_sync(project)
    pip_file = f"environments/{project.accelerator}.txt"
    finish = (
        f"run `{sync}` again once the network reaches the project's package indexes (PyPI, "
        f"download.pytorch.org, AMD's); offline, with the packages in uv's cache from an "
        f"earlier sync: `{sync} --offline`; with a uv.lock from your instructor: "
        f"`{sync} --locked`, which asks only this stack's index. Where only PyPI and this "
        f"stack's index answer, `{pip(project, 'install -r ' + pip_file)}` fills .venv without a "
        "lock (then run commands with .venv's Python, not `uv run`)."
    )
    if state == NO_PYTHON:
        found = ".venv in the project folder has no Python in it: it was left half-made."
        return found, f"Delete the .venv folder, then {finish}"
    found = (
        ".venv in the project folder has Python but none of the project's packages (no "
        "torch): `uv sync` stopped before it installed them, most often because a package "
        'index did not answer (uv says "Failed to fetch"). Without a uv.lock, uv resolves '
        "every stack of pyproject.toml at once, so PyPI and each stack's index (PyTorch's, "
        "AMD's) must answer, also those of stacks this machine does not use."
    )
    fix = (
        f"{finish[0].upper()}{finish[1:]} If you stop here, delete the empty .venv folder, so "
        "that no editor picks it as the interpreter."
    )
    return found, fix


def _pip_words(state: str, project: Project) -> tuple[str, str]:
    install = install_file(project, "requirements.txt")
    if state == NO_PYTHON:
        return (
            ".venv in the project folder has no Python in it: it was left half-made.",
            "Delete the .venv folder, create it again as the README says, activate it and run "
            f"`{install}`.",
        )
    return (
        ".venv in the project folder has Python but none of the project's packages (no "
        "torch): the install into it stopped, most often because PyTorch's package index did "
        "not answer, or it was never run.",
        f"Activate .venv and run `{install}` once the network reaches the index that pip's "
        "error names.",
    )
