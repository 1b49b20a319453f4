"""Which environment file fits this machine best, and why: one table of rules.

Standard library only (the project generator's hook runs it before any environment exists).
Every generated project carries one environment file per stack, `environments/<stack>.yml`
(conda) and `environments/<stack>.txt` (pip), rendered from the template's support table.
This module reads the GPUs that ``dxgi``/``sysfs`` found and the operating system,
and names the stack, the file and the exact commands that create its environment.

The README's "Which environment for my laptop?" table is kept in step with ``RULES`` by a
test: change both together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from . import amd_linux, amd_windows, nvidia
from .gpus import AMD, DISCRETE, INTEL, NVIDIA, QUALCOMM, Gpu, is_intel_arc
from .install_commands import PYTHON_PIP
from .os_info import WINDOWS_11_BUILD, OsInfo
from .project import parse_version

WINDOWS, LINUX, WSL2, MACOS, ANY = "Windows", "Linux", "WSL2", "macOS", "any"
# When two GPUs each have a stack, the discrete GPU wins; between equals, this order.
PREFERENCE = ("cuda", "cuda-legacy", "xpu", "rocm", "rocm-windows", "directml", "cpu")
# PyTorch's Windows ARM64 wheels: CPU builds on its CPU index, for these Pythons (pytorch #152109).
ARM64_TORCH_PYTHONS = ((3, 11), (3, 13))
# torch's macOS wheels are macosx_14_0_arm64 only since 2.12: the cpu environment's current torch.
MACOS_FOR_CURRENT_TORCH = (14,)
ADRENO_WHY = (
    "no PyTorch backend trains on the Adreno GPU or the Hexagon NPU: PyTorch's native Windows "
    "ARM64 build trains on the CPU (an ARM64 Python 3.11 to 3.13), and LeNet trains about as "
    "fast on the CPU as through DirectML; the NPU runs the exported model (ONNX Runtime with "
    "onnxruntime-qnn). torch-directml has no ARM64 wheel: DirectML on an Adreno is only an "
    "explicit, experimental choice, through an emulated x64 Python"
)
ARM64_WHY = (
    "Windows on ARM: PyTorch publishes native Windows ARM64 builds for the CPU only (an ARM64 "
    "Python 3.11 to 3.13), and no other stack runs here"
)
FALLBACK_WHY = (
    "no GPU that a PyTorch stack can train on was found: the CPU stack (current torch) runs "
    "everywhere"
)


def _any(gpu: Gpu) -> bool:
    return True


def _amdgpu(gpu: Gpu) -> bool:
    """AMD on Linux: ROCm needs the amdgpu kernel driver (not the legacy 'radeon')."""
    return gpu.driver != "radeon"


def _without_rocm_target(gpu: Gpu) -> bool:
    """AMD on Linux whose gfx target the pinned ROCm build cannot run, not even through a
    close target: ROCm would fail at the first kernel ("invalid device function")."""
    support = amd_linux.support_of(None, gpu.gfx_target)
    return gpu.driver != "radeon" and support.status == amd_linux.UNSUPPORTED


def _rocm_windows_target(gpu: Gpu) -> bool:
    """AMD on Windows whose gfx target AMD's ROCm wheels for Windows have kernels for."""
    return amd_windows.supported(gpu.gfx_target)


def _not_arc(gpu: Gpu) -> bool:
    return not is_intel_arc(gpu)


def _cuda_13(gpu: Gpu) -> bool:
    """NVIDIA of compute capability 7.5 or newer, or of a capability nothing could read (most
    GPUs in use are; the GPU line and a failing smoke test say how to tell)."""
    capability = nvidia.capability_of(gpu)
    return not capability or "cuda" in nvidia.stacks_running(capability)


def _cuda_12_only(gpu: Gpu) -> bool:
    """NVIDIA Maxwell, Pascal, Volta (5.0 to 7.x): only the final CUDA 12.6 build runs them."""
    capability = nvidia.capability_of(gpu)
    return bool(capability) and nvidia.stacks_running(capability) == ["cuda-legacy"]


def _no_cuda_build(gpu: Gpu) -> bool:
    """NVIDIA Kepler, Fermi (below 5.0): no current PyTorch build runs them."""
    capability = nvidia.capability_of(gpu)
    return bool(capability) and not nvidia.stacks_running(capability)


@dataclass(frozen=True)
class Rule:
    system: str  # WINDOWS, LINUX (not WSL), WSL2, MACOS or ANY
    vendor: int | None  # PCI vendor id; None: the rule is about the machine, not one GPU
    family: str  # the words of the README table
    matches: Callable[[Gpu], bool]
    stack: str
    why: str


# The one table. First matching rule per GPU; then the GPUs are ranked (discrete first).
RULES: tuple[Rule, ...] = (
    Rule(
        MACOS,
        None,
        "Apple silicon (M1 and later)",
        _any,
        "cpu",
        "PyTorch's macOS wheels include MPS, the Apple GPU backend: the cpu environment "
        "trains on the GPU with `--device mps`",
    ),
    Rule(
        ANY,
        NVIDIA,
        "NVIDIA, compute capability 7.5 and newer (GTX 16xx, RTX 20xx and later, T4, A100, H100)",
        _cuda_13,
        "cuda",
        "CUDA is PyTorch's native backend for NVIDIA GPUs; the CUDA 13.0 build of a current "
        "torch runs compute capability 7.5 (Turing) and newer",
    ),
    Rule(
        ANY,
        NVIDIA,
        "NVIDIA, compute capability 5.0 to 7.0 (GTX 900/10xx, Quadro M/P, Tesla P100/V100)",
        _cuda_12_only,
        "cuda-legacy",
        "CUDA 13 dropped Maxwell, Pascal and Volta: PyTorch's CUDA 12.6 build of torch 2.14.1 "
        "is the last that runs them (2.15 publishes none), and the cuda-legacy environment "
        "pins it",
    ),
    Rule(
        WINDOWS,
        NVIDIA,
        "NVIDIA, compute capability below 5.0 (Kepler GTX 600/700, Fermi GTX 400/500)",
        _no_cuda_build,
        "directml",
        "no PyTorch build has CUDA kernels for compute capability below 5.0 any more; DirectML "
        "reaches the GPU through DirectX 12, on the frozen torch 2.4.1",
    ),
    Rule(
        WSL2,
        NVIDIA,
        "NVIDIA, compute capability below 5.0 (Kepler, Fermi)",
        _no_cuda_build,
        "directml",
        "no PyTorch build has CUDA kernels for compute capability below 5.0 any more; in WSL2 "
        "DirectML reaches the GPU through /dev/dxg, on the frozen torch 2.4.1",
    ),
    Rule(
        LINUX,
        NVIDIA,
        "NVIDIA, compute capability below 5.0 (Kepler, Fermi)",
        _no_cuda_build,
        "cpu",
        "no PyTorch build has CUDA kernels for compute capability below 5.0 any more, and "
        "DirectML needs Windows or WSL2: the CPU stack works",
    ),
    Rule(
        WINDOWS,
        INTEL,
        "Intel Arc A/B, Core Ultra (Arc graphics)",
        is_intel_arc,
        "xpu",
        "PyTorch's own XPU build runs natively on Intel Arc and Core Ultra graphics, on a "
        "current torch (validated on Windows 11)",
    ),
    Rule(
        LINUX,
        INTEL,
        "Intel Arc A/B, Core Ultra (Arc graphics)",
        is_intel_arc,
        "xpu",
        "PyTorch's own XPU build runs natively on Intel Arc and Core Ultra graphics, on a "
        "current torch (validated on Ubuntu)",
    ),
    Rule(
        WINDOWS,
        INTEL,
        "Intel UHD, Iris Xe and older",
        _not_arc,
        "directml",
        "older Intel graphics are not supported by PyTorch's XPU build (reported to fail or "
        "crash); DirectML reaches them through DirectX 12, on the frozen torch 2.4.1",
    ),
    Rule(
        WINDOWS,
        AMD,
        "AMD Radeon RX 7000/9000, Radeon 780M/760M, Ryzen AI 300 and Strix Halo graphics "
        "(Windows 11)",
        _rocm_windows_target,
        "rocm-windows",
        "AMD's own ROCm build of a current PyTorch runs this GPU natively on Windows 11 (it "
        "appears as `cuda` in torch); its kernels come from the GPU's device package",
    ),
    Rule(
        WINDOWS,
        AMD,
        "other AMD Radeon (RX 6000 and older, Vega graphics), or Windows 10",
        _any,
        "directml",
        "DirectML reaches Radeon GPUs that AMD's ROCm build for Windows does not serve through "
        "DirectX 12, on the frozen torch 2.4.1 (DirectML is in maintenance)",
    ),
    Rule(
        WINDOWS,
        QUALCOMM,
        "Qualcomm Adreno (Snapdragon, Windows on ARM)",
        _any,
        "cpu",
        ADRENO_WHY,
    ),
    Rule(
        LINUX,
        AMD,
        "AMD Radeon without a ROCm target (RX 5000, RX 400/500, Vega graphics)",
        _without_rocm_target,
        "cpu",
        "PyTorch's ROCm build has no kernels for this GPU's gfx target and no close target "
        "runs it, so ROCm would fail at the first kernel; the CPU stack works",
    ),
    Rule(
        LINUX,
        AMD,
        "AMD Radeon, Instinct (amdgpu driver)",
        _amdgpu,
        "rocm",
        "PyTorch's ROCm build is the native backend for AMD GPUs on Linux (it appears as "
        "`cuda` in torch)",
    ),
    Rule(
        WSL2,
        None,
        "any other DirectX 12 GPU in WSL2",
        _any,
        "directml",
        "in WSL2, DirectML reaches any DirectX 12 GPU of the Windows driver through /dev/dxg",
    ),
)


def system_of(info: OsInfo) -> str:
    if info.is_windows:
        return WINDOWS
    if info.is_macos:
        return MACOS
    if info.is_linux:
        return WSL2 if info.wsl == 2 else LINUX
    return info.system


def _system_matches(rule: Rule, system: str) -> bool:
    if rule.system == ANY:
        return system != MACOS
    return rule.system == system


def rule_for(gpu: Gpu, system: str, info: OsInfo | None = None, python: str = "") -> Rule | None:
    """The first rule for this GPU on this system, or None when no stack can use it."""
    return _rule_and_reason(gpu, system, info, python)[0]


def _rule_and_reason(
    gpu: Gpu, system: str, info: OsInfo | None, python: str
) -> tuple[Rule | None, str]:
    """The first rule whose stack runs here, and why an earlier one's could not ('' if none)."""
    passed = ""
    for rule in RULES:
        same_vendor = rule.vendor is not None and rule.vendor == gpu.vendor_id
        if same_vendor and _system_matches(rule, system) and rule.matches(gpu):
            unmet = _unmet(rule, gpu, info, python)
            if not unmet:
                return rule, passed
            passed = passed or unmet
    return None, passed


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def _unmet(rule: Rule, gpu: Gpu, info: OsInfo | None, python: str) -> str:
    """Why this machine cannot take ``rule``'s stack although its GPU could; '' when it can.
    AMD's ROCm wheels for Windows: Windows 11 only, and the Pythons AMD publishes them for."""
    if rule.stack != amd_windows.STACK:
        return ""
    build = info.windows_build if info is not None else None
    lead = f"AMD's ROCm build for Windows (rocm-windows) runs its {gpu.gfx_target} but needs"
    if build is not None and build < WINDOWS_11_BUILD:
        return f"{lead} Windows 11, and this is Windows 10 (build {build})"
    stack = amd_windows.stack_of()
    if (
        python
        and stack
        and not (_parts(stack["python_min"]) <= _parts(python) <= _parts(stack["python_max"]))
    ):
        return (
            f"{lead} Python {stack['python_min']} to {stack['python_max']}, and this project "
            f"uses Python {python}"
        )
    return ""


def _amd_windows_note(gpu: Gpu, stack: str, passed: str) -> str:
    """What an AMD GPU on Windows sent to DirectML should know: which ROCm condition failed,
    or that its gfx target could not be read."""
    if passed:
        return f"; {passed}"
    if stack == "directml" and not gpu.gfx_target:
        return (
            "; its gfx target could not be read (no HIP runtime of the AMD driver, and a PCI id "
            "the doctor's table lacks): with the latest Adrenalin driver verify_install reads it"
        )
    if stack == "directml":
        return f"; AMD's ROCm build for Windows has no kernels for its {gpu.gfx_target}"
    return ""


@dataclass(frozen=True)
class Recommendation:
    stack: str
    why: str
    gpu: Gpu | None = None
    # Windows on ARM: the commands name the ARM64 Python, which neither the py launcher nor uv
    # picks by default when an x64 one is there (cpython #130470, uv #13724).
    arm64: bool = False

    @property
    def conda_file(self) -> str:
        return f"environments/{self.stack}.yml"

    @property
    def pip_file(self) -> str:
        return f"environments/{self.stack}.txt"

    def env_name(self, project_slug: str) -> str:
        return f"{project_slug}-{self.stack}"

    def venv_dir(self) -> str:
        return f".venv-{self.stack}"

    def python_version(self, stack: dict, wanted: str) -> str:
        """The Python the commands create the environment with: the project's when the stack
        (and, on Windows on ARM, PyTorch's ARM64 wheels) support it, else the nearest one."""
        python = python_for(stack, wanted)
        low, high = ARM64_TORCH_PYTHONS
        if self.arm64 and not low <= tuple(_parts(python)) <= high:
            return ".".join(str(part) for part in high)
        return python

    def commands(self, project_slug: str, python: str, windows: bool) -> dict[str, list[str]]:
        """The exact commands, run in the project folder, for conda, venv and uv; for AMD's
        ROCm build for Windows, conda and venv end with the one that adds this GPU's kernels."""
        if windows:
            launcher = f"py -V:{python}-arm64" if self.arm64 else f"py -{python}"
            venv = [
                f"{launcher} -m venv {self.venv_dir()}",
                f"{self.venv_dir()}\\Scripts\\activate",
                f"{PYTHON_PIP} install -r {self.pip_file}",
            ]
        else:
            venv = [
                f"python{python} -m venv {self.venv_dir()}",
                f"source {self.venv_dir()}/bin/activate",
                f"{PYTHON_PIP} install -r {self.pip_file}",
            ]
        conda = [
            f"conda env create -f {self.conda_file}",
            f"conda activate {self.env_name(project_slug)}",
        ]
        if self.stack == amd_windows.STACK and self.gpu is not None and self.gpu.gfx_target:
            device = amd_windows.device_command(self.gpu.gfx_target)
            conda.append(device)
            venv.append(device)
        return {"conda": conda, "venv": venv, "uv": self.uv_commands(python, windows)}

    def uv_group(self) -> str:
        """The stack's dependency group; AMD's ROCm build for Windows has one per GPU target,
        with that GPU's kernels."""
        if self.stack == amd_windows.STACK and self.gpu is not None and self.gpu.gfx_target:
            return f"{self.stack}-{self.gpu.gfx_target}"
        return self.stack

    def uv_sync(self, python: str) -> str:
        """The one command that makes the project's .venv this stack's (a uv project): its
        dependency group instead of the default one, with a Python the stack supports."""
        group = self.uv_group()
        if self.arm64:  # uv prefers an x64 Python on Windows on ARM unless asked
            python = f"cpython-{python}-windows-aarch64-none"
        return f"uv sync --python {python} --no-default-groups --group dev --group {group}"

    def uv_commands(self, python: str, windows: bool) -> list[str]:
        activate = ".venv\\Scripts\\activate" if windows else "source .venv/bin/activate"
        return [self.uv_sync(python), activate]

    def gpu_text(self) -> str:
        if self.gpu is None:
            return "no GPU"
        return self.gpu.identify()

    def to_dict(self, project_slug: str = "", python: str = "", windows: bool = False) -> dict:
        data = {
            "stack": self.stack,
            "why": self.why,
            "gpu": None if self.gpu is None else self.gpu.to_dict(),
            "conda_file": self.conda_file,
            "pip_file": self.pip_file,
        }
        if project_slug:
            data["commands"] = self.commands(project_slug, python, windows)
        return data


def recommend(info: OsInfo, gpus: Iterable[Gpu], python: str = "") -> Recommendation:
    """The best stack for this machine: the best GPU's rule, else the machine's, else cpu.
    ``python``: the project's Python ("3.12"), for the stacks that publish fewer Pythons."""
    system = system_of(info)
    if system == MACOS:
        return _mac(info)
    if system == WINDOWS and info.arm64_machine:
        return _windows_arm64(list(gpus))
    if system == WINDOWS:  # AMD GPUs a scan gave no target: the PCI id table's
        gpus = amd_windows.with_targets(list(gpus), None)
    ranked = []
    for position, gpu in enumerate(gpus):
        rule, passed = _rule_and_reason(gpu, system, info, python)
        if rule is not None:
            # A GPU whose rule says cpu is named in the advice, but any GPU stack wins over it.
            key = (
                rule.stack == "cpu",
                gpu.kind != DISCRETE,
                PREFERENCE.index(rule.stack),
                position,
            )
            ranked.append((key, gpu, rule, passed))
    if ranked:
        _, gpu, rule, passed = min(ranked, key=lambda item: item[0])
        why = rule.why
        if gpu.vendor_id == AMD and system == WINDOWS:
            why += _amd_windows_note(gpu, rule.stack, passed)
        if gpu.vendor_id == NVIDIA and not nvidia.capability_of(gpu):
            why += (
                f"; {gpu.name}'s compute capability could not be read, so check it is 7.5 or "
                "newer (`nvidia-smi --query-gpu=name,compute_cap --format=csv`); 5.0 to 7.0 "
                "take the cuda-legacy environment"
            )
        return Recommendation(rule.stack, why, gpu)
    for rule in RULES:
        machine_rule = rule.vendor is None and rule.system == system
        if machine_rule and (system != WSL2 or info.dxg):
            return Recommendation(rule.stack, rule.why)
    return Recommendation("cpu", FALLBACK_WHY)


def _mac(info: OsInfo) -> Recommendation:
    if info.machine.lower() not in ("arm64", "aarch64"):
        return Recommendation("cpu", "an Intel Mac has no GPU backend in current PyTorch")
    why = RULES[0].why
    macos = parse_version(info.version)
    if macos and macos < MACOS_FOR_CURRENT_TORCH:
        why += (
            f"; its current torch publishes macOS wheels for macOS 14 and later only, and this is "
            f"macOS {info.version}: update macOS first"
        )
    return Recommendation(RULES[0].stack, why)


def _windows_arm64(gpus: list[Gpu]) -> Recommendation:
    """Windows on ARM: the cpu stack, on an ARM64 Python, whatever GPU is there (PyTorch builds
    nothing else for it); an Adreno is named, with what it and the NPU are used for."""
    adreno = next((gpu for gpu in gpus if gpu.vendor_id == QUALCOMM), None)
    return Recommendation("cpu", ADRENO_WHY if adreno else ARM64_WHY, adreno, arm64=True)


def python_for(stack: dict, wanted: str) -> str:
    """The project's Python when the stack supports it, else the stack's default."""

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".") if p.isdigit())

    if stack and parts(stack["python_min"]) <= parts(wanted) <= parts(stack["python_max"]):
        return wanted
    return stack.get("python_default", wanted) if stack else wanted


def readme_rows(rules: Sequence[Rule] = RULES) -> list[tuple[str, str, str]]:
    """(system, GPU family, stack) per rule: what the README's table must say."""
    return [(rule.system, rule.family, rule.stack) for rule in rules]
