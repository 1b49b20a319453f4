"""Which stack the environment in use serves: by its name (``.venv-xpu``, the conda
environment ``<project>-xpu``), else by the build tag of its torch, else unknown.

Standard library only; torch is not imported (its version is read from package metadata), so
an environment whose torch fails to import is still told apart.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from .builds import stack_of_tag


def stack_of_torch(torch_version: str | None, directml: bool) -> str | None:
    """The stack an installed torch belongs to, from its version's local tag, or None.

    '2.14.1+xpu' -> xpu, '+rocm7.2' -> rocm, '+cu130' -> cuda, '+cu126' -> cuda-legacy,
    '+cpu' -> cpu; torch-directml
    installed -> directml. A torch without a tag (PyPI's) is not told apart: None.
    """
    if directml:
        return "directml"
    if not torch_version or "+" not in torch_version:
        return None
    return stack_of_tag(torch_version.split("+", 1)[1])


def installed_stack(version_of: Callable[[str], str | None] | None = None) -> str | None:
    """The stack of this interpreter's torch, read from package metadata (torch not imported)."""
    if version_of is None:
        from importlib import metadata

        def version_of(name: str) -> str | None:
            try:
                return metadata.version(name)
            except Exception:  # not installed, or metadata too damaged to read
                return None

    return stack_of_torch(version_of("torch"), version_of("torch-directml") is not None)


def environment_stack(
    stacks: dict, slug: str, prefix: str | None = None, conda_env: str | None = None
) -> str | None:
    """The stack an environment was created for, from its name: `.venv-xpu`, or the conda
    environment `<project slug>-xpu` (the names the README and verify_install's fixes use)."""
    prefix = sys.prefix if prefix is None else prefix
    conda_env = os.environ.get("CONDA_DEFAULT_ENV", "") if conda_env is None else conda_env
    folder = Path(prefix).name
    for stack in stacks:
        conda_name = f"{slug}-{stack}" if slug else ""
        if folder == f".venv-{stack}" or (conda_name and conda_name in (folder, conda_env)):
            return stack
    return None


def made_by(prefix: str | None = None, installer_of: Callable[[str], str] | None = None) -> str:
    """Which tool made the environment at ``prefix`` (this Python's by default): "uv" (`uv
    venv`, `uv sync`: its pyvenv.cfg has a `uv =` line, as PyCharm checks), "uv pip" (a venv
    whose torch `uv pip` installed), "venv", "conda", or "" (no environment: a system Python)."""
    prefix = sys.prefix if prefix is None else prefix
    config = Path(prefix) / "pyvenv.cfg"
    if (Path(prefix) / "conda-meta").is_dir():
        return "conda"
    if not config.is_file():
        return ""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "venv"
    if any(line.partition("=")[0].strip() == "uv" for line in lines):
        return "uv"
    if installer_of is None:
        installer_of = _installer
    return "uv pip" if installer_of("torch") == "uv" else "venv"


def _installer(name: str) -> str:
    """The tool that installed ``name`` (its INSTALLER file: "pip", "uv"), or ""."""
    from importlib import metadata

    try:
        return (metadata.distribution(name).read_text("INSTALLER") or "").strip()
    except Exception:  # not installed, or metadata too damaged to read
        return ""


def active_stack(stacks: dict, slug: str) -> str | None:
    """The stack this environment serves: its name's, else its torch's, else None (unknown)."""
    return environment_stack(stacks, slug) or installed_stack()
