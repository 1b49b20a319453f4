"""The checks of the machine that need only the standard library: Python, OS, GPUs and drivers,
and which environment fits best.

The project generator's post-generation hook runs ``run_checks`` from the freshly generated
``src/``, and verify_install runs it first, so the rules live in one place (``rules/``). The way
is one direction: facts gathered once (``facts``) -> the rules of each subject -> findings ->
``render``. Nothing here may raise or hang: a gathering or a rule that fails becomes a finding
that says what was seen, and the other subjects still run.
"""

from __future__ import annotations

import datetime
import sys
from typing import Callable, Iterable

from . import facts as gather
from . import project_venv
from .bounded import describe_error
from .facts import Facts
from .findings import Finding, internal_error
from .gpus import GpuScan
from .os_info import OsInfo
from .project import Project, load_project
from .render import format_findings  # noqa: F401  (the hook prints with it)
from .rules import cards, environment, packages, python, system


def _python_rules(facts: Facts) -> list[Finding]:
    return python.check_python(facts.project, facts.python, facts.pointer_bits, facts.context)


def _os_rules(facts: Facts) -> list[Finding]:
    return [] if facts.os is None else system.check_os(facts.project, facts.os, facts.python)


def _gpu_rules(facts: Facts) -> list[Finding]:
    if facts.os is None or facts.scan is None:
        return []  # the OS check already reported why
    assert facts.best is not None  # with_scan computed it
    return cards.check_gpus(facts.project, facts.os, facts.scan, facts.best, facts.today)


def _environment_rules(facts: Facts) -> list[Finding]:
    if facts.os is None or facts.scan is None:
        return []
    assert facts.best is not None
    return environment.check_environment_choice(
        facts.project, facts.os, facts.scan, facts.best, facts.active, facts.context
    )


def _venv_rules(facts: Facts) -> list[Finding]:
    if facts.context == "hook":  # the project was generated a moment ago: no .venv yet
        return []
    in_use = [] if facts.context == "first" else project_venv.check_interpreter(facts.project)
    return project_venv.check_venv(facts.project) + in_use


def gpu_findings(
    project: Project, info: OsInfo, scan: GpuScan, today: datetime.date | None = None
) -> list[Finding]:
    """The GPU rules alone, on these facts (a machine a test describes), as run_checks runs
    them: on the recommendation computed once from the OS and the GPUs."""
    return _gpu_rules(Facts(project, today=today).with_os(info).with_scan(scan))


def environment_findings(
    project: Project,
    info: OsInfo,
    scan: GpuScan,
    active: str | None = None,
    context: str = "project",
) -> list[Finding]:
    """The environment choice alone, on these facts, as run_checks runs it."""
    facts = Facts(project, context).with_os(info).with_scan(scan).with_active(active)
    return _environment_rules(facts)


def run_checks(
    context: str = "project",
    project: Project | None = None,
    version_info: tuple[int, ...] | None = None,
    pointer_bits: int | None = None,
    os_facts: OsInfo | None = None,
    gpu_scan: GpuScan | None = None,
    today: datetime.date | None = None,
    details: dict | None = None,
    active: str | None = None,
) -> list[Finding]:
    """All standard-library checks; arguments replace the real system in tests.

    ``details``, when given, receives "recommendation": the best environment for this
    machine as a dict (stack, why, gpu, files, commands, and the active stack). ``active``:
    the stack of this environment when the caller has read it already."""
    try:
        project = project or load_project()
    except Exception as error:  # a damaged project.json: say so, check nothing else
        return [packages.project_unreadable(error)]
    facts = Facts(
        project,
        context,
        tuple(version_info or sys.version_info[:3]),
        pointer_bits or (64 if sys.maxsize > 2**32 else 32),
        today or datetime.date.today(),
    )

    def with_os(facts: Facts) -> Facts:
        return facts.with_os(os_facts or gather.detect_os())

    def with_gpus(facts: Facts) -> Facts:
        if facts.os is None:
            return facts
        return facts.with_scan(gpu_scan or gather.scan_gpus(facts.os))

    def with_active(facts: Facts) -> Facts:
        if context in ("hook", "first"):  # no environment exists yet
            return facts
        return facts.with_active(active or gather.active_stack(project))

    # Each subject: the facts it adds, then its rules. One that fails stops none of the others.
    subjects: list[tuple[Callable[[Facts], Facts] | None, Callable[[Facts], Iterable[Finding]]]] = [
        (None, _python_rules),
        (with_os, _os_rules),
        (with_gpus, _gpu_rules),
        (with_active, _environment_rules),
        (None, _venv_rules),
    ]
    findings: list[Finding] = []
    for add_facts, rules in subjects:
        try:
            facts = add_facts(facts) if add_facts else facts
            findings.extend(rules(facts))
        except Exception as error:
            findings.append(internal_error(describe_error(error)))
    if details is not None and facts.details() is not None:
        details["recommendation"] = facts.details()
    return one_environment_row(findings)


def one_environment_row(findings: list[Finding]) -> list[Finding]:
    """An empty or half-made .venv is the Environment row: "Best for this machine: X, which is
    the default environment" beside it is a second row that says nothing to do, and its stack
    is the one the .venv's fix installs. (A better stack elsewhere is another matter: kept.)"""
    if not any(finding.code == "ENV-VENV-INCOMPLETE" for finding in findings):
        return findings
    return [finding for finding in findings if finding.code != "ENV-BEST"]
