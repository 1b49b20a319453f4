"""The README's first command, `python doctor.pyz`, run as a student runs it: in the project
folder, in a bare Python with nothing installed (no PyTorch, no pip), before any environment
exists. It must name the environment for this machine (no GPU here: cpu) with the commands of
the project's environment manager that create it, and never end in a traceback.
"""

from __future__ import annotations

import re
import subprocess
import sys
import venv

import pytest


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A virtual environment with nothing in it: no pip, no PyTorch."""
    directory = tmp_path_factory.mktemp("bare")
    venv.EnvBuilder(with_pip=False).create(directory)
    scripts = "Scripts" if sys.platform == "win32" else "bin"
    return str(directory / scripts / ("python.exe" if sys.platform == "win32" else "python"))


def first_command(readme: str) -> str:
    """The first command of the README: its first fenced code block's first line."""
    match = re.search(r"^```[a-z]*\n(.+?)\n", readme, flags=re.MULTILINE)
    assert match, "the README has no code block"
    return match.group(1).strip()


@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_the_readmes_first_command_is_the_doctor(bake_once, readme):
    assert first_command(bake_once().read(readme)) == "python doctor.pyz"


@pytest.mark.parametrize(
    ("env_manager", "command"),
    [
        ("conda", "conda env create -f environments/cpu.yml"),
        ("venv", "python -m pip install -r environments/cpu.txt"),
        ("uv", "uv sync --python 3.11 --no-default-groups --group dev --group cpu"),
    ],
)
def test_in_a_bare_python_it_names_this_machines_environment_and_its_commands(
    bake_once, bare_python, env_manager, command
):
    baked = bake_once(env_manager=env_manager)
    no_torch = subprocess.run([bare_python, "-c", "import torch"], capture_output=True)
    assert no_torch.returncode != 0  # nothing installed, as before the first download

    result = subprocess.run(
        [bare_python, "doctor.pyz"],
        cwd=baked.path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "The environment for this machine: cpu" in result.stdout
    assert f"  {command}" in result.stdout.splitlines()
    assert f"python -m {baked.package}.verify_install" in result.stdout


def test_its_help_says_what_it_does(bake_once, bare_python):
    result = subprocess.run(
        [bare_python, "doctor.pyz", "--help"],
        cwd=bake_once().path,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0
    assert "usage: python doctor.pyz" in result.stdout
    assert "Before any environment exists" in result.stdout


@pytest.mark.parametrize("stack", ["cpu", "directml", "rocm-windows"])
def test_the_environment_it_prints_is_ignored_by_git(bake_once, tmp_path, stack):
    """The venv commands create .venv-<stack> in the project folder, then say `git add .`:
    git must leave that environment out."""
    project = tmp_path / "project"  # the baked .gitignore, in a repository of its own
    project.mkdir()
    (project / ".gitignore").write_text(bake_once(env_manager="venv").read(".gitignore"))
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / f".venv-{stack}" / "lib").mkdir(parents=True)

    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f".venv-{stack}/lib"], cwd=project, timeout=60
    )

    assert ignored.returncode == 0
