"""Summarise a folder of ``verify_install --json`` reports: who can train, on what, and what fails.

    python instructor.pyz room FOLDER              a plain-text summary (in the project folder)
    python instructor.pyz room FOLDER --markdown   the same as Markdown tables

For workshop instructors: every participant runs ``python -m <package>.verify_install --json
--output FILE``, FILE named after them or their machine; collect the files in one folder
(subfolders are searched too; ``*.json`` in any case and Notepad's ``*.json.txt`` are read)
and run this. The summary counts the verdicts and the devices training will use, lists every
machine (the ones that need help first), groups the problems that several machines share,
with their fix, and lists which step of training fails on which GPU.

Standard library only. The reports may come from Windows consoles: UTF-8 with or without a
byte order mark, UTF-16 (Windows PowerShell 5's ``>``) and the console's code page are read,
and text printed before the JSON is skipped. The reports come from other people's machines
and are read as such (``saved_reports``): control characters are shown escaped, never sent to
the terminal; Markdown shows their text as text; a file that is not a report is listed with
the reason and the others are summarised; copies of one report count once.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from ..doctor import FIELD_LIMIT, command, command_parser, printable, write_out
from ..project import project_package
from .machines import (
    SEVERITY,
    STATUS_ORDER,
    CommonProblem,
    Machine,
    common_problems,
    device_summary,
    failing_steps,
    load_folder,
    stack_summary,
    who_sent,
)
from .saved_reports import (
    MAX_DEPTH,
    MAX_REPORT_BYTES,
    ReportError,
    decode,
    parse,
)

__all__ = ["ReportError", "decode", "parse", "summarise", "main"]

PROG = "python instructor.pyz room"
TEXT_CELL = 60  # longest cell in the plain-text tables; Markdown cells are cut at FIELD_LIMIT
TEXT_WIDTH = 100  # the plain-text problem list is wrapped to this width


def _ratio(machine: Machine) -> str:
    if machine.step_ms is None:
        return "-"
    if machine.cpu_ms is None or machine.step_ms <= 0:
        return f"{machine.step_ms:.1f} ms"
    return f"{machine.step_ms:.1f} ms ({machine.cpu_ms / machine.step_ms:.1f}x CPU)"


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 3].rstrip() + "..."


# What Markdown would read as code, emphasis, a link or an image, HTML, an entity, a table
# cell's end or strikethrough; "http:", "www." and "@" would become links on GitHub.
MARKDOWN_SYNTAX = re.compile(r"[\\`*_\[\]<>&|~@]|:(?=//)|(?<=www)\.", re.IGNORECASE)


def as_markdown_text(text: str) -> str:
    """Text that Markdown shows as it is: every character that could start a construct
    (a link, an image, raw HTML, emphasis, a table cell) is escaped with a backslash."""
    return MARKDOWN_SYNTAX.sub(lambda match: "\\" + match.group(0), text)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool, whole_last: bool = False
) -> str:
    """Markdown, or text columns cut at TEXT_CELL (all but the last, with ``whole_last``)."""
    cells = [[str(c) for c in row] for row in rows]
    if markdown:

        def line(row: Sequence[str]) -> str:
            return "| " + " | ".join(as_markdown_text(c) for c in row) + " |"

        return "\n".join([line(headers), line(["---"] * len(headers))] + [line(r) for r in cells])
    cells = [
        [
            _cut(c, None if whole_last and i == len(row) - 1 else TEXT_CELL)
            for i, c in enumerate(row)
        ]
        for row in cells
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def pad(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    return "\n".join([pad(headers), pad(["-" * w for w in widths])] + [pad(r) for r in cells])


def _wrap(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        TEXT_WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _example(problem: CommonProblem) -> str:
    more = problem.variants - 1
    return problem.example + (f" (and {more} similar)" if more else "")


def problem_list(problems: Sequence[CommonProblem], markdown: bool) -> str:
    """Markdown: a table. Text: one block per problem, wrapped, so nothing is cut."""
    if markdown:
        rows = [
            (len(p.sources), p.status, p.check, _example(p), p.fix or "-", who_sent(p.sources))
            for p in problems
        ]
        headers = ["machines", "status", "check", "found (example)", "fix", "reports"]
        return table(headers, rows, markdown=True)
    blocks = []
    for p in problems:
        indent = " " * 8
        lines = _wrap(_example(p), f"{len(p.sources):>3} x [{p.status}] {p.check}: ", indent)
        if p.fix:
            lines += _wrap(p.fix, indent + "fix: ", indent + "     ")
        lines += _wrap(who_sent(p.sources), indent + "in:  ", indent + "     ")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def summarise(
    machines: Sequence[Machine],
    unreadable: Sequence[tuple[str, str]] = (),
    folder: str = "",
    markdown: bool = False,
    skipped: Sequence[tuple[str, str]] = (),
) -> str:
    """The whole summary as text (or Markdown)."""
    h1, h2 = ("# ", "## ") if markdown else ("", "")
    plain = as_markdown_text if markdown else str
    out: list[str] = []
    where = f" in {printable(folder)}" if folder else ""
    out.append(f"{h1}{plain(f'verify_install reports{where}')}: {len(machines)} machines")
    more = [f"{len(unreadable)} more files unreadable"] if unreadable else []
    more += [f"{len(skipped)} left out"] if skipped else []
    if more:
        out[-1] += f" ({', '.join(more)})"
    projects = Counter(f"{m.project} (accelerator: {m.accelerator})" for m in machines)
    if projects:
        out.append(
            "Project: "
            + plain("; ".join(f"{p} x{n}" if len(projects) > 1 else p for p, n in projects.items()))
        )
    counts = Counter(m.status for m in machines)
    total = max(len(machines), 1)
    out += ["", f"{h2}Verdicts", ""]
    rows = [(s, counts[s], f"{100 * counts[s] / total:.0f}%") for s in STATUS_ORDER if counts[s]]
    out.append(table(["verdict", "machines", "share"], rows, markdown))
    if machines:
        out += ["", f"{h2}Devices training will use", ""]
        out.append(table(["device", "machines", "adapters"], device_summary(machines), markdown))
        stacks = stack_summary(machines)
        if stacks:
            out += ["", f"{h2}Recommended environments (environments/<stack>.yml)", ""]
            headers = ["stack", "machines", "on another stack: switch them"]
            out.append(table(headers, stacks, markdown))
        out += ["", f"{h2}Machines (the ones that need help first)", ""]
        ordered = sorted(machines, key=lambda m: (SEVERITY[m.status], m.source))
        rows = []
        for m in ordered:
            problem = m.main_problem
            rows.append(
                (
                    m.source,
                    m.status,
                    m.device,
                    m.python,
                    m.platform,
                    _ratio(m),
                    f"[{problem.status}] {problem.check}: {problem.found}" if problem else "",
                )
            )
        headers = [
            "report",
            "verdict",
            "device",
            "python",
            "system",
            "train step",
            "first problem",
        ]
        out.append(table(headers, rows, markdown))
    problems = common_problems(machines)
    if problems:
        out += ["", f"{h2}Problems, failures first, then the most common", ""]
        out.append(problem_list(problems, markdown))
    steps = failing_steps(machines)
    if steps:
        out += ["", f"{h2}Steps of training that fail on a GPU", ""]
        headers = ["step that fails", "adapter", "machines", "reports"]
        out.append(table(headers, steps, markdown))
    operators = Counter(op for m in machines for op in set(m.fallback_operators))
    if operators:
        out += ["", f"{h2}Operators that fell back to the CPU", ""]
        out.append(table(["operator", "machines"], operators.most_common(), markdown))
    if unreadable:
        out += ["", f"{h2}Unreadable files", ""]
        out.append(table(["file", "why"], unreadable, markdown, whole_last=True))
    if skipped:
        out += ["", f"{h2}Left out of the summary", ""]
        out.append(table(["file or folder", "why"], skipped, markdown, whole_last=True))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    package = project_package()
    parser = command_parser(
        PROG,
        "Summarise a folder of `verify_install --json` reports into tables: the "
        "verdicts, the devices, every machine, and the problems several machines share.",
        f"collect reports with: python -m {package}.verify_install --output reports/NAME.json "
        "--json. Exit codes: 0 summarised, 1 no report could be read, 2 no such "
        "folder or no reports in it, 74 the summary could not be written to stdout (a full "
        "disk), 130 stopped with Ctrl+C.",
    )
    parser.add_argument(
        "folder",
        type=Path,
        help="folder with the reports (*.json and Notepad's *.json.txt, searched "
        f"{MAX_DEPTH} folders deep; files over {MAX_REPORT_BYTES // 1_000_000} MB are not "
        f"read, text fields are cut at {FIELD_LIMIT} characters)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print Markdown tables instead of text"
    )
    parser.prog = PROG  # the doctor's parsers say "python -m", which runs no .pyz
    return parser.parse_args(argv)


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    folder = printable(args.folder)
    if not args.folder.is_dir():
        print(f"error: {folder} is not a folder", file=sys.stderr)
        return 2
    found = load_folder(args.folder)
    if not found.machines and not found.unreadable:
        print(f"error: no *.json reports in {folder}", file=sys.stderr)
        for what, why in found.skipped:
            print(f"  left out: {what}: {why}", file=sys.stderr)
        return 2
    summary = summarise(found.machines, found.unreadable, str(args.folder), args.markdown,
                        found.skipped)  # fmt: skip
    write_out(summary, end="")
    return 0 if found.machines else 1


if __name__ == "__main__":
    sys.exit(main())
