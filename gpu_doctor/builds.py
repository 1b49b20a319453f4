"""Which build of torch is installed (facts; the rule about it is ``rules/torch_build.py``).

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

STACK_NAMES = {
    "xpu": "XPU",
    "rocm": "ROCm",
    "rocm-windows": "ROCm for Windows (AMD's)",
    "cuda": "CUDA",
    "cuda-legacy": "CUDA 12.6 (legacy)",
    "cpu": "CPU",
}
# The CUDA builds the cuda-legacy stack installs (the final CUDA 12.6 one); other cu tags: cuda.
LEGACY_CUDA_TAGS = ("cu126",)


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


def stack_of_tag(tag: str) -> str | None:
    """A build tag's stack: 'xpu' -> xpu, 'rocm7.14' -> rocm, 'cu130' -> cuda, 'cu126' ->
    cuda-legacy, 'cpu' -> cpu."""
    tag = tag.lower()
    from .amd_windows import stack_of  # AMD's Windows builds: their own tag (+rocm10.1.0)

    if f"+{tag}" == stack_of().get("local_version"):
        return "rocm-windows"
    if tag in LEGACY_CUDA_TAGS:
        return "cuda-legacy"
    for prefix, stack in (("xpu", "xpu"), ("rocm", "rocm"), ("cu", "cuda"), ("cpu", "cpu")):
        if tag.startswith(prefix):
            return stack
    return None


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (pip's name), or None."""
    from importlib import metadata  # Python 3.8+

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


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
