"""The findings by area, as the default report shows them: one line per area (Python, OS,
GPU, environment, PyTorch, device, ONNX Runtime) with its mark, and only the fixes that ask
the user to do something. ``-v`` shows every finding instead (``render``). Only reads findings:
their status, role (a NO_ACTION fix asks nothing) and ``follows`` (the code of the fix another
follows), never their words. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .findings import FAIL, NO_ACTION, OK, WARN, Finding

# The areas in the order they are shown, and the checks (a finding's ``check``) each holds.
AREAS = {
    "Python": ("Python",),
    "OS": ("OS",),
    "GPU": ("GPU", "Driver"),
    "Environment": ("Environment", "Project", "Requirements"),
    "PyTorch": ("torch", "torchvision", "torch-directml", "torch build", "GPU kernels"),
    "Device": (
        "Device",
        "Chosen",
        "Smoke test",
        "Train step",
        "CPU fallback",
        "Timing",
        "Warnings",
    ),
    "ONNX Runtime": ("ONNX Runtime",),
}
AREA_OF = {check: area for area, checks in AREAS.items() for check in checks}


def area_of(finding: Finding) -> str:
    """The area a finding belongs to; a check of no area (an internal error) is its own."""
    return AREA_OF.get(finding.check, finding.check[:1].upper() + finding.check[1:])


def shown_status(finding: Finding) -> str:
    """The status the summary shows: a warning whose rule says its fix asks nothing (NO_ACTION)
    is information (OK); any other warning is one, with a fix or without, so an area's mark
    is never better than its worst finding."""
    if finding.status == WARN and finding.role == NO_ACTION:
        return OK
    return finding.status


@dataclass
class Area:
    name: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = {shown_status(finding) for finding in self.findings}
        return FAIL if FAIL in statuses else WARN if WARN in statuses else OK

    def headline(self) -> Finding:
        """The finding that speaks for the area: the first of its worst status."""
        return next(f for f in self.findings if shown_status(f) == self.status)

    def other_issues(self) -> int:
        """How many findings besides the headline show a problem."""
        headline = self.headline()
        return sum(1 for f in self.findings if f is not headline and shown_status(f) != OK)


def by_area(findings: Sequence[Finding]) -> list[Area]:
    """The areas that have findings, in AREAS order, then any other area."""
    areas: dict[str, Area] = {name: Area(name) for name in AREAS}
    for finding in findings:
        areas.setdefault(area_of(finding), Area(area_of(finding))).findings.append(finding)
    return [area for area in areas.values() if area.findings]


@dataclass
class Fix:
    text: str
    status: str
    areas: list[str] = field(default_factory=list)
    # The findings it answers: its own, then those whose fixes follow it (-v shows their words).
    findings: list[Finding] = field(default_factory=list)


def _followed(finding: Finding, by_code: dict[str, Finding]) -> Finding:
    """The finding whose fix ``finding`` follows, through a chain of them; itself when it
    follows none that is shown."""
    seen = {finding.code}
    while finding.follows and finding.follows in by_code and finding.follows not in seen:
        seen.add(finding.follows)
        finding = by_code[finding.follows]
    return finding


def actions(findings: Sequence[Finding]) -> list[Fix]:
    """The fixes that ask the user to do something, failures first, each once: a fix that
    follows another fix that is shown (its ``follows`` names that one's code) adds its area to
    that one instead of a number of its own."""
    order = {FAIL: 0, WARN: 1, OK: 2}
    wanted = sorted(
        (f for f in findings if f.asks_action and shown_status(f) != OK),
        key=lambda finding: order.get(finding.status, 3),
    )
    by_code: dict[str, Finding] = {}
    for finding in wanted:
        by_code.setdefault(finding.code, finding)
    fixes: dict[str, Fix] = {}
    leaders = [(finding, _followed(finding, by_code)) for finding in wanted]
    for _finding, leader in leaders:
        fixes.setdefault(leader.fix, Fix(leader.fix, leader.status))
    # the areas of the fix's own findings first, then of those that follow it
    for finding, leader in sorted(leaders, key=lambda pair: pair[0] is not pair[1]):
        fix = fixes[leader.fix]
        fix.findings.append(finding)
        if area_of(finding) not in fix.areas:
            fix.areas.append(area_of(finding))
    return list(fixes.values())


def notes(findings: Sequence[Finding]) -> list[Finding]:
    """The findings whose fix is no action (it explains, or its area shows no issue), each
    fix once, and none that a numbered fix already says: what -v adds after the fixes."""
    numbered = {fix.text for fix in actions(findings)}
    seen: dict[str, Finding] = {}
    for finding in findings:
        if finding.fix and finding.fix not in numbered:
            seen.setdefault(finding.fix, finding)
    return [f for f in seen.values() if not (f.asks_action and shown_status(f) != OK)]
