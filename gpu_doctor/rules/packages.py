"""Rules about the installed packages and the project's code: each pinned package at its pinned
version, torch's build (``torch_build``), torch that does not import (and why), the project's
own modules and the packages they import, and a project.json that cannot be read.
Standard library only: torch is never imported here.
"""

from __future__ import annotations

import sys
from typing import Callable

from .. import builds
from ..bounded import describe_error
from ..builds import installed_version
from ..findings import FAIL, OK, REPAIRS_ENVIRONMENT, WARN, Finding
from ..install_commands import pip
from ..project import Project, parse_version
from . import torch_build
from .environment import install_command

CODES = {
    "PKG-OK": "A pinned package is installed at its pinned version.",
    "PKG-MISSING": "A pinned package is not installed.",
    "PKG-VERSION": "A pinned package is installed at another version.",
    "TORCH-NOT-IN-THIS-PYTHON": "torch is not importable in this Python.",
    "TORCH-DLL": "torch is installed but its libraries do not load.",
    "TORCH-IMPORT-FAILED": "torch is installed but fails to import.",
    "REQUIREMENT-MISSING": "A package the project's code imports is not installed.",
    "PROJECT-MODULE-MISSING": "A module of the project itself is missing.",
    "PROJECT-IMPORT-FAILED": "The project's code fails to import.",
    "PROJECT-UNREADABLE": "project.json could not be read.",
}

# The doctor's own package: a module of it that is gone is a file of the project that is gone.
DOCTOR_PACKAGE = (__package__ or "").split(".")[0]


def project_unreadable(error: BaseException) -> Finding:
    return Finding(
        "Project",
        FAIL,
        f"project.json could not be read: {describe_error(error)}.",
        "Restore environments/project.json from version control, or generate the project again.",
        code="PROJECT-UNREADABLE",
    )


def install_fix(project: Project) -> str:
    tag = torch_build.expected_tag(project)  # the build, not just the version: '2.14.1+xpu'
    pins = " ".join(
        f"{name}=={version}{'+' + tag if tag and name in ('torch', 'torchvision') else ''}"
        for name, version in sorted(project.pins.items())
    )
    index = f" --index-url {project.index_url}" if project.index_url else ""
    return (
        f"In the project's environment: {install_command(project)}, or directly "
        f"`{pip(project, f'install {pins}{index}')}`."
    )


def check_packages(
    project: Project,
    version_of: Callable[[str], str | None] = installed_version,
    version_file: Callable[[], str] | None = None,
) -> tuple[list[Finding], dict[str, dict[str, str | None]]]:
    """Installed versions of the pinned packages (local tags like '+cu130' aside), then the
    build of torch against the one the stack installs. ``version_file`` gives torch's
    version.py; a replaced ``version_of`` reads none unless it is given too."""
    if version_file is None:
        version_file = builds.torch_version_file if version_of is installed_version else str
    findings, packages = [], {}
    for name in sorted(project.pins, key=lambda n: (n != "torch", n)):
        pinned = project.pins[name]
        try:
            installed = version_of(name)
        except Exception:  # metadata so damaged that it cannot be read: as good as missing
            installed = None
        packages[name] = {"installed": installed, "pinned": pinned}
        if installed is None:
            why = {
                "torch": "nothing can train",
                "torch-directml": "DirectML cannot be used and training falls back to the CPU",
                "torchvision": "MNIST cannot be loaded (synthetic digits still work)",
            }.get(name, "the project may not run")
            status = FAIL if name == "torch" else WARN
            findings.append(
                Finding(
                    name,
                    status,
                    f"{name} is not installed (pinned: {pinned}): {why}.",
                    install_fix(project),
                    code="PKG-MISSING",
                    role=REPAIRS_ENVIRONMENT,
                    brief=f"{name} is not installed.",
                )
            )
        elif installed.split("+")[0] != pinned:
            older = parse_version(installed) < parse_version(pinned)
            findings.append(
                Finding(
                    name,
                    WARN,
                    f"{name} {installed} is installed; this project pins {pinned} "
                    f"({'older' if older else 'a different version'}: untested here).",
                    install_fix(project),
                    code="PKG-VERSION",
                    role=REPAIRS_ENVIRONMENT,
                    brief=f"{name} is not the pinned {pinned}.",
                )
            )
        else:
            findings.append(
                Finding(name, OK, f"{name} {installed} (pinned {pinned}).", code="PKG-OK")
            )
    build = builds.torch_build(version_of, version_file)
    after_torch = next((n + 1 for n, f in enumerate(findings) if f.check == "torch"), 0)
    findings[after_torch:after_torch] = torch_build.check_build(project, build)
    return findings, packages


def _activate_hint(project: Project) -> str:
    if project.env_manager == "conda":
        return f"`conda activate {project.project_slug or '...'}`"
    if project.env_manager == "venv":
        return "activate the .venv"
    if project.env_manager == "uv":
        return f"{install_command(project)}, then activate the .venv"
    return "`conda activate ...` or the .venv"


def torch_import_finding(error: BaseException, project: Project) -> Finding:
    text = describe_error(error)
    if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == "torch":
        return Finding(
            "torch",
            FAIL,
            f"torch cannot be imported in this Python ({sys.executable}): {text}.",
            f"Run this with the project's environment ({_activate_hint(project)}; in PyCharm "
            "select it as the project interpreter). If it is the right one: "
            + install_fix(project),
            code="TORCH-NOT-IN-THIS-PYTHON",
        )
    if isinstance(error, OSError) and ("dll" in text.lower() or "WinError" in text):
        return Finding(
            "torch",
            FAIL,
            f"torch is installed but its libraries do not load: {text}.",
            "Install the Microsoft Visual C++ Redistributable (x64) from "
            "https://aka.ms/vs/17/release/vc_redist.x64.exe, open a new terminal and try again; "
            f"if it persists: {torch_build.reinstall_command(project)}.",
            code="TORCH-DLL",
        )
    return Finding(
        "torch",
        FAIL,
        f"torch is installed but fails to import: {text}.",
        f"Reinstall it: {torch_build.reinstall_command(project)}; then run this check again.",
        code="TORCH-IMPORT-FAILED",
    )


DISTRIBUTIONS = {"PIL": "pillow", "yaml": "PyYAML", "torch_directml": "torch-directml"}


def distribution_of(module: str) -> str:
    """The distribution (pip's name) that provides the top-level ``module``."""
    return DISTRIBUTIONS.get(module, module)


def missing_module(error: BaseException) -> str | None:
    """The top-level module a ModuleNotFoundError names ('tqdm' for 'tqdm.auto'), else None."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return error.name.split(".")[0]
    return None


def project_import_finding(error: BaseException, project: Project) -> Finding:
    """torch imports, but the project's own modules do not: most often a dependency of the
    project (tqdm, matplotlib, torchvision) is missing from this environment."""
    module = missing_module(error)
    requirements = f"Install the project's requirements: {install_command(project)}"
    if module in (project.package_name, DOCTOR_PACKAGE):  # one of the project's own files is gone
        return Finding(
            "Requirements",
            FAIL,
            f"A module of this project is missing: {describe_error(error)}.",
            "Restore the project's files from version control, or generate the project again.",
            code="PROJECT-MODULE-MISSING",
        )
    if module:
        return Finding(
            "Requirements",
            FAIL,
            f"The project's code imports {module} (package {distribution_of(module)}), which "
            f"is not installed in this Python ({sys.executable}).",
            f"{requirements} (it installs {distribution_of(module)}); then run this check again.",
            code="REQUIREMENT-MISSING",
        )
    return Finding(
        "Requirements",
        FAIL,
        f"The project's code fails to import: {describe_error(error)}.",
        "If you edited the file the error names, fix or undo that change. Otherwise: "
        f"{requirements}; then run this check again.",
        code="PROJECT-IMPORT-FAILED",
    )


def project_import_verdict(error: BaseException, project: Project) -> str:
    module = missing_module(error)
    if module and module not in (project.package_name, DOCTOR_PACKAGE):
        return f"Not ready to train: the project's code needs {module}, which is not installed."
    return "Not ready to train: the project's code does not import."
