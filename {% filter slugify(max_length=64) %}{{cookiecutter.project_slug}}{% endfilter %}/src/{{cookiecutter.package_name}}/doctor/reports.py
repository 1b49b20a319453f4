"""Summarise a folder of ``verify_install --json`` reports: who can train, on what, and what fails.

    python -m <package>.doctor.reports FOLDER              a plain-text summary
    python -m <package>.doctor.reports FOLDER --markdown   the same as Markdown tables

For workshop instructors: every participant runs ``python -m <package>.verify_install --json``
with its output redirected to a file named after them or their machine; collect the files in
one folder (subfolders are searched too) and run this. The summary counts the verdicts and the
devices training will use, lists every machine (the ones that need help first), groups the
problems that several machines share, with their fix, and lists which step of training fails
on which GPU.

Standard library only. The reports may come from Windows consoles: UTF-8 with or without a
byte order mark, UTF-16 (Windows PowerShell 5's ``>``) and the console's code page are read,
and text printed before the JSON is skipped.
"""

from __future__ import annotations

import argparse
import codecs
import json
import locale
import re
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..machinery.cli import clean_name, safe_console, write_out

SEVERITY = {"broken": 0, "cpu-fallback": 1, "unknown": 2, "works": 3}
STATUS_ORDER = ("works", "cpu-fallback", "broken", "unknown")
PROBLEM_STATUSES = ("fail", "warn")
# Which problem explains a verdict best, when a machine has several of the same status.
CHECK_PRIORITY = ("Project", "torch", "Smoke test", "Train step", "Device", "Chosen", "Python")
TEXT_CELL = 60  # longest cell in the plain-text tables; Markdown cells are not cut
TEXT_WIDTH = 100  # the plain-text problem list is wrapped to this width


class ReportError(ValueError):
    """A file that is not a readable verify_install --json report; the message says why."""


@dataclass
class Problem:
    status: str  # "fail" or "warn"
    check: str
    found: str
    fix: str = ""


@dataclass
class Machine:
    """What one report says, reduced to what an instructor needs."""

    source: str  # the report's path relative to the folder: who sent it
    status: str  # works | cpu-fallback | broken | unknown
    exit_code: int | None
    verdict: str
    device: str  # the chosen device's label ("directml:0", "cuda:0", "cpu") or "-"
    device_name: str
    python: str
    platform: str  # the operating system as the OS check describes it, else Python's name
    project: str
    accelerator: str
    problems: list[Problem] = field(default_factory=list)
    fallback_operators: list[str] = field(default_factory=list)
    step_ms: float | None = None
    cpu_ms: float | None = None
    recommended: str = "-"  # the stack verify_install recommends for this machine
    failed_step: str = ""  # "the loss (cross-entropy)": the step the chosen GPU fails
    active: str = "-"  # the stack of the environment the report was made in

    @property
    def on_wrong_stack(self) -> bool:
        return "-" not in (self.recommended, self.active) and self.recommended != self.active

    @property
    def main_problem(self) -> Problem | None:
        """The problem that explains the verdict best: failures before warnings, then the
        checks of the PyTorch stack and the devices before those of the machine."""

        def rank(item: tuple[int, Problem]) -> tuple[int, int, int]:
            index, problem = item
            check = problem.check
            priority = (
                CHECK_PRIORITY.index(check) if check in CHECK_PRIORITY else len(CHECK_PRIORITY)
            )
            if check == "Device" and problem.found.startswith(f"{self.accelerator} "):
                priority = -1  # why the project's own accelerator is not used
            return PROBLEM_STATUSES.index(problem.status), priority, index

        return min(enumerate(self.problems), key=rank)[1] if self.problems else None


# ---------------------------------------------------------------------------- reading


def decode(data: bytes) -> str:
    """Text of a report, whatever console wrote it."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    if len(data) >= 4 and data[1:4:2] == b"\0\0" and data[0:1] != b"\0":
        return data.decode("utf-16-le", errors="replace")  # UTF-16 without a BOM
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    for encoding in (locale.getpreferredencoding(False), "gbk", "cp1252"):
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("utf-8", errors="replace")


def parse(text: str) -> dict[str, Any]:
    """The JSON object of a report; lines printed before it (a warning, a prompt) are skipped."""
    start = text.find("{")
    if start < 0:
        raise ReportError("no JSON in it: was verify_install run with --json?")
    try:
        data, _end = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as error:
        raise ReportError(
            f"not valid JSON ({error.msg} at line {error.lineno}): cut short?"
        ) from None
    except RecursionError:  # thousands of nested brackets: no report is built like that
        raise ReportError("JSON nested too deeply to be a verify_install report") from None
    if not isinstance(data, dict) or "verdict" not in data or "findings" not in data:
        raise ReportError("JSON, but not a verify_install --json report")
    return data


def _text(value: Any, default: str = "") -> str:
    # Reports of older versions may carry a device name's NUL: cleaned, the machines group.
    return default if value is None else clean_name(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def system_of(data: dict[str, Any]) -> str:
    """'Windows 11 build 22631 (AMD64)': the start of the OS check's finding, which names the
    Windows release and build (Python's own platform name says "Windows 10" on Windows 11)."""
    for finding in data.get("findings") or []:
        if isinstance(finding, dict) and finding.get("check") == "OS" and finding.get("found"):
            return _text(re.split(r":\s|\.$", str(finding["found"]), maxsplit=1)[0])
    return _text(data.get("platform"), "-")


def machine_from(data: dict[str, Any], source: str) -> Machine:
    """A Machine from a parsed report; missing parts become "-" instead of errors."""
    verdict = data.get("verdict") if isinstance(data.get("verdict"), dict) else {}
    status = _text(verdict.get("status"), "unknown")
    if status not in SEVERITY:
        status = "unknown"
    chosen = data.get("chosen") if isinstance(data.get("chosen"), dict) else {}
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    timing = data.get("timing") if isinstance(data.get("timing"), dict) else {}
    problems = []
    for finding in data.get("findings") or []:
        if isinstance(finding, dict) and finding.get("status") in PROBLEM_STATUSES:
            problems.append(
                Problem(
                    str(finding["status"]),
                    _text(finding.get("check"), "?"),
                    _text(finding.get("found")),
                    _text(finding.get("fix")),
                )
            )
    exit_code = verdict.get("exit_code")
    advice = data.get("recommendation") if isinstance(data.get("recommendation"), dict) else {}
    failed = data.get("failed_step") if isinstance(data.get("failed_step"), dict) else {}
    return Machine(
        source=source,
        status=status,
        exit_code=exit_code if isinstance(exit_code, int) else None,
        verdict=_text(verdict.get("message")),
        device=_text(chosen.get("label"), "-"),
        device_name=_text(chosen.get("name")),
        python=_text(data.get("python"), "-"),
        platform=system_of(data),
        project=_text(project.get("name"), "?"),
        accelerator=_text(project.get("accelerator"), "?"),
        problems=problems,
        fallback_operators=[_text(op) for op in data.get("fallback_operators") or []],
        step_ms=_number(timing.get("device_ms")),
        cpu_ms=_number(timing.get("cpu_ms")),
        recommended=_text(advice.get("stack"), "-"),
        active=_text(advice.get("active"), "-"),
        failed_step=_text(failed.get("what")),
    )


def stack_summary(machines: Sequence[Machine]) -> list[tuple[str, int, str]]:
    """(recommended stack, machines, who is on another stack) for reports that say."""
    counts = Counter(m.recommended for m in machines if m.recommended != "-")
    rows = []
    for stack, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        wrong = sorted(
            f"{m.source} (on {m.active})"
            for m in machines
            if m.recommended == stack and m.on_wrong_stack
        )
        rows.append((stack, count, ", ".join(wrong) or "-"))
    return rows


def load_report(path: Path, source: str = "") -> Machine:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ReportError(f"cannot be read ({error.strerror or error})") from None
    if not data.strip():
        raise ReportError("empty file")
    return machine_from(parse(decode(data)), source or path.name)


def load_folder(folder: Path) -> tuple[list[Machine], list[tuple[str, str]]]:
    """(machines, unreadable files with the reason) for every *.json file under ``folder``."""
    machines, unreadable = [], []
    for path in sorted(folder.rglob("*.json")):
        if not path.is_file():
            continue
        source = path.relative_to(folder).as_posix()
        try:
            machines.append(load_report(path, source))
        except ReportError as error:
            unreadable.append((source, str(error)))
    return machines, unreadable


# ---------------------------------------------------------------------------- summary


def problem_key(problem: Problem) -> tuple[str, str, str]:
    """Problems with the same fix are the same problem; without a fix, the same text
    (numbers and quoted names aside)."""
    if problem.fix:
        return problem.status, problem.check, problem.fix
    masked = re.sub(r"\d+(?:[.,]\d+)*", "#", problem.found)
    return problem.status, problem.check, re.sub(r"'[^']*'", "'...'", masked)


@dataclass
class CommonProblem:
    status: str
    check: str
    example: str  # the most frequent "found" text of the group
    fix: str
    sources: list[str]
    variants: int = 1  # how many different "found" texts the group holds


def common_problems(machines: Sequence[Machine]) -> list[CommonProblem]:
    """Problems grouped across machines: failures first, then by how many machines have them."""
    groups: dict[tuple[str, str, str], list[tuple[str, Problem]]] = {}
    for machine in machines:
        seen = set()
        for problem in machine.problems:
            key = problem_key(problem)
            if key not in seen:  # one machine counts once per problem
                seen.add(key)
                groups.setdefault(key, []).append((machine.source, problem))
    result = []
    for (status, check, _), members in groups.items():
        texts = Counter(p.found for _, p in members)
        example = texts.most_common(1)[0][0]
        fix = members[0][1].fix
        sources = [s for s, _ in members]
        result.append(CommonProblem(status, check, example, fix, sources, len(texts)))
    result.sort(key=lambda c: (PROBLEM_STATUSES.index(c.status), -len(c.sources), c.check))
    return result


def device_summary(machines: Sequence[Machine]) -> list[tuple[str, int, str]]:
    """(device kind, machines, the adapters with their counts) of the chosen devices."""
    kinds: dict[str, Counter] = {}
    for machine in machines:
        kind = machine.device.split(":")[0] if machine.device != "-" else "none"
        kinds.setdefault(kind, Counter())[machine.device_name] += 1
    rows = []
    for kind, names in sorted(kinds.items(), key=lambda item: (-sum(item[1].values()), item[0])):
        listed = "; ".join(
            f"{name} ({count})" if count > 1 else name
            for name, count in names.most_common()
            if name
        )
        rows.append((kind, sum(names.values()), listed))
    return rows


def failing_steps(machines: Sequence[Machine]) -> list[tuple[str, str, int, str]]:
    """(step that fails, adapter, machines, reports): which GPU fails where, most common first."""
    groups: dict[tuple[str, str], list[str]] = {}
    for machine in machines:
        if machine.failed_step:
            adapter = machine.device_name or machine.device
            groups.setdefault((machine.failed_step, adapter), []).append(machine.source)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [(step, adapter, len(who), _who(who)) for (step, adapter), who in ordered]


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


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool) -> str:
    cells = [[str(c) for c in row] for row in rows]
    if markdown:

        def line(row: Sequence[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"

        return "\n".join([line(headers), line(["---"] * len(headers))] + [line(r) for r in cells])
    cells = [[_cut(c, TEXT_CELL) for c in row] for row in cells]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def pad(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    return "\n".join([pad(headers), pad(["-" * w for w in widths])] + [pad(r) for r in cells])


def _who(sources: Sequence[str], limit: int = 6) -> str:
    if len(sources) <= limit:
        return ", ".join(sources)
    return f"{', '.join(sources[:limit])} and {len(sources) - limit} more"


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
            (len(p.sources), p.status, p.check, _example(p), p.fix or "-", _who(p.sources))
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
        lines += _wrap(_who(p.sources), indent + "in:  ", indent + "     ")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def summarise(
    machines: Sequence[Machine],
    unreadable: Sequence[tuple[str, str]] = (),
    folder: str = "",
    markdown: bool = False,
) -> str:
    """The whole summary as text (or Markdown)."""
    h1, h2 = ("# ", "## ") if markdown else ("", "")
    out: list[str] = []
    where = f" in {folder}" if folder else ""
    out.append(f"{h1}verify_install reports{where}: {len(machines)} machines")
    if unreadable:
        out[-1] += f" ({len(unreadable)} more files unreadable)"
    projects = Counter(f"{m.project} (accelerator: {m.accelerator})" for m in machines)
    if projects:
        out.append(
            "Project: "
            + "; ".join(f"{p} x{n}" if len(projects) > 1 else p for p, n in projects.items())
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
        out.append(table(["file", "why"], unreadable, markdown))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    package = (__package__ or "").rpartition(".")[0]  # the project's package
    parser = argparse.ArgumentParser(
        prog=f"python -m {package}.doctor.reports" if package else "reports",
        description="Summarise a folder of `verify_install --json` reports into tables: the "
        "verdicts, the devices, every machine, and the problems several machines share.",
        epilog=f"collect reports with: python -m {package or '<package>'}.verify_install --json "
        "> reports/NAME.json",
    )
    parser.add_argument(
        "folder", type=Path, help="folder with the reports (*.json, searched recursively)"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print Markdown tables instead of text"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    safe_console()
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder", file=sys.stderr)
        return 2
    machines, unreadable = load_folder(args.folder)
    if not machines and not unreadable:
        print(f"error: no *.json reports in {args.folder}", file=sys.stderr)
        return 2
    write_out(summarise(machines, unreadable, str(args.folder), args.markdown), end="")
    return 0 if machines else 1


if __name__ == "__main__":
    sys.exit(main())
