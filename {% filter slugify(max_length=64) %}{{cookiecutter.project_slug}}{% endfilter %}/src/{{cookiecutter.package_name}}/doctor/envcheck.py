"""Checks of the machine that need only the standard library: Python, OS, GPUs and drivers.

Each check returns Findings (ok / warn / fail, what was seen, and the exact fix). The
project generator's post-generation hook imports this module from the freshly generated
``src/`` and verify_install uses it too, so the rules live in one place. Nothing here may
raise or hang: anything unexpected becomes a warning that says what was seen.

Gathering (``os_info.detect``, ``gpu_windows.scan``, ``gpu_linux.scan``) is kept apart from
deciding (``check_*``): the checks are plain functions of what was gathered, so tests can
describe any machine.
"""

from __future__ import annotations

import datetime
import platform
import re
import shutil
import sys
import textwrap
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Sequence

from ..machinery.cli import clean_name
from ..machinery.project import Project, load_project
from . import amd_linux, gpu_linux, gpu_windows, os_info, recommend
from .bounded import describe_error
from .drivers import driver_age, nvidia_branch
from .gpus import AMD, INTEGRATED, INTEL, NVIDIA, QUALCOMM, Gpu, GpuScan
from .os_info import DIRECTML_MIN_BUILD, WINDOWS_11_BUILD, OsInfo

OK, WARN, FAIL = "ok", "warn", "fail"

PYTORCH_INDEX = "https://download.pytorch.org/whl"
# The oldest NVIDIA driver branch each CUDA major version runs on (minor-version compatibility).
CUDA_MIN_DRIVER = {11: 450, 12: 525, 13: 580}
DRIVER_DOWNLOADS = {
    AMD: "AMD Software: Adrenalin Edition from amd.com/support",
    INTEL: "Intel Driver & Support Assistant from intel.com/support (or the laptop maker's site)",
    NVIDIA: "the NVIDIA App or nvidia.com/drivers",
    QUALCOMM: "Windows Update (Settings > Windows Update > Advanced options > Optional updates)",
}


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    found: str
    fix: str = ""
    # A stable name for what was found (codes.CODES): reports group a room's machines by it,
    # so rewording a message never splits the statistics.
    code: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _series(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


def _venv_create(version: str) -> str:
    return f"`py -{version} -m venv .venv` on Windows / `python{version} -m venv .venv` elsewhere"


def _own_python(project: Project) -> str:
    """How the project's environment gets the project's Python, whatever runs the generator."""
    version = project.python_version
    conda = f"`conda env create -f environment.yml` installs Python {version} into it"
    venv = (
        f"venv copies the Python that runs it, so install Python {version} (python.org) if "
        f"this machine lacks it, then run {_venv_create(version)}"
    )
    if project.env_manager == "conda":
        return f"{conda}."
    if project.env_manager == "venv":
        return f"{venv}."
    return f"{conda} (conda); {venv} (venv)."


def install_command(project: Project) -> str:
    """How this project's environment file installs the pinned stack into an environment:
    the default files, or environments/<stack>.* when another stack's environment is active."""
    conda, pip = "environment.yml", "requirements.txt"
    if not project.uses_default_stack:
        stack = project.accelerator
        conda, pip = f"environments/{stack}.yml", f"environments/{stack}.txt"
    if project.env_manager == "conda":
        return f"`conda env update -f {conda}`"
    if project.env_manager == "venv":
        return f"`pip install -r {pip}`"
    return f"`pip install -r {pip}` (venv) or `conda env update -f {conda}` (conda)"


def _new_env_fix(project: Project) -> str:
    version = project.python_version
    if project.env_manager == "conda":
        create = "`conda env create -f environment.yml` (it asks for that Python)"
    elif project.env_manager == "venv":
        create = f"{_venv_create(version)}, then `pip install -r requirements.txt`"
    else:
        create = (
            f"`conda env create -f environment.yml` (conda), or {_venv_create(version)} "
            "and `pip install -r requirements.txt` (venv)"
        )
    return (
        f"Create the project's environment with Python {version}: {create}; then select it as "
        "the project interpreter."
    )


def check_python(
    project: Project,
    version_info: Sequence[int],
    pointer_bits: int,
    context: str = "project",
) -> list[Finding]:
    """This interpreter against the accelerator's supported range, and 64-bit.

    ``context`` is "hook" while the project generator runs: the environment created from
    the project's environment file may then use another Python than this one.
    """
    version = ".".join(str(part) for part in version_info[:3])
    supported = f"{project.python_min} to {project.python_max}"
    hook = context == "hook"
    findings = []
    if project.supports_python(tuple(version_info)):
        findings.append(
            Finding(
                "Python",
                OK,
                f"Python {version} ({pointer_bits}-bit) is supported for {project.accelerator} "
                f"({supported}).",
                code="PY-OK",
            )
        )
    elif hook:
        findings.append(
            Finding(
                "Python",
                WARN,
                f"The generator runs on Python {version}; {project.accelerator} needs "
                f"{supported}. {project.python_note}",
                f"Nothing to change in the project: its environment file asks for Python "
                f"{project.python_version}; {_own_python(project)} Do not install the project "
                "into this Python.",
                code="PY-GENERATOR-OTHER",
            )
        )
    else:
        findings.append(
            Finding(
                "Python",
                FAIL,
                f"Python {version} is outside {supported} for {project.accelerator}. "
                f"{project.python_note}",
                _new_env_fix(project),
                code="PY-UNSUPPORTED",
            )
        )
    if pointer_bits != 64:
        findings.append(
            Finding(
                "Python",
                WARN if hook else FAIL,
                f"This Python is {pointer_bits}-bit; PyTorch ships 64-bit wheels only.",
                "Install a 64-bit Python (x86-64, or ARM64 where the stack has wheels) and "
                "create the environment with it.",
                code="PY-NOT-64BIT",
            )
        )
    if hook and tuple(version_info[:2]) != _series(project.python_version):
        findings.append(
            Finding(
                "Python",
                OK,
                f"The generator ran on Python {version}; the project's environment will use "
                f"Python {project.python_version}: {_own_python(project)}",
                code="PY-GENERATOR-ENV",
            )
        )
    return findings


# ---------------------------------------------------------------------------------- OS


def _fallback_on_linux(project: Project, machine: str) -> str:
    if project.accelerator == "cpu":
        return "the CPU"
    if machine.lower() in ("x86_64", "amd64"):
        return "CUDA on an NVIDIA GPU (PyPI's torch for Linux includes it) or else the CPU"
    return "the CPU"


def check_os(project: Project, info: OsInfo) -> list[Finding]:
    """Windows build, WSL version and GPU paravirtualization, or which backend instead."""
    what = info.describe()
    directml = project.accelerator == "directml"
    if info.is_windows:
        return _check_windows(project, info)
    if info.is_macos:
        return _check_macos(project, info)
    if info.wsl == 1:
        if project.accelerator == "cpu":
            return [Finding("OS", OK, f"{what}: the CPU build runs here.", code="OS-OK")]
        return [
            Finding(
                "OS",
                WARN,
                f"{what}: WSL 1 has no GPU access, so {project.accelerator} falls back to the CPU.",
                "Convert the distribution to WSL 2: in Windows PowerShell `wsl -l -v`, then "
                "`wsl --set-version <name> 2`.",
                code="OS-WSL1",
            )
        ]
    if info.wsl == 2:
        return _check_wsl2(project, info)
    if info.is_linux:
        if not directml:
            return [Finding("OS", OK, f"{what}.", code="OS-OK")]
        return [
            Finding(
                "OS",
                WARN,
                f"{what}: DirectML runs only on Windows 10/11 and in WSL2. Here the project "
                f"uses {_fallback_on_linux(project, info.machine)}.",
                "For DirectML, run the project on Windows or in WSL2. On this machine, train "
                "in the environment the Environment line names.",
                code="OS-LINUX-NO-DIRECTML",
            )
        ]
    return [
        Finding(
            "OS",
            WARN,
            f"{what}: PyTorch publishes wheels for Windows, Linux and macOS only.",
            "Use Windows, Linux (or WSL2) or macOS on Apple Silicon.",
            code="OS-UNSUPPORTED",
        )
    ]


def _check_windows(project: Project, info: OsInfo) -> list[Finding]:
    what = info.describe()
    build = info.windows_build
    findings = []
    if project.accelerator != "directml":
        findings.append(Finding("OS", OK, f"{what}.", code="OS-OK"))
    elif build is None:
        findings.append(
            Finding(
                "OS",
                WARN,
                f"{what}: the Windows build number could not be read.",
                "Check it with `winver`: DirectML needs Windows 10 version 1709 (build 16299) "
                "or later.",
                code="OS-WINDOWS-BUILD-UNKNOWN",
            )
        )
    elif build < DIRECTML_MIN_BUILD:
        findings.append(
            Finding(
                "OS",
                FAIL,
                f"{what}: DirectML needs Windows 10 version 1709 (build {DIRECTML_MIN_BUILD}) or "
                "later.",
                "Update Windows (Settings > Windows Update) to Windows 10 22H2 or Windows 11.",
                code="OS-WINDOWS-TOO-OLD",
            )
        )
    else:
        findings.append(
            Finding(
                "OS", OK, f"{what}: DirectML runs here (build {DIRECTML_MIN_BUILD}+).", code="OS-OK"
            )
        )
    if project.accelerator == "directml" and info.machine.upper() in ("ARM64", "AARCH64"):
        findings.append(
            Finding(
                "OS",
                FAIL,
                "This Python is ARM64; torch-directml publishes win_amd64 wheels only.",
                "Install the x64 (AMD64) Python from python.org; Windows on ARM runs it "
                "emulated. Then recreate the environment with it.",
                code="OS-ARM64-PYTHON",
            )
        )
    return findings


def _check_wsl2(project: Project, info: OsInfo) -> list[Finding]:
    what = info.describe()
    if project.accelerator == "cpu":
        return [Finding("OS", OK, f"{what}: the CPU build runs here.", code="OS-OK")]
    missing = [
        path
        for path, present in (("/dev/dxg", info.dxg), ("/usr/lib/wsl/lib/libd3d12.so", info.d3d12))
        if not present
    ]
    if project.accelerator == "cuda" and info.dxg:
        missing = []  # CUDA in WSL2 needs /dev/dxg, not Direct3D
    if not missing:
        return [
            Finding(
                "OS",
                OK,
                f"{what}: GPU access through /dev/dxg"
                + (" and /usr/lib/wsl/lib/libd3d12.so." if info.d3d12 else "."),
                code="OS-OK",
            )
        ]
    if info.windows_build is not None and info.windows_build < WINDOWS_11_BUILD:
        fix = (
            f"GPU access in WSL2 for {project.accelerator} needs Windows 11 (build "
            f"{WINDOWS_11_BUILD}+); this Windows is build {info.windows_build}. Upgrade Windows, "
            "or run the project on Windows itself."
        )
    else:
        fix = (
            "In Windows, install the GPU vendor's current Windows driver (never a Linux GPU "
            "driver inside WSL), run `wsl --update`, then `wsl --shutdown` and reopen the "
            f"distribution. WSL2 GPU access needs Windows 11 (build {WINDOWS_11_BUILD}+)."
        )
    return [
        Finding(
            "OS",
            WARN,
            f"{what}: {' and '.join(missing)} missing, so {project.accelerator} cannot reach the "
            "GPU and falls back to the CPU.",
            fix,
            code="OS-WSL2-NO-GPU",
        )
    ]


def _check_macos(project: Project, info: OsInfo) -> list[Finding]:
    what = info.describe()
    if info.machine.lower() not in ("arm64", "aarch64"):
        return [
            Finding(
                "OS",
                FAIL,
                f"{what}: PyTorch publishes no wheels for Intel Macs since 2.3, and this project "
                f"pins torch {project.pins.get('torch', '')}.",
                "On an Apple Silicon Mac, install a native arm64 Python (python.org installer or "
                "Miniforge) instead of an x86_64 one under Rosetta. On an Intel Mac, use Windows, "
                "Linux or a hosted notebook instead.",
                code="OS-INTEL-MAC",
            )
        ]
    if project.accelerator == "cpu":
        return [
            Finding(
                "OS",
                OK,
                f"{what}: the CPU build runs here; `--device mps` uses the GPU.",
                code="OS-OK",
            )
        ]
    return [
        Finding(
            "OS",
            WARN,
            f"{what}: {'DirectML' if project.accelerator == 'directml' else 'CUDA'} does not "
            "exist on macOS; this project uses Apple's MPS backend (the Apple GPU) instead.",
            "Nothing to install: PyPI's torch for macOS includes MPS (macOS 12.3 or later).",
            code="OS-MACOS-MPS",
        )
    ]


# -------------------------------------------------------------------------------- GPUs


def scan_gpus(info: OsInfo) -> GpuScan:
    """Ask the system for its GPUs in the way that fits it; macOS needs no listing."""
    if info.is_windows:
        return gpu_windows.scan()
    if info.is_linux:
        return gpu_linux.scan(wsl=info.wsl == 2)
    return GpuScan(source="")


def _driver_findings(gpus: Iterable[Gpu], today: datetime.date) -> list[Finding]:
    findings = []
    for gpu in gpus:
        age = driver_age(gpu)
        if age is None or not age.is_old(today):
            continue
        version = f" {gpu.driver_version}" if gpu.driver_version else ""
        where = DRIVER_DOWNLOADS.get(gpu.vendor_id or -1, "the GPU maker's website")
        findings.append(
            Finding(
                "Driver",
                WARN,
                f"{gpu.name}: driver{version} ({age.basis}) is about "
                f"{age.years(today):.0f} years old.",
                f"Install the current driver with {where}. If the maker no longer updates this "
                "GPU, the old driver is the last one; DirectML may then fail on some operators.",
                code="DRIVER-OLD",
            )
        )
    return findings


def _cuda_major(project: Project, info: OsInfo) -> int | None:
    match = re.search(r"/cu(\d+)\b", project.index_url or "")
    if match:
        return int(match.group(1)[:-1])
    if project.accelerator == "directml" and info.is_linux:
        return 12  # PyPI's torch 2.4.1 for Linux x86_64 is built with CUDA 12.1
    return None


def _cuda_driver_findings(project: Project, info: OsInfo, gpus: Iterable[Gpu]) -> list[Finding]:
    cuda = _cuda_major(project, info)
    if cuda is None or cuda not in CUDA_MIN_DRIVER:
        return []
    findings = []
    for gpu in gpus:
        branch = nvidia_branch(gpu.driver_version) if gpu.vendor_id == NVIDIA else None
        if branch is not None and branch[0] < CUDA_MIN_DRIVER[cuda]:
            findings.append(
                Finding(
                    "Driver",
                    WARN,
                    f"{gpu.name}: NVIDIA driver {branch[1]} is older than {CUDA_MIN_DRIVER[cuda]}, "
                    f"the oldest that runs this project's CUDA {cuda} build of torch.",
                    f"Install NVIDIA driver {CUDA_MIN_DRIVER[cuda]} or newer "
                    f"({DRIVER_DOWNLOADS[NVIDIA]}; on Linux the distribution's packages).",
                    code="DRIVER-TOO-OLD-FOR-CUDA",
                )
            )
    return findings


def _list_findings(gpus: Iterable[Gpu]) -> list[Finding]:
    return [Finding("GPU", OK, gpu.describe(), code="GPU-FOUND") for gpu in gpus]


def _problem_findings(scan: GpuScan, have_gpus: bool) -> list[Finding]:
    if not scan.problems:
        return []
    seen = "; ".join(scan.problems)
    if have_gpus:
        return [
            Finding(
                "GPU",
                WARN,
                f"Part of the GPU query failed: {seen}.",
                code="GPU-QUERY-PARTLY-FAILED",
            )
        ]
    return [
        Finding(
            "GPU",
            WARN,
            f"The GPUs could not be listed: {seen}.",
            "Look in Device Manager > Display adapters (Windows) or run `lspci | grep -i vga` "
            "(Linux); verify_install lists the devices PyTorch itself finds.",
            code="GPU-QUERY-FAILED",
        )
    ]


def check_gpus(
    project: Project, info: OsInfo, scan: GpuScan, today: datetime.date | None = None
) -> list[Finding]:
    today = today or datetime.date.today()
    if info.is_windows:
        return _check_windows_gpus(project, info, scan, today)
    if info.is_linux:
        return _check_linux_gpus(project, info, scan, today)
    return []


# Radeon RX 7000 (RDNA3) and RX 9000 (RDNA4): the GPUs of AMD's ROCm preview for Windows.
_RDNA3_4_NAME = re.compile(r"\bRX\s*[79]\d{3}\b", re.IGNORECASE)
_RDNA3_4_IDS = {0x744C, 0x7448, 0x747E, 0x7480, 0x7550, 0x7551, 0x7590}


def _windows_rocm_preview(gpus: Iterable[Gpu]) -> list[Finding]:
    """A note, never a default: AMD's own ROCm packages for Windows are a preview."""
    findings = []
    for gpu in gpus:
        rdna = gpu.vendor_id == AMD and gpu.kind != INTEGRATED
        if rdna and (_RDNA3_4_NAME.search(gpu.name) or gpu.device_id in _RDNA3_4_IDS):
            findings.append(
                Finding(
                    "GPU",
                    OK,
                    f"{gpu.name}: AMD also publishes its own ROCm builds of PyTorch for Windows "
                    "on RDNA3/4 (one multi-arch index, the GPU chosen by an extra such as "
                    '`torch[device-gfx1100]`), but as a preview, "not yet stable for production '
                    "use\"; this project's Windows stack for Radeon stays directml.",
                    code="GPU-WINDOWS-ROCM-PREVIEW",
                )
            )
    return findings


def _check_windows_gpus(
    project: Project, info: OsInfo, scan: GpuScan, today: datetime.date
) -> list[Finding]:
    hardware = scan.hardware
    findings = _list_findings(hardware)
    findings += _problem_findings(scan, bool(hardware))
    no_driver = [gpu for gpu in scan.software if gpu.vendor_id in DRIVER_DOWNLOADS]
    for gpu in no_driver:
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"A {gpu.vendor} GPU (PCI id 0x{gpu.device_id or 0:04x}) runs on '{gpu.name}': "
                "its driver is not installed, so DirectX 12 cannot use it.",
                f"Install the driver with {DRIVER_DOWNLOADS[gpu.vendor_id or -1]}, then restart.",
                code="GPU-NO-DRIVER",
            )
        )
    accelerator = project.accelerator
    findings += _windows_rocm_preview(hardware)
    if not hardware:
        software = [gpu.name for gpu in scan.software if gpu not in no_driver]
        if software:
            findings.append(
                Finding(
                    "GPU",
                    WARN if accelerator != "cpu" else OK,
                    f"Only the software adapter ({', '.join(software)}) was found: no DirectX 12 "
                    "GPU driver is active, so training runs on the CPU.",
                    "Install the GPU maker's driver (Windows Update > Optional updates, or the "
                    "maker's site). In a virtual machine or a Remote Desktop session there is "
                    "usually no GPU: run on the machine itself."
                    if accelerator != "cpu"
                    else "",
                    code="GPU-SOFTWARE-ONLY",
                )
            )
        elif not scan.problems and not no_driver:
            findings.append(
                Finding(
                    "GPU",
                    WARN if accelerator != "cpu" else OK,
                    "No display adapter found.",
                    code="GPU-NONE",
                )
            )
        return findings
    if accelerator == "directml":
        if all(gpu.kind == INTEGRATED for gpu in hardware):
            names = ", ".join(gpu.name for gpu in hardware)
            findings.append(
                Finding(
                    "GPU",
                    WARN,
                    f"Only an integrated GPU ({names}): DirectML runs on it, but it shares "
                    "memory with the CPU and is often no faster than the CPU for a model as "
                    "small as LeNet.",
                    f"Nothing to install. Compare with `python -m {project.package_name}.benchmark`"
                    " and train with `--device cpu` if the CPU is faster.",
                    code="GPU-INTEGRATED-ONLY",
                )
            )
        elif any(gpu.kind == INTEGRATED for gpu in hardware):
            findings.append(
                Finding(
                    "GPU",
                    OK,
                    "Integrated and discrete GPUs: DirectML's device 0 is often the integrated "
                    "one; the project picks a discrete GPU by name (override with --device).",
                    code="GPU-INTEGRATED-AND-DISCRETE",
                )
            )
    elif accelerator == "cuda" and not any(gpu.vendor_id == NVIDIA for gpu in hardware):
        findings.append(
            Finding(
                "GPU",
                WARN,
                "No NVIDIA GPU: the CUDA build of torch trains on the CPU here.",
                "For an AMD, Intel or Qualcomm GPU on Windows, generate the project with "
                "accelerator=directml.",
                code="GPU-NO-NVIDIA",
            )
        )
    elif accelerator == "cpu":
        findings.append(
            Finding(
                "GPU",
                OK,
                "accelerator=cpu: these GPUs stay unused. Generate the project with "
                "accelerator=directml (any DirectX 12 GPU) or cuda (NVIDIA) to train on one.",
                code="GPU-UNUSED",
            )
        )
    findings += _driver_findings(hardware, today)
    findings += _cuda_driver_findings(project, info, hardware)
    return findings


def _stack_files(stack: str) -> str:
    return f"environments/{stack}.txt (venv) or environments/{stack}.yml (conda)"


def _backend_fix(project: Project, stack: str, best: str) -> str:
    """The fix of an AMD or Intel GPU line whose stack (rocm, xpu) this torch is not: the
    environment of that stack, the same one the Environment line recommends."""
    pins = project.stacks.get(stack, {}).get("pins", {})
    torch = f" torch {pins['torch']}" if "torch" in pins else ""
    what = {"rocm": "ROCm", "xpu": "XPU"}[stack]
    if best == stack:
        return (
            f"Use the {stack} environment, as the Environment fix says: it installs PyTorch's "
            f"{what} build{torch} ({_stack_files(stack)})."
        )
    return ""


def _amd_support_findings(project: Project, gpu: Gpu) -> list[Finding]:
    """Whether the pinned ROCm build runs this GPU's gfx target, and the override if one does."""
    targets = project.stacks.get("rocm", {}).get("gfx_targets") or amd_linux.supported_targets()
    support = amd_linux.rocm_support(gpu.gfx_target, targets)
    rocm = project.stacks.get("rocm", {}).get("label", "PyTorch's ROCm build")
    if support.status == amd_linux.SUPPORTED:
        return [
            Finding(
                "GPU",
                OK,
                f"{gpu.name}: {gpu.gfx_target} is one of the GPU targets of {rocm}.",
                code="GPU-AMD-ROCM-SUPPORTED",
            )
        ]
    if support.status == amd_linux.OVERRIDE:
        return [
            Finding(
                "GPU",
                WARN if project.accelerator != "cpu" else OK,
                f"{gpu.name}: {gpu.gfx_target} is not one of the GPU targets of {rocm}; without "
                "an override the first kernel fails with 'HIP error: invalid device function'. "
                f"Its close relative {support.close} runs it: unofficial, AMD does not support it.",
                amd_linux.override_fix(support),
                code="GPU-AMD-ROCM-OVERRIDE",
            )
        ]
    if support.status == amd_linux.UNSUPPORTED:
        return [
            Finding(
                "GPU",
                WARN if project.accelerator == "rocm" else OK,
                f"{gpu.name}: {gpu.gfx_target} is not one of the GPU targets of {rocm}, and no "
                "close supported target runs it: ROCm fails at the first kernel ('invalid device "
                "function'), so this GPU cannot train.",
                f"Train on the CPU: the cpu environment runs here ({_stack_files('cpu')})."
                if project.accelerator == "rocm"
                else "",
                code="GPU-AMD-ROCM-UNSUPPORTED",
            )
        ]
    return []


def _access_findings(project: Project, scan: GpuScan) -> list[Finding]:
    """/dev/kfd and the render nodes: ROCm sees no GPU where this user cannot open them."""
    if project.accelerator == "cpu" or not scan.denied:
        return []
    missing = [access.path for access in scan.denied if access.missing]
    denied = [access for access in scan.denied if not access.missing]
    findings = []
    if denied:
        names = ", ".join(
            f"{access.path} (group {access.group})" if access.group else access.path
            for access in denied
        )
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"This user cannot open {names}: ROCm then finds no GPU and torch trains on the "
                "CPU.",
                amd_linux.join_groups_fix(denied),
                code="GPU-AMD-NO-ACCESS",
            )
        )
    if missing:
        findings.append(
            Finding(
                "GPU",
                WARN,
                f"{' and '.join(missing)} does not exist: the amdgpu driver's compute interface "
                "is not there, so ROCm finds no GPU.",
                "Use the distribution's kernel with the amdgpu driver (not a virtual machine); in "
                "a container, pass `--device=/dev/kfd --device=/dev/dri`.",
                code="GPU-AMD-NO-ACCESS",
            )
        )
    return findings


def _check_linux_gpus(
    project: Project, info: OsInfo, scan: GpuScan, today: datetime.date
) -> list[Finding]:
    hardware = scan.hardware
    findings = _list_findings(hardware)
    findings += _problem_findings(scan, bool(hardware))
    accelerator = project.accelerator
    gpu_stack = accelerator != "cpu"
    best = recommend.recommend(info, hardware).stack
    x86 = info.machine.lower() in ("x86_64", "amd64")
    amdgpu = False
    for gpu in hardware:
        if gpu.vendor_id == NVIDIA:
            findings += _linux_nvidia(project, gpu, x86)
        elif gpu.vendor_id == AMD and gpu.driver == "radeon":
            findings.append(
                Finding(
                    "GPU",
                    WARN if gpu_stack else OK,
                    f"{gpu.name} runs on the legacy 'radeon' kernel driver: ROCm needs 'amdgpu', "
                    "so training runs on the CPU.",
                    "Nothing to install: this older GPU is not supported by ROCm."
                    if gpu_stack and best == accelerator
                    else "",
                    code="GPU-AMD-LEGACY-DRIVER",
                )
            )
        elif gpu.vendor_id == AMD:
            amdgpu = True
            support = _amd_support_findings(project, gpu)
            findings += support
            runs = not any(f.code == "GPU-AMD-ROCM-UNSUPPORTED" for f in support)
            if accelerator != "rocm" and runs:
                fix = _backend_fix(project, "rocm", best)
                findings.append(
                    Finding(
                        "GPU",
                        WARN if gpu_stack and fix else OK,
                        f"{gpu.name}: AMD GPUs on Linux train through ROCm, which this "
                        "environment's torch does not include"
                        + (", so training runs on the CPU." if gpu_stack else "."),
                        fix,
                        code="GPU-AMD-NO-ROCM-BUILD",
                    )
                )
        elif gpu.vendor_id == INTEL and accelerator != "xpu":
            fix = _backend_fix(project, "xpu", best) if recommend.is_intel_arc(gpu) else ""
            findings.append(
                Finding(
                    "GPU",
                    WARN if gpu_stack and fix else OK,
                    f"{gpu.name}: Intel GPUs on Linux train through PyTorch's XPU build, which "
                    "this environment's torch is not"
                    + (", so training runs on the CPU." if gpu_stack else ".")
                    + (
                        ""
                        if recommend.is_intel_arc(gpu)
                        else " The XPU build supports Arc and Core Ultra graphics, not this one."
                    ),
                    fix,
                    code="GPU-INTEL-NO-XPU-BUILD",
                )
            )
    if amdgpu and (accelerator == "rocm" or best == "rocm"):
        findings += _access_findings(project, scan)
    if not hardware and not scan.problems:
        if info.wsl == 2 and info.dxg:
            findings.append(
                Finding(
                    "GPU",
                    OK,
                    "WSL2 shares the Windows driver's GPUs through /dev/dxg; they have no "
                    "/sys/class/drm entry. verify_install lists what PyTorch finds.",
                    code="GPU-WSL2-SHARED",
                )
            )
        else:
            display = [gpu.name for gpu in scan.gpus if gpu not in hardware]
            seen = f" (display only: {', '.join(display)})" if display else ""
            if not gpu_stack:
                fix = ""
            elif best != accelerator:
                fix = (
                    f"Train on the CPU with the {best} environment, as the Environment fix says. "
                    "For GPU training, use a machine with an NVIDIA GPU (the cuda environment), "
                    "or Windows with any DirectX 12 GPU (the directml environment)."
                )
            else:
                fix = (
                    "Nothing to install: the CPU trains, only slower. For GPU training use a "
                    "machine with an NVIDIA GPU (accelerator=cuda), or Windows with any DirectX "
                    "12 GPU (accelerator=directml)."
                )
            findings.append(
                Finding(
                    "GPU",
                    WARN if gpu_stack else OK,
                    f"No GPU for compute found{seen}: training runs on the CPU.",
                    fix,
                    code="GPU-NONE",
                )
            )
    findings += _driver_findings([g for g in hardware if g.vendor_id == NVIDIA], today)
    findings += _cuda_driver_findings(project, info, hardware)
    return findings


def _linux_nvidia(project: Project, gpu: Gpu, x86: bool) -> list[Finding]:
    if gpu.driver not in ("nvidia", ""):
        return [
            Finding(
                "GPU",
                WARN,
                f"{gpu.name} runs on the '{gpu.driver}' kernel driver: CUDA needs NVIDIA's "
                "driver, so training runs on the CPU.",
                "Install NVIDIA's driver (Ubuntu: `sudo ubuntu-drivers install`), reboot, and "
                "check that `nvidia-smi` lists the GPU.",
                code="GPU-NVIDIA-NO-DRIVER",
            )
        ]
    if gpu.driver == "" and gpu.source.startswith("/sys"):
        return [
            Finding(
                "GPU",
                WARN,
                f"{gpu.name} has no kernel driver loaded: CUDA cannot use it.",
                "Install NVIDIA's driver (Ubuntu: `sudo ubuntu-drivers install`) and reboot.",
                code="GPU-NVIDIA-NO-DRIVER",
            )
        ]
    if project.accelerator == "cuda":
        return [Finding("GPU", OK, f"{gpu.name}: CUDA trains on it.", code="GPU-CUDA-OK")]
    if project.accelerator == "directml" and x86:
        torch = project.pins.get("torch", "")
        return [
            Finding(
                "GPU",
                OK,
                f"{gpu.name}: PyPI's torch {torch} for Linux includes CUDA, so this project "
                "trains on it through CUDA instead of DirectML.",
                code="GPU-CUDA-OK",
            )
        ]
    return [
        Finding(
            "GPU",
            OK,
            f"accelerator={project.accelerator}: {gpu.name} stays unused; generate the project "
            "with accelerator=cuda to train on it.",
            code="GPU-UNUSED",
        )
    ]


# ------------------------------------------------------------------- best environment


def check_environment_choice(
    project: Project,
    info: OsInfo,
    scan: GpuScan,
    active: str | None = None,
    context: str = "project",
) -> list[Finding]:
    """Which environment file fits this machine best, and a WARN (never a FAIL) when the
    active one is another. ``active`` is the stack of the installed torch (None: unknown,
    then the project's default stack stands for it)."""
    if not scan.hardware and scan.problems:
        return [
            Finding(
                "Environment",
                OK,
                "The GPUs could not be listed, so no environment file is recommended over "
                f"the default ({project.accelerator}).",
                code="ENV-UNKNOWN",
            )
        ]
    best = recommend.recommend(info, scan.hardware)
    current = active or project.accelerator
    python = recommend.python_for(project.stacks.get(best.stack, {}), project.python_version)
    commands = best.commands(project.project_slug or "<project>", python, info.is_windows)
    conda, venv = (", then ".join(f"`{c}`" for c in commands[k]) for k in ("conda", "venv"))
    why = best.why[0].upper() + best.why[1:]
    seen = f"{best.gpu_text()}: {best.why}" if best.gpu is not None else why
    if best.stack == current:
        where = "this environment" if active and context != "hook" else "the default environment"
        return [
            Finding(
                "Environment",
                OK,
                f"Best for this machine: {best.stack} ({best.conda_file} or {best.pip_file}), "
                f"which is {where}. {seen}.",
                code="ENV-BEST",
            )
        ]
    if context == "hook" or not active:
        now = f"the project's default environment file is {project.accelerator}"
    else:
        now = f"this environment runs the {active} stack"
    return [
        Finding(
            "Environment",
            WARN,
            f"Best for this machine: {best.stack}, but {now}. {seen}.",
            f"Create the {best.stack} environment in the project folder. conda: {conda}. "
            f"venv: {venv}. Then select it as the interpreter and run verify_install again.",
            code="ENV-OTHER-BEST",
        )
    ]


# ------------------------------------------------------------------------------ running


def run_checks(
    context: str = "project",
    project: Project | None = None,
    version_info: tuple[int, ...] | None = None,
    pointer_bits: int | None = None,
    os_facts: OsInfo | None = None,
    gpu_scan: GpuScan | None = None,
    today: datetime.date | None = None,
    details: dict | None = None,
) -> list[Finding]:
    """All standard-library checks; arguments replace the real system in tests.

    ``details``, when given, receives "recommendation": the best environment for this
    machine as a dict (stack, why, gpu, files, commands, and the active stack)."""
    findings: list[Finding] = []
    try:
        project = project or load_project()
    except Exception as error:  # a damaged project.json: say so, check nothing else
        return [
            Finding(
                "Project",
                FAIL,
                f"project.json could not be read: {describe_error(error)}",
                "Restore src/<package>/machinery/project.json from version control or regenerate.",
                code="PROJECT-UNREADABLE",
            )
        ]
    state: dict = {"os": os_facts}

    def python_check() -> list[Finding]:
        return check_python(
            project,
            version_info or tuple(sys.version_info[:3]),
            pointer_bits or (64 if sys.maxsize > 2**32 else 32),
            context,
        )

    def os_check() -> list[Finding]:
        state["os"] = state["os"] or os_info.detect()
        return check_os(project, state["os"])

    def gpu_check() -> list[Finding]:
        info = state["os"]
        if info is None:
            return []  # the OS check already reported why
        state["scan"] = gpu_scan or scan_gpus(info)
        return check_gpus(project, info, state["scan"], today)

    def choice_check() -> list[Finding]:
        info, scan = state["os"], state.get("scan")
        if info is None or scan is None:
            return []
        slug = project.project_slug
        active = None if context == "hook" else recommend.active_stack(project.stacks, slug)
        if details is not None and (scan.hardware or not scan.problems):
            best = recommend.recommend(info, scan.hardware)
            python = recommend.python_for(
                project.stacks.get(best.stack, {}), project.python_version
            )
            slug = project.project_slug or "<project>"
            details["recommendation"] = {
                **best.to_dict(slug, python, info.is_windows),
                "active": active or project.accelerator,
                "system": recommend.system_of(info),
                "active_known": active is not None,
                "gpus": [gpu.to_dict() for gpu in scan.hardware],
            }
        return check_environment_choice(project, info, scan, active, context)

    checks: list[Callable[[], Iterable[Finding]]] = [
        python_check,
        os_check,
        gpu_check,
        choice_check,
    ]
    for check in checks:
        try:
            findings.extend(check())
        except Exception as error:  # a check must never stop the others
            findings.append(
                Finding(
                    "internal",
                    WARN,
                    f"A check failed unexpectedly: {describe_error(error)}",
                    "Please report this output to the project's maintainers.",
                    code="INTERNAL-ERROR",
                )
            )
    return findings


# ---------------------------------------------------------------------------- reporting

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


def describe_platform() -> str:
    return clean_name(f"{platform.system()} {platform.release()} ({platform.machine()})")
