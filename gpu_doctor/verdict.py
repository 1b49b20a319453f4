"""The report of one check-up: its findings and what the probes measured, the verdict and
the exit code, and the --json document (docs/report.md), with nothing personal in it.
Standard library only.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from .active_environment import made_by
from .codes import SCHEMA_VERSION
from .findings import Finding
from .safe_text import clean_name

EXIT_OK = 0
EXIT_CPU_FALLBACK = 3
EXIT_BROKEN = 4
VERDICTS = {EXIT_OK: "works", EXIT_CPU_FALLBACK: "cpu-fallback", EXIT_BROKEN: "broken"}

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK}  the chosen accelerator works (or the project is CPU-only and the CPU works)
  {EXIT_CPU_FALLBACK}  training would fall back to the CPU: the project's accelerator is not usable
     (training works, slower; --cpu-fallback-ok exits 0 instead, as PyCharm's run
     configuration does)
  {EXIT_BROKEN}  the install is broken: torch or a package the project needs is missing or fails
     to import, or the smoke test or the training step fails
  2  wrong command-line arguments
  74 the report could not be written to stdout (a full disk); a reader that stops early
     (| head) or a closed stdout changes none of the codes above
  130 stopped with Ctrl+C
"""


@dataclass
class Report:
    project: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    packages: dict[str, dict[str, str | None]] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)
    unavailable: list[dict[str, Any]] = field(default_factory=list)
    chosen: dict[str, Any] | None = None
    smoke_test: dict[str, Any] | None = None
    fallback_operators: list[str] = field(default_factory=list)
    timing: dict[str, Any] | None = None
    exit_code: int = EXIT_BROKEN
    verdict: str = ""
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step of the check
    recommendation: dict[str, Any] | None = None  # the best environment file for this machine
    failed_step: dict[str, Any] | None = None  # the step a GPU fails, found one step at a time
    created: str = field(default_factory=lambda: now_iso())  # when the report was made

    def lap(self, phase: str, since: float) -> float:
        """Record the seconds of ``phase`` since ``since``; returns now for the next lap."""
        now = time.perf_counter()
        self.phases[phase] = round(now - since, 2)
        return now

    def add(self, check: str, status: str, found: str, fix: str = "", code: str = "") -> None:
        self.findings.append(Finding(check, status, found, fix, code))

    def to_dict(self) -> dict[str, Any]:
        """The --json document (docs/report.md): nothing personal, the home folder as "~"."""
        project = {key: value for key, value in self.project.items() if key != "template_version"}
        document = {
            "schema_version": SCHEMA_VERSION,
            "template_version": self.project.get("template_version", ""),
            "created": self.created,
            "project": project,
            "verdict": {
                "exit_code": self.exit_code,
                "status": VERDICTS.get(self.exit_code, "unknown"),
                "message": self.verdict,
            },
            "findings": [finding.to_dict() for finding in self.findings],
            "packages": self.packages,
            "devices": self.devices,
            "unavailable": self.unavailable,
            "chosen": self.chosen,
            "smoke_test": self.smoke_test,
            "failed_step": self.failed_step,
            "fallback_operators": self.fallback_operators,
            "timing": self.timing,
            "python": sys.version.split()[0],
            "executable": private_path(sys.executable),
            "environment": environment_made_by(),
            "platform": describe_platform(),
            "seconds": round(self.seconds, 2),
            "phases": self.phases,
            "recommendation": self.recommendation,
        }
        return without_home(document)


def environment_made_by() -> str:
    """What made this Python's environment (active_environment.made_by); "" when unreadable."""
    try:
        return made_by()
    except Exception:  # a damaged environment: the report is still written
        return ""


def now_iso() -> str:
    """The local time with its UTC offset, to the second: '2026-12-01T19:02:11+01:00'."""
    return datetime.datetime.now().astimezone().replace(microsecond=0).isoformat()


def _home() -> str:
    try:
        return os.path.expanduser("~")
    except Exception:  # no HOME and no password entry: nothing to hide
        return ""


def private_path(text: str, home: str | None = None) -> str:
    """``text`` with the user's home folder (which holds the user's name) written as "~"."""
    home = (_home() if home is None else home).rstrip("\\/")
    if len(home) < 3:  # no home, or "/" itself: nothing personal to hide
        return text
    flags = re.IGNORECASE if os.name == "nt" else 0  # C:\Users\Ann is c:\users\ann
    return re.sub(re.escape(home) + r"(?![\w.-])", "~", text, flags=flags)


def without_home(value: Any, home: str | None = None) -> Any:
    """Every string in ``value`` (a JSON document) with the home folder written as "~"."""
    home = _home() if home is None else home
    if isinstance(value, str):
        return private_path(value, home)
    if isinstance(value, dict):
        return {key: without_home(item, home) for key, item in value.items()}
    if isinstance(value, list):
        return [without_home(item, home) for item in value]
    return value


def can_go_on(report: Report) -> str:
    """The verdict for a student in one plain sentence: may they go on to training?"""
    chosen = report.chosen or {}
    fixes = any(finding.fix for finding in report.findings)
    if report.exit_code == EXIT_OK:
        where = "the CPU" if chosen.get("kind") == "cpu" else chosen.get("label", "the device")
        return f"You can go on to training: it will use {where}."
    if report.exit_code == EXIT_CPU_FALLBACK:
        accelerator = report.project.get("accelerator", "the GPU")
        best = (report.recommendation or {}).get("stack", accelerator)
        goal = f"train on {accelerator}" if best == accelerator else f"use the {best} environment"
        return "You can go on to training: it will use the CPU, only slower." + (
            f" The fixes below are what it takes to {goal}." if fixes else ""
        )
    return "You cannot train yet: " + (
        "do the fixes below, then run Verify install again." if fixes else "report this output."
    )


def exit_status(report: Report, cpu_fallback_ok: bool = False) -> int:
    """The process's exit code: with ``cpu_fallback_ok`` a CPU fallback exits 0, not 3."""
    if cpu_fallback_ok and report.exit_code == EXIT_CPU_FALLBACK:
        return EXIT_OK
    return report.exit_code


def describe_platform() -> str:
    return clean_name(f"{platform.system()} {platform.release()} ({platform.machine()})")
