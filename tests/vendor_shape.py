"""Stand-in wheels shaped like a stack's real ones, from the record in cookiecutter.json: each
stack's ``index_only`` rows say what its torch (and torchvision, and their GPU extras) require
that only the stack's own index serves, with a source for each row. The stand-in torch declares
exactly those requirements, and the stand-in index serves each of those packages, so a uv
project that forgets to name one of them fails to lock here as it would against the real
index (PyPI has no such version, or only a decoy: ``rocm`` 0.1.0, ``rocm-sdk-core`` 0.1.0).

    wheels = stack_standins(STACKS["rocm-windows"])   # torch, torchvision, rocm, rocm-sdk-...
    names = index_only_names(STACKS["rocm-windows"], "gfx1151")   # what that group must name

A row says what its requirer declares (``requires``, "==7.14.*" or "~=3.8.0"; "==<version>"
when absent) and which version the index serves (``version``, the one a lock takes); a row
with ``sdist_only`` is served as a source distribution, as ``rocm`` is. A stack's
``other_wheels`` are torch wheels for other platforms whose metadata requires more (AMD's Linux
torch requires a triton only AMD's index serves): the stand-in index serves them too.

What PyPI serves to every project alike (the nvidia-* libraries, Intel's runtime) is left out:
PyPI answers for those whatever the project names.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from standin_index import Standin


@dataclass(frozen=True)
class Requirement:
    """One expanded row: ``package==version`` required by ``requirer`` (a distribution name)
    under ``extra`` ("" for none), on ``marker`` ("" for every platform)."""

    package: str
    extras: str  # what the requirer asks of it: "device-all,libraries" for rocm[...]
    version: str  # the version the index serves
    requirer: str
    extra: str
    marker: str
    specifier: str = ""  # what the requirer declares: "==7.14.*"; "==<version>" when empty
    sdist_only: bool = False

    def line(self) -> str:
        conditions = [f"({self.marker})"] if self.marker else []
        if self.extra:
            conditions.append(f'extra == "{self.extra}"')
        asked = f"[{self.extras}]" if self.extras else ""
        wanted = self.specifier or f"=={self.version}"
        return f"{self.package}{asked}{wanted}" + (
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
    for row in _one_requirer_each(stack.get("index_only", [])):
        marker = row.get("marker", "")
        asks = row.get("extras", "")
        more = {"specifier": row.get("requires", ""), "sdist_only": row.get("sdist_only", False)}
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
                    Requirement(p, asks, row["version"], requirer, extra, marker, **more)
                    for p in packages
                ]
        elif "{gfx}" in row["package"]:
            requirer, extra = _split(row["required_by"])
            for gfx in stack["device_all"]:
                package = row["package"].replace("{gfx}", gfx)
                found.append(
                    Requirement(package, asks, row["version"], requirer, extra, marker, **more)
                )
        else:
            requirer, extra = _split(row["required_by"])
            found.append(
                Requirement(row["package"], asks, row["version"], requirer, extra, marker, **more)
            )
    return found


def _one_requirer_each(rows: list[dict]) -> list[dict]:
    """Rows whose ``required_by`` is a list (rocm-sdk-device-<gfx>: both AMD device wheels
    require it), one row per requirer."""
    split = []
    for row in rows:
        by = row["required_by"]
        split += [{**row, "required_by": one} for one in ([by] if isinstance(by, str) else by)]
    return split


def index_only_names(stack: dict, gfx: str = "") -> set[str]:
    """The packages a uv group of this stack must name (with the GPU ``gfx``'s extra, or none):
    what torch and torchvision pull in, with the extras each requirer asks for, and so on down
    (torch[device-gfx1151] -> amd-torch-device-gfx1151 -> rocm-sdk-device-gfx1151)."""
    requirements = expanded(stack)
    asked = {name: {f"device-{gfx}"} if gfx else set() for name in ("torch", "torchvision")}
    grew = True
    while grew:
        grew = False
        for r in requirements:
            if r.requirer in asked and (not r.extra or r.extra in asked[r.requirer]):
                wants = set(filter(None, r.extras.split(",")))
                if r.package not in asked or not wants <= asked[r.package]:
                    asked[r.package] = asked.get(r.package, set()) | wants
                    grew = True
    return set(asked) - {"torch", "torchvision"}


def stack_standins(stack: dict, other_wheels: bool = False) -> list[Standin]:
    """torch and torchvision at the stack's pins and build tag, and every package its record
    names, each declaring what the record says it requires (extras included); with
    ``other_wheels``, also the stack's torch wheels for other platforms (its "other_wheels")."""
    tag = stack["local_version"]
    versions = {name: version + tag for name, version in stack["pins"].items()}
    requirements = expanded(stack)
    sdists = {r.package for r in requirements if r.sdist_only}
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
    requires["torchvision"].append(torchvision_requires_torch(stack))
    found = [
        Standin(
            name,
            version,
            requires=tuple(requires[name]),
            extras=tuple(sorted(extras[name])),
            sdist=name in sdists,
        )
        for name, version in versions.items()
    ]
    others = stack.get("other_wheels", []) if other_wheels else []
    if others:  # the stack's own torch is a Windows wheel (its uv_marker), beside the others
        torch = next(s for s in found if s.name == "torch")
        assert "win32" in stack["uv_marker"], "other_wheels beside a Windows stack only"
        found[found.index(torch)] = torch = dataclasses.replace(torch, tag="py3-none-win_amd64")
    for other in others:  # the same torch, another platform's wheel
        found.append(
            Standin(
                "torch",
                torch.version,
                tag=f"py3-none-{other['platform']}",
                requires=(*torch.requires, other["requires"]),
                extras=torch.extras,
            )
        )
    return found


# What each torchvision release requires of torch: 0.29.1 (and 0.29.2) ``torch>=2.14.0``, read
# from the wheels (0.29.0 required ``==``); 0.19.1 ``torch==2.4.1`` (PyPI's wheel, as
# CPU_BUILD_REQUIRES below). NOT confirmed: AMD's 0.29.0a0+rocm10.1.0, taken as ``==`` like the
# 0.29.0 release it precedes.
TORCHVISION_REQUIRES_TORCH = {"0.29.1": "torch>=2.14.0", "0.19.1": "torch==2.4.1"}


def torchvision_requires_torch(stack: dict) -> str:
    pins = stack["pins"]
    return TORCHVISION_REQUIRES_TORCH.get(pins["torchvision"], f"torch=={pins['torch']}")


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
