"""The template's own code (the doctor, hooks, tests, tools, dev.py) is held to the same linters as
its output."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import STACKS, TEMPLATE_DIR

OWN_CODE = ["gpu_doctor", "hooks", "tests", "tools", "dev.py"]


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


def load_dev():
    import importlib.util

    spec = importlib.util.spec_from_file_location("dev", TEMPLATE_DIR / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    return dev


def readme_section(heading: str) -> str:
    readme = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")
    return readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_starts_with_making_a_project():
    readme = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", readme, re.M)
    text = " ".join(readme_section("Make a project").split())

    assert headings[0] == "Make a project"
    assert headings.index("Make a project") < headings.index("Developing the template")
    assert "cookiecutter gh:" in text and "pip install cookiecutter" in text
    for part in ("What you need:", "What you get:", "How long it takes:"):
        assert part in text
    assert "dev.py" not in text  # the template's own development comes later


def test_the_development_section_says_what_the_tests_cost_and_offers_the_fast_path():
    text = " ".join(readme_section("Developing the template").split())
    dev = load_dev()
    assert "python dev.py quick" in text and "python dev.py demo" in text
    assert f'`python dev.py test -m "{dev.QUICK_MARKERS}"`' in text
    assert f"about {dev.WHOLE_SUITE_MINUTES} minutes" in text and "about 25 GB" in text
    assert f"about {dev.WHOLE_SUITE_MINUTES} minutes" in dev.__doc__
    assert "about 5.6 GB on Linux" in text  # what the demo's .venv takes


def test_quick_leaves_out_every_test_that_needs_wine_or_the_directml_stack():
    dev = load_dev()
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", dev.QUICK_MARKERS],
        cwd=TEMPLATE_DIR,
        capture_output=True,
        text=True,
    ).stdout
    skipped = ["test_windows_tier.py", "test_directml_tier.py", "test_dml_stack.py"]
    skipped.append("test_windows_uv.py")  # test_uv.py's fast tests of the files stay in quick

    assert "tests/test_options.py::" in collected
    assert [name for name in skipped if f"tests/{name}::" in collected] == []
    assert "test_drawn_digits_are_read_as_they_are_drawn_in_chromium" not in collected
    skipped.append("test_draw_page.py")
    section = " ".join(readme_section("Developing the template").split())
    quick_cell = section.split("| `python dev.py quick`", 1)[1].split(" | ", 1)[0]
    for name in skipped:  # the README and dev.py say exactly what quick skips
        assert f"`tests/{name}`" in quick_cell
        assert f"tests/{name}" in dev.QUICK_SKIPS


def test_dev_py_quick_runs_the_suite_without_wine_and_the_directml_stack(monkeypatch, capsys):
    dev = load_dev()
    calls = []
    monkeypatch.setattr(dev, "ensure_environment", lambda: TEMPLATE_DIR / "python")
    done = SimpleNamespace(returncode=0)
    monkeypatch.setattr(dev.subprocess, "run", lambda command, **kw: calls.append(command) or done)
    assert dev.main(["quick", "-x"]) == 0
    assert calls[0][1:] == ["-m", "pytest", "-m", dev.QUICK_MARKERS, "-x"]
    assert "Running the tests without the Windows tier" in capsys.readouterr().out


class FakeLane:
    """A pytest started in the background that ends with ``code``."""

    def __init__(self, command, code, **kwargs):
        self.command, self.code = command, code
        kwargs["stdout"].write("the Wine lane's own output\n")

    def wait(self):
        return self.code

    def poll(self):
        return self.code


@pytest.mark.parametrize("wine_code, rest_code", [(0, 0), (1, 0), (0, 1)])
def test_dev_py_test_runs_the_wine_lane_beside_the_others_and_fails_with_either(
    monkeypatch, capsys, tmp_path, wine_code, rest_code
):
    dev = load_dev()
    foreground, background, order = [], [], []
    monkeypatch.setattr(dev, "ensure_environment", lambda: TEMPLATE_DIR / "python")
    monkeypatch.setattr(dev, "setup", lambda python: order.append("setup"))
    monkeypatch.setattr(dev, "WINE_LANE_LOG", tmp_path / "wine-lane.log")
    monkeypatch.setattr(
        dev.subprocess,
        "run",
        lambda command, **kw: foreground.append(command) or SimpleNamespace(returncode=rest_code),
    )
    monkeypatch.setattr(
        dev.subprocess,
        "Popen",
        lambda command, **kw: (
            order.append("lanes")
            or background.append(command)
            or FakeLane(command, wine_code, **kw)
        ),
    )

    code = dev.main(["test"])

    assert order == ["setup", "lanes"]  # every system package before the first test
    out = capsys.readouterr().out
    assert (code == 0) == (wine_code == 0 and rest_code == 0)
    assert f"about {dev.WHOLE_SUITE_MINUTES} minutes" in out and "python dev.py quick" in out
    assert "the Wine lane's own output" in out and "Tests took" in out
    (wine,), (rest,) = background, foreground
    assert wine[-len(dev.WINE_LANE) :] == dev.WINE_LANE  # the Wine lane runs exactly these
    assert [f"--ignore={path}" for path in dev.WINE_LANE] == rest[-len(dev.WINE_LANE) :]
    assert all((TEMPLATE_DIR / path).is_file() for path in dev.WINE_LANE)
    temporaries = [Path(lane[lane.index("--basetemp") + 1]) for lane in (wine, rest)]
    assert temporaries[0] != temporaries[1]
    assert all(folder.parent.is_dir() for folder in temporaries)  # pytest makes no parents
