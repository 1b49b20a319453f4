"""Which build of torch is installed, which the environment needs, and the fix when they differ.

The same torch version exists in several builds: PyTorch's indexes tag theirs (2.14.1+xpu,
+rocm7.14, +cu130, +cpu); PyPI's wheel has no tag in its metadata, but its ``torch/version.py``
names the build (on Linux x86_64 the CUDA build, on Windows and macOS a CPU-only one). With an
extra index, pip takes the best match from any index, so an environment meant for XPU can end
up with PyPI's CUDA build and the right version. The version is then no proof: the build is.

Standard library only; torch is not imported (``version.py`` is read as text), so a torch
that fails to import still gets its build named.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..machinery.project import Project
from .envcheck import FAIL, OK, WARN, Finding, install_command
from .recommend import stack_of_tag

STACK_NAMES = {"xpu": "XPU", "rocm": "ROCm", "cuda": "CUDA", "cpu": "CPU"}


@dataclass(frozen=True)
class TorchBuild:
    version: str  # as pip installed it: '2.14.1+xpu', or PyPI's '2.14.1'
    tag: str  # 'xpu', 'rocm7.14', 'cu130', 'cpu'; '' for a build that names none (macOS)
    from_pypi: bool  # no tag in the metadata: the wheel came from PyPI

    @property
    def stack(self) -> str | None:
        if self.from_pypi and not self.tag:
            return "cpu"  # PyPI's macOS wheel: CPU (and MPS)
        return stack_of_tag(self.tag)

    def describe(self) -> str:
        """ "PyTorch's XPU build (+xpu)", "PyPI's build (+cu130, CUDA)"."""
        kind = STACK_NAMES.get(self.stack or "", "unknown")
        if self.from_pypi:
            tag = f"+{self.tag}, " if self.tag else ""
            return f"PyPI's build ({tag}{kind})"
        return f"PyTorch's {kind} build (+{self.tag})"


def torch_version_file() -> str:
    """The text of the installed torch's version.py, found without importing torch; '' if none."""
    try:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            return ""
        return (Path(spec.origin).parent / "version.py").read_text(encoding="utf-8")
    except Exception:  # no torch, or a damaged one: the metadata alone must do
        return ""


def torch_build(
    version_of: Callable[[str], str | None], version_file: Callable[[], str] = torch_version_file
) -> TorchBuild | None:
    """The installed torch's build, or None when torch is not installed."""
    try:
        version = version_of("torch")
    except Exception:  # metadata too damaged to read: as good as missing
        return None
    if not version:
        return None
    if "+" in version:
        return TorchBuild(version, version.split("+", 1)[1], from_pypi=False)
    match = re.search(r"""__version__\s*=\s*['"][^'"+]*\+([\w.]+)['"]""", version_file() or "")
    return TorchBuild(version, match.group(1) if match else "", from_pypi=True)


def expected_tag(project: Project) -> str:
    """The local tag the stack's environment file pins ('xpu', 'rocm7.14'); '' for PyPI's."""
    return str(project.stacks.get(project.accelerator, {}).get("local_version", "")).lstrip("+")


def reinstall_command(project: Project) -> str:
    tag = expected_tag(project)
    pins = " ".join(
        f"{name}=={project.pins[name]}{'+' + tag if tag else ''}"
        for name in ("torch", "torchvision")
        if name in project.pins
    )
    index = f" --index-url {project.index_url}" if project.index_url else ""
    return f"`pip install --force-reinstall {pins}{index}`"


def check_build(project: Project, build: TorchBuild | None) -> list[Finding]:
    """The installed build against the one the active stack installs; a GPU stack with another
    stack's build is a FAIL (it cannot reach its GPU), the cpu stack with a GPU build a WARN."""
    stack = project.accelerator
    if build is None or stack == "directml":  # torch-directml brings PyPI's torch itself
        return []
    fits = build.stack == stack and (stack != "xpu" or not build.from_pypi)
    if fits:
        return [
            Finding(
                "torch build",
                OK,
                f"torch {build.version} is {build.describe()}, as the {stack} environment needs.",
                code="TORCH-BUILD-OK",
            )
        ]
    wanted = STACK_NAMES.get(stack, stack)
    fix = (
        f"Reinstall torch and torchvision from PyTorch's {wanted} index, which is where the "
        f"{stack} environment file takes them from: {reinstall_command(project)} (or again "
        f"{install_command(project)} once the index is reachable)."
    )
    if stack == "cpu":
        return [
            Finding(
                "torch build",
                WARN,
                f"torch {build.version} is {build.describe()}, not the CPU build: it trains on "
                "the CPU too, but carries GPU libraries the cpu environment does not need.",
                fix,
                code="TORCH-WRONG-BUILD",
            )
        ]
    return [
        Finding(
            "torch build",
            FAIL,
            f"torch {build.version} is {build.describe()}, not the {wanted} build this {stack} "
            f"environment needs: it cannot use the GPU, so training runs on the CPU.",
            fix,
            code="TORCH-WRONG-BUILD",
        )
    ]
