"""The top-level module names that a generated project's environment installs.

A package named like one of them would shadow it: `cycler` breaks matplotlib after the first
epoch, `sympy` breaks torch. The pre-generation hook refuses every name in cookiecutter.json's
`_reserved_modules`, which this script keeps complete. Run it with the Python of an environment
made from a generated project's environment file (the tests do, for each pinned stack):

    python tests/stack_modules.py            print the names, one per line
    python tests/stack_modules.py --json     the same as JSON, with the distributions read
    python tests/stack_modules.py --update   add the names to cookiecutter.json

The environment's distributions are found from the project's own requirements (the stack's
pins and ONNX packages, the dependencies and dev extras in the generated pyproject.toml, pip
and setuptools), following every requirement whose marker holds on this machine. Names
installed only on other systems or Pythons (colorama on Windows, tomli before 3.11) cannot be
read here; they are listed in OTHER_ENVIRONMENT_MODULES, which must name every such requirement.

Only the standard library and `packaging` (which every stack installs) are used.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

TEMPLATE_DIR = Path(__file__).resolve().parents[1]
COOKIECUTTER_JSON = TEMPLATE_DIR / "cookiecutter.json"
ALWAYS_INSTALLED = ["pip", "setuptools"]  # every venv and conda environment has them
PYTHONS = [f"3.{minor}" for minor in range(8, 15)]  # every Python a stack supports
SYSTEMS = [("linux", "Linux", "posix"), ("win32", "Windows", "nt"), ("darwin", "Darwin", "posix")]
# Requirements whose markers hold only on another system or Python than the one running this
# (so they are not installed here), with the modules they install there, read from their
# wheels. stack_modules() reports every such requirement that is missing from this table.
OTHER_ENVIRONMENT_MODULES = {
    "colorama": ["colorama"],  # tqdm and pytest on Windows
    "exceptiongroup": ["exceptiongroup"],  # pytest on Python < 3.11
    "tomli": ["tomli"],  # pytest on Python < 3.11
    "importlib-metadata": ["importlib_metadata"],  # older Pythons (pytest, virtualenv, ...)
    "importlib-resources": ["importlib_resources"],  # matplotlib on Python < 3.10
    "zipp": ["zipp"],  # importlib-metadata and importlib-resources
    "six": ["six"],  # python-dateutil 2.x, which older Pythons resolve for matplotlib
}
# Modules of packages whose wheels this machine cannot install: a Windows ARM64 package, and
# the rocm-windows stack (AMD's index is not reachable from here), whose names come from
# ROCm/TheRock's packaging templates (build_tools/packaging/python/templates: each package has
# a pure-Python module, rocm_sdk, rocm_sdk_core, rocm_sdk_libraries, and a platform module,
# "_" + its name: _rocm_sdk_core/bin holds amdhip64_7.dll) and from users of AMD's Windows
# build; _rocm_sdk_libraries_custom is an older channel's. NOT confirmed in the wheels
# themselves.
UNREACHABLE_STACK_MODULES = {
    # onnxruntime-qnn, installed on Windows ARM64 only, and what it requires there beyond
    # onnxruntime's own requirements, read from the wheels on PyPI (onnxruntime_qnn 2.7.0,
    # coloredlogs 15.0.1, humanfriendly 10.0, pyreadline3 3.5.6: it installs readline.py).
    "onnxruntime-qnn": [
        "onnxruntime_qnn",
        "coloredlogs",
        "humanfriendly",
        "pyreadline3",
        "readline",
    ],
    "rocm-windows": [
        "rocm_sdk",
        "rocm_sdk_core",
        "_rocm_sdk_core",
        "rocm_sdk_libraries",
        "_rocm_sdk_libraries",
        "_rocm_sdk_libraries_custom",
    ],
}
MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd")
KEY = '"_reserved_modules"'


def project_template_dir() -> Path:
    return next(p for p in TEMPLATE_DIR.iterdir() if p.is_dir() and "cookiecutter" in p.name)


def project_requirements() -> list:
    """Requirement names of the generated pyproject.toml: dependencies and every extra."""
    text = (project_template_dir() / "pyproject.toml").read_text(encoding="utf-8")
    text = text.split("[project.scripts]")[0]  # the lists after it are no requirements
    names = []
    for block in re.findall(r"^(?:dependencies|[a-z]+) = \[\n(.*?)^\]", text, re.M | re.S):
        # "name>=1" or, with a marker that quotes, 'name==1; sys_platform == "win32"'
        for quoted in re.findall(r"""^\s*("[^"]+"|'[^']+'),?\s*(?:#.*)?$""", block, re.M):
            names.append(re.match(r"[A-Za-z0-9._-]+", quoted[1:]).group())
    return names


def stack_roots() -> list:
    context = json.loads(COOKIECUTTER_JSON.read_text(encoding="utf-8"))
    pins = [name for stack in context["_stacks"].values() for name in stack["pins"]]
    pins += [row[0] for rows in context["_onnx"].values() if isinstance(rows, list) for row in rows]
    return sorted({canonicalize_name(n) for n in pins + project_requirements() + ALWAYS_INSTALLED})


def top_level_names(dist: metadata.Distribution) -> set:
    """Importable top-level names of an installed distribution, from RECORD and top_level.txt."""
    names = set()
    for line in (dist.read_text("top_level.txt") or "").split():
        names.add(line.split("/")[0])
    for file in dist.files or []:
        parts = file.parts
        if not parts or parts[0] == ".." or parts[0].endswith((".dist-info", ".data")):
            continue
        if len(parts) == 1:
            if parts[0].endswith(MODULE_SUFFIXES):
                names.add(parts[0].split(".")[0])
        elif parts[0] != "__pycache__":
            names.add(parts[0])
    return {n for n in names if n.isidentifier()}


def environments() -> list:
    """Marker environments of every system and Python that a stack supports."""
    return [
        {
            "extra": "",
            "python_version": version,
            "python_full_version": f"{version}.0",
            "sys_platform": sys_platform,
            "platform_system": system,
            "os_name": os_name,
        }
        for version in PYTHONS
        for sys_platform, system, os_name in SYSTEMS
    ]


def installed_closure(roots: list) -> tuple:
    """(distributions installed here, requirements missing here, requirements of elsewhere).

    Every requirement whose marker holds here is followed; one whose marker holds only on
    another system or Python is collected, since its modules cannot be read here.
    """
    found, missing, elsewhere, queue = {}, set(), set(), list(roots)
    others = environments()
    while queue:
        name = canonicalize_name(queue.pop())
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.add(name)
            continue
        found[name] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or marker.evaluate({"extra": ""}):
                queue.append(requirement.name)
            elif any(marker.evaluate(env) for env in others):
                elsewhere.add(canonicalize_name(requirement.name))
    return found, missing, elsewhere - set(found)


def stack_modules() -> dict:
    """The distributions found and the top-level modules they and OTHER_ENVIRONMENT_MODULES
    install; ``unknown`` lists requirements of other environments that the table lacks."""
    found, missing, elsewhere = installed_closure(stack_roots())
    modules = set()
    for dist in found.values():
        modules |= top_level_names(dist)
    for names in [*OTHER_ENVIRONMENT_MODULES.values(), *UNREACHABLE_STACK_MODULES.values()]:
        modules |= set(names)
    # Windows-only builds: torch-directml and onnxruntime-directml (x64), onnxruntime-qnn (ARM64)
    pins_of_other_stacks = {"torch-directml", "onnxruntime-directml", "onnxruntime-qnn"}
    return {
        "python": sys.version.split()[0],
        "distributions": sorted(f"{d.metadata['Name']}=={d.version}" for d in found.values()),
        "missing": sorted(missing - pins_of_other_stacks),
        "unknown": sorted(elsewhere - set(OTHER_ENVIRONMENT_MODULES)),
        "modules": sorted(modules),
    }


def read_reserved() -> list:
    return json.loads(COOKIECUTTER_JSON.read_text(encoding="utf-8"))["_reserved_modules"]


def write_reserved(names: list) -> None:
    """Replace the _reserved_modules list in cookiecutter.json, keeping the rest as written."""
    text = COOKIECUTTER_JSON.read_text(encoding="utf-8")
    lines, line = [], "   "
    for name in sorted(set(names)):
        item = f' "{name}",'
        if len(line) + len(item) > 96:
            lines.append(line)
            line = "   "
        line += item
    lines.append(line.rstrip(","))
    block = f"{KEY}: [\n" + "\n".join(lines) + "\n  ]"
    pattern = re.compile(re.escape(KEY) + r": \[.*?\]", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{COOKIECUTTER_JSON} has no {KEY} list to update.")
    COOKIECUTTER_JSON.write_text(pattern.sub(lambda _m: block, text), encoding="utf-8")


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of names")
    parser.add_argument("--update", action="store_true", help="add the names to cookiecutter.json")
    args = parser.parse_args(argv)
    found = stack_modules()
    if found["missing"]:
        print(f"Not installed in this environment: {', '.join(found['missing'])}", file=sys.stderr)
        return 1
    if found["unknown"]:
        print(
            "Required on another system or Python, and not in OTHER_ENVIRONMENT_MODULES: "
            f"{', '.join(found['unknown'])}",
            file=sys.stderr,
        )
        return 1
    if args.update:
        before = set(read_reserved())
        write_reserved(sorted(before | set(found["modules"])))
        added = sorted(set(found["modules"]) - before)
        print(f"Added {len(added)} names: {', '.join(added) or '(none)'}")
    elif args.json:
        print(json.dumps(found, indent=2))
    else:
        print("\n".join(found["modules"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
