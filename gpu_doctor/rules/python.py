"""Rules about the Python that runs the project: its version against the stack's range, 64-bit,
and (while the project generator runs) the Python the environment will get instead."""

from __future__ import annotations

from typing import Sequence

from ..findings import FAIL, NO_ACTION, OK, WARN, Finding
from ..install_commands import install_file
from ..project import Project

CODES = {
    "PY-OK": "This Python's version is supported by the active stack.",
    "PY-UNSUPPORTED": "This Python's version is outside the active stack's range.",
    "PY-NOT-64BIT": "A 32-bit Python: PyTorch ships 64-bit wheels only.",
    "PY-GENERATOR-OTHER": "The generator runs on a Python the stack does not support (hook only).",
    "PY-GENERATOR-ENV": "The generator's Python differs from the environment's (hook only).",
}


def _series(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


def _venv_create(version: str) -> str:
    return f"`py -{version} -m venv .venv` on Windows / `python{version} -m venv .venv` elsewhere"


def _own_python(project: Project) -> str:
    """How the project's environment gets the project's Python, whatever runs the generator."""
    version = project.python_version
    conda = f"`conda env create -f environment.yml` installs Python {version} into it"
    venv = (
        f"venv copies the Python that runs it, so install Python {version} (python.org) if "
        f"this machine lacks it, then run {_venv_create(version)}"
    )
    if project.env_manager == "conda":
        return f"{conda}."
    if project.env_manager == "venv":
        return f"{venv}."
    if project.env_manager == "uv":
        return f"`uv sync` makes .venv with Python {version} (uv downloads it if needed)."
    return f"{conda} (conda); {venv} (venv)."


def _new_env_fix(project: Project) -> str:
    version = project.python_version
    if project.env_manager == "conda":
        create = "`conda env create -f environment.yml` (it asks for that Python)"
    elif project.env_manager == "venv":
        create = f"{_venv_create(version)}, then `{install_file(project, 'requirements.txt')}`"
    elif project.env_manager == "uv":
        create = (
            f"`uv sync --python {version} --no-default-groups --group dev --group "
            f"{project.accelerator}` (uv downloads that Python if needed)"
        )
    else:
        create = (
            f"`conda env create -f environment.yml` (conda), or {_venv_create(version)} "
            f"and `{install_file(project, 'requirements.txt')}` (venv)"
        )
    return (
        f"Create the project's environment with Python {version}: {create}; then select it as "
        "the project interpreter."
    )


def check_python(
    project: Project,
    version_info: Sequence[int],
    pointer_bits: int,
    context: str = "project",
) -> list[Finding]:
    """This interpreter against the accelerator's supported range, and 64-bit.

    ``context`` is "hook" while the project generator runs, "first" when a student runs the
    doctor before any environment exists (``python doctor.pyz``): the environment created
    from the project's environment file may then use another Python than this one.
    """
    version = ".".join(str(part) for part in version_info[:3])
    supported = f"{project.python_min} to {project.python_max}"
    hook = context in ("hook", "first")
    runner = "The generator" if context == "hook" else "This Python"
    ran_on = "The generator ran on" if context == "hook" else "This is"
    findings = []
    if project.supports_python(tuple(version_info)):
        findings.append(
            Finding(
                "Python",
                OK,
                f"Python {version} ({pointer_bits}-bit) is supported for {project.accelerator} "
                f"({supported}).",
                code="PY-OK",
                brief=f"Python {version} is supported ({supported}).",
            )
        )
    elif hook:
        findings.append(
            Finding(
                "Python",
                WARN,
                f"{runner} runs on Python {version}; {project.accelerator} needs "
                f"{supported}. {project.python_note}",
                f"Nothing to change in the project: its environment file asks for Python "
                f"{project.python_version}; {_own_python(project)} Do not install the project "
                "into this Python.",
                code="PY-GENERATOR-OTHER",
                role=NO_ACTION,
            )
        )
    else:
        findings.append(
            Finding(
                "Python",
                FAIL,
                f"Python {version} is outside {supported} for {project.accelerator}. "
                f"{project.python_note}",
                _new_env_fix(project),
                code="PY-UNSUPPORTED",
            )
        )
    if pointer_bits != 64:
        findings.append(
            Finding(
                "Python",
                WARN if hook else FAIL,
                f"This Python is {pointer_bits}-bit; PyTorch ships 64-bit wheels only.",
                "Install a 64-bit Python (x86-64, or ARM64 where the stack has wheels) and "
                "create the environment with it.",
                code="PY-NOT-64BIT",
            )
        )
    if hook and tuple(version_info[:2]) != _series(project.python_version):
        findings.append(
            Finding(
                "Python",
                OK,
                f"{ran_on} Python {version}; the project's environment will use "
                f"Python {project.python_version}: {_own_python(project)}",
                code="PY-GENERATOR-ENV",
            )
        )
    return findings
