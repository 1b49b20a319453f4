"""The project the instructor's tools serve, read from the data file the template wrote into it
(run them in the project folder): its package, its accelerator and Python, every stack's Python
range. Standard library only; nothing here is rendered by the template.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

# The project's data file; projects generated before it moved to environments/ keep it beside
# the doctor's source.
PROJECT_FILES = ("environments/project.json", "src/gpu_doctor/project.json")


class NoProject(Exception):
    """No readable project data file here; the message says what to do."""


@dataclass(frozen=True)
class Project:
    package_name: str
    accelerator: str
    python_version: str
    stacks: dict[str, dict] = field(default_factory=dict)


def python_version(text: str) -> tuple[int, ...]:
    """'3.10' -> (3, 10), for comparing a stack's Python range; () when not MAJOR.MINOR."""
    parts = text.strip().split(".")
    return tuple(int(part) for part in parts) if all(p.isdigit() for p in parts) else ()


def project_file(folder: Path | None = None) -> Path | None:
    folder = Path.cwd() if folder is None else folder
    return next((folder / name for name in PROJECT_FILES if (folder / name).is_file()), None)


def load_project(folder: Path | None = None) -> Project:
    """The project in ``folder`` (the current one by default), or NoProject naming the fix."""
    path = project_file(folder)
    if path is None:
        raise NoProject(
            f"{Path.cwd() if folder is None else folder} is not a project folder (it has no "
            f"{PROJECT_FILES[0]}): cd into the project folder, then run this again."
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Project(
            package_name=str(data["package_name"]),
            accelerator=str(data["accelerator"]),
            python_version=str(data["python_version"]),
            stacks=dict(data.get("stacks", {})),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise NoProject(
            f"{path} cannot be read as the project's data ({type(error).__name__}: {error}): "
            "put back the file the project came with, then run this again."
        ) from None


def project_package() -> str:
    """The project's package for a usage line; "<package>" outside a project folder."""
    try:
        return load_project().package_name
    except NoProject:
        return "<package>"
