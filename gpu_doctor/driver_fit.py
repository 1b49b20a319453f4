"""The recommendation, checked against the NVIDIA driver its CUDA build needs, and computed
once for a check-up (``best_environment``, which ``facts.Facts`` calls).

``recommend`` picks the CUDA build that runs a GPU's compute capability; whether the driver can
start that build is a second question, answered from each stack's ``driver_min`` in the
support table. The cuda environment's CUDA 13.0 build needs the R580 branch; cuda-legacy's
CUDA 12.6 build of the same torch runs on R525 and newer. Standard library only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from . import nvidia, recommend
from .driver_age import nvidia_branch, version_fields
from .gpus import NVIDIA, Gpu
from .os_info import OsInfo
from .project import Project
from .recommend import Recommendation
from .rules.drivers import DRIVER_DOWNLOADS, driver_minimum


def best_environment(project: Project, info: OsInfo, gpus: Iterable[Gpu]) -> Recommendation:
    """The environment that fits this machine best: the table's choice for its GPUs, then
    fitted to their driver. The rules receive it; none computes it again."""
    return fit_to_driver(recommend.recommend(info, gpus, project.python_version), project, info)


def driver_shortfall(project: Project, info: OsInfo, gpu: Gpu, stack: str) -> tuple | None:
    """(the driver's NVIDIA number, the oldest that starts ``stack``'s CUDA build, that CUDA
    version) when ``gpu``'s driver is too old for it; None when it is new enough or unknown."""
    branch = nvidia_branch(gpu.driver_version) if gpu.vendor_id == NVIDIA else None
    minimum = driver_minimum(project.for_stack(stack), info) if stack in project.stacks else None
    if branch is None or minimum is None:
        return None
    oldest, cuda = minimum
    if version_fields(branch[1]) >= version_fields(oldest):
        return None
    return branch[1], oldest, cuda


def fit_to_driver(best: Recommendation, project: Project, info: OsInfo) -> Recommendation:
    """``best``, or cuda-legacy when the GPU's driver cannot start the cuda build but starts
    cuda-legacy's (which runs the GPU too); when it starts neither, ``best`` says to update it."""
    gpu = best.gpu
    if best.stack != "cuda" or gpu is None:
        return best
    short = driver_shortfall(project, info, gpu, "cuda")
    if short is None:
        return best
    driver, oldest, cuda = short
    capability = nvidia.capability_of(gpu)
    legacy_runs = bool(capability) and nvidia.runs_on(capability, nvidia.CUDA_ARCHS["cuda-legacy"])
    if legacy_runs and driver_shortfall(project, info, gpu, "cuda-legacy") is None:
        why = (
            f"NVIDIA driver {driver} is older than {oldest}, the oldest that starts the cuda "
            f"environment's CUDA {cuda} build, and the cuda-legacy environment's CUDA 12.6 "
            f"build of the same torch runs this GPU on it (or install NVIDIA driver {oldest} or "
            f"newer, with {DRIVER_DOWNLOADS[NVIDIA]}, and take the cuda environment)"
        )
        return Recommendation("cuda-legacy", why, gpu)
    why = (
        f"{best.why}; its CUDA {cuda} build needs NVIDIA driver {oldest} or newer, not "
        f"{driver}: install it first ({DRIVER_DOWNLOADS[NVIDIA]})"
    )
    return replace(best, why=why)
