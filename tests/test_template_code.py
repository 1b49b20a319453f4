"""The template's own code (hooks, tests, dev.py) is held to the same linters as its output."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

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


def quick_start() -> str:
    readme = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")
    return readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_says_what_the_tests_cost_and_offers_the_fast_path():
    text = " ".join(quick_start().split())
    assert "python dev.py quick" in text and '`python dev.py test -m "not dml_stack"`' in text
    assert "about 22 minutes" in text and "about 14 GB" in text  # the whole suite
    assert "about 5.6 GB on Linux" in text  # what the demo's .venv takes


def test_dev_py_quick_runs_the_suite_without_the_directml_stack(monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("dev", TEMPLATE_DIR / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    calls = []
    monkeypatch.setattr(dev, "ensure_environment", lambda: TEMPLATE_DIR / "python")
    done = SimpleNamespace(returncode=0)
    monkeypatch.setattr(dev.subprocess, "run", lambda command, **kw: calls.append(command) or done)
    assert dev.main(["quick", "-x"]) == 0
    assert calls[0][1:] == ["-m", "pytest", "-m", "not dml_stack", "-x"]
    assert dev.main(["test"]) == 0
    out = capsys.readouterr().out
    assert "about 22 minutes" in out and "python dev.py quick" in out  # said before the wait
    assert "Tests took" in out
