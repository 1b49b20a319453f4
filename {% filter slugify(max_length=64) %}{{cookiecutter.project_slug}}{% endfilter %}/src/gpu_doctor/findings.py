"""A finding: one line of the doctor's report, and the codes each rule module declares.

Every rule returns Findings; the report and its renderings only read them. A rule that
depends on another says so in ``role`` (data, never a match on another finding's text).
Standard library only (the project generator's hook imports the doctor before torch exists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

OK, WARN, FAIL = "ok", "warn", "fail"

CODES = {
    "INTERNAL-ERROR": "A check failed unexpectedly (a bug to report).",
}

# Roles: how a later step may treat a finding's fix.
REPAIRS_ENVIRONMENT = "repairs-environment"  # defers to the recommended environment, if another
INSTALLS_BACKEND = "installs-backend"  # installs the stack that lets PyTorch use this GPU
CHOOSES_ENVIRONMENT = "chooses-environment"  # creates the environment that fits this machine
UPDATES_DRIVER = "updates-driver"  # installs a newer GPU driver


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    found: str
    fix: str = ""
    # A stable name for what was found (codes.CODES): reports group a room's machines by it,
    # so rewording a message never splits the statistics.
    code: str = ""
    # What the fix does for the steps after the rules (REPAIRS_ENVIRONMENT, ...); not in --json.
    role: str = field(default="", compare=False)

    def to_dict(self) -> dict:
        """The finding in the --json report (docs/report.md): role is no part of it."""
        return {
            "check": self.check,
            "status": self.status,
            "found": self.found,
            "fix": self.fix,
            "code": self.code,
        }

    def with_fix(self, fix: str) -> Finding:
        return Finding(self.check, self.status, self.found, fix, self.code, self.role)


def printed_fix(findings: Sequence[Finding], role: str) -> str | None:
    """How advice names the printed fix of ``role`` ("the Driver fix"), or None when no such
    fix is printed: a fix may point at another only by its role, and only when it is there."""
    for finding in findings:
        if finding.role == role and finding.fix:
            return f"the {finding.check} fix"
    return None


def internal_error(what: str) -> Finding:
    """A check that failed unexpectedly: it must never stop the others."""
    return Finding(
        "internal",
        WARN,
        f"A check failed unexpectedly: {what}",
        "Please report this output to the project's maintainers.",
        code="INTERNAL-ERROR",
    )
