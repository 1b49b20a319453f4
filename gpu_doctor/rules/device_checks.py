"""Rules about the devices torch sees: each device it can train on, each backend that should be
there and is not (with the reason's fix), the device chosen. The fixes name other fixes (the
Driver's, the Environment's) only when those are printed.

The advice for a backend that is unusable is chosen by its reason's code (``visible_devices``'s
REASON_CODES, as the project's device discovery gives them), never by the reason's words: those
are shown as they are. Only torch's own error text (``detail``) is read, for the kernels missing.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Tuple

from ..bounded import describe_error
from ..findings import (
    CHOOSES_ENVIRONMENT,
    FAIL,
    INSTALLS_BACKEND,
    NO_ACTION,
    OK,
    REPAIRS_ENVIRONMENT,
    UPDATES_DRIVER,
    WARN,
    Finding,
    fix_name,
    printed_fix,
)
from ..install_commands import reinstall
from ..project import Project
from ..visible_devices import (
    CHECK_FAILED,
    INIT_FAILED,
    LIBRARY_MISSING,
    LOAD_FAILED,
    NO_DEVICE,
    NO_ROCM_DEVICE,
    NOT_BUILT,
    NOT_INSTALLED,
    SMOKE_FAILED,
    hidden_fix,
)
from . import cuda, rocm, rocm_windows
from .packages import install_fix

CODES = {
    "DEVICE-FOUND": "A device torch can train on.",
    "DEVICE-NOT-HERE": "Backends this machine or build does not have (one line for all).",
    "DEVICE-UNAVAILABLE-DIRECTML": "DirectML is unavailable, with the reason.",
    "DEVICE-UNAVAILABLE-CUDA": "CUDA (or ROCm) is unavailable, with the reason.",
    "DEVICE-UNAVAILABLE-XPU": "Intel XPU is unavailable, with the reason.",
    "DEVICE-UNAVAILABLE-MPS": "Apple MPS is unavailable, with the reason.",
    "DEVICE-DISCOVERY-FAILED": "Listing the devices failed.",
    "DEVICE-NOT-AVAILABLE": "The device asked for with --device is not available.",
    "DEVICE-CHOSEN": "The device training would use.",
    "DEVICE-COUNT": "How many devices of the chosen kind, and the torchrun command for several.",
}

# The device kind each stack trains on, where the two names differ (torch calls both CUDA
# builds' devices "cuda").
DEVICE_KIND = {"cuda-legacy": "cuda", "rocm-windows": "cuda"}
# The area line's words for a backend unusable for each reason code ("cuda: sees no GPU.").
BRIEF = {
    NOT_INSTALLED: "not installed",
    NOT_BUILT: "not in this torch build",
    NO_DEVICE: "sees no GPU",
    NO_ROCM_DEVICE: "ROCm sees no GPU",
    LIBRARY_MISSING: "Direct3D 12 library missing",
    LOAD_FAILED: "failed to load",
    INIT_FAILED: "failed to initialise",
    SMOKE_FAILED: "failed a smoke test",
    CHECK_FAILED: "its check failed",
}
# (code, check): each check reads torch's error and names the build with this GPU's kernels
KERNEL_CHECKS = (
    ("ROCM-INVALID-DEVICE-FUNCTION", rocm.invalid_device_function),
    ("ROCM-WINDOWS-INVALID-IMAGE", rocm_windows.invalid_image),
)


def device_findings(
    discovery: Any,
    project: Project,
    earlier: Sequence[Finding] = (),
    recommendation: dict[str, Any] | None = None,
    torch_said: str = "",
    measured: Sequence[tuple[str, str]] = (),
    environ: Mapping[str, str] | None = None,
) -> list[Finding]:
    """One line per device torch can train on, one per backend that should be there and is
    not (with the reason and its fix), and one line for all the backends this machine or build
    simply does not have. ``earlier``: the findings so far, whose fixes the advice may name.
    ``torch_said``: torch's warnings while it listed the devices; ``measured``: (GPU name,
    compute capability) from torch; ``environ``: the environment variables (None: this
    process's), for those that hide GPUs from torch."""
    findings = []
    for option in discovery.options:
        details = option.details or {}
        float64 = details.get("float64")
        extra = ""
        if float64 is not None:
            extra = f", float64 {'supported' if float64 else 'NOT supported (keep float32)'}"
        findings.append(
            Finding("Device", OK, f"{option.label}: {option.name}{extra}.", code="DEVICE-FOUND")
        )
    absent = []  # backends this install or machine simply does not have: one line for all
    for missing in discovery.unavailable:
        ours = missing.kind == DEVICE_KIND.get(project.accelerator, project.accelerator)
        why = getattr(missing, "code", CHECK_FAILED)
        error = getattr(missing, "detail", "")  # torch's own words, when it raised
        # CUDA_VISIBLE_DEVICES="" and the like hide the GPUs: that, not the driver, is the fix.
        hidden = hidden_fix(project.accelerator, missing.kind, why, environ)
        if ours or getattr(missing, "installed", True) or hidden:
            status = WARN if ours or project.accelerator != "cpu" else OK
            fix, role, follows = "", "", ""
            if missing.kind == "directml" and ours:
                fix, role, follows = _directml_fix(why, project, earlier)
            elif missing.kind == "cuda":
                fix, role, follows = _cuda_fix(why, project, earlier)
            elif missing.kind == "xpu":
                fix, role, follows = _xpu_fix(earlier)
            if hidden:
                fix, role, follows = hidden, "", ""
            code = f"DEVICE-UNAVAILABLE-{missing.kind.upper()}"
            found = f"{missing.kind} unavailable: {missing.reason}."
            brief = f"{missing.kind}: {BRIEF.get(why, BRIEF[CHECK_FAILED])}."
            # ROCm without kernels for this GPU: the build to install, not the driver, is the fix
            for kernel_code, no_kernels in KERNEL_CHECKS:
                kernels = no_kernels(error, recommendation, project)
                if kernels:
                    code, found, fix = kernel_code, f"{found} {kernels[0]}", kernels[1]
                    role, follows = "", ""
            image = None
            if missing.kind == "cuda":
                text = f"{error} {torch_said}"
                image = cuda.no_kernel_image(text, recommendation, project, measured)
            if image:
                code, found = "CUDA-NO-KERNEL-IMAGE", f"{found} {image[0]}"
                brief = "This torch has no CUDA kernels for this GPU."
                fix, follows, role = image[1], image[2], ""
            findings.append(Finding("Device", status, found, fix, code, role, follows, brief))
        else:
            absent.append(f"{missing.kind}: {missing.reason}")
    if absent:
        findings.append(
            Finding(
                "Device",
                OK,
                f"Not on this machine or build: {'; '.join(absent)}.",
                code="DEVICE-NOT-HERE",
            )
        )
    return findings


def discovery_failed(error: BaseException) -> Finding:
    return Finding(
        "Device",
        FAIL,
        f"Device discovery failed: {describe_error(error)}.",
        code="DEVICE-DISCOVERY-FAILED",
    )


def not_available(error: BaseException) -> Finding:
    """The device asked for with --device is not there (the error names what is): its message
    only, since a class name such as DeviceNotAvailable means nothing to a student."""
    message = str(error).strip().rstrip(".")
    return Finding(
        "Chosen",
        WARN,
        message or describe_error(error),
        "Pick one of the available devices.",
        code="DEVICE-NOT-AVAILABLE",
    )


def chosen(option: Any) -> Finding:
    return Finding("Chosen", OK, f"{option.label} ({option.name}).", code="DEVICE-CHOSEN")


def device_count(line: str) -> Finding:
    """How many devices of the chosen kind there are (``distributed.devices_line`` words it)."""
    return Finding("Chosen", OK, line, code="DEVICE-COUNT")


# (fix, role, follows): the fix's words, what it is (findings' roles), and the code of the
# printed fix it follows ("" for none).
Advice = Tuple[str, str, str]  # typing.Tuple: tuple[...] fails at run time before 3.9


def _directml_fix(why: str, project: Project, findings: Sequence[Finding] = ()) -> Advice:
    """The advice for DirectML that does not load, by the code of its reason."""
    if why == NOT_INSTALLED:
        return install_fix(project), REPAIRS_ENVIRONMENT, ""
    if why == LIBRARY_MISSING:
        plain_linux = (
            "DirectML needs Direct3D 12: on Windows it is built in; in WSL2 it comes from "
            "/usr/lib/wsl/lib (Windows 11 and `wsl --update`). On plain Linux it cannot work: "
        )
        environment = printed_fix(findings, CHOOSES_ENVIRONMENT)
        if environment:
            return (
                f"{plain_linux}{fix_name(environment)} says what trains here.",
                "",
                environment.code,
            )
        backend = printed_fix(findings, INSTALLS_BACKEND)
        if backend:
            return (
                f"{plain_linux}nothing to install, the CPU trains. "
                f"{fix_name(backend).capitalize()} says how PyTorch can use your GPU.",
                "",
                backend.code,
            )
        return f"{plain_linux}nothing to install, the CPU trains.", NO_ACTION, ""
    driver = printed_fix(findings, UPDATES_DRIVER)
    how = (
        f"as {fix_name(driver)} says"
        if driver
        else "from the GPU maker's website or Windows Update > Optional updates"
    )
    return (
        f"Update the GPU driver ({how}) and restart; if it persists, train with `--device cpu` "
        "and report the reason on this line.",
        "",
        driver.code if driver else "",
    )


def _amd_windows_fix(why: str, project: Project) -> Advice:
    if why == NOT_BUILT:  # not AMD's build at all (PyPI's CPU torch, most often)
        return (
            "Reinstall torch from AMD's index: "
            f"`{reinstall(project, '-r environments/rocm-windows.txt')}`, then run "
            "verify_install again.",
            REPAIRS_ENVIRONMENT,
            "",
        )
    return (
        "AMD's ROCm build needs AMD's current Adrenalin driver: install AMD Software: Adrenalin "
        "Edition from amd.com/support, restart, and run verify_install again. Until then the "
        "CPU trains.",
        "",
        "",
    )


def _xpu_fix(findings: Sequence[Finding] = ()) -> Advice:
    """The advice for Intel XPU that torch has but cannot use: Intel's GPU and its driver."""
    driver = printed_fix(findings, UPDATES_DRIVER)
    which = f" ({fix_name(driver)} says which)" if driver else ""
    return (
        "XPU needs an Intel Arc or Core Ultra GPU and Intel's current graphics driver: check "
        f"that the system lists the GPU and update the driver{which}. Without one, the CPU "
        "trains.",
        "",
        driver.code if driver else "",
    )


def _cuda_fix(why: str, project: Project, findings: Sequence[Finding] = ()) -> Advice:
    """The advice for CUDA that is unavailable, by the code of its reason."""
    if project.accelerator == "rocm-windows":  # AMD's build: torch calls its GPUs cuda too
        return _amd_windows_fix(why, project)
    if why == NOT_BUILT:  # a CPU-only torch, e.g. PyPI's torch on Windows
        pins = " ".join(f"{name}=={project.pins[name]}" for name in ("torch", "torchvision"))
        index = project.index_url or "https://download.pytorch.org/whl/cu130"
        return (
            f"Install the CUDA build: `{reinstall(project, f'{pins} --index-url {index}')}`.",
            REPAIRS_ENVIRONMENT,
            "",
        )
    driver = printed_fix(findings, UPDATES_DRIVER)
    which = f" ({fix_name(driver)} says which)" if driver else ""
    return (
        "CUDA needs an NVIDIA GPU and its driver: check that `nvidia-smi` lists the GPU and "
        f"update the driver{which}. Without an NVIDIA GPU, the CPU trains.",
        "",
        driver.code if driver else "",
    )
