"""WSL2 without CUDA: on Linux x86_64 the directml environment takes torch 2.4.1's CPU build
from PyTorch's CPU index, so pip resolves no nvidia-* library and no triton (PyPI's Linux torch
2.4.1 brings about 2.7 GB of them, which DirectML never uses), and torch-directml's own
torch==2.4.1 pin still holds.

pip resolves the project's own environments/directml.txt for Linux x86_64 and Python 3.11
(`--dry-run --report`: metadata only, no download) against the real PyPI and a stand-in of the
CPU index (tests/vendor_shape.py: torch 2.4.1+cpu with the CPU build's requirements).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import STACKS
from standin_index import serve, write_index
from vendor_shape import linux_build_standins

pytestmark = pytest.mark.network

# A glibc 2.28 Linux (WSL2's Ubuntu has newer) takes every manylinux wheel up to that tag.
LINUX = [
    option
    for tag in ("manylinux_2_28", "manylinux_2_27", "manylinux_2_17", "manylinux2014", "manylinux1")
    for option in ("--platform", f"{tag}_x86_64")
]


def pypi_only() -> dict:
    """pip as a student's: PyPI and the file's own indexes, none of this machine's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull}


def resolve_for_linux(requirements: Path, target: Path) -> dict[str, str]:
    """{name: version} of what pip would install from ``requirements`` on Linux x86_64."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
         "--ignore-installed", "--only-binary", ":all:", "--python-version", "3.11", *LINUX,
         "--target", str(target), "-r", str(requirements)],
        capture_output=True, text=True, timeout=900, env=pypi_only(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    return {
        item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]
    }


@pytest.fixture(scope="module")
def linux_directml(bake_once, tmp_path_factory) -> dict[str, str]:
    baked = bake_once(env_manager="venv")
    tmp = tmp_path_factory.mktemp("wsl")
    cpu = STACKS["cpu"]["index_url"]
    root = write_index(tmp / "cpu", linux_build_standins(STACKS)["cpu"])
    text = (baked.path / "environments" / "directml.txt").read_text(encoding="utf-8")
    assert f"--extra-index-url {cpu}" in text  # the file names PyTorch's CPU index itself
    # Only the project's own lines: "-e .[dev]" would build the project (setuptools) first.
    lines = [line for line in text.splitlines() if not line.startswith("-e ")]
    with serve(root) as url:
        requirements = tmp / "directml.txt"
        requirements.write_text("\n".join(lines).replace(cpu, url) + "\n", encoding="utf-8")
        return resolve_for_linux(requirements, tmp / "target")


def test_wsl2_gets_the_cpu_build_and_torch_directml(linux_directml):
    assert linux_directml["torch"] == "2.4.1+cpu"
    assert linux_directml["torchvision"] == "0.19.1+cpu"
    assert linux_directml["torch-directml"] == STACKS["directml"]["pins"]["torch-directml"]


def test_wsl2_downloads_no_cuda_library_and_no_triton(linux_directml):
    unwanted = sorted(n for n in linux_directml if n.startswith(("nvidia-", "triton", "cuda-")))
    assert not unwanted
