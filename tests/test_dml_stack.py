"""The generated project on the exact DirectML stack, installed from its own requirements file.

torch-directml 0.2.5.dev240914 pins torch 2.4.1 and torchvision 0.19.1: every API the project
uses must exist there. On Linux without WSL, importing torch_directml fails for real
(libd3d12.so is missing), which the project must report and survive.
The environment (about 3 GB) is cached between runs in TEMPLATE_TEST_CACHE.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import CONTEXT, TEMPLATE_DIR
from cpu_build_mirror import relabeled_wheels

pytestmark = [pytest.mark.slow, pytest.mark.dml_stack]


def cache_root() -> Path:
    default = Path.home() / ".cache" / "lenet-directml-template"
    return Path(os.environ.get("TEMPLATE_TEST_CACHE", default))


def venv_python(directory: Path) -> Path:
    if os.name == "nt":
        return directory / "Scripts" / "python.exe"
    return directory / "bin" / "python"


@pytest.fixture(scope="module")
def baked(bake_once):
    return bake_once(env_manager="venv")


@pytest.fixture(scope="module")
def dml_python(baked) -> str:
    """A virtual environment made with the baked project's own `pip install -r requirements.txt`."""
    requirements = baked.read("requirements.txt")
    assert "torch-directml==0.2.5.dev240914" in requirements
    pins = sorted(line for line in requirements.splitlines() if "==" in line)
    key = hashlib.sha256(f"{sys.version_info[:2]}{pins}".encode()).hexdigest()[:12]
    directory = cache_root() / f"dml-stack-{key}"
    for old in cache_root().glob("dml-stack-*"):  # 5.4 GB each: keep only this pin set's
        if old != directory:
            shutil.rmtree(old, ignore_errors=True)
    python = venv_python(directory)
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(directory)
    # PyTorch's CPU index, where the file takes torch 2.4.1+cpu on Linux, cannot be reached
    # from here: pip finds the same pins in a local stand-in (tests/cpu_build_mirror.py).
    mirror = relabeled_wheels()[0].parent
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--find-links",
            str(mirror),
            "-r",
            "requirements.txt",
        ],  # fmt: skip
        cwd=baked.path,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return str(python)


def test_the_stack_is_exactly_the_pinned_one(baked, dml_python):
    versions = subprocess.run(
        [
            dml_python,
            "-c",
            "import torch, torchvision; print(torch.__version__, torchvision.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    assert versions[0].split("+")[0] == "2.4.1"
    assert versions[1].split("+")[0] == "0.19.1"


def test_every_module_of_the_directml_stack_is_reserved(dml_python):
    """cookiecutter.json's _reserved_modules covers what this stack installs (see
    tests/stack_modules.py), so no package name can shadow one of them."""
    script = TEMPLATE_DIR / "tests" / "stack_modules.py"
    result = subprocess.run(
        [dml_python, str(script), "--json"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)

    assert "torch-directml==0.2.5.dev240914" in found["distributions"]
    assert "torch==2.4.1+cpu" in found["distributions"]  # the CPU build on Linux x86_64
    unreserved = sorted(set(found["modules"]) - set(CONTEXT["_reserved_modules"]))
    assert unreserved == [], f"run `{dml_python} tests/stack_modules.py --update` to reserve them"


def test_own_test_suite_passes_on_the_directml_stack(baked, dml_python):
    # DirectML has no distributed backend (the torchrun tests' refusal runs as a unit test):
    # the torchrun processes themselves run on the current torch, in test_baked_project.py.
    result = baked.run(
        "pytest", "-q", "-p", "no:cacheprovider", "-m", "not torchrun",
        python=dml_python, timeout=1800,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout


def test_verify_install_reports_the_real_directml_failure_and_falls_back(baked, dml_python):
    result = baked.run(f"{baked.package}.verify_install", "--json", python=dml_python)
    report = json.loads(result.stdout)

    assert "Traceback" not in result.stderr
    assert report["packages"]["torch-directml"]["installed"] == "0.2.5.dev240914"
    directml = next(u for u in report["unavailable"] if u["kind"] == "directml")
    if sys.platform == "linux" and not Path("/dev/dxg").exists():
        # The real reason on Linux without WSL: the DirectX 12 library is not there.
        assert "libd3d12.so" in directml["reason"]
        assert result.returncode == 3  # CPU fallback
        assert report["verdict"]["status"] == "cpu-fallback"
        assert report["chosen"]["kind"] == "cpu"


def test_training_runs_on_the_directml_stack(baked, dml_python, tmp_path):
    result = baked.run(
        f"{baked.package}.train",
        "--dataset",
        "synthetic",
        "--dry-run",
        "--output-dir",
        str(tmp_path / "runs"),
        python=dml_python,
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "synthetic" in (result.stdout + result.stderr).lower()
