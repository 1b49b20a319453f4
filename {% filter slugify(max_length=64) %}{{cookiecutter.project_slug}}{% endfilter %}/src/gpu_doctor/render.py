"""The report as people read it: a table of findings, the verdict and the numbered fixes
(text for a terminal, Markdown to paste into an issue). Only reads findings and reports.
Standard library only.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import unicodedata
from typing import Iterable, Sequence

from .codes import SCHEMA_VERSION
from .findings import FAIL, OK, WARN, Finding
from .verdict import EXIT_CPU_FALLBACK, Report, can_go_on, describe_platform, private_path

MARKS = {OK: "ok", WARN: "WARN", FAIL: "FAIL"}


def _width(width: int | None) -> int:
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns - 1
    return max(60, min(width, 110))


def format_table(findings: Sequence[Finding], width: int | None = None) -> str:
    """One row per finding: status, check, and what was found, wrapped to the terminal."""
    width = _width(width)
    check_width = max([len(f.check) for f in findings] + [5])
    indent = " " * (2 + 4 + 2 + check_width + 2)
    lines = []
    for finding in findings:
        mark = MARKS.get(finding.status, "??")
        first = f"  {mark:<4}  {finding.check:<{check_width}}  "
        wrapped = textwrap.wrap(finding.found, width - len(indent), break_on_hyphens=False)
        wrapped = wrapped or [""]
        lines.append(first + wrapped[0])
        lines.extend(indent + line for line in wrapped[1:])
    return "\n".join(lines)


def format_fixes(findings: Sequence[Finding], width: int | None = None) -> str:
    """'Fixes:' and one numbered entry per finding that has a fix, failures first."""
    width = _width(width)
    order = {FAIL: 0, WARN: 1, OK: 2}
    with_fix = sorted(
        (f for f in findings if f.fix), key=lambda finding: order.get(finding.status, 3)
    )
    if not with_fix:
        return ""
    groups: dict[str, list[Finding]] = {}  # one entry per distinct fix, in order
    for finding in with_fix:
        groups.setdefault(finding.fix, []).append(finding)
    lines = ["Fixes:"]
    for number, (fix, group) in enumerate(groups.items(), 1):
        checks = ", ".join(dict.fromkeys(finding.check for finding in group))
        head = f"  {number}. [{MARKS.get(group[0].status, '??')} {checks}] "
        lines.append(
            textwrap.fill(
                fix,
                width,
                initial_indent=head,
                subsequent_indent="     ",
                break_on_hyphens=False,
            )
        )
    return "\n".join(lines)


def format_findings(findings: Iterable[Finding], width: int | None = None) -> str:
    findings = list(findings)
    fixes = format_fixes(findings, width)
    return format_table(findings, width) + ("\n\n" + fixes if fixes else "")


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: two for each wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _title(report: Report) -> str:
    project = report.project
    name, accelerator = project.get("name", "?"), project.get("accelerator", "?")
    return f"verify_install: {name} (accelerator: {accelerator})"


def _verdict_line(report: Report) -> str:
    """The verdict; in a printed report, a CPU fallback points at the WARN lines above it
    (--json has no lines above, so its verdict does not)."""
    verdict = report.verdict
    if report.exit_code == EXIT_CPU_FALLBACK and any(
        finding.status == WARN for finding in report.findings
    ):
        verdict = verdict.rstrip(".") + "; the WARN lines above say why."
    return verdict


def render_text(report: Report, exit_code: int | None = None) -> str:
    title = _title(report)
    underline = "=" * min(display_width(title), 100)
    lines = [title, underline, format_table(report.findings), ""]
    code = report.exit_code if exit_code is None else exit_code
    lines.append(f"Verdict (exit {code}): {_verdict_line(report)}")
    lines.append(can_go_on(report))
    fixes = format_fixes(report.findings)
    if fixes:
        lines += ["", fixes]
    lines += ["", f"({report.seconds:.1f} s; `--json` for a machine-readable report)"]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def render_markdown(report: Report, exit_code: int | None = None) -> str:
    """One machine's report to paste into an issue or a chat: the same findings, verdict and
    fixes as the text, the system in one line, and nothing personal (no paths of the user)."""
    code = report.exit_code if exit_code is None else exit_code
    project = report.project
    system = (
        f"{describe_platform()}, Python {sys.version.split()[0]}, template "
        f"{project.get('template_version') or '?'}, schema {SCHEMA_VERSION}, {report.created}"
    )
    lines = [
        f"### {_cell(_title(report))}",
        "",
        f"**Verdict (exit {code}):** {_cell(_verdict_line(report))}  ",
        _cell(can_go_on(report)),
        "",
        "| status | check | code | found |",
        "| --- | --- | --- | --- |",
    ]
    for finding in report.findings:
        mark, code = MARKS.get(finding.status, "??"), finding.code or "-"
        lines.append(f"| {mark} | {_cell(finding.check)} | `{code}` | {_cell(finding.found)} |")
    fixes = format_fixes(report.findings, width=10_000)
    if fixes:
        lines += ["", "**Fixes**", ""]
        lines += [line.strip() for line in fixes.splitlines()[1:]]  # one line per fix
    lines += ["", f"<sub>{_cell(system)}</sub>"]
    return private_path("\n".join(lines))
