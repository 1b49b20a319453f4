"""The findings by area, as the default report shows them: one line per area (Python, system,
GPU, environment, PyTorch, device, ONNX Runtime) with its mark, and only the fixes that ask
the user to do something. ``-v`` shows every finding instead (``render``). Only reads findings.
Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from .findings import FAIL, OK, WARN, Finding

# The areas in the order they are shown, and the checks (a finding's ``check``) each holds.
AREAS = {
    "Python": ("Python",),
    "System": ("OS",),
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

# A fix that only says there is nothing to do is no action: its finding is information.
NO_ACTION = re.compile(r"^\s*nothing to (install|change|do)\b", re.IGNORECASE)
# A fix that points at another check's fix ("as the Environment fix says") asks for that one.
POINTS_AT = re.compile(r"\bthe ([A-Z][\w -]*?) (?:fix says|line names)\b")


def area_of(finding: Finding) -> str:
    """The area a finding belongs to; a check of no area (an internal error) is its own."""
    return AREA_OF.get(finding.check, finding.check[:1].upper() + finding.check[1:])


def asks_action(finding: Finding) -> bool:
    """Whether the finding's fix asks the user to do something."""
    return bool(finding.fix) and not NO_ACTION.match(finding.fix)


def shown_status(finding: Finding) -> str:
    """The status the summary shows: a warning without an action is information (OK)."""
    if finding.status == WARN and not asks_action(finding):
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


def actions(findings: Sequence[Finding]) -> list[Fix]:
    """The fixes that ask the user to do something, failures first, each once: a fix that
    only points at another fix that is shown ("as the Environment fix says") adds its area
    to that one instead of a number of its own."""
    order = {FAIL: 0, WARN: 1, OK: 2}
    wanted = sorted(
        (f for f in findings if asks_action(f) and shown_status(f) != OK),
        key=lambda finding: order.get(finding.status, 3),
    )
    fixes: dict[str, Fix] = {}
    pointers: list[tuple[Finding, str]] = []
    for finding in wanted:
        pointed = POINTS_AT.search(finding.fix)
        if pointed and pointed.group(1) != finding.check:
            pointers.append((finding, pointed.group(1)))
            continue
        fix = fixes.setdefault(finding.fix, Fix(finding.fix, finding.status))
        if area_of(finding) not in fix.areas:
            fix.areas.append(area_of(finding))
    by_check = {f.check: fixes[f.fix] for f in wanted if f.fix in fixes}
    for finding, check in pointers:
        fix = by_check.get(check)
        if fix is None:  # the fix it points at is not shown: this one stands alone
            fix = fixes.setdefault(finding.fix, Fix(finding.fix, finding.status))
        if area_of(finding) not in fix.areas:
            fix.areas.append(area_of(finding))
    return list(fixes.values())
