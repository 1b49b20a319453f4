"""Stand-in wheels shaped like a stack's real ones, from the record in cookiecutter.json: each
stack's ``index_only`` rows say what its torch (and torchvision, and their GPU extras) require
that only the stack's own index serves, with a source for each row. The stand-in torch declares
exactly those requirements, and the stand-in index serves each of those packages, so a uv
project that forgets to name one of them fails to lock here as it would against the real
index (PyPI has no such version, or only a decoy: ``rocm`` 0.1.0, ``rocm-sdk-core`` 0.1.0).

    wheels = stack_standins(STACKS["rocm-windows"])   # torch, torchvision, rocm, rocm-sdk-...
    names = index_only_names(STACKS["rocm-windows"], "gfx1151")   # what that group must name

What PyPI serves to every project alike (the nvidia-* libraries, Intel's runtime) is left out:
PyPI answers for those whatever the project names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from standin_index import Standin


@dataclass(frozen=True)
class Requirement:
    """One expanded row: ``package==version`` required by ``requirer`` (a distribution name)
    under ``extra`` ("" for none), on ``marker`` ("" for every platform)."""

    package: str
    extras: str  # what the requirer asks of it: "libraries,device-all" for rocm[...]
    version: str
    requirer: str
    extra: str
    marker: str

    def line(self) -> str:
        conditions = [f"({self.marker})"] if self.marker else []
        if self.extra:
            conditions.append(f'extra == "{self.extra}"')
        asked = f"[{self.extras}]" if self.extras else ""
        return f"{self.package}{asked}=={self.version}" + (
            "; " + " and ".join(conditions) if conditions else ""
        )


def _split(required_by: str) -> tuple[str, str]:
    """ "rocm[libraries]" -> ("rocm", "libraries"); "torch" -> ("torch", "")."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?:\[(.+)\])?", required_by)
    assert match, f"a row's required_by must be a name with an optional extra: {required_by!r}"
    return match.group(1), match.group(2) or ""


def expanded(stack: dict) -> list[Requirement]:
    """Every row of the stack's record with its GPU placeholders filled in: ``{gfx}`` in
    ``required_by`` over the stack's gfx_targets (one GPU extra each), ``{gfx}`` in the package
    alone over its ``device_all`` list, ``{family}`` over the families that hold the GPU."""
    found = []
    for row in stack.get("index_only", []):
        marker = row.get("marker", "")
        asks = row.get("extras", "")
        if "{gfx}" in row["required_by"]:
            for gfx in stack.get("gfx_targets", []):
                families = [
                    family
                    for family, members in stack.get("device_families", {}).items()
                    if gfx in members
                ]
                packages = (
                    [row["package"].replace("{family}", family) for family in families]
                    if "{family}" in row["package"]
                    else [row["package"].replace("{gfx}", gfx)]
                )
                requirer, extra = _split(row["required_by"].replace("{gfx}", gfx))
                found += [
                    Requirement(p, asks, row["version"], requirer, extra, marker) for p in packages
                ]
        elif "{gfx}" in row["package"]:
            requirer, extra = _split(row["required_by"])
            for gfx in stack["device_all"]:
                package = row["package"].replace("{gfx}", gfx)
                found.append(Requirement(package, asks, row["version"], requirer, extra, marker))
        else:
            requirer, extra = _split(row["required_by"])
            found.append(Requirement(row["package"], asks, row["version"], requirer, extra, marker))
    return found


def index_only_names(stack: dict, gfx: str = "") -> set[str]:
    """The packages a uv group of this stack must name (with the GPU ``gfx``'s extra, or none)."""
    wanted_extra = f"device-{gfx}" if gfx else ""
    return {
        r.package
        for r in expanded(stack)
        if not r.extra.startswith("device-gfx") or r.extra == wanted_extra
    }


def stack_standins(stack: dict) -> list[Standin]:
    """torch and torchvision at the stack's pins and build tag, and every package its record
    names, each declaring what the record says it requires (extras included)."""
    tag = stack["local_version"]
    versions = {name: version + tag for name, version in stack["pins"].items()}
    requirements = expanded(stack)
    for r in requirements:
        versions.setdefault(r.package, r.version)
    requires: dict[str, list[str]] = {name: [] for name in versions}
    extras: dict[str, set[str]] = {name: set() for name in versions}
    for r in requirements:
        requires[r.requirer].append(r.line())
        if r.extra:
            extras[r.requirer].add(r.extra)
    device = stack.get("device_extra")
    for gfx in stack.get("gfx_targets", []) if device else []:
        for name in ("torch", "torchvision"):  # the extra exists even where nothing is recorded
            extras[name].add(device.replace("{gfx}", gfx))
    requires["torchvision"].append(f"torch=={stack['pins']['torch']}")
    return [
        Standin(name, version, requires=tuple(requires[name]), extras=tuple(sorted(extras[name])))
        for name, version in versions.items()
    ]


# torch 2.4.1+cpu's own requirements: PyPI's torch 2.4.1 less the nvidia-* and triton lines
# that only the CUDA build carries; torchvision's are the same in both builds. NOT confirmed
# from the CPU index itself, which cannot be read from here.
CPU_BUILD_REQUIRES = {
    "torch": ("filelock", "typing-extensions>=4.8.0", "sympy", "networkx", "jinja2", "fsspec"),
    "torchvision": ("numpy", "torch==2.4.1", "pillow!=8.3.*,>=5.3.0"),
}


def linux_build_standins(stacks: dict, real_wheels: tuple = ()) -> dict[str, list]:
    """{index: wheels} for each stack that takes its Linux x86_64 torch from another stack's
    index (directml's "linux_build": torch 2.4.1+cpu from the cpu index). Small stand-ins with
    the CPU build's requirements, or, with ``real_wheels`` (tests/cpu_build_mirror.py), those
    real files for this Python plus stand-ins of the same version and requirements for the
    stack's other Pythons, so that uv can lock every Python of the group's range."""
    found: dict[str, list] = {}
    for stack in stacks.values():
        linux = stack.get("linux_build")
        if not linux:
            continue
        label = stacks[linux["stack"]]["local_version"]
        low, high = (int(stack[key].split(".")[1]) for key in ("python_min", "python_max"))
        wheels = found.setdefault(linux["stack"], [])
        for name in ("torch", "torchvision"):
            version = stack["pins"][name] + label
            real = [w for w in real_wheels if w.name.startswith(f"{name}-{version}-")]
            if not real:
                wheels.append(Standin(name, version, requires=CPU_BUILD_REQUIRES[name]))
                continue
            from cpu_build_mirror import requirement_lines

            wheels += real
            taken = {w.name.split("-")[2] for w in real}  # cp311
            requires = requirement_lines(real[0])
            wheels += [
                Standin(
                    name, version, tag=f"cp3{minor}-cp3{minor}-manylinux1_x86_64", requires=requires
                )
                for minor in range(low, high + 1)
                if f"cp3{minor}" not in taken
            ]
    return found
