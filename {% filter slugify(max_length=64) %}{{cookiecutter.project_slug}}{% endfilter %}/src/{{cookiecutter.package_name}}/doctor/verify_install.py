"""Does this setup work, and if not, what exactly to do: one command, a table and a verdict.

    python -m <package>.verify_install            a table, a one-line verdict, the fixes
    python -m <package>.verify_install --json     the same as JSON, for scripts and instructors
    python -m <package>.verify_install --markdown one machine's report to paste into an issue

The JSON's fields and every finding's stable ``code`` are listed in docs/report.md.

Steps: the standard-library environment checks (``envcheck``: Python, OS, GPUs and drivers);
the installed torch / torchvision / torch-directml against the project's pins; the devices
torch finds (DirectML adapters with their float64 support, or the reason DirectML cannot
load); a LeNet forward and backward pass on the chosen device compared with the CPU; the
operators that fell back to the CPU during one training step; the time of that step on the
device and on the CPU. When the pass or the step fails on a GPU, ``stepwise`` runs the work
again one step at a time and names the step that fails (the loss, a layer, ...).

Exit codes: 0 the chosen accelerator works (or a CPU-only project runs on the CPU); 3 training
falls back to the CPU (0 with ``--cpu-fallback-ok``, as the PyCharm run configuration passes);
4 the install is broken; 2 wrong arguments (see ``--help``).

torch is imported inside functions only: a missing or broken torch is a finding with its fix
and the exit code for a broken install, never a traceback.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import importlib
import os
import re
import sys
import time
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..machinery.cli import command, device_request, json_for, safe_console, write_out
from ..machinery.project import Project, load_project, parse_version
from . import amd_linux, builds, emulation, envcheck, onnx_runtime_check, recommend, stepwise
from .bounded import describe_error
from .codes import SCHEMA_VERSION
from .envcheck import FAIL, OK, WARN, Finding

# The project's package: the doctor lives one level below it.
PACKAGE = (__package__ or "").rpartition(".")[0]
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

SMOKE_BATCH = 16
SMOKE_TOLERANCE = 1e-2  # relative to the largest value; TF32 convolutions stay below 1e-3
STEP_BATCH = 64
TIMED_STEPS = 5
TIME_BUDGET_S = 1.0  # per device for the timed steps
FALLBACK_WARNING = re.compile(
    r"The operator '([^']+)' is not currently (?:supported|implemented) on the (\S+) "
    r"(?:backend|device)"
)
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


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
            "platform": envcheck.describe_platform(),
            "seconds": round(self.seconds, 2),
            "phases": self.phases,
            "recommendation": self.recommendation,
        }
        return without_home(document)


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


# ------------------------------------------------------------------------------ packages


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (pip's name), or None."""
    from importlib import metadata  # Python 3.8+

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _install_fix(project: Project) -> str:
    tag = builds.expected_tag(project)  # the build, not just the version: '2.14.1+xpu'
    pins = " ".join(
        f"{name}=={version}{'+' + tag if tag and name in ('torch', 'torchvision') else ''}"
        for name, version in sorted(project.pins.items())
    )
    index = f" --index-url {project.index_url}" if project.index_url else ""
    return (
        f"In the project's environment: {envcheck.install_command(project)}, or directly "
        f"`pip install {pins}{index}`."
    )


def check_packages(
    project: Project,
    version_of: Callable[[str], str | None] = installed_version,
    version_file: Callable[[], str] | None = None,
) -> tuple[list[Finding], dict[str, dict[str, str | None]]]:
    """Installed versions of the pinned packages (local tags like '+cu130' aside), then the
    build of torch against the one the stack installs. ``version_file`` gives torch's
    version.py; a replaced ``version_of`` reads none unless it is given too."""
    if version_file is None:
        version_file = builds.torch_version_file if version_of is installed_version else str
    findings, packages = [], {}
    for name in sorted(project.pins, key=lambda n: (n != "torch", n)):
        pinned = project.pins[name]
        try:
            installed = version_of(name)
        except Exception:  # metadata so damaged that it cannot be read: as good as missing
            installed = None
        packages[name] = {"installed": installed, "pinned": pinned}
        if installed is None:
            why = {
                "torch": "nothing can train",
                "torch-directml": "DirectML cannot be used and training falls back to the CPU",
                "torchvision": "MNIST cannot be loaded (synthetic digits still work)",
            }.get(name, "the project may not run")
            status = FAIL if name == "torch" else WARN
            findings.append(
                Finding(
                    name,
                    status,
                    f"{name} is not installed (pinned: {pinned}): {why}.",
                    _install_fix(project),
                    code="PKG-MISSING",
                )
            )
        elif installed.split("+")[0] != pinned:
            older = parse_version(installed) < parse_version(pinned)
            findings.append(
                Finding(
                    name,
                    WARN,
                    f"{name} {installed} is installed; this project pins {pinned} "
                    f"({'older' if older else 'a different version'}: untested here).",
                    _install_fix(project),
                    code="PKG-VERSION",
                )
            )
        else:
            findings.append(
                Finding(name, OK, f"{name} {installed} (pinned {pinned}).", code="PKG-OK")
            )
    build = builds.torch_build(version_of, version_file)
    after_torch = next((n + 1 for n, f in enumerate(findings) if f.check == "torch"), 0)
    findings[after_torch:after_torch] = builds.check_build(project, build)
    return findings, packages


# --------------------------------------------------------------------------------- torch


def import_torch() -> Any:
    return importlib.import_module("torch")


def _activate_hint(project: Project) -> str:
    if project.env_manager == "conda":
        return f"`conda activate {project.project_slug or '...'}`"
    if project.env_manager == "venv":
        return "activate the .venv"
    return "`conda activate ...` or the .venv"


def torch_import_finding(error: BaseException, project: Project) -> Finding:
    text = describe_error(error)
    if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == "torch":
        return Finding(
            "torch",
            FAIL,
            f"torch cannot be imported in this Python ({sys.executable}): {text}.",
            f"Run this with the project's environment ({_activate_hint(project)}; in PyCharm "
            "select it as the project interpreter). If it is the right one: "
            + _install_fix(project),
            code="TORCH-NOT-IN-THIS-PYTHON",
        )
    if isinstance(error, OSError) and ("dll" in text.lower() or "WinError" in text):
        return Finding(
            "torch",
            FAIL,
            f"torch is installed but its libraries do not load: {text}.",
            "Install the Microsoft Visual C++ Redistributable (x64) from "
            "https://aka.ms/vs/17/release/vc_redist.x64.exe, open a new terminal and try again; "
            f"if it persists: `pip install --force-reinstall torch=={project.pins.get('torch')}`.",
            code="TORCH-DLL",
        )
    return Finding(
        "torch",
        FAIL,
        f"torch is installed but fails to import: {text}.",
        f"Reinstall it: {builds.reinstall_command(project)}; then run this check again.",
        code="TORCH-IMPORT-FAILED",
    )


def load_modules() -> tuple[Any, Any, Any]:
    """The project's torch modules: devices, model and train."""
    return tuple(  # type: ignore[return-value]
        importlib.import_module(f"{PACKAGE}.{name}")
        for name in ("machinery.devices", "model", "train")
    )


# pip's name where it differs from the module's: what `pip install` needs.
DISTRIBUTIONS = {"PIL": "pillow", "yaml": "PyYAML", "torch_directml": "torch-directml"}


def distribution_of(module: str) -> str:
    """The distribution (pip's name) that provides the top-level ``module``."""
    return DISTRIBUTIONS.get(module, module)


def missing_module(error: BaseException) -> str | None:
    """The top-level module a ModuleNotFoundError names ('tqdm' for 'tqdm.auto'), else None."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return error.name.split(".")[0]
    return None


def project_import_finding(error: BaseException, project: Project) -> Finding:
    """torch imports, but the project's own modules do not: most often a dependency of the
    project (tqdm, matplotlib, torchvision) is missing from this environment."""
    module = missing_module(error)
    requirements = f"Install the project's requirements: {envcheck.install_command(project)}"
    if module == PACKAGE.split(".")[0]:  # one of the project's own files is gone
        return Finding(
            "Requirements",
            FAIL,
            f"A module of this project is missing: {describe_error(error)}.",
            "Restore the project's files from version control, or generate the project again.",
            code="PROJECT-MODULE-MISSING",
        )
    if module:
        return Finding(
            "Requirements",
            FAIL,
            f"The project's code imports {module} (package {distribution_of(module)}), which "
            f"is not installed in this Python ({sys.executable}).",
            f"{requirements} (it installs {distribution_of(module)}); then run this check again.",
            code="REQUIREMENT-MISSING",
        )
    return Finding(
        "Requirements",
        FAIL,
        f"The project's code fails to import: {describe_error(error)}.",
        "If you edited the file the error names, fix or undo that change. Otherwise: "
        f"{requirements}; then run this check again.",
        code="PROJECT-IMPORT-FAILED",
    )


def _project_import_verdict(error: BaseException) -> str:
    module = missing_module(error)
    if module and module != PACKAGE.split(".")[0]:
        return f"BROKEN: the project's code needs {module}, which is not installed."
    return "BROKEN: the project's code does not import, so nothing can train."


def model_input(torch: Any, images_uint8: Any) -> Any:
    return (images_uint8.float() / 255.0 - MNIST_MEAN) / MNIST_STD


def _relative_error(torch: Any, candidate: Any, reference: Any) -> float:
    candidate = candidate.detach().to("cpu", torch.float32)
    reference = reference.detach().to(torch.float32)
    scale = max(float(reference.abs().max()), 1e-6)
    return float((candidate - reference).abs().max()) / scale


def smoke_test(torch: Any, lenet: Callable[[], Any], device: Any) -> dict[str, Any]:
    """LeNet forward and backward on ``device`` against the same on the CPU."""
    torch.manual_seed(0)
    reference = lenet()
    candidate = copy.deepcopy(reference).to(device)
    images = torch.randint(0, 256, (SMOKE_BATCH, 1, 28, 28), dtype=torch.uint8)
    labels = torch.arange(SMOKE_BATCH) % 10
    cross_entropy = torch.nn.functional.cross_entropy

    ref_logits = reference(model_input(torch, images))
    ref_loss = cross_entropy(ref_logits, labels)
    ref_loss.backward()
    logits = candidate(model_input(torch, images.to(device)))
    loss = cross_entropy(logits, labels.to(device))
    loss.backward()

    errors = {"logits": _relative_error(torch, logits, ref_logits)}
    errors["loss"] = _relative_error(torch, loss, ref_loss)
    for (name, param), (_, ref_param) in zip(
        candidate.named_parameters(), reference.named_parameters()
    ):
        if param.grad is None:
            raise RuntimeError(f"no gradient for {name} on {device}")
        errors[f"grad {name}"] = _relative_error(torch, param.grad, ref_param.grad)
    worst = max(errors, key=lambda key: errors[key])
    finite = bool(torch.isfinite(loss.detach().cpu()).all()) and all(  # checked on the CPU
        bool(torch.isfinite(param.grad.detach().cpu()).all()) for param in candidate.parameters()
    )
    return {
        "device": str(device),
        "loss": float(loss.detach().cpu()),
        "max_relative_error": errors[worst],
        "worst": worst,
        "tolerance": SMOKE_TOLERANCE,
        "finite": finite,
        "passed": finite and errors[worst] <= SMOKE_TOLERANCE,
    }


def locate_failure(
    torch: Any, lenet: Callable[[], Any], train: Any, device: Any
) -> stepwise.FailingStep | None:
    """After a failure only: the step that fails when the work runs one step at a time."""
    name, lr = training_defaults(train)

    def make_optimizer(model: Any) -> Any:
        return train.build_optimizer(name, model.parameters(), lr, device.type)

    def to_input(images: Any) -> Any:
        return model_input(torch, images)

    return stepwise.locate(torch, lenet, device, to_input, make_optimizer)


def training_defaults(train: Any) -> tuple[str, float]:
    """The optimizer and learning rate ``train`` uses without options: what users will run."""
    try:
        config = train.TrainConfig()
        return str(config.optimizer), float(config.peak_lr)
    except Exception:  # an older or changed train module: plain SGD still exercises the step
        return "sgd", 0.01


def _step_setup(torch: Any, lenet: Callable[[], Any], train: Any, device: Any) -> tuple[Any, ...]:
    torch.manual_seed(1)
    model = lenet().to(device)  # to the device first, then the optimizer (see docs)
    name, lr = training_defaults(train)
    optimizer = train.build_optimizer(name, model.parameters(), lr, device.type)
    images = torch.randint(0, 256, (STEP_BATCH, 1, 28, 28), dtype=torch.uint8).to(device)
    labels = (torch.arange(STEP_BATCH) % 10).to(device)
    return model, optimizer, images, labels


def _timed_steps(torch: Any, train: Any, setup: tuple[Any, ...], steps: int) -> tuple[float, int]:
    """(seconds per training step, steps run): at most ``steps``, fewer once TIME_BUDGET_S is
    spent (a busy CPU must not make the check slow). The readback at the end is the barrier:
    DirectML has no synchronize."""
    model, optimizer, images, labels = setup
    start = time.perf_counter()
    loss_sum, done = None, 0
    while done < steps:
        loss_sum, _correct = train.train_step(model, optimizer, images, labels)
        done += 1
        if time.perf_counter() - start > TIME_BUDGET_S:
            break
    float(loss_sum.detach().cpu())
    return (time.perf_counter() - start) / done, done


def training_step(
    torch: Any, lenet: Callable[[], Any], train: Any, device: Any, against_cpu: bool = True
) -> tuple[list[str], list[str], dict[str, Any]]:
    """One training step with warnings captured: (fallback operators, other warnings, timing).

    The step is then timed on ``device`` and, with ``against_cpu``, on the CPU too."""
    setup = _step_setup(torch, lenet, train, device)
    set_warn_always = getattr(torch, "set_warn_always", None)
    was_always = torch.is_warn_always_enabled() if set_warn_always else False
    if set_warn_always:
        set_warn_always(True)  # else a warning raised in C++ may appear once per process only
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss_sum, _correct = train.train_step(*setup)
            loss = float(loss_sum.detach().cpu())
    finally:
        if set_warn_always:
            set_warn_always(was_always)
    operators, others = [], []
    for warning in caught:
        message = str(warning.message)
        match = FALLBACK_WARNING.search(message)
        if match:
            if match.group(1) not in operators:
                operators.append(match.group(1))
        elif message not in others:
            others.append(" ".join(message.split())[:200])
    if loss != loss:
        raise RuntimeError(f"the training step on {device} produced a NaN loss")
    seconds, steps = _timed_steps(torch, train, setup, TIMED_STEPS)
    timing = {"device": str(device), "batch": STEP_BATCH, "steps": steps}
    timing["device_ms"] = 1000 * seconds
    if against_cpu:
        cpu_setup = _step_setup(torch, lenet, train, torch.device("cpu"))
        _timed_steps(torch, train, cpu_setup, 1)  # warm-up
        seconds, timing["cpu_steps"] = _timed_steps(torch, train, cpu_setup, TIMED_STEPS)
        timing["cpu_ms"] = 1000 * seconds
    return operators, others[:5], timing


# ------------------------------------------------------------------------------- the run


def _device_findings(report: Report, discovery: Any, project: Project) -> None:
    for option in discovery.options:
        details = option.details or {}
        float64 = details.get("float64")
        extra = ""
        if float64 is not None:
            extra = f", float64 {'supported' if float64 else 'NOT supported (keep float32)'}"
        report.add("Device", OK, f"{option.label}: {option.name}{extra}.", code="DEVICE-FOUND")
        report.devices.append(
            {
                "kind": option.kind,
                "index": option.index,
                "name": option.name,
                "device": str(option.device),
                "details": dict(details),
            }
        )
    absent = []  # backends this install or machine simply does not have: one line for all
    for missing in discovery.unavailable:
        report.unavailable.append(
            {
                "kind": missing.kind,
                "reason": missing.reason,
                "installed": getattr(missing, "installed", True),
            }
        )
        ours = missing.kind == project.accelerator
        if ours or getattr(missing, "installed", True):
            status = WARN if ours or project.accelerator != "cpu" else OK
            fix = ""
            if missing.kind == "directml" and ours:
                fix = _directml_fix(missing.reason, project, report.findings)
            elif missing.kind == "cuda":
                fix = _cuda_fix(missing.reason, project, report.findings)
            code = f"DEVICE-UNAVAILABLE-{missing.kind.upper()}"
            found = f"{missing.kind} unavailable: {missing.reason}."
            kernels = invalid_device_function(report, missing.reason)
            if kernels:
                code, found, fix = (
                    "ROCM-INVALID-DEVICE-FUNCTION",
                    f"{found} {kernels[0]}",
                    kernels[1],
                )
            report.add("Device", status, found, fix, code=code)
        else:
            absent.append(f"{missing.kind} ({missing.reason})")
    if absent:
        report.add(
            "Device",
            OK,
            f"Not on this machine or build: {'; '.join(absent)}.",
            code="DEVICE-NOT-HERE",
        )


def invalid_device_function(report: Report, error: str) -> tuple[str, str] | None:
    """ROCm's "HIP error: invalid device function": the build has no kernels for this GPU's
    gfx target. (what was seen, the fix) naming the target and its override, else None."""
    if "invalid device function" not in error.lower():
        return None
    gpus = (report.recommendation or {}).get("gpus") or []
    targets = [gpu["gfx_target"] for gpu in gpus if gpu.get("gfx_target")]
    if not targets:
        return (
            "Likely cause: ROCm has no kernels for this GPU's gfx target.",
            "Find the GPU's target with `rocminfo | grep gfx`; if it is a variant of a supported "
            "one (gfx1031/gfx1032 -> 10.3.0, gfx1103 -> 11.0.0), `export "
            "HSA_OVERRIDE_GFX_VERSION=<that>` and run verify_install again (unofficial); "
            "otherwise train with `--device cpu`.",
        )
    support = amd_linux.rocm_support(targets[0], amd_linux.supported_targets())
    seen = f"Likely cause: this ROCm build has no kernels for the GPU's {targets[0]}."
    if support.status == amd_linux.OVERRIDE and os.environ.get("HSA_OVERRIDE_GFX_VERSION"):
        return (
            f"{seen} HSA_OVERRIDE_GFX_VERSION is set ("
            f"{os.environ['HSA_OVERRIDE_GFX_VERSION']}), yet the kernels still fail.",
            f"Check the value: {targets[0]} needs {support.override}. If that is what is set, "
            "the unofficial override does not work on this GPU: train with `--device cpu`.",
        )
    if support.status == amd_linux.OVERRIDE:
        return (
            f"{seen} The close target {support.close} runs it (unofficial).",
            amd_linux.override_fix(support),
        )
    return (
        f"{seen} No close supported target runs it.",
        "This GPU cannot train with ROCm: use the cpu environment (environments/cpu.txt or "
        "environments/cpu.yml), or train with `--device cpu`.",
    )


def _has_fix(findings: Sequence[Finding], check: str) -> bool:
    """Whether a ``check`` line with a fix is printed: only then may advice point to it."""
    return any(finding.check == check and finding.fix for finding in findings)


def _has_status(findings: Sequence[Finding], status: str) -> bool:
    return any(finding.status == status for finding in findings)


def _gpu_backend_fix(findings: Sequence[Finding]) -> bool:
    """A GPU line whose fix installs a backend for this GPU (ROCm or XPU) is printed."""
    return any(f.check == "GPU" and ("ROCm" in f.fix or "XPU" in f.fix) for f in findings)


def _directml_fix(reason: str, project: Project, findings: Sequence[Finding] = ()) -> str:
    if "not installed" in reason:
        return _install_fix(project)
    if "libd3d12" in reason or "libdxcore" in reason:
        backend = _gpu_backend_fix(findings)
        gpu = " The GPU fix says how PyTorch can use your GPU." if backend else ""
        here = f"nothing to install, the CPU trains.{gpu}"
        if _has_fix(findings, "Environment"):
            here = "the Environment fix says what trains here."
        return (
            "DirectML needs Direct3D 12: on Windows it is built in; in WSL2 it comes from "
            "/usr/lib/wsl/lib (Windows 11 and `wsl --update`). On plain Linux it cannot work: "
            + here
        )
    how = (
        "as the Driver fix says"
        if _has_fix(findings, "Driver")
        else "from the GPU maker's website or Windows Update > Optional updates"
    )
    return (
        f"Update the GPU driver ({how}) and restart; if it persists, train with `--device cpu` "
        "and report the reason on this line."
    )


def _cuda_fix(reason: str, project: Project, findings: Sequence[Finding] = ()) -> str:
    if "no CUDA" in reason:  # a CPU-only torch, e.g. PyPI's torch on Windows
        pins = " ".join(f"{name}=={project.pins[name]}" for name in ("torch", "torchvision"))
        index = project.index_url or "https://download.pytorch.org/whl/cu130"
        return (
            f"Install the CUDA build: `pip install --force-reinstall {pins} --index-url {index}`."
        )
    which = " (the Driver fix says which)" if _has_fix(findings, "Driver") else ""
    return (
        "CUDA needs an NVIDIA GPU and its driver: check that `nvidia-smi` lists the GPU and "
        f"update the driver{which}. Without an NVIDIA GPU, the CPU trains."
    )


def active_stack(project: Project | None = None) -> str | None:
    """The stack this environment serves (xpu, rocm, cuda, cpu or directml): the one its name
    says (.venv-xpu, <project>-xpu), else the one its torch's build tag says, else None."""
    try:
        if project is None:
            return recommend.installed_stack()
        return recommend.active_stack(project.stacks, project.project_slug)
    except Exception:  # damaged metadata: judge by the project's default stack
        return None


def run(request: str = "auto") -> Report:
    started = time.perf_counter()
    try:
        project = load_project()
    except Exception as error:
        report = Report(project={})
        report.add(
            "Project",
            FAIL,
            f"project.json could not be read: {describe_error(error)}.",
            "Restore src/<package>/machinery/project.json from version control, or generate "
            "the project again.",
            code="PROJECT-UNREADABLE",
        )
        report.exit_code = EXIT_BROKEN
        report.verdict = "BROKEN: the project's own settings are missing."
        return report
    default = project.accelerator
    # The checks follow the stack of the environment file in use (a workshop project carries
    # one per GPU family), so an xpu environment in a directml project is judged by xpu's pins.
    project = project.for_stack(active_stack(project) or default)
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
    report.findings.extend(envcheck.run_checks(context="project", project=project, details=details))
    report.recommendation = details.get("recommendation")
    findings, report.packages = check_packages(project)
    report.lap("environment", started)
    report.findings.extend(findings)
    _run_torch(report, project, request)
    report.findings.extend(onnx_runtime_check.findings())  # exported models; not in the verdict
    report.findings = defer_to_recommendation(report.findings, project, report.recommendation)
    report.seconds = time.perf_counter() - started
    return report


# Where each stack can train at all (recommend.system_of's names).
STACK_SYSTEMS = {
    "directml": ("Windows", "WSL2"),
    "rocm": ("Linux",),
    "xpu": ("Windows", "Linux"),
    "cuda": ("Windows", "Linux", "WSL2"),
}
DEFERRING = ("PKG-MISSING", "PKG-VERSION", "TORCH-WRONG-BUILD")


def defer_to_recommendation(
    findings: list[Finding], project: Project, recommendation: dict[str, Any] | None
) -> list[Finding]:
    """When another stack's environment fits this machine better, the fixes that repair this
    environment's pins point at that one first, and offer the repair only where this stack can
    train at all: never 'create the cpu environment' next to 'install the DirectML pins'."""
    if not recommendation or recommendation.get("stack") in (None, project.accelerator):
        return findings
    best, active = recommendation["stack"], project.accelerator
    system = recommendation.get("system", "")
    runs_here = system in STACK_SYSTEMS.get(active, (system,))
    deferred = []
    for finding in findings:
        repairs = finding.code.startswith("DEVICE-UNAVAILABLE-") and "pip install" in finding.fix
        if (finding.code in DEFERRING or repairs) and finding.fix:
            lead = f"Create the {best} environment, as the Environment fix says, rather than "
            if runs_here:
                fix = f"{lead}repairing this {active} one. To keep {active}: {finding.fix}"
            else:
                fix = f"{lead}repairing this {active} one: {active} cannot train on {system}."
            finding = Finding(finding.check, finding.status, finding.found, fix, finding.code)
        deferred.append(finding)
    return deferred


def _run_torch(report: Report, project: Project, request: str) -> None:
    try:
        since = time.perf_counter()
        torch = import_torch()
    except Exception as error:
        not_installed = report.packages.get("torch", {}).get("installed", "") is None
        if not (not_installed and isinstance(error, ModuleNotFoundError)):  # else said already
            report.findings.append(torch_import_finding(error, project))
        report.exit_code = EXIT_BROKEN
        report.verdict = "BROKEN: torch does not import, so nothing can train."
        return
    try:  # apart from torch: a missing tqdm is no reason to reinstall torch
        devices, model, train = load_modules()
    except Exception as error:
        report.findings.append(project_import_finding(error, project))
        report.exit_code = EXIT_BROKEN
        report.verdict = _project_import_verdict(error)
        return
    try:
        since = report.lap("import torch", since)
        discovery = devices.discover()
        since = report.lap("devices", since)
        _device_findings(report, discovery, project)
    except Exception as error:
        report.add(
            "Device",
            FAIL,
            f"Device discovery failed: {describe_error(error)}.",
            code="DEVICE-DISCOVERY-FAILED",
        )
        report.exit_code = EXIT_BROKEN
        report.verdict = "BROKEN: the devices could not be listed."
        return
    explicit = request not in ("", "auto")
    try:
        chosen = devices.choose(request, discovery)
    except Exception as error:  # DeviceNotAvailable names what is available
        report.add(
            "Chosen",
            WARN,
            f"{describe_error(error)}",
            "Pick one of the available devices.",
            code="DEVICE-NOT-AVAILABLE",
        )
        chosen, explicit = devices.choose("cpu", discovery), False
    report.chosen = {
        "label": chosen.label,
        "kind": chosen.kind,
        "name": chosen.name,
        "device": str(chosen.device),
    }
    report.add("Chosen", OK, f"{chosen.label} ({chosen.name}).", code="DEVICE-CHOSEN")
    accelerator = chosen.kind != "cpu"
    works = _numbers(report, torch, model.LeNet5, train, chosen.device, accelerator)
    report.lap("smoke test and timing", since)
    if not works:
        report.exit_code = EXIT_BROKEN
        failed = report.failed_step
        what = f"fails in {failed['what']}" if failed else "computes LeNet wrong or fails to train"
        report.verdict = (
            f"BROKEN: {chosen.label} {what}; train with `--device cpu` until the fixes below "
            "are done."
            if chosen.kind != "cpu"
            else "BROKEN: LeNet does not run on the CPU."
        )
        return
    if chosen.kind != "cpu":
        report.exit_code = EXIT_OK
        report.verdict = f"WORKS: training runs on {chosen.label} ({chosen.name})."
    elif project.accelerator == "cpu" or explicit:
        report.exit_code = EXIT_OK
        report.verdict = "WORKS: training runs on the CPU, as chosen."
    else:
        report.exit_code = EXIT_CPU_FALLBACK
        report.verdict = (
            f"CPU FALLBACK: {project.accelerator} is not usable here, so training runs on the "
            "CPU (slower)."
        )


def _numbers(
    report: Report, torch: Any, lenet: Any, train: Any, device: Any, accelerator: bool
) -> bool:
    """Smoke test, fallback operators and timing; False when the device gets it wrong.

    ``accelerator``: the device is not the CPU, so compare with the CPU and time both."""
    try:
        report.smoke_test = smoke_test(torch, lenet, device)
    except Exception as error:
        report.smoke_test = {"device": str(device), "passed": False, "error": describe_error(error)}
        located = locate_failure(torch, lenet, train, device) if accelerator else None
        _add_failure(report, "Smoke test", f"LeNet forward+backward on {device}", error, located)
        return False
    smoke = report.smoke_test
    if not accelerator:
        summary = (
            f"LeNet forward+backward on the CPU: loss {smoke['loss']:.3f}, "
            f"{'all values finite' if smoke['finite'] else 'NaN or infinite values'}."
        )
    else:
        summary = (
            f"LeNet forward+backward on {device} vs the CPU: largest relative difference "
            f"{smoke['max_relative_error']:.1e} ({smoke['worst']}), tolerance "
            f"{SMOKE_TOLERANCE:g}."
        )
    if not smoke["passed"]:
        report.add(
            "Smoke test",
            FAIL,
            summary,
            "Do not train on this device: use `--device cpu` and update the GPU driver.",
            code="SMOKE-TEST-WRONG",
        )
        return False
    report.add("Smoke test", OK, summary, code="SMOKE-TEST-OK")
    try:
        operators, others, timing = training_step(torch, lenet, train, device, accelerator)
    except Exception as error:
        located = locate_failure(torch, lenet, train, device) if accelerator else None
        _add_failure(report, "Train step", f"One training step on {device}", error, located)
        return False
    report.fallback_operators, report.timing = operators, timing
    if operators:
        report.add(
            "CPU fallback",
            WARN,
            f"{len(operators)} operator(s) of one training step ran on the CPU instead of "
            f"{device}: {', '.join(operators)}.",
            "Each fallback copies tensors to the CPU and back in every step. The training code "
            "avoids them on DirectML (SGD with foreach=False, a lerp-free Adam): check that "
            "torch and torch-directml match the pins above and report the operators.",
            code="CPU-FALLBACK-OPERATORS",
        )
    else:
        report.add(
            "CPU fallback",
            OK,
            "No operator of one training step fell back to the CPU.",
            code="CPU-FALLBACK-NONE",
        )
    if others:
        report.add(
            "Warnings",
            WARN,
            "During the training step: " + " | ".join(others),
            code="TRAIN-STEP-WARNINGS",
        )
    device_ms = timing["device_ms"]
    # A CPU emulating the GPU (Wine on a CPU Vulkan driver): no speed claim may come from it.
    timing["emulated"] = emulation.emulated_gpu() if device.type == "privateuseone" else None
    if timing["emulated"] and "cpu_ms" in timing:
        report.add(
            "Timing",
            OK,
            f"One step of {STEP_BATCH} images: {device_ms:.1f} ms on {device}, "
            f"{timing['cpu_ms']:.1f} ms on the CPU. The device is emulated (a CPU emulating "
            f"a GPU: {timing['emulated']}): these times say nothing about a GPU's speed.",
            code="TIMING-STEP",
        )
    elif "cpu_ms" in timing:
        ratio = timing["cpu_ms"] / device_ms if device_ms > 0 else float("inf")
        report.add(
            "Timing",
            OK if ratio >= 1 else WARN,
            f"One step of {STEP_BATCH} images: {device_ms:.1f} ms on {device}, "
            f"{timing['cpu_ms']:.1f} ms on the CPU ({ratio:.1f}x).",
            ""
            if ratio >= 1
            else "The CPU is faster for this small model here: "
            "`--device cpu` trains faster; larger batches favour the GPU.",
            code="TIMING-STEP" if ratio >= 1 else "TIMING-CPU-FASTER",
        )
    else:
        report.add(
            "Timing",
            OK,
            f"One step of {STEP_BATCH} images: {device_ms:.1f} ms on the CPU.",
            code="TIMING-STEP",
        )
    return True


def _failure_code(check: str) -> str:
    return "SMOKE-TEST-ERROR" if check == "Smoke test" else "TRAIN-STEP-ERROR"


def _add_failure(
    report: Report, check: str, work: str, error: Exception, located: stepwise.FailingStep | None
) -> None:
    """The FAIL line of a smoke test or training step that raised, naming the step that fails
    (and in --json, ``failed_step``: a room's reports show which GPU fails where). ROCm's
    "invalid device function" names the GPU's gfx target and its override instead."""
    kernels = invalid_device_function(report, f"{error} {located.error if located else ''}")
    if located is None:
        found = f"{work} failed: {describe_error(error)}."
        if kernels:
            report.add(
                check, FAIL, f"{found} {kernels[0]}", kernels[1], "ROCM-INVALID-DEVICE-FUNCTION"
            )
            return
        fix = "Train with `--device cpu`; update the GPU driver."
        report.add(check, FAIL, found, fix, code=_failure_code(check))
        return
    report.failed_step = {"during": check.lower(), **located.to_dict()}
    found = f"{work} failed in {located.describe()}: {located.error}."
    if located.timed_out:  # the step hung on its own: the first error still says what failed
        found = (
            f"{work} failed: {describe_error(error)}. Run one step at a time, "
            f"{located.what} gave {located.error}."
        )
    if kernels:
        report.add(check, FAIL, f"{found} {kernels[0]}", kernels[1], "ROCM-INVALID-DEVICE-FUNCTION")
        return
    report.add(check, FAIL, found, located.fix(), code=_failure_code(check))


# ------------------------------------------------------------------------------- output


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
    if report.exit_code == EXIT_CPU_FALLBACK and _has_status(report.findings, WARN):
        verdict = verdict.rstrip(".") + "; the WARN lines above say why."
    return verdict


def render_text(report: Report, exit_code: int | None = None) -> str:
    title = _title(report)
    underline = "=" * min(display_width(title), 100)
    lines = [title, underline, envcheck.format_table(report.findings), ""]
    code = report.exit_code if exit_code is None else exit_code
    lines.append(f"Verdict (exit {code}): {_verdict_line(report)}")
    lines.append(can_go_on(report))
    fixes = envcheck.format_fixes(report.findings)
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
        f"{envcheck.describe_platform()}, Python {sys.version.split()[0]}, template "
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
        mark, code = envcheck.MARKS.get(finding.status, "??"), finding.code or "-"
        lines.append(f"| {mark} | {_cell(finding.check)} | `{code}` | {_cell(finding.found)} |")
    fixes = envcheck.format_fixes(report.findings, width=10_000)
    if fixes:
        lines += ["", "**Fixes**", ""]
        lines += [line.strip() for line in fixes.splitlines()[1:]]  # one line per fix
    lines += ["", f"<sub>{_cell(system)}</sub>"]
    return private_path("\n".join(lines))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python -m {PACKAGE}.verify_install" if PACKAGE else "verify_install",
        description="Check Python, OS, GPU drivers, the installed packages and the device "
        "PyTorch trains on; print a table, a verdict and the fixes.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "--cpu-fallback-ok",
        action="store_true",
        help=f"exit {EXIT_OK} instead of {EXIT_CPU_FALLBACK} when training falls back to the CPU "
        "(the PyCharm run configuration passes it: a CPU fallback is no failure for a student); "
        "the verdict and --json still say cpu-fallback",
    )
    parser.add_argument(
        "--device",
        type=device_request,
        default="auto",
        help="device to test: auto (default: what training picks), directml, directml:N, "
        "cuda, cuda:N, xpu, mps or cpu",
    )
    return parser.parse_args(argv)


@command  # Ctrl+C and a stdout that cannot be written: one line, no traceback
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    safe_console()
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
        report.verdict = "BROKEN: verify_install itself failed."
    code = exit_status(report, args.cpu_fallback_ok)
    if args.json:
        text = json_for(sys.stdout, report.to_dict())
    elif args.markdown:
        text = render_markdown(report, code)
    else:
        text = render_text(report, code)
    write_out(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
