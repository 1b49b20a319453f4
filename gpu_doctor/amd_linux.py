"""AMD GPUs on Linux: the gfx target, whether the pinned ROCm build runs it, device access.

Standard library only, and no ROCm needed: the kernel's amdgpu driver publishes each GPU of
its compute interface (KFD) in ``/sys/class/kfd/kfd/topology/nodes/<n>/properties``, one
``key value`` per line; ``gfx_target_version 100301`` is gfx1031 (major, minor and stepping
as two decimal digits each; the name writes minor and stepping in hex: 90010 is gfx90a).

ROCm runs a GPU only when torch was built for its gfx target (cookiecutter's support table,
``gfx_targets`` of the rocm stack); a GPU of the same family can borrow a close target's
kernels through ``HSA_OVERRIDE_GFX_VERSION`` (``CLOSE_TARGETS``). ``support_of`` says which;
what to tell the user about it is the rule of ``rules/rocm.py``.

ROCm opens ``/dev/kfd`` and the GPU's render node ``/dev/dri/renderD<minor>``; both belong to
a group (``render``, on older systems ``video``) the user must be in. Tests pass fake trees as
``root`` and replace ``can_open``/``group_of``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from .project import Project

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
DEV = Path("/dev")


SUPPORTED, OVERRIDE, UNSUPPORTED, UNKNOWN = "supported", "override", "unsupported", "unknown"

# Targets that run the kernels of a close supported target of the same family, and the
# HSA_OVERRIDE_GFX_VERSION that says so: the RDNA2 and RDNA3 variants.
CLOSE_TARGETS = {
    "gfx1031": ("gfx1030", "10.3.0"),  # RX 6700 XT, 6750 XT
    "gfx1032": ("gfx1030", "10.3.0"),  # RX 6600, 6650 XT
    "gfx1033": ("gfx1030", "10.3.0"),  # Van Gogh (Steam Deck)
    "gfx1034": ("gfx1030", "10.3.0"),  # RX 6500 XT, 6400
    "gfx1035": ("gfx1030", "10.3.0"),  # Radeon 680M (Rembrandt)
    "gfx1036": ("gfx1030", "10.3.0"),  # Radeon Graphics of Ryzen 7000 desktop CPUs
    "gfx1103": ("gfx1100", "11.0.0"),  # Radeon 780M / 760M (Phoenix, Hawk Point)
}


@dataclass(frozen=True)
class RocmSupport:
    target: str
    status: str  # SUPPORTED, OVERRIDE, UNSUPPORTED or UNKNOWN
    close: str = ""  # the supported target whose kernels run it
    override: str = ""  # the HSA_OVERRIDE_GFX_VERSION value

    @property
    def runs(self) -> bool:
        """ROCm trains on it, officially or with the override."""
        return self.status in (SUPPORTED, OVERRIDE, UNKNOWN)


def rocm_support(target: str, supported: Iterable[str]) -> RocmSupport:
    supported = set(supported)
    if not target or not supported:
        return RocmSupport(target, UNKNOWN)
    if target in supported:
        return RocmSupport(target, SUPPORTED)
    close = CLOSE_TARGETS.get(target)
    if close and close[0] in supported:
        return RocmSupport(target, OVERRIDE, *close)
    return RocmSupport(target, UNSUPPORTED)


@functools.lru_cache(maxsize=1)
def supported_targets() -> tuple[str, ...]:
    """The gfx targets of the pinned ROCm build, from the project's support table."""
    try:
        from .project import load_project

        return tuple(load_project().stacks.get("rocm", {}).get("gfx_targets", ()))
    except Exception:  # no readable project.json: the support of a target is then unknown
        return ()


@dataclass(frozen=True)
class KfdNode:
    """One GPU of the kernel's KFD topology."""

    gfx_target: str  # "gfx1031"
    vendor_id: int | None = None
    device_id: int | None = None
    render_minor: int | None = None  # /dev/dri/renderD<minor>

    @property
    def render_node(self) -> str:
        return "" if self.render_minor is None else f"/dev/dri/renderD{self.render_minor}"


def gfx_name(version: int) -> str:
    """100301 -> 'gfx1031', 90010 -> 'gfx90a', 110003 -> 'gfx1103'."""
    major, minor, stepping = version // 10000, version // 100 % 100, version % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def _properties(text: str) -> dict[str, int]:
    values = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if value.strip().isdigit():
            values[key] = int(value.strip())
    return values


def kfd_nodes(root: Path = KFD_NODES) -> list[KfdNode]:
    """The GPU nodes of the KFD topology, in node order; CPU nodes (target 0) are left out.
    An unreadable or missing tree gives an empty list: the GPU is then named without a target."""
    try:
        nodes = [entry for entry in root.iterdir() if entry.name.isdigit()]
    except OSError:
        return []
    found = []
    for node in sorted(nodes, key=lambda entry: int(entry.name)):
        try:
            values = _properties(
                (node / "properties").read_text(encoding="ascii", errors="replace")
            )
        except OSError:
            continue
        version = values.get("gfx_target_version", 0)
        if not version:
            continue
        found.append(
            KfdNode(
                gfx_name(version),
                values.get("vendor_id"),
                values.get("device_id"),
                values.get("drm_render_minor"),
            )
        )
    return found


def support_of(project: Project | None, target: str) -> RocmSupport:
    """How the project's pinned ROCm build runs ``target``: the project's support table, else
    the one of project.json."""
    stacks = project.stacks if project is not None else {}
    return rocm_support(target, stacks.get("rocm", {}).get("gfx_targets") or supported_targets())


# ------------------------------------------------------------------------- device access


@dataclass(frozen=True)
class Access:
    """A device file ROCm needs and this user cannot open."""

    path: str
    group: str  # the group that owns it ("render"), "" when unknown
    missing: bool = False  # the file does not exist at all


def _can_open(path: Path) -> bool:
    return os.access(path, os.R_OK | os.W_OK)


def _group_of(path: Path) -> str:
    try:
        import grp  # POSIX only: this module runs on Linux

        return grp.getgrgid(path.stat().st_gid).gr_name
    except (ImportError, KeyError, OSError):
        return ""


def device_access(
    paths: Iterable[str],
    root: Path = DEV.parent,
    can_open: Callable[[Path], bool] | None = None,
    group_of: Callable[[Path], str] | None = None,
) -> list[Access]:
    """The device files among ``paths`` (absolute, "/dev/kfd") this user cannot open."""
    can_open, group_of = can_open or _can_open, group_of or _group_of
    problems = []
    for name in paths:
        path = root / name.lstrip("/")
        if not path.exists():
            problems.append(Access(name, "", missing=True))
        elif not can_open(path):
            problems.append(Access(name, group_of(path)))
    return problems
