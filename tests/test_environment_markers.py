"""The default environment file installs on every machine a student may bring: each pin with a
marker is installed only where it has wheels (torch-directml: Windows x64 and Linux x86_64), and
what is left resolves on PyPI for that machine. pip evaluates markers against the Python that
runs it, never against --platform, so the tests evaluate them for each machine themselves."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# What packaging.markers reads on each machine (the rest: this interpreter's values).
MACHINES = {
    "macOS arm64": {
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "os_name": "posix",
        "platform_machine": "arm64",
    },
    "Linux aarch64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "aarch64",
    },
    "Windows x64": {
        "sys_platform": "win32",
        "platform_system": "Windows",
        "os_name": "nt",
        "platform_machine": "AMD64",
    },
    "Linux x86_64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "x86_64",
    },
}
# pip's --platform: manylinux tags are not widened to older ones, so each is named.
PLATFORM_TAGS = {
    "macOS arm64": ["macosx_14_0_arm64"],  # widened to older macOS down to 10.x by pip
    "Linux aarch64": ["manylinux_2_28_aarch64", "manylinux2014_aarch64"],
    "Windows x64": ["win_amd64"],
    "Linux x86_64": [
        "manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux2010_x86_64",
        "manylinux1_x86_64",
    ],
}  # fmt: skip
PYTHON = "3.11"  # the default answer


def pip_requirements(lines: list[str]) -> list[Requirement]:
    """The pinned requirements of a pip file (or a conda file's pip part): no comments,
    index options or the editable project."""
    return [
        Requirement(line)
        for line in (line.strip() for line in lines)
        if line and not line.startswith(("#", "-"))
    ]


def default_environment_files(bake_once) -> dict[str, list[Requirement]]:
    """The default (directml) project's environment files, as a student finds them."""
    conda, venv = bake_once(), bake_once(env_manager="venv")
    conda_pip = next(
        d["pip"] for d in conda.yaml("environment.yml")["dependencies"] if isinstance(d, dict)
    )
    return {
        "environment.yml": pip_requirements(conda_pip),
        "requirements.txt": pip_requirements(venv.read("requirements.txt").splitlines()),
        "environments/directml.txt": pip_requirements(
            conda.read("environments/directml.txt").splitlines()
        ),
    }


def installed_on(machine: str, requirements: list[Requirement], python: str = PYTHON) -> dict:
    """name -> version of the pins a machine installs from a file."""
    environment = {
        **MACHINES[machine],
        "python_version": python,
        "python_full_version": f"{python}.0",
    }
    chosen = {}
    for requirement in requirements:
        if requirement.marker is None or requirement.marker.evaluate(environment):
            assert requirement.name not in chosen, f"{requirement.name} twice on {machine}"
            (spec,) = requirement.specifier
            chosen[requirement.name] = spec.version
    return chosen


def test_torch_directml_is_installed_only_where_it_has_wheels(bake_once):
    files = default_environment_files(bake_once)
    assert files["environment.yml"] == files["environments/directml.txt"]
    assert files["requirements.txt"] == files["environments/directml.txt"]
    for name, requirements in files.items():
        for machine in MACHINES:
            for python in ("3.8", "3.9", "3.10", "3.11", "3.12"):
                chosen = installed_on(machine, requirements, python)
                directml_here = machine in ("Windows x64", "Linux x86_64")
                assert ("torch-directml" in chosen) is directml_here, (name, machine, python)
                # torch-directml pins these: every machine gets them, a Mac or ARM laptop alone;
                # Linux x86_64 (WSL2) PyTorch's CPU build, which the pin accepts.
                label = "+cpu" if machine == "Linux x86_64" else ""
                assert chosen["torch"] == "2.4.1" + label
                assert chosen["torchvision"] == "0.19.1" + label
                runtimes = {"onnxruntime", "onnxruntime-directml"} & set(chosen)
                windows = machine == "Windows x64"
                assert runtimes == {"onnxruntime-directml" if windows else "onnxruntime"}
                assert "onnx" in chosen


@pytest.mark.network
@pytest.mark.parametrize("machine", list(MACHINES))
def test_the_default_environment_resolves_on_pypi_for_each_machine(bake_once, machine, tmp_path):
    """pip finds a wheel of every pin the machine installs (dry run, no dependencies)."""
    pins = installed_on(machine, default_environment_files(bake_once)["environment.yml"])
    # A build label ("2.4.1+cpu", Linux x86_64) comes from PyTorch's CPU index, which cannot
    # be reached from here: tests/test_wsl_directml.py resolves those against a stand-in.
    pins = {name: version for name, version in pins.items() if "+" not in version}
    report = tmp_path / "report.json"
    platforms = [argument for tag in PLATFORM_TAGS[machine] for argument in ("--platform", tag)]
    done = subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
            "--no-deps", "--only-binary", ":all:", *platforms, "--python-version", PYTHON,
            "--index-url", "https://pypi.org/simple", "--quiet", "--report", str(report),
            *(f"{name}=={version}" for name, version in pins.items()),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]
    }
    assert found == {canonicalize_name(name): version for name, version in pins.items()}
