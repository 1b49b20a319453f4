"""A room of machines, read from their ``verify_install --json`` reports: what each report says
(``Machine``, its ``Problem``s), read as text from other people's machines (``saved_reports``),
and what the room shares (the verdicts per stack, the problems several machines have, the
devices, the steps that fail). ``summary`` prints it. Standard library only.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..doctor import FIELD_LIMIT, printable
from .saved_reports import (
    MAX_ENTRIES,
    ReportError,
    decode,
    find_reports,
    parse,
    read_report_bytes,
)

SEVERITY = {"broken": 0, "cpu-fallback": 1, "unknown": 2, "works": 3}
STATUS_ORDER = ("works", "cpu-fallback", "broken", "unknown")
PROBLEM_STATUSES = ("fail", "warn")
# Which problem explains a verdict best, when a machine has several of the same status.
CHECK_PRIORITY = ("Project", "torch", "Smoke test", "Train step", "Device", "Chosen", "Python")


@dataclass
class Problem:
    status: str  # "fail" or "warn"
    check: str
    found: str
    fix: str = ""
    code: str = ""  # verify_install's stable name of the finding, in reports that have one


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


KINDS = {dict: "an object", list: "a list", str: "text", bool: "true or false"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return KINDS.get(type(value), "a number")


def _part(data: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    """data[key] when it is a ``kind`` or missing (None); anything else makes the file
    unreadable, with the field named: no guess at what a wrong type was meant to say."""
    value = data.get(key)
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise ReportError(f"{where}{key!r} is {_kind(value)}, not {KINDS[kind]}")


def _entries(data: dict[str, Any], key: str) -> list[Any]:
    """A list of a report (findings, operators), of the length a report can have."""
    value = _part(data, key, list) or []
    if len(value) > MAX_ENTRIES:
        raise ReportError(f"{key!r} holds {len(value):,} entries: a report holds a few dozen")
    return value


def _text(data: dict[str, Any], key: str, default: str = "", where: str = "") -> str:
    """A text field, fit to print: control characters escaped, long text cut."""
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, (dict, list)):
        raise ReportError(f"{where}{key!r} is {_kind(value)}, not text")
    if isinstance(value, str):
        # Reports of older versions may carry a device name's NUL: without it, machines group.
        value = value.strip().rstrip("\x00").strip()
    return printable(value)


def _number(data: dict[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # parse() refused numbers too large for a float; NaN and Infinity are JSON to Python
        if not math.isfinite(value):
            raise ReportError(f"{where}{key!r} is {value}, not a number a report holds")
        return float(value)
    if value is None:
        return None
    raise ReportError(f"{where}{key!r} is {_kind(value)}, not a number")


def system_of(data: dict[str, Any]) -> str:
    """'Windows 11 build 22631 (AMD64)': the start of the OS check's finding, which names the
    Windows release and build (Python's own platform name says "Windows 10" on Windows 11)."""
    for finding in _entries(data, "findings"):
        if isinstance(finding, dict) and finding.get("check") == "OS" and finding.get("found"):
            found = str(finding["found"])[: FIELD_LIMIT * 2]
            return printable(re.split(r":\s|\.$", found, maxsplit=1)[0].strip())
    return _text(data, "platform", "-")


def problems_of(data: dict[str, Any]) -> list[Problem]:
    problems = []
    for index, finding in enumerate(_entries(data, "findings")):
        if not isinstance(finding, dict):
            continue  # a hole in an old report: the other findings still count
        where = f"findings[{index}]."
        status = _text(finding, "status", where=where)
        check = _text(finding, "check", "?", where)
        found, fix = _text(finding, "found", where=where), _text(finding, "fix", where=where)
        if status in PROBLEM_STATUSES:
            problems.append(Problem(status, check, found, fix, _text(finding, "code", "", where)))
    return problems


def machine_from(data: dict[str, Any], source: str) -> Machine:
    """A Machine from a parsed report; missing parts become "-"; a part of the wrong type
    (a number where a list belongs) makes it unreadable (ReportError, with the field)."""
    verdict = _part(data, "verdict", dict) or {}
    status = _text(verdict, "status", "unknown", "verdict.")
    if status not in SEVERITY:
        status = "unknown"
    chosen = _part(data, "chosen", dict) or {}
    project = _part(data, "project", dict) or {}
    timing = _part(data, "timing", dict) or {}
    advice = _part(data, "recommendation", dict) or {}
    failed = _part(data, "failed_step", dict) or {}
    exit_code = _number(verdict, "exit_code", "verdict.")
    operators = _entries(data, "fallback_operators")
    return Machine(
        source=source,
        status=status,
        exit_code=int(exit_code) if exit_code is not None else None,
        verdict=_text(verdict, "message", where="verdict."),
        device=_text(chosen, "label", "-", "chosen."),
        device_name=_text(chosen, "name", where="chosen."),
        python=_text(data, "python", "-"),
        platform=system_of(data),
        project=_text(project, "name", "?", "project."),
        accelerator=_text(project, "accelerator", "?", "project."),
        problems=problems_of(data),
        fallback_operators=[printable(op) for op in operators if isinstance(op, str)],
        step_ms=_number(timing, "device_ms", "timing."),
        cpu_ms=_number(timing, "cpu_ms", "timing."),
        recommended=_text(advice, "stack", "-", "recommendation."),
        active=_text(advice, "active", "-", "recommendation."),
        failed_step=_text(failed, "what", where="failed_step."),
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


def machine_of(data: bytes, source: str) -> Machine:
    return machine_from(parse(decode(data)), source)


def load_report(path: Path, source: str = "") -> Machine:
    return machine_of(read_report_bytes(path), source or printable(path.name))


@dataclass
class Folder:
    """What a folder of reports holds: one Machine per distinct report, the files that are
    not reports (with the reason) and what was left out (with the reason)."""

    machines: list[Machine] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_folder(folder: Path) -> Folder:
    """Every report under ``folder``; copies and links of one report count once."""
    found = find_reports(folder)
    result = Folder(skipped=list(found.skipped))
    same: dict[bytes, list[Machine]] = {}
    for path, source in found.files:
        try:
            data = read_report_bytes(path)
            machine = machine_of(data, source)
        except ReportError as error:
            result.unreadable.append((source, str(error)))
            continue
        same.setdefault(hashlib.sha256(data).digest(), []).append(machine)
    for copies in same.values():
        # The shortest name is the original: copies get "(1)", "- Copy", "-again".
        kept = min(copies, key=lambda m: (len(m.source), m.source))
        result.machines.append(kept)
        result.skipped += [
            (m.source, f"the same report as {kept.source}: counted once")
            for m in copies
            if m is not kept
        ]
    result.machines.sort(key=lambda m: m.source)
    return result


# ---------------------------------------------------------------------------- summary


def problem_key(problem: Problem) -> tuple[str, str, str]:
    """Findings with the same code are the same problem (reports that name codes); else those
    with the same fix; without a fix, the same text (numbers and quoted names aside)."""
    if problem.code:
        return problem.status, "", problem.code
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
    for (status, _, _code), members in groups.items():
        texts = Counter(p.found for _, p in members)
        example = texts.most_common(1)[0][0]
        first = members[0][1]
        check = f"{first.check} ({first.code})" if first.code else first.check
        fixes = Counter(p.fix for _, p in members if p.fix)
        fix = fixes.most_common(1)[0][0] if fixes else ""
        if len(fixes) > 1:  # one code, a fix per GPU maker: the others are in the reports
            others = len(fixes) - 1
            fix += f" (and {others} other fix{'es' if others > 1 else ''} in the reports)"
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
    return [(step, adapter, len(who), who_sent(who)) for (step, adapter), who in ordered]


def who_sent(sources: Sequence[str], limit: int = 6) -> str:
    if len(sources) <= limit:
        return ", ".join(sources)
    return f"{', '.join(sources[:limit])} and {len(sources) - limit} more"
