"""The choices this project was generated with: accelerator, supported Pythons, exact pins.

They live in the project's ``environments/project.json``, written when the project was
generated, so that the generator's hook, verify_install and the tests read one source of truth,
and one doctor file serves every project: ``doctor.pyz`` in the project's root folder reads the
file of the project it sits in. Standard library only.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


def _project_root() -> Path:
    """The folder holding the doctor: the project's root, where doctor.pyz sits (this package is
    inside that zip file), or the folder above this package where it runs from its source."""
    home = Path(os.path.abspath(__file__)).parent.parent  # doctor.pyz, or the source's folder
    return home.parent if home.is_file() else home


PROJECT_ROOT = _project_root()
PROJECT_FILE = PROJECT_ROOT / "environments" / "project.json"


def parse_version(text: str) -> tuple[int, ...]:
    """'3.11' -> (3, 11); '2.4.1+cpu' -> (2, 4, 1). Non-numeric parts end the version."""
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts)


@dataclass(frozen=True)
class Project:
    project_name: str
    package_name: str
    accelerator: str
    python_version: str
    python_min: str
    python_max: str
    python_note: str
    pins: dict[str, str]
    index_url: str
    env_manager: str = ""  # "conda", "venv" or "uv"; "" when unknown (then advice names both)
    project_slug: str = ""  # the folder and the conda environment's name
    stacks: dict[str, dict] = field(default_factory=dict)  # every stack of the support table
    generated_for: str = ""  # the accelerator chosen at generation, once for_stack changed it
    template_version: str = ""  # the version of the template the project was generated from

    @property
    def uses_default_stack(self) -> bool:
        """True when the stack is the one requirements.txt / environment.yml install."""
        return self.generated_for in ("", self.accelerator)

    def for_stack(self, name: str) -> Project:
        """This project as if ``name`` (one of ``stacks``) had been chosen: its Python range,
        pins and index. A project serves a room: any stack's environment file may be active."""
        stack = self.stacks.get(name)
        if not stack or name == self.accelerator:
            return self
        return replace(
            self,
            accelerator=name,
            generated_for=self.generated_for or self.accelerator,
            python_min=stack["python_min"],
            python_max=stack["python_max"],
            python_note=stack.get("python_note", ""),
            pins=dict(stack["pins"]),
            index_url=stack.get("index_url", ""),
        )

    def supports_python(self, version: tuple[int, ...]) -> bool:
        """True when major.minor of ``version`` lies in the accelerator's supported range."""
        minor = tuple(version[:2])
        return parse_version(self.python_min) <= minor <= parse_version(self.python_max)


def load_project(path: Path | None = None) -> Project:
    """The project in ``path``, by default the project.json of the project holding the doctor."""
    data = json.loads((path or PROJECT_FILE).read_text(encoding="utf-8"))
    stack = data["stack"]
    return Project(
        project_name=data["project_name"],
        package_name=data["package_name"],
        accelerator=data["accelerator"],
        python_version=data["python_version"],
        python_min=stack["python_min"],
        python_max=stack["python_max"],
        python_note=stack["python_note"],
        pins=dict(stack["pins"]),
        index_url=stack["index_url"],
        env_manager=data.get("env_manager", ""),
        project_slug=data.get("project_slug", ""),
        stacks=dict(data.get("stacks", {})),
        template_version=str(data.get("template_version", "")),
    )


def project_package() -> str:
    """The project's own package, for a command's usage line; "<package>" when project.json
    cannot be read (the check itself then says so)."""
    try:
        return load_project().package_name
    except Exception:
        return "<package>"


def project_module(name: str) -> Any:
    """A module of the project's own package (project.json names it): the doctor imports the
    project only through here, to run its model and training step once torch is known to
    import, and to ask its predict module which ONNX Runtime provider it would use."""
    return importlib.import_module(f"{project_package()}.{name}")
