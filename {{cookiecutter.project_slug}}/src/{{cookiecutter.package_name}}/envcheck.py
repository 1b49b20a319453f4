"""Checks of the machine that need only the standard library: Python, OS, GPUs and drivers.

Each check returns Findings (ok / warn / fail, what was seen, and the exact fix). The
project generator's post-generation hook imports this module from the freshly generated
``src/`` and verify_install uses it too, so the rules live in one place. Nothing here may
raise or hang: anything unexpected becomes a warning that says what was seen.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from .project import Project, load_project

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    found: str
    fix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def check_python(
    project: Project,
    version_info: Sequence[int],
    pointer_bits: int,
    context: str = "project",
) -> List[Finding]:
    """This interpreter against the accelerator's supported range, and 64-bit.

    ``context`` is "hook" while the project generator runs: the environment created from
    the project's environment file may then use another Python than this one.
    """
    version = ".".join(str(part) for part in version_info[:3])
    supported = f"{project.python_min} to {project.python_max}"
    findings = []
    if project.supports_python(tuple(version_info)):
        findings.append(
            Finding("Python", OK, f"Python {version} is supported for {project.accelerator} ({supported}).")
        )
    elif context == "hook":
        findings.append(
            Finding(
                "Python",
                WARN,
                f"This Python is {version}; {project.accelerator} needs {supported}. {project.python_note}",
                f"Create the project's environment with Python {project.python_version}, "
                "as the environment file says; this interpreter only ran the generator.",
            )
        )
    else:
        findings.append(
            Finding(
                "Python",
                FAIL,
                f"Python {version} is outside {supported} for {project.accelerator}. {project.python_note}",
                f"Create a new environment with Python {project.python_version} from the project's "
                "environment file and select it as the project interpreter.",
            )
        )
    if pointer_bits != 64:
        findings.append(
            Finding(
                "Python",
                FAIL,
                f"This Python is {pointer_bits}-bit; PyTorch ships 64-bit wheels only.",
                "Install a 64-bit Python (x86-64 or ARM64) and recreate the environment.",
            )
        )
    if context == "hook" and tuple(version_info[:2]) != tuple(
        int(p) for p in project.python_version.split(".")[:2]
    ):
        findings.append(
            Finding(
                "Python",
                OK,
                f"The generator ran on Python {version}; the project's environment will use "
                f"Python {project.python_version}.",
            )
        )
    return findings


def run_checks(
    context: str = "project",
    project: Optional[Project] = None,
    version_info: Optional[Tuple[int, ...]] = None,
    pointer_bits: Optional[int] = None,
) -> List[Finding]:
    """All standard-library checks; arguments replace the real system in tests."""
    project = project or load_project()
    checks: List[Callable[[], Iterable[Finding]]] = [
        lambda: check_python(
            project,
            version_info or tuple(sys.version_info[:3]),
            pointer_bits or (64 if sys.maxsize > 2**32 else 32),
            context,
        ),
    ]
    findings: List[Finding] = []
    for check in checks:
        try:
            findings.extend(check())
        except Exception as error:  # a check must never stop the others
            findings.append(Finding("internal", WARN, f"A check failed unexpectedly: {error!r}"))
    return findings


def format_findings(findings: Iterable[Finding]) -> str:
    marks = {OK: "[ ok ]", WARN: "[warn]", FAIL: "[FAIL]"}
    lines = []
    for finding in findings:
        lines.append(f"{marks.get(finding.status, '[ ?? ]')} {finding.check}: {finding.found}")
        if finding.fix:
            lines.append(f"       fix: {finding.fix}")
    return "\n".join(lines)


def describe_platform() -> str:
    return f"{platform.system()} {platform.release()} ({platform.machine()})"
