"""The commands that the doctor's fixes print to install or reinstall packages, in the words of
the project's environment manager (project.json's ``env_manager``). Every such command is
spelled here, so that no fix says a bare ``pip``.

- uv: the project's ``.venv`` has no pip of its own, so a bare ``pip`` is another Python's (the
  first on PATH) and leaves ``.venv`` as it was. A uv project syncs its stack's dependency
  group instead (pyproject.toml's ``[dependency-groups]``): the exact pins, each package from
  the index that ``[tool.uv.sources]`` gives it. The default group is dev alone, so every sync
  names its stack's group (and ``--no-default-groups --group dev``, which holds whatever
  default-groups says). What no group holds goes through
  ``uv pip``, which installs into ``.venv``.
- conda and venv: ``python -m pip``, the pip of the Python that is active, never another one
  found first on PATH.

Standard library only.
"""

from __future__ import annotations

from typing import Sequence

from .project import Project, load_project

PYTHON_PIP = "python -m pip"
UV_PIP = "uv pip"
# A stack's index and PyPI together (--index-url and --extra-index-url, as the environment
# files name them): uv stops at the first index that has a package at all (PyPI's torch has no
# +cu130 build), pip takes the best version from any of them, and so does uv with this.
UV_BEST_MATCH = "--index-strategy unsafe-best-match"


def pip_words(env_manager: str) -> str:
    """How to call pip in an environment of this manager: ``uv pip`` or ``python -m pip``."""
    return UV_PIP if env_manager == "uv" else PYTHON_PIP


def pip(project: Project, arguments: str) -> str:
    """The one spelling of a pip command (``arguments``: "install -r requirements.txt")."""
    command = f"{pip_words(project.env_manager)} {arguments}"
    if uses_uv(project) and ("--extra-index-url" in arguments or " -r " in f" {arguments}"):
        command += f" {UV_BEST_MATCH}"  # an environment file names both indexes
    return command


def uses_uv(project: Project) -> bool:
    return project.env_manager == "uv"


def uv_sync(project: Project, group: str = "", reinstall: Sequence[str] = ()) -> str:
    """``uv sync`` of the project's stack (``group``: another group of it, such as
    rocm-windows-gfx1151 with that GPU's kernels), reinstalling the packages named."""
    group = group or project.accelerator
    words = ["uv sync", f"--no-default-groups --group dev --group {group}"]
    words += [f"--reinstall-package {name}" for name in reinstall]
    return " ".join(words)


def reinstall(
    project: Project, pip_arguments: str, packages: Sequence[str] = ("torch", "torchvision")
) -> str:
    """Install ``packages`` again over what is there: pip's ``install --force-reinstall``
    with ``pip_arguments`` (the pins and their index, or ``-r`` and a file), or in a uv
    project the stack's sync, which takes them again from the lock, each from its index."""
    if uses_uv(project):
        return uv_sync(project, reinstall=packages)
    return pip(project, f"install --force-reinstall {pip_arguments}")


def install_file(project: Project, requirements: str) -> str:
    """A venv's environment file into the active environment (``requirements``: its path); a
    uv project's stack comes from its group instead."""
    if uses_uv(project):
        return uv_sync(project)
    return pip(project, f"install -r {requirements}")


def reinstall_clean(names: Sequence[str], project: Project | None) -> str:
    """Packages whose files are damaged or overwritten, installed again as the environment file
    names them: uninstalled first, so that none of their old files stay. A uv sync reinstalls
    those its lock names and removes the others."""
    if project is not None and uses_uv(project):
        return f"`{uv_sync(project, reinstall=names)}`"
    words = pip_words(project.env_manager if project else "")
    then = (
        f"`{words} install {names[0]}` (the version the environment file names)"
        if len(names) == 1
        else "install the one the environment file names"
    )
    return f"`{words} uninstall {' '.join(names)}`, then {then}"


def this_project() -> Project | None:
    """The project's settings, or None where project.json cannot be read (said elsewhere)."""
    try:
        return load_project()
    except Exception:
        return None


def kernels(project: Project, target: str, pip_arguments: str) -> str:
    """AMD's GPU kernels for ``target`` (rocm-windows): in a uv project the stack's group with
    that GPU's kernels (``rocm-windows-<target>``) where pyproject.toml has one, else the pip
    command of ``pip_arguments`` (the device packages and AMD's index)."""
    stack = project.stacks.get("rocm-windows", {})
    if uses_uv(project) and (target in stack.get("gfx_targets", ()) or target.startswith("<")):
        return uv_sync(project, group=f"rocm-windows-{target}")
    return pip(project, f"install {pip_arguments}")
