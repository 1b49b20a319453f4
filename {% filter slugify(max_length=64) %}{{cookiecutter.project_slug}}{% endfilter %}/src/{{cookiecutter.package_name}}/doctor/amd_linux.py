"""AMD GPUs on Linux: the gfx target, whether the pinned ROCm build runs it, device access.

Standard library only, and no ROCm needed: the kernel's amdgpu driver publishes each GPU of
its compute interface (KFD) in ``/sys/class/kfd/kfd/topology/nodes/<n>/properties``, one
``key value`` per line; ``gfx_target_version 100301`` is gfx1031 (major, minor and stepping
as two decimal digits each; the name writes minor and stepping in hex: 90010 is gfx90a).

Whether the pinned ROCm build runs a gfx target, and what to do when it does not, is the
rule of ``rules/rocm.py``.

ROCm opens ``/dev/kfd`` and the GPU's render node ``/dev/dri/renderD<minor>``; both belong to
a group (``render``, on older systems ``video``) the user must be in. Tests pass fake trees as
``root`` and replace ``can_open``/``group_of``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
DEV = Path("/dev")


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
