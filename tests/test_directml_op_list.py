"""The generated project's list of DirectML operators is what the torch-directml wheel registers.

`tools/list_directml_ops.py` reads the list from the Windows wheel's native module; the
generated project's `tests/test_directml_ops.py` proves with it that a training step needs no
CPU fallback. Here the tool runs on the pinned wheel (the one the Windows tiers cache, else
downloaded, about 9 MB) and must write exactly the list the project ships.
"""

from __future__ import annotations

import subprocess
import sys

import list_directml_ops  # tools/, on the path through conftest
import pytest
import wine_python
from conftest import PROJECT_TEMPLATE, STACKS, TEMPLATE_DIR

TOOL = TEMPLATE_DIR / "tools" / "list_directml_ops.py"
PACKAGE = PROJECT_TEMPLATE / "src" / "{{cookiecutter.package_name}}"
SHIPPED = PACKAGE / "machinery" / "directml_ops.txt"
PIN = STACKS["directml"]["pins"]["torch-directml"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    name = f"torch_directml-{PIN}-cp311-cp311-win_amd64.whl"
    cached = wine_python.cache_root() / "wheels" / name
    if cached.is_file():
        return cached
    folder = tmp_path_factory.mktemp("wheel")
    download = [sys.executable, "-m", "pip", "download", f"torch-directml=={PIN}", "--no-deps"]
    download += ["--platform", "win_amd64", "--python-version", "3.11", "--only-binary=:all:"]
    result = subprocess.run([*download, "-d", str(folder)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"the torch-directml wheel could not be downloaded: {result.stderr[-300:]}")
    return folder / name


def test_the_tool_reads_from_the_pinned_wheel_the_list_the_project_ships(wheel):
    result = subprocess.run(
        [sys.executable, str(TOOL), str(wheel), "--output", "-"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == SHIPPED.read_text(encoding="utf-8")
    assert "aten::convolution_overrideable" in result.stdout.splitlines()


def test_without_an_output_the_tool_writes_the_projects_list():
    """Its default target is the list in the generated project's template folder."""
    assert list_directml_ops.default_output() == SHIPPED
