"""The report as people read it: by default one line per area, the fixes that ask for an
action and one verdict line (``render_summary``); with -v a table of every finding, the verdict
and the same fixes with their details (``render_text``); Markdown to paste into an issue. The
project generator's hook and the first look (``python src/gpu_doctor``) print what -v prints
of the checks that need no torch (``format_findings``). Only reads findings and reports. Standard
library only.

One vocabulary in all of them: the marks [\u2713] [!] [\u2717] (ASCII where the console cannot
show them), the areas' names (OS, PyTorch: ``areas.AREAS``), the fixes numbered once
(``areas.actions``: fix 1 is fix 1 everywhere), and the verdict's words ("Ready to train
on ...", "Ready to train on the CPU only (slower)", "Not ready to train"). Lines fit the
terminal, and 80 columns where the output goes to a pipe or a file.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import unicodedata
from typing import Iterable, Sequence

from .areas import Area, actions, area_of, by_area, notes
from .codes import SCHEMA_VERSION
from .findings import FAIL, OK, WARN, Finding
from .verdict import (
    EXIT_CPU_FALLBACK,
    EXIT_OK,
    Report,
    can_go_on,
    describe_platform,
    private_path,
)

# Flutter's doctor marks; a console that cannot show them (a Windows code page) gets ASCII.
AREA_MARKS = {OK: "[\u2713]", WARN: "[!]", FAIL: "[\u2717]"}
ASCII_MARKS = {OK: "[v]", WARN: "[!]", FAIL: "[x]"}
# The widest line of an area in the summary; a headline's ``brief`` is written to fit it.
AREA_LINE_WIDTH = 72
# The width when stdout is no terminal (a pipe, a file, an IDE's run window).
PIPED_WIDTH = 80


def marks_for(encoding: str | None) -> dict[str, str]:
    """The marks a stream of this encoding can carry unchanged."""
    try:
        "".join(AREA_MARKS.values()).encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_MARKS
    return AREA_MARKS


def _stdout_marks() -> dict[str, str]:
    return marks_for(getattr(sys.stdout, "encoding", None))


def line_width(width: int | None) -> int:
    """The columns to wrap to: the terminal's (one spare, or it wraps early), else 80."""
    if width is None:
        width = shutil.get_terminal_size((PIPED_WIDTH + 1, 24)).columns - 1
    return max(60, min(width, 110))


def format_table(
    findings: Sequence[Finding], width: int | None = None, marks: dict[str, str] | None = None
) -> str:
    """One row per finding: its mark, check, and what was found, wrapped to the terminal."""
    width, marks = line_width(width), marks or _stdout_marks()
    check_width = max([len(f.check) for f in findings] + [5])
    indent = " " * (2 + 3 + 2 + check_width + 2)
    lines = []
    for finding in findings:
        mark = marks.get(finding.status, "[?]")
        first = f"  {mark}  {finding.check:<{check_width}}  "
        wrapped = textwrap.wrap(finding.found, width - len(indent), break_on_hyphens=False)
        wrapped = wrapped or [""]
        lines.append(first + wrapped[0])
        lines.extend(indent + line for line in wrapped[1:])
    return "\n".join(lines)


def _fill(text: str, width: int, head: str, indent: str = "     ") -> str:
    return textwrap.fill(
        text, width, initial_indent=head, subsequent_indent=indent, break_on_hyphens=False
    )


def format_fixes(
    findings: Sequence[Finding], width: int | None = None, verbose: bool = False
) -> str:
    """'Fixes:' and the fixes that ask for an action, numbered as every report numbers them
    (``areas.actions``: failures first, one number per fix, labelled by area). ``verbose``
    (-v) adds detail and never renumbers: under each fix the words of the findings that follow
    it, and then the notes, the fixes that ask nothing."""
    width = line_width(width)
    findings = list(findings)
    lines = []
    for number, fix in enumerate(actions(findings), 1):
        lines.append(_fill(fix.text, width, f"  {number}. [{', '.join(fix.areas)}] "))
        if verbose:  # the words of the fixes that follow this one, each once
            followers: dict[str, list[str]] = {}
            for finding in fix.findings:
                if finding.fix != fix.text:
                    followers.setdefault(finding.fix, []).append(finding.check)
            for text, checks in followers.items():
                lines.append(_fill(text, width, f"     - {', '.join(checks)}: ", " " * 7))
    said = notes(findings) if verbose else []
    if said:
        lines += ["", "Notes (nothing to do):"] if lines else ["Notes (nothing to do):"]
        for finding in said:
            lines.append(_fill(finding.fix, width, f"  - [{area_of(finding)}] ", "    "))
    if lines and not lines[0].startswith("Notes"):
        lines.insert(0, "Fixes:")
    return "\n".join(lines)


def format_findings(
    findings: Iterable[Finding], width: int | None = None, marks: dict[str, str] | None = None
) -> str:
    """Every finding and the numbered fixes with their details, as -v shows them: what the
    project generator's hook and the first look print, before torch exists (each GPU named)."""
    findings = list(findings)
    fixes = format_fixes(findings, width, verbose=True)
    return format_table(findings, width, marks) + ("\n\n" + fixes if fixes else "")


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: two for each wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _title(report: Report) -> str:
    project = report.project
    name, accelerator = project.get("name", "?"), project.get("accelerator", "?")
    return f"verify_install: {name} (accelerator: {accelerator})"


def _verdict_line(report: Report) -> str:
    """The verdict; in a printed report, a CPU fallback points at the [!] lines above it
    (--json has no lines above, so its verdict does not)."""
    verdict = report.verdict
    if report.exit_code == EXIT_CPU_FALLBACK and any(
        finding.status == WARN for finding in report.findings
    ):
        verdict = verdict.rstrip(".") + "; the [!] lines above say why."
    return verdict


def render_text(
    report: Report, exit_code: int | None = None, encoding: str | None = "utf-8"
) -> str:
    """-v: every finding with its mark, the verdict, every fix. ``encoding``: the stream's."""
    title = _title(report)
    underline = "=" * min(display_width(title), line_width(None))
    lines = [title, underline, format_table(report.findings, marks=marks_for(encoding)), ""]
    code = report.exit_code if exit_code is None else exit_code
    width = line_width(None)
    lines.append(_fill(f"Verdict (exit {code}): {_verdict_line(report)}", width, "", ""))
    lines.append(_fill(can_go_on(report), width, "", ""))
    fixes = format_fixes(report.findings, width, verbose=True)
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
    marks = AREA_MARKS  # Markdown is UTF-8 text
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
        mark, code = marks.get(finding.status, "[?]"), finding.code or "-"
        lines.append(f"| {mark} | {_cell(finding.check)} | `{code}` | {_cell(finding.found)} |")
    fixes = format_fixes(report.findings, width=10_000)
    if fixes:
        lines += ["", "**Fixes**", ""]
        lines += [line.strip() for line in fixes.splitlines()[1:]]  # one line per fix
    lines += ["", f"<sub>{_cell(system)}</sub>"]
    return private_path("\n".join(lines))


# ------------------------------------------------------------------- the default: by area


def _first_sentence(text: str) -> str:
    """The text up to its first full stop that ends a sentence ('3.11.7' is none)."""
    for index, char in enumerate(text):
        if char == "." and (index + 1 == len(text) or text[index + 1] == " "):
            return text[: index + 1]
    return text


def headline_text(area: Area, report: Report | None, room: int = AREA_LINE_WIDTH) -> str:
    """What the area's line says in ``room`` columns: its headline's ``brief``, else the first
    sentence of what it found; a working device names the chosen one (with its name where
    that fits) and the step's time."""
    headline = area.headline()
    text = headline.brief or _first_sentence(headline.found)
    if area.name == "Device" and area.status == OK and report is not None and report.chosen:
        timing = next((f for f in area.findings if f.check == "Timing"), None)
        said = ""
        if timing is not None:
            said = timing.brief or _first_sentence(timing.found)
            said = f": {said[:1].lower()}{said[1:]}"
        label, name = report.chosen["label"], report.chosen["name"]
        text = f"{label} ({name}){said}"
        if display_width(text) > room:
            text = f"{label}{said}"
    return text


def area_line(area: Area, report: Report | None, marks: dict[str, str]) -> str:
    """``[!] GPU: No GPU for compute found: training runs on the CPU.``: the area's mark and
    the words of the finding that speaks for it, whole (a rule writes a ``brief`` where its
    finding's first sentence is too long), and how many other issues -v shows."""
    others = area.other_issues()
    more = f" (+{others} issue{'s' if others != 1 else ''})" if others else ""
    head = f"{marks[area.status]} {area.name}: "
    room = AREA_LINE_WIDTH - display_width(head) - len(more)
    return textwrap.fill(
        headline_text(area, report, room) + more,
        max(AREA_LINE_WIDTH, display_width(head) + 20),
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_on_hyphens=False,
    )


def _where(report: Report) -> str:
    chosen = report.chosen or {}
    if chosen.get("kind") in (None, "cpu"):
        return "the CPU"
    return f"{chosen.get('label', 'the device')} ({chosen.get('name', '?')})"


def verdict_sentence(report: Report, issues: int, fixes: int) -> str:
    """One line: can training go on, on what, and where to start."""
    found = f"found issues in {issues} area{'s' if issues != 1 else ''}"
    start = "fix 1 first" if fixes else "run with -v and report the output"
    if report.exit_code == EXIT_OK:
        ready = f"Ready to train on {_where(report)}"
        return f"{ready}." if not issues else f"{ready}; {found}: {start}."
    if report.exit_code == EXIT_CPU_FALLBACK:
        accelerator = report.project.get("accelerator", "the GPU")
        ready = "Ready to train on the CPU only (slower)"
        if not issues:
            return f"{ready}: {accelerator} is not usable here."
        return f"{ready}: {found}; {start}."
    if not fixes:
        why = report.verdict.split(": ", 1)[-1].rstrip(".") if report.verdict else "see -v"
        return f"Not ready to train: {why}; run with -v and report the output."
    return f"Not ready to train: {found}; {start}, then run verify_install again."


def render_summary(report: Report, encoding: str | None = "utf-8", width: int | None = None) -> str:
    """The default report: one line per area, the fixes that ask the user to do something
    (numbered, failures first) and the verdict. ``encoding``: the stream's, for the marks."""
    width = line_width(width)
    marks = marks_for(encoding)
    areas = by_area(report.findings)
    lines = [_title(report)]
    lines += [area_line(area, report, marks) for area in areas]
    fixes = format_fixes(report.findings, width)
    if fixes:
        lines += ["", fixes]
    issues = sum(1 for area in areas if area.status != OK)
    verdict = verdict_sentence(report, issues, len(actions(report.findings)))
    lines += ["", _fill(verdict, width, "", "")]
    lines.append(f"({report.seconds:.1f} s; -v shows every finding and fix, --json a report)")
    return "\n".join(lines)
