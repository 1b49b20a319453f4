"""A finding: one line of the doctor's report, and the codes each rule module declares.

Every rule returns Findings; the report and its renderings only read them. A rule that
depends on another says so in ``role`` (data, never a match on another finding's text).
Standard library only (the project generator's hook imports the doctor before torch exists).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

OK, WARN, FAIL = "ok", "warn", "fail"

CODES = {
    "INTERNAL-ERROR": "A check failed unexpectedly (a bug to report).",
}

# Roles: what a finding's fix is, for the steps after the rules and for the summary.
REPAIRS_ENVIRONMENT = "repairs-environment"  # defers to the recommended environment, if another
INSTALLS_BACKEND = "installs-backend"  # installs the stack that lets PyTorch use this GPU
CHOOSES_ENVIRONMENT = "chooses-environment"  # creates the environment that fits this machine
UPDATES_DRIVER = "updates-driver"  # installs a newer GPU driver
NO_ACTION = "no-action"  # the fix only explains: nothing to install or change


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    found: str
    fix: str = ""
    # A stable name for what was found (codes.CODES): reports group a room's machines by it,
    # so rewording a message never splits the statistics.
    code: str = ""
    # What the fix is (REPAIRS_ENVIRONMENT, NO_ACTION, ...); not in --json.
    role: str = field(default="", compare=False)
    # The code of the finding whose fix this one's fix follows ("as the Environment fix
    # says"): the summary adds this finding's area to that fix. Not in --json.
    follows: str = field(default="", compare=False)
    # The area's line in the summary when this finding speaks for it, written to fit about 55
    # columns; "" when the first sentence of ``found`` is short enough. Not in --json.
    brief: str = field(default="", compare=False)

    def to_dict(self) -> dict:
        """The finding in the --json report (docs/report.md): role is no part of it."""
        return {
            "check": self.check,
            "status": self.status,
            "found": self.found,
            "fix": self.fix,
            "code": self.code,
        }

    @property
    def asks_action(self) -> bool:
        """Whether the fix asks the user to do something (a NO_ACTION fix only explains)."""
        return bool(self.fix) and self.role != NO_ACTION

    def with_fix(self, fix: str, follows: str = "") -> Finding:
        return replace(self, fix=fix, follows=follows or self.follows)


def printed_fix(findings: Sequence[Finding], role: str) -> Finding | None:
    """The finding whose printed fix has ``role``, or None when no such fix is printed: a fix
    may point at another only by its role, and only when it is there. Advice names it as
    ``fix_name`` says and passes its code as ``follows``."""
    for finding in findings:
        if finding.role == role and finding.asks_action:
            return finding
    return None


def fix_name(finding: Finding) -> str:
    """How advice names another finding's fix: by its area, as the fixes are labelled ("the
    GPU fix" for a Driver finding's)."""
    from .areas import area_of  # areas reads findings: imported here, not at the top

    return f"the {area_of(finding)} fix"


def internal_error(what: str) -> Finding:
    """A check that failed unexpectedly: it must never stop the others."""
    return Finding(
        "internal",
        WARN,
        f"A check failed unexpectedly: {what}",
        "Please report this output to the project's maintainers.",
        code="INTERNAL-ERROR",
    )
