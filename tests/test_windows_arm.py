"""Windows on ARM (Snapdragon X laptops): a native ARM64 Python installs the cpu stack's
environment file, which is what the doctor tells a Snapdragon student to use (the directml
stack has no ARM64 build: no torch 2.4.1, torch-directml or onnxruntime-directml wheel for
win_arm64). It trains on PyTorch's native ARM64 CPU build and runs the exported model with
onnxruntime and onnxruntime-qnn, the plug-in for the Snapdragon's NPU.

pip resolves the project's own files for win_arm64 and CPython 3.12 (`--dry-run --report`:
metadata only, no wheel is downloaded) against the real PyPI and a stand-in of PyTorch's CPU
index, which cannot be reached from here. pip evaluates markers for the Python that runs it,
never for --platform, so the test evaluates every marker for Windows ARM64 itself: it resolves
the file's pins without dependencies, adds the requirements whose markers hold on Windows ARM64
(tqdm's colorama, humanfriendly's pyreadline3, never torch's Linux-only CUDA libraries) and
resolves again until nothing is added.

The stand-in index holds torch and torchvision under the real file names of PyTorch's CPU
index for Windows ARM64, "+cpu" included: torch-2.8.0+cpu-cp312-cp312-win_arm64.whl is an
entry of that index (quoted with its sha256 in seu-mirrors/sync-pytorch's sync script), native
Windows ARM64 wheels exist since torch 2.7 for CPython 3.11-3.13 only (pytorch/pytorch#152109;
3.14 is missing, #195033) and torchvision's are named like 0.28.0+cpu-cp311-cp311-win_arm64
(pytorch/test-infra#6352, #8224). NOT confirmed from here: that the index holds 2.14.1 and
0.29.1 for win_arm64. Their requirements are those of PyPI's Windows torch 2.14.1 and
torchvision 0.29.1 (the same CPU build for x64), read from PyPI when the test runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONTEXT, STACKS
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from standin_index import Standin, serve, write_index
from test_uv import run_uv
from vendor_shape import linux_build_standins, stack_standins

PYTHON = "3.12"  # what this project advises on Windows on ARM: every package has wheels
PYTORCH_PYTHONS = ("3.11", "3.12", "3.13")  # PyTorch's win_arm64 wheels (3.14: none yet)
WINDOWS_ARM64 = {
    "sys_platform": "win32",
    "platform_system": "Windows",
    "os_name": "nt",
    "platform_machine": "ARM64",  # a native ARM64 CPython (an emulated x64 one says AMD64)
    "python_version": PYTHON,
    "python_full_version": f"{PYTHON}.0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}


def pypi_only() -> dict:
    """pip as a student's: the file's own indexes, none of this machine's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull}


def dry_run(requirements: list[str], options: list[str], platform: str, target: Path) -> dict:
    """pip's report of what it would install for ``platform`` and Python 3.12, dependencies
    left out (their markers are evaluated here, for Windows ARM64)."""
    listed = target.parent / f"{target.name}-requirements.txt"
    listed.write_text("\n".join([*options, *requirements]) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
         "--ignore-installed", "--no-deps", "--only-binary", ":all:", "--platform", platform,
         "--python-version", PYTHON, "--target", str(target), "-r", str(listed)],
        capture_output=True, text=True, timeout=600, env=pypi_only(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def pins_for_windows_arm(text: str) -> tuple[list[str], list[str]]:
    """(index options, requirements without markers) of a pip file on Windows ARM64: the
    editable project left out ("-e .[dev]" would build it), markers evaluated here."""
    options, pins = [], []
    for line in (line.strip() for line in text.splitlines()):
        if not line or line.startswith(("#", "-e ")):
            continue
        if line.startswith("--"):
            options.append(line)
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(WINDOWS_ARM64):
            requirement.marker = None
            pins.append(str(requirement))
    return options, pins


def windows_arm_closure(pins: list[str], options: list[str], target: Path) -> dict[str, str]:
    """{name: version} that pip installs on Windows ARM64 from ``pins`` and their
    requirements, each marker evaluated for Windows ARM64."""
    wanted = list(pins)
    while True:
        report = dry_run(wanted, options, "win_arm64", target)
        found = {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in report["install"]}
        added = [
            line
            for metadata in found.values()
            for line in requirements_on_windows_arm(metadata.get("requires_dist") or [])
            if line not in wanted
        ]
        if not added:
            return {name: metadata["version"] for name, metadata in found.items()}
        wanted += sorted(set(added))


def requirements_on_windows_arm(lines: list[str]) -> list[str]:
    """The requirements whose markers hold on Windows ARM64, markers removed."""
    held = []
    for requirement in map(Requirement, lines):
        if requirement.marker is None or requirement.marker.evaluate(WINDOWS_ARM64):
            requirement.marker = None
            held.append(str(requirement))
    return held


@pytest.fixture(scope="module")
def cpu_build(tmp_path_factory) -> list[Standin]:
    """torch and torchvision of PyTorch's CPU index as stand-ins: for win_arm64 on the Pythons
    PyTorch builds it for, and, so that uv can lock every Python of the cpu group's range, for
    Windows x64 and Linux x86_64 on CPython 3.10-3.14 (the cpu stack's python_note). Each
    requires what PyPI's Windows x64 build of the same version requires."""
    pins = STACKS["cpu"]["pins"]
    report = dry_run(
        [f"torch=={pins['torch']}", f"torchvision=={pins['torchvision']}"],
        ["--index-url https://pypi.org/simple"], "win_amd64", tmp_path_factory.mktemp("x64"),
    )  # fmt: skip
    requires = {
        i["metadata"]["name"]: tuple(i["metadata"].get("requires_dist") or ())
        for i in report["install"]
    }
    tags = [f"{cp}-{cp}-win_arm64" for cp in map(cpython, PYTORCH_PYTHONS)]
    tags += [
        f"{cp}-{cp}-{platform}"
        for cp in map(cpython, ("3.10", "3.11", "3.12", "3.13", "3.14"))
        for platform in ("win_amd64", "manylinux_2_28_x86_64")
    ]
    label = STACKS["cpu"]["local_version"]
    return [
        Standin(name, version + label, tag=tag, requires=requires[name])
        for name, version in pins.items()
        for tag in tags
    ]


def cpython(python: str) -> str:
    return "cp" + python.replace(".", "")


@pytest.fixture(scope="module")
def cpu_index(cpu_build, tmp_path_factory):
    with serve(write_index(tmp_path_factory.mktemp("cpu-index") / "cpu", cpu_build)) as url:
        yield url


def resolved(baked, relative: str, cpu_index: str, target: Path) -> dict[str, str]:
    """What pip installs on Windows ARM64 from the project's file ``relative``: its pins and,
    for its "-e .[dev]" line, the project's own dependencies and dev extra."""
    text, cpu = baked.read(relative), STACKS["cpu"]["index_url"]
    assert f"--index-url {cpu}" in text  # the file names PyTorch's CPU index itself
    assert "-e .[dev]" in text.splitlines()
    options, pins = pins_for_windows_arm(text.replace(cpu, cpu_index.rstrip("/")))
    project = baked.toml("pyproject.toml")["project"]
    own = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return windows_arm_closure(pins + requirements_on_windows_arm(own), options, target)


# The files a Snapdragon student installs: a cpu project's requirements.txt, and the default
# (directml) project's environments/cpu.txt, which the doctor names on Windows on ARM.
FILES = {
    "cpu project, requirements.txt": ({"accelerator": "cpu"}, "requirements.txt"),
    "directml project, environments/cpu.txt": ({}, "environments/cpu.txt"),
}


@pytest.mark.network
@pytest.mark.parametrize("file", list(FILES))
def test_the_cpu_stack_resolves_for_windows_arm64(bake_once, cpu_index, file, tmp_path):
    answers, relative = FILES[file]
    baked = bake_once(env_manager="venv", **answers)

    found = resolved(baked, relative, cpu_index, tmp_path / "target")

    pins = STACKS["cpu"]["pins"]
    assert found["torch"] == pins["torch"] + "+cpu"  # PyTorch's native ARM64 CPU build
    assert found["torchvision"] == pins["torchvision"] + "+cpu"
    other = {  # the ONNX rows of the cpu stack that Windows ARM64 and Python 3.12 take
        name: version
        for name, version, marker in CONTEXT["_onnx"]["other"]
        if not marker or Marker(marker).evaluate(WINDOWS_ARM64)
    }
    assert found["onnxruntime"] == other["onnxruntime"]
    assert found["onnxruntime-qnn"] == other["onnxruntime-qnn"]  # the NPU's plug-in
    assert found["onnx"] == other["onnx"]
    assert "onnxruntime-directml" not in found and "torch-directml" not in found
    assert {"numpy", "matplotlib", "pillow", "tqdm", "colorama"} <= set(found)
    assert not [name for name in found if name.startswith(("nvidia-", "cuda-", "triton"))]
    print(json.dumps(found, indent=1, sort_keys=True))  # the versions, for the record


def test_the_directml_files_take_plain_onnx_runtime_on_windows_arm64(bake_once):
    """No onnxruntime-directml wheel exists for win_arm64: an ARM64 Python takes onnxruntime
    (the doctor sends it to the cpu stack, whose file adds onnxruntime-qnn); x64 Windows keeps
    the DirectML build."""
    conda, venv = bake_once(), bake_once(env_manager="venv")
    conda_pip = next(
        d["pip"] for d in conda.yaml("environment.yml")["dependencies"] if isinstance(d, dict)
    )
    files = {
        "environment.yml": conda_pip,
        "requirements.txt": venv.read("requirements.txt").splitlines(),
        "environments/directml.txt": venv.read("environments/directml.txt").splitlines(),
    }
    # The file says what to install instead (its comments), in every form.
    assert "Windows on ARM" in venv.read("environments/directml.txt")
    assert "Windows on ARM" in venv.read("requirements.txt")
    assert "Windows on ARM" in conda.read("environment.yml")
    x64 = {**WINDOWS_ARM64, "platform_machine": "AMD64"}
    for name, lines in files.items():
        for python in ("3.10", "3.11", "3.12"):
            arm = runtimes(lines, WINDOWS_ARM64, python)
            amd = runtimes(lines, x64, python)
            assert (arm, amd) == ({"onnxruntime"}, {"onnxruntime-directml"}), (name, python)


def runtimes(lines: list[str], environment: dict, python: str) -> set[str]:
    """The ONNX Runtime packages that a file's lines install on ``environment``."""
    environment = {**environment, "python_version": python, "python_full_version": python}
    chosen = set()
    for line in (line.strip() for line in lines):
        if not line or line.startswith(("#", "-")):
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            chosen.add(requirement.name)
    return chosen & {"onnxruntime", "onnxruntime-directml", "onnxruntime-qnn"}


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.uv
def test_a_uv_project_syncs_the_cpu_group_on_windows_arm64(bake_once, cpu_build, tmp_path):
    """uv locks a uv project (every group, every platform) against PyPI and stand-ins of
    PyTorch's indexes, then plans the cpu group's sync for Windows ARM64 (`uv sync --dry-run
    --python-platform aarch64-pc-windows-msvc`): uv refuses a package without a win_arm64
    wheel, so the plan shows that every package has one. The Python is the one running the
    tests (uv needs an interpreter of that version here)."""
    baked = bake_once(env_manager="uv", python_version="3.12")
    project = tmp_path / baked.path.name
    shutil.copytree(baked.path, project)
    borrowed = linux_build_standins(STACKS)
    indexes = {name: stack for name, stack in STACKS.items() if stack["index_url"]}
    for name, stack in indexes.items():
        own = cpu_build if name == "cpu" else stack_standins(stack)
        write_index(tmp_path / "indexes" / name, [*own, *borrowed.get(name, [])])
    with serve(tmp_path / "indexes") as url:
        text = (project / "pyproject.toml").read_text(encoding="utf-8")
        for name, stack in indexes.items():
            text = text.replace(f'url = "{stack["index_url"]}"', f'url = "{url}{name}/"')
        (project / "pyproject.toml").write_text(text, encoding="utf-8")
        locked = run_uv(project, "lock")
        assert locked.returncode == 0, locked.stderr[-3000:]
        planned = run_uv(
            project, "sync", "--locked", "--dry-run", "--no-default-groups", "--group", "dev",
            "--group", "cpu", "--python-platform", "aarch64-pc-windows-msvc",
            "--python", sys.executable,
        )  # fmt: skip

    assert planned.returncode == 0, planned.stderr[-3000:]
    plan = set(planned.stdout.split()) | set(planned.stderr.split())
    pins = STACKS["cpu"]["pins"]
    qnn = next(row[1] for row in CONTEXT["_onnx"]["other"] if row[0] == "onnxruntime-qnn")
    assert {f"torch=={pins['torch']}+cpu", f"onnxruntime-qnn=={qnn}"} <= plan
    assert [word for word in plan if word.startswith("pyreadline3==")]  # a Windows-only one
    assert not [word for word in plan if word.startswith(("onnxruntime-directml", "nvidia-"))]
