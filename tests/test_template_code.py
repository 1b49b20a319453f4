"""The template's own code (hooks, tests, dev.py) is held to the same linters as its output."""

from __future__ import annotations

import subprocess
import sys

from conftest import STACKS, TEMPLATE_DIR

OWN_CODE = ["hooks", "tests", "tools", "dev.py"]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *OWN_CODE],
        cwd=TEMPLATE_DIR,
        capture_output=True,
        text=True,
    )


def test_ruff_check_passes_on_the_template_code():
    result = ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_check_passes_on_the_template_code():
    result = ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_stack_table_matches_the_support_table():
    """The README's table of stacks is documentation of `_stacks`; it must not drift."""
    readme = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")
    for accelerator, stack in STACKS.items():
        row = next(line for line in readme.splitlines() if line.startswith(f"| {accelerator} |"))
        assert f"{stack['python_min']} to {stack['python_max']}" in row
        for name, version in stack["pins"].items():
            assert f"{name} {version}" in row
