"""Does this setup work, and if not, what exactly to do: one command, one line per area.

    python -m <package>.verify_install            one line per area, the fixes to do, a verdict
    python -m <package>.verify_install -v         every finding, the verdict and every fix
    python -m <package>.verify_install --json     the report as JSON, for scripts and instructors
    python -m <package>.verify_install --markdown one machine's report to paste into an issue
    ... --output FILE                             the report into FILE (UTF-8), not to the screen
    ... --bundle FOLDER                           whether a workshop stick holds what this needs

The JSON's fields and every finding's stable ``code`` are listed in docs/report.md.

Steps, in one direction: the standard-library checks (``envcheck``: facts gathered once, then
the rules of Python, OS, GPUs and drivers, the environment choice); the installed packages and
torch's build (``rules/packages.py``, ``rules/torch_build.py``); the devices torch finds
(``rules/device_checks.py``); the probes with torch (``probes``: a LeNet forward and backward
pass on the chosen device compared with the CPU, one training step with the operators that fell
back to the CPU, its time on the device and on the CPU; ``stepwise`` names the step that
fails), whose rows ``rules/training_step.py`` words; ONNX Runtime when it is installed
(``onnx_runtime_check``, outside the verdict); then the report (``verdict``: verdict, exit
code, JSON) and its text or Markdown (``render``).

Exit codes: 0 the chosen accelerator works (or a CPU-only project runs on the CPU); 3 training
falls back to the CPU (0 with ``--cpu-fallback-ok``, as the PyCharm run configuration passes);
4 the install is broken; 2 wrong arguments (see ``--help``).

torch is imported inside functions only: a missing or broken torch is a finding with its fix
and the exit code for a broken install, never a traceback.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import importlib
import os
import re
import stat
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import IO, Any, Callable, Sequence

from . import amd_windows, emulation, envcheck, onnx_runtime_check, probes
from .bounded import describe_error
from .commands import (
    OutputFailed,
    add_device_option,
    command,
    command_parser,
    device_request,
    json_for,
    write_out,
)
from .facts import active_stack
from .findings import FAIL
from .project import Project, load_project, project_module, project_package
from .render import render_markdown, render_summary, render_text
from .rules import device_checks as device_rules
from .rules import environment, packages, rocm_windows
from .rules import training_step as step_rules
from .stick_check import ask_stick, gfx_target_of
from .verdict import (
    EXIT_BROKEN,
    EXIT_CODES_HELP,
    EXIT_CPU_FALLBACK,
    EXIT_OK,
    VERDICTS,
    Report,
    exit_status,
)


def import_torch() -> Any:
    return importlib.import_module("torch")


def load_modules() -> tuple[Any, Any, Any]:
    """The project's torch modules: devices, model and train."""
    return tuple(  # type: ignore[return-value]
        project_module(name) for name in ("machinery.devices", "model", "train")
    )


def run(request: str = "auto") -> Report:
    started = time.perf_counter()
    try:
        project = load_project()
    except Exception as error:
        report = Report(project={})
        report.findings.append(packages.project_unreadable(error))
        report.exit_code = EXIT_BROKEN
        report.verdict = "Not ready to train: the project's own settings are missing."
        return report
    default = project.accelerator
    # The checks follow the stack of the environment file in use (a workshop project carries
    # one per GPU family), so an xpu environment in a directml project is judged by xpu's pins.
    active = active_stack(project)
    project = project.for_stack(active or default)
    report = Report(
        project={
            "name": project.project_name,
            "package": project.package_name,
            "accelerator": project.accelerator,
            "default_accelerator": default,
            "pins": dict(project.pins),
            "template_version": project.template_version,
        }
    )
    details: dict[str, Any] = {}
    report.findings.extend(
        envcheck.run_checks(context="project", project=project, details=details, active=active)
    )
    report.recommendation = details.get("recommendation")
    findings, report.packages = packages.check_packages(project)
    report.lap("environment", started)
    report.findings.extend(findings)
    report.findings.extend(
        rocm_windows.kernel_findings(project, report.recommendation, amd_windows.distribution_names)
    )
    _run_torch(report, project, request)
    report.findings.extend(onnx_runtime_check.findings())  # exported models; not in the verdict
    report.findings = environment.defer_to_recommendation(
        report.findings, project, report.recommendation
    )
    report.seconds = time.perf_counter() - started
    return report


def _run_torch(report: Report, project: Project, request: str) -> None:
    """torch, the project's modules, the devices, the chosen one and the probes on it."""
    try:
        since = time.perf_counter()
        torch = import_torch()
    except Exception as error:
        not_installed = report.packages.get("torch", {}).get("installed", "") is None
        if not (not_installed and isinstance(error, ModuleNotFoundError)):  # else said already
            report.findings.append(packages.torch_import_finding(error, project))
        report.exit_code = EXIT_BROKEN
        report.verdict = "Not ready to train: torch does not import."
        return
    installed = report.packages.get("torch", {}).get("installed")
    report.findings.extend(rocm_windows.hip_finding(project, torch, installed))
    try:  # apart from torch: a missing tqdm is no reason to reinstall torch
        devices, model, train = load_modules()
    except Exception as error:
        report.findings.append(packages.project_import_finding(error, project))
        report.exit_code = EXIT_BROKEN
        report.verdict = packages.project_import_verdict(error, project)
        return
    try:
        since = report.lap("import torch", since)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            discovery = devices.discover()
        torch_said = _shown(caught)  # e.g. "... is not compatible with the current PyTorch"
        measured = _capabilities(torch)
        since = report.lap("devices", since)
        _record_devices(report, discovery)
        report.findings += device_rules.device_findings(
            discovery, project, report.findings, report.recommendation, torch_said, measured
        )
    except Exception as error:
        report.findings.append(device_rules.discovery_failed(error))
        report.exit_code = EXIT_BROKEN
        report.verdict = "Not ready to train: the devices could not be listed."
        return
    explicit = request not in ("", "auto")
    try:
        chosen = devices.choose(request, discovery)
    except Exception as error:  # DeviceNotAvailable names what is available
        report.findings.append(device_rules.not_available(error))
        chosen, explicit = devices.choose("cpu", discovery), False
    report.chosen = {
        "label": chosen.label,
        "kind": chosen.kind,
        "name": chosen.name,
        "device": str(chosen.device),
    }
    report.findings.append(device_rules.chosen(chosen))
    if chosen.kind in ("cuda", "xpu"):
        _count_devices(report, discovery, chosen.kind)
    accelerator = chosen.kind != "cpu"
    works = _probe(
        report,
        project,
        torch,
        model.LeNet5,
        train,
        chosen.device,
        chosen.label,
        accelerator,
        (torch_said, measured),
    )
    report.lap("smoke test and timing", since)
    if not works:
        report.exit_code = EXIT_BROKEN
        failed = report.failed_step
        what = f"fails in {failed['what']}" if failed else "computes LeNet wrong or fails to train"
        report.verdict = (
            f"Not ready to train on {chosen.label}: it {what}; train with `--device cpu` until "
            "the fixes below are done."
            if chosen.kind != "cpu"
            else "Not ready to train: LeNet does not run on the CPU."
        )
        return
    if chosen.kind != "cpu":
        report.exit_code = EXIT_OK
        report.verdict = f"Ready to train on {chosen.label} ({chosen.name})."
    elif project.accelerator == "cpu" or explicit:
        report.exit_code = EXIT_OK
        report.verdict = "Ready to train on the CPU, as chosen."
    else:
        report.exit_code = EXIT_CPU_FALLBACK
        report.verdict = (
            f"Ready to train on the CPU only (slower): {project.accelerator} is not usable here."
        )


def _shown(caught: list) -> str:
    """The warnings torch gave while it listed the devices, shown as usual and returned as one
    text (its "not compatible with the current PyTorch installation" names the GPU)."""
    for warning in caught:
        warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return " ".join(str(warning.message) for warning in caught)


def _capabilities(torch: Any) -> list[tuple[str, str]]:
    """(name, compute capability) of each CUDA GPU as torch reads it; [] without CUDA."""
    try:
        if not getattr(torch.version, "cuda", None) or not torch.cuda.is_available():
            return []
        found = []
        for index in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(index)
            found.append((torch.cuda.get_device_name(index), f"{major}.{minor}"))
        return found
    except Exception:  # a broken driver: the device rules report it
        return []


# -------------------------------------------------------------------- the probes' rows


def _record_devices(report: Report, discovery: Any) -> None:
    """The devices torch found and the backends it did not, as the --json report lists them."""
    for option in discovery.options:
        report.devices.append(
            {
                "kind": option.kind,
                "index": option.index,
                "name": option.name,
                "device": str(option.device),
                "details": dict(option.details or {}),
            }
        )
    for missing in discovery.unavailable:
        report.unavailable.append(
            {
                "kind": missing.kind,
                "reason": missing.reason,
                "code": getattr(missing, "code", "check-failed"),
                "installed": getattr(missing, "installed", True),
            }
        )


def _count_devices(report: Report, discovery: Any, kind: str) -> None:
    """How many devices of the chosen ``kind`` there are, and the torchrun command that trains
    on all of them when there are several."""
    distributed = project_module("machinery.distributed")
    count = sum(1 for option in discovery.options if option.kind == kind)
    report.findings.append(device_rules.device_count(distributed.devices_line(kind, count)))
    if report.chosen is not None:
        report.chosen["count"] = count
        report.chosen["torchrun"] = distributed.devices_to_use(kind, count)


def _probe(
    report: Report,
    project: Project,
    torch: Any,
    lenet: Any,
    train: Any,
    device: Any,
    where: str,
    accelerator: bool,
    seen: tuple[str, list] = ("", []),
) -> bool:
    """The probes on the device and their rows: smoke test, fallback operators and timing;
    False when the device gets it wrong. Every probe's row is added here, and only here.

    ``where``: the device as --device names it (directml:0, not torch's privateuseone:0).
    ``accelerator``: the device is not the CPU, so compare with the CPU and time both.
    ``seen``: torch's warnings while listing the devices, and its GPUs' compute capabilities."""

    def failed(check: str, work: str, error: Exception) -> bool:
        located = probes.locate_failure(torch, lenet, train, device) if accelerator else None
        if located is not None:  # --json: a room's reports show which GPU fails where
            report.failed_step = {"during": check.lower(), **located.to_dict()}
        report.findings.append(
            step_rules.failure(
                check, work, error, located, report.recommendation, project, seen[0], seen[1]
            )
        )
        return False

    try:
        report.smoke_test = probes.smoke_test(torch, lenet, device)
    except Exception as error:
        report.smoke_test = {"device": str(device), "passed": False, "error": describe_error(error)}
        return failed(step_rules.SMOKE_TEST, f"LeNet forward+backward on {where}", error)
    report.findings.append(step_rules.smoke_test(report.smoke_test, where, accelerator))
    if not report.smoke_test["passed"]:
        return False
    try:
        operators, others, timing = probes.training_step(torch, lenet, train, device, accelerator)
    except Exception as error:
        return failed(step_rules.TRAIN_STEP, f"One training step on {where}", error)
    report.fallback_operators, report.timing = operators, timing
    report.findings += step_rules.training_step(operators, others, where)
    # A CPU emulating the GPU (Wine on a CPU Vulkan driver): no speed claim may come from it.
    timing["emulated"] = emulation.emulated_gpu() if device.type == "privateuseone" else None
    report.findings.append(step_rules.timing(timing, where))
    return True


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = command_parser(
        f"{project_package()}.verify_install",
        "Check Python, OS, GPU drivers, the installed packages and the device PyTorch trains "
        "on; print one line per area, the fixes to do and a verdict.",
        epilog=EXIT_CODES_HELP,
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print the report as JSON (docs/report.md)"
    )
    output.add_argument(
        "--markdown",
        action="store_true",
        help="print the report as Markdown, to paste into an issue or a chat (no personal paths)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show every finding and every fix, not one line per area",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the report (JSON with --json) to FILE in UTF-8 instead of the screen: a "
        "report that the room summary reads, whatever the console's encoding; written when the "
        "checks are done, and only over a report of this command, never over another file "
        "(a pipe or a device, such as >(cat) or /dev/null, is written to as it is)",
    )
    parser.add_argument(
        "--cpu-fallback-ok",
        action="store_true",
        help=f"exit {EXIT_OK} instead of {EXIT_CPU_FALLBACK} when training falls back to the CPU "
        "(the PyCharm run configuration passes it: a CPU fallback is no failure for a student); "
        "the verdict and --json still say cpu-fallback",
    )
    parser.add_argument(
        "--bundle",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="a workshop stick (python instructor.pyz stick make): say whether it holds the "
        "environment this machine needs, and what is missing",
    )
    device = add_device_option(parser, "test")
    device.type = device_request  # checked now: a name that is no device is a usage error (2)
    args = parser.parse_args(argv)
    if args.output is not None:  # checked now, before the checks take their time
        refusal = folder_refusal(_raw_output(argv), args.output) or output_refusal(args.output)
        if refusal:
            parser.error(refusal)
    return args


def _raw_output(argv: Sequence[str] | None) -> str:
    """--output's value as typed: Path() drops the trailing slash that says "a folder"."""
    words = list(sys.argv[1:] if argv is None else argv)
    raw = ""
    for index, word in enumerate(words):
        option, equals, value = word.partition("=")
        if len(option) < 4 or not "--output".startswith(option):  # argparse takes --out too
            continue
        if equals:
            raw = value
        elif index + 1 < len(words):
            raw = words[index + 1]
    return raw


def folder_refusal(raw: str, path: Path) -> str:
    """``--output newdir/`` names a folder, never a file called newdir: refused as an
    existing folder is, one sentence."""
    separators = ("/", os.sep) + ((os.altsep,) if os.altsep else ())
    if not raw.endswith(separators) or path.is_dir():
        return ""  # an existing folder: output_refusal's sentence
    return (
        f"--output {raw} ends with a slash but there is no folder {path}: name a file, such as "
        "report.txt, or a folder that is there"
    )


# How every report this command writes begins: the text and -v title, the Markdown heading, the
# JSON's first key. A file that begins otherwise is someone else's and is never overwritten.
REPORT_BEGINNINGS = re.compile(r'(### )?verify_install: |\{\s*"schema_version":')
SNIFF_BYTES = 4096


def is_report(path: Path) -> bool:
    """Whether ``path`` holds a report of this command (an older run's, to be replaced)."""
    try:
        with open(path, "rb") as stream:
            start = stream.read(SNIFF_BYTES)
    except OSError:
        return False
    # PowerShell 5's `>` saves a printed report as UTF-16; Notepad may add a UTF-8 BOM.
    utf16 = start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    text = start.decode("utf-16" if utf16 else "utf-8-sig", errors="replace").lstrip()
    return REPORT_BEGINNINGS.match(text) is not None


def is_stream(path: Path) -> bool:
    """Whether ``path`` is there and no regular file: a pipe such as ``>(cat)`` (a /dev/fd
    path), a FIFO or a device such as /dev/null. It is written to as it is, never opened to be
    read (a FIFO's open blocks until someone writes) nor replaced by a rename."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def output_refusal(path: Path) -> str:
    """Why ``--output path`` cannot be written, in one sentence; '' when it can."""
    folder = path.parent
    if is_stream(path):
        return ""  # asked for, like the shell's `> path`: nothing there to keep
    if path.is_dir():
        return f"--output {path} is a folder: name a file in it, such as {path / 'report.txt'}"
    if not folder.is_dir():
        return f"cannot write --output {path}: the folder {folder} is not there"
    if not os.access(folder, os.W_OK):
        return f"cannot write --output {path}: the folder {folder} is read-only for you"
    if path.exists() and not is_report(path):
        return (
            f"--output {path} is a file that verify_install did not write, so it is left as it "
            "is: name another file (such as report.txt), or delete this one first if you no "
            "longer need it"
        )
    return ""


def save_report(path: Path, render: Callable[[IO[str]], str]) -> None:
    """Write ``render(stream)`` to ``path`` whole or not at all: into a temporary file beside
    it, then renamed over it, so Ctrl+C or a full disk leaves the old report or none, never a
    part. One sentence (OutputFailed, exit 74) when it cannot be written. A pipe or a device
    is written to directly: a rename would replace it, not write into it."""
    if is_stream(path):
        try:
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(render(stream))
        except OSError as error:
            raise OutputFailed(_not_written(path, error)) from None
        return
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".part", dir=path.parent
        )
    except OSError as error:
        raise OutputFailed(_not_written(path, error)) from None
    try:
        with open(handle, "w", encoding="utf-8") as stream:
            stream.write(render(stream))
            stream.flush()
            os.fsync(stream.fileno())  # on disk before the rename: no empty file after a crash
        _readable_as_a_new_file(temporary)
        refusal = output_refusal(path)  # again: another program may have put a file there
        if refusal:
            raise OutputFailed(refusal)
        os.replace(temporary, path)
    except OSError as error:
        raise OutputFailed(_not_written(path, error)) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)  # gone already after the rename


def _readable_as_a_new_file(path: str) -> None:
    """mkstemp's file is private (0600); a report gets the mode ``open`` would have given it."""
    if os.name == "posix":
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o666 & ~umask)


def _not_written(path: Path, error: OSError) -> str:
    reason = error.strerror or describe_error(error)
    if error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        todo = "free some space on that disk, or name a file on another one with --output"
    else:
        todo = "close the program that has it open, or name a file in another folder"
    kept = "that file is as it was" if path.exists() else "no file was made"
    return f"the report could not be written to {path} ({reason}), so {kept}: {todo}"


def report_text(report: Report, code: int, args: argparse.Namespace, stream: IO[str]) -> str:
    """The report as ``args`` ask for it, for ``stream`` (whose encoding JSON and marks fit)."""
    if args.json:
        return json_for(stream, report.to_dict())
    if args.markdown:
        return render_markdown(report, code)
    if args.verbose:
        return render_text(report, code, getattr(stream, "encoding", None))
    return render_summary(report, getattr(stream, "encoding", None))


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = run(args.device)
    except Exception as error:  # a bug here must still give the user something to act on
        report = Report(project={})
        report.add(
            "internal",
            FAIL,
            f"verify_install failed: {describe_error(error)}.",
            "Please report this output to the project's maintainers.",
            code="INTERNAL-ERROR",
        )
        report.verdict = "Not ready to train: verify_install itself failed."
    code = exit_status(report, args.cpu_fallback_ok)
    if args.output is None:
        write_out(report_text(report, code, args, sys.stdout))
    else:
        save_report(args.output, lambda stream: report_text(report, code, args, stream) + "\n")
        write_out(f"Report written to {args.output}: {VERDICTS.get(report.exit_code, 'unknown')}.")
    if args.bundle is not None:  # stderr where stdout is JSON or Markdown
        stack = (report.recommendation or {}).get("stack") or report.project.get("accelerator")
        line = ask_stick(args.bundle, stack or "cpu", gfx_target_of(report.recommendation))
        if args.json or args.markdown:
            print(line, file=sys.stderr)
        else:
            write_out(line)
    return code


if __name__ == "__main__":
    sys.exit(main())
