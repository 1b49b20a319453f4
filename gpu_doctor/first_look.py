"""``python doctor.pyz``: the standard-library checks, then the one environment to create.

What a student runs first, before any environment exists (the README's first step): the
checks of ``envcheck`` in the "first" context, then the commands for this project's
environment manager that create the environment this machine should have.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Sequence

from . import project as project_file
from .commands import command, write_out
from .envcheck import run_checks
from .project import load_project
from .render import format_findings, line_width

MANAGERS = ("conda", "venv", "uv")


def create_commands(recommendation: dict, env_manager: str) -> list[str]:
    """The commands that create the recommended environment with ``env_manager`` (all three
    managers' when the project does not say which it uses)."""
    commands = recommendation.get("commands", {})
    if env_manager in commands:
        return list(commands[env_manager])
    return [
        f"{manager}: {' && '.join(commands[manager])}"
        for manager in MANAGERS
        if manager in commands
    ]


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: Sequence[str] | None = None) -> int:
    """Print the findings and the environment to create; exit 0 (nothing here is fatal: the
    checks that need PyTorch come later, from verify_install)."""
    argparse.ArgumentParser(
        prog="python doctor.pyz",
        description="Before any environment exists: check this machine with the standard "
        "library only and name the environment that fits it, with the commands that create it.",
    ).parse_args(argv)
    details: dict = {}
    findings = run_checks(context="first", details=details)
    write_out(format_findings(findings))
    recommendation = details.get("recommendation")
    if not recommendation:
        write_out(
            "\nThe checks could not tell which environment fits this machine: create the "
            "default one (README, step 2), then run verify_install."
        )
        return 0
    try:
        project = load_project()
        env_manager, package = project.env_manager, project.package_name
    except Exception:  # a damaged project.json was reported among the findings
        env_manager, package = "", "<package>"
    if any(finding.code == "ENV-ARM64-NO-CONDA" for finding in findings):
        env_manager = "venv"  # no conda on Windows on ARM: that finding says why
    elsewhere = _elsewhere()  # the commands' paths are the project's: run them there
    why = recommendation.get("why", "")
    chosen = (  # the reason as a sentence of its own: reasons have parentheses of their own
        f"The environment for this machine: {recommendation['stack']}. "
        f"{why[:1].upper() + why[1:] + '. ' if why else ''}Create it, in "
        f"{'the project folder' if elsewhere else 'this folder'}:"
    )
    write_out("\n" + textwrap.fill(chosen, width=line_width(None)))
    if elsewhere:
        write_out(f'  cd "{elsewhere}"')
    for line in create_commands(recommendation, env_manager):
        write_out(f"  {line}")
    write_out(f"Then check it, PyTorch included: python -m {package}.verify_install")
    return 0


def _elsewhere() -> str:
    """The project folder when the first look runs from another folder; "" in it."""
    root = Path(project_file.PROJECT_ROOT)
    try:
        return "" if Path.cwd().resolve() == root.resolve() else str(root)
    except OSError:  # the current folder was deleted: name the project's
        return str(root)


if __name__ == "__main__":
    sys.exit(main())
