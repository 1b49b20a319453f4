"""Rules about the environment: which environment file fits this machine best, how the active
one installs its pins, and the fixes that repair this environment deferring to a better one.
Standard library only."""

from __future__ import annotations

from typing import Any

from .. import recommend
from ..findings import CHOOSES_ENVIRONMENT, OK, REPAIRS_ENVIRONMENT, WARN, Finding
from ..gpus import GpuScan
from ..install_commands import install_file
from ..os_info import OsInfo
from ..project import Project

# The finding whose fix creates the recommended environment: other fixes follow it by code.
OTHER_BEST = "ENV-OTHER-BEST"

CODES = {
    "ENV-BEST": "The active environment is the best one for this machine.",
    OTHER_BEST: "Another stack's environment fits this machine better.",
    "ENV-UNKNOWN": "No recommendation: the GPUs could not be listed.",
    "ENV-ARM64-NO-CONDA": "A conda project on Windows on ARM: venv or uv instead.",
}


def stack_files(stack: str) -> str:
    return f"environments/{stack}.txt (venv) or environments/{stack}.yml (conda)"


def install_command(project: Project) -> str:
    """How this project's environment file installs the pinned stack into an environment:
    the default files, or environments/<stack>.* when another stack's environment is active."""
    if project.env_manager == "uv":  # a plain `uv sync` installs the dev group alone
        return f"`uv sync --no-default-groups --group dev --group {project.accelerator}`"
    conda, pip = "environment.yml", "requirements.txt"
    if not project.uses_default_stack:
        stack = project.accelerator
        conda, pip = f"environments/{stack}.yml", f"environments/{stack}.txt"
    if project.env_manager == "conda":
        return f"`conda env update -f {conda}`"
    if project.env_manager == "venv":
        return f"`{install_file(project, pip)}`"
    return f"`{install_file(project, pip)}` (venv) or `conda env update -f {conda}` (conda)"


def check_environment_choice(
    project: Project,
    info: OsInfo,
    scan: GpuScan,
    best: recommend.Recommendation,
    active: str | None = None,
    context: str = "project",
) -> list[Finding]:
    """Which environment file fits this machine best, and a WARN (never a FAIL) when the
    active one is another. ``active`` is the stack of the installed torch (None: unknown,
    then the project's default stack stands for it); ``best``: the recommendation, computed
    once (facts.Facts)."""
    if not scan.hardware and scan.problems:
        return [
            Finding(
                "Environment",
                OK,
                "The GPUs could not be listed, so no environment file is recommended over "
                f"the default ({project.accelerator}).",
                code="ENV-UNKNOWN",
                brief="No recommendation: the GPUs could not be listed.",
            )
        ]
    current = active or project.accelerator
    python = best.python_version(project.stacks.get(best.stack, {}), project.python_version)
    commands = best.commands(project.project_slug or "<project>", python, info.is_windows)
    conda, venv = (", then ".join(f"`{c}`" for c in commands[k]) for k in ("conda", "venv"))
    without_conda = _without_conda(project, info, best, context, venv)
    why = best.why[0].upper() + best.why[1:]
    seen = f"{best.gpu_text()}: {best.why}" if best.gpu is not None else why
    if best.stack == current:
        before_any = context in ("hook", "first")
        where = "this environment" if active and not before_any else "the default environment"
        return [
            Finding(
                "Environment",
                OK,
                f"Best for this machine: {best.stack} ({best.conda_file} or {best.pip_file}), "
                f"which is {where}. {seen}.",
                code="ENV-BEST",
                brief=f"Best here: {best.stack}, {where}.",
            )
        ] + without_conda
    if context in ("hook", "first") or not active:
        now = f"the project's default environment file is {project.accelerator}"
    else:
        now = f"this environment runs the {active} stack"
    if project.env_manager == "uv":
        uv = ", then ".join(f"`{c}`" for c in commands["uv"])
        fix = (
            f"Make the project's .venv the {best.stack} one, in the project folder: {uv}. "
            "`uv run` keeps it; a plain `uv sync` (PyCharm offers one) installs no stack and "
            f"removes {best.stack}: sync with `--group {best.stack}`. "
            "Then run verify_install again."
        )
    elif best.arm64:  # no conda on Windows on ARM (ENV-ARM64-NO-CONDA says why)
        fix = (
            f"Create the {best.stack} environment in the project folder with venv and an ARM64 "
            f"Python: {venv}. Then select it as the interpreter and run verify_install again."
        )
    else:
        fix = (
            f"Create the {best.stack} environment in the project folder. conda: {conda}. "
            f"venv: {venv}. Then select it as the interpreter and run verify_install again."
        )
    return [
        Finding(
            "Environment",
            WARN,
            f"Best for this machine: {best.stack}, but {now}. {seen}.",
            fix,
            code=OTHER_BEST,
            role=CHOOSES_ENVIRONMENT,
            brief=f"Best here: {best.stack}, not {current}.",
        )
    ] + [finding.with_fix(finding.fix, follows=OTHER_BEST) for finding in without_conda]


def _without_conda(
    project: Project, info: OsInfo, best: recommend.Recommendation, context: str, venv: str
) -> list[Finding]:
    """A conda project on Windows on ARM: why venv or uv, before any environment exists or
    while an emulated Python runs (a native ARM64 environment that works is left alone)."""
    if project.env_manager != "conda" or not best.arm64:
        return []
    if context not in ("hook", "first") and not info.emulated:
        return []
    return [
        Finding(
            "Environment",
            WARN,
            "This project's environment manager is conda, but this is Windows on ARM: "
            "Miniforge, conda-forge's installer, publishes no Windows ARM64 build yet (this "
            "project's conda files use conda-forge), and an x64 conda would make an emulated "
            "x64 environment.",
            f"Use venv (or uv) with an ARM64 Python instead of conda on this laptop: {venv}; "
            f"the {best.stack} environment's packages come from {best.pip_file}.",
            code="ENV-ARM64-NO-CONDA",
            brief="Windows on ARM: venv or uv, not conda.",
        )
    ]


# Where each stack can train at all (recommend.system_of's names).
STACK_SYSTEMS = {
    "directml": ("Windows", "WSL2"),
    "rocm": ("Linux",),
    "rocm-windows": ("Windows",),
    "xpu": ("Windows", "Linux"),
    "cuda": ("Windows", "Linux", "WSL2"),
    "cuda-legacy": ("Windows", "Linux", "WSL2"),
}


def defer_to_recommendation(
    findings: list[Finding], project: Project, recommendation: dict[str, Any] | None
) -> list[Finding]:
    """When another stack's environment fits this machine better, the fixes that repair this
    environment's pins (role REPAIRS_ENVIRONMENT) point at that one first, and offer the repair
    only where this stack can train at all: never 'create the cpu environment' next to
    'install the DirectML pins'."""
    if not recommendation or recommendation.get("stack") in (None, project.accelerator):
        return findings
    best, active = recommendation["stack"], project.accelerator
    system = recommendation.get("system", "")
    runs_here = system in STACK_SYSTEMS.get(active, (system,))
    deferred = []
    for finding in findings:
        if finding.role == REPAIRS_ENVIRONMENT and finding.fix:
            lead = f"Create the {best} environment, as the Environment fix says, rather than "
            if runs_here:
                fix = f"{lead}repairing this {active} one. To keep {active}: {finding.fix}"
            else:
                fix = f"{lead}repairing this {active} one: {active} cannot train on {system}."
            finding = finding.with_fix(fix, follows=OTHER_BEST)
        deferred.append(finding)
    return deferred


def recommendation_details(
    project: Project,
    info: OsInfo,
    scan: GpuScan,
    best: recommend.Recommendation,
    active: str | None,
) -> dict[str, Any]:
    """The best environment for this machine as the report's "recommendation" (stack, why, gpu,
    files, commands, and the active stack)."""
    python = best.python_version(project.stacks.get(best.stack, {}), project.python_version)
    slug = project.project_slug or "<project>"
    return {
        **best.to_dict(slug, python, info.is_windows),
        "active": active or project.accelerator,
        "system": recommend.system_of(info),
        "active_known": active is not None,
        "gpus": [gpu.to_dict() for gpu in scan.hardware],
    }
