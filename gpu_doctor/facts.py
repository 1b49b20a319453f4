"""The facts of this machine, gathered once: the project, this Python, the operating system, the
GPUs and their drivers, the stack this environment serves, and the recommendation computed
from them. The rules (``rules/``) only read these; tests describe any machine by building them.

Gathering (``os_info.detect``, ``dxgi.scan``, ``sysfs.scan``, package metadata) never
decides anything. Standard library only (the project generator's hook runs it).
"""

from __future__ import annotations

import datetime
import sys
from dataclasses import dataclass, replace
from typing import Any

from . import active_environment, dxgi, nvidia, os_info, recommend, sysfs
from .driver_fit import best_environment
from .gpus import GpuScan
from .os_info import OsInfo
from .project import Project
from .rules.environment import recommendation_details


@dataclass(frozen=True)
class Facts:
    project: Project
    context: str = "project"  # "hook" while the project generator runs
    python: tuple[int, ...] = tuple(sys.version_info[:3])
    pointer_bits: int = 64 if sys.maxsize > 2**32 else 32
    today: datetime.date | None = None  # None: today
    os: OsInfo | None = None  # None: not gathered (the gathering failed)
    scan: GpuScan | None = None
    active: str | None = None  # the stack this environment serves; None: unknown, or the hook

    # The environment that fits this machine best, computed once from the OS and the GPUs.
    best: recommend.Recommendation | None = None

    def with_os(self, info: OsInfo) -> Facts:
        return replace(self, os=info)

    def with_scan(self, scan: GpuScan) -> Facts:
        """The GPUs, and the recommendation that rests on them."""
        assert self.os is not None
        scan = replace(scan, gpus=nvidia.with_capabilities(scan.gpus))  # names tell DXGI's
        best = best_environment(self.project, self.os, scan.hardware)
        return replace(self, scan=scan, best=best)

    def with_active(self, active: str | None) -> Facts:
        return replace(self, active=active)

    @property
    def recommendation_known(self) -> bool:
        """A recommendation rests on the GPUs: not when none could be listed at all."""
        return self.scan is not None and bool(self.scan.hardware or not self.scan.problems)

    def details(self) -> dict[str, Any] | None:
        """The report's "recommendation", or None when it is not known."""
        if self.best is None or not self.recommendation_known:
            return None
        assert self.os is not None and self.scan is not None
        return recommendation_details(self.project, self.os, self.scan, self.best, self.active)


def scan_gpus(info: OsInfo) -> GpuScan:
    """Ask the system for its GPUs in the way that fits it; macOS needs no listing."""
    if info.is_windows:
        return dxgi.scan()
    if info.is_linux:
        return sysfs.scan(wsl=info.wsl == 2)
    return GpuScan(source="")


def detect_os() -> OsInfo:
    return os_info.detect()


def active_stack(project: Project) -> str | None:
    """The stack this environment serves: its name's (.venv-xpu, <project>-xpu), else its
    torch build's, else None (unknown, and so judged by the project's default stack)."""
    try:
        return active_environment.active_stack(project.stacks, project.project_slug)
    except Exception:  # damaged package metadata
        return None
