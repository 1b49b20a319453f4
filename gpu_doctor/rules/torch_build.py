"""The rule "torch is the wrong build for this environment": the build the active stack's
environment file installs (its local tag), the reinstall command, and the finding when the
installed build (``builds.torch_build``) is another stack's. Standard library only.

The same torch version exists in several builds: PyTorch's indexes tag theirs (2.14.1+xpu,
+rocm7.14, +cu130, +cpu); PyPI's wheel has no tag in its metadata. With an extra index, pip
takes the best match from any index, so an environment meant for XPU can end up with PyPI's
CUDA build and the right version. The version is then no proof: the build is.
"""

from __future__ import annotations

from ..builds import STACK_NAMES, TorchBuild
from ..findings import FAIL, OK, REPAIRS_ENVIRONMENT, WARN, Finding
from ..install_commands import reinstall
from ..project import Project
from .environment import install_command

CODES = {
    "TORCH-BUILD-OK": "The installed torch is the build the active stack installs.",
    "TORCH-WRONG-BUILD": "The installed torch is another stack's build (CUDA in an xpu env).",
}


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
    return f"`{reinstall(project, pins + index)}`"


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
                role=REPAIRS_ENVIRONMENT,
                brief=f"torch {build.version} is a GPU build, not the CPU build.",
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
            role=REPAIRS_ENVIRONMENT,
            brief=f"torch {build.version} is not the {wanted} build: no GPU.",
        )
    ]
