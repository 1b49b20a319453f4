"""The template started the ways its users start it, each in a subprocess from a folder of
their own: every way must give the same project as an absolute path.

pytest-cookies always passes cookiecutter an absolute path; a workshop hands the template out
as a folder (`cookiecutter .`, `cookiecutter dml-template`), a zip, a git URL, or a replay file,
and the README documents `cruft create`. The template is copied first, as a user's copy is:
its tracked files in a folder named `dml-template`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONTEXT, TEMPLATE_DIR

TAG = f"v{CONTEXT['_template_version']}"
# What differs by design between two bakes of the same answers: how the template was named
# (.cookiecutter.json's _template) and cruft's own record of it.
NAMED_BY_INVOCATION = {".cruft.json"}
# A non-default answer in every bake, so that the answers cannot be defaults by accident.
ANSWERS = ["project_name=Ink & Paper", "ide=both", "env_manager=venv"]


def user_environment(home: Path) -> dict:
    env = {**os.environ, "HOME": str(home), "USERPROFILE": str(home), "NO_COLOR": "1"}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for variable in ("COOKIECUTTER_CONFIG", "PYTEST_ADDOPTS", "PWD"):
        env.pop(variable, None)
    return env


def run(command: list, cwd: Path, home: Path, stdin: str = "") -> subprocess.CompletedProcess:
    """A command as a user types it in ``cwd``: the template's tools come from this Python."""
    program, *args = command
    if program in ("cookiecutter", "cruft"):
        command = [sys.executable, "-m", program, *args]
    result = subprocess.run(
        command,
        cwd=cwd,
        env=user_environment(home),
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=300,
    )
    return result


def succeeded(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Traceback" not in output and "ERROR" not in output, output[-3000:]
    return result


def tracked_files(folder: Path) -> list:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=folder,
        capture_output=True,
        check=True,
    )
    return [name for name in listed.stdout.decode("utf-8").split("\0") if name]


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    """A user's folder holding `dml-template`: the template's files, as a copy hands them out."""
    folder = tmp_path_factory.mktemp("user")
    copy = folder / "dml-template"
    for name in tracked_files(TEMPLATE_DIR):
        source = TEMPLATE_DIR / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (folder / "home").mkdir()
    return folder


@pytest.fixture(scope="module")
def home(place) -> Path:
    return place / "home"


@pytest.fixture(scope="module")
def template_repository(place, home) -> Path:
    """The copy as a git repository with the release tag, standing in for `gh:<owner>/<repo>`."""
    repository = place / "repository"
    shutil.copytree(place / "dml-template", repository)
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "template"],
        ["git", "tag", TAG],
    ):
        subprocess.run(command, cwd=repository, env=user_environment(home), check=True)
    return repository


def project_in(output: Path) -> Path:
    projects = [p for p in output.iterdir() if p.is_dir()]
    assert len(projects) == 1, projects
    return projects[0]


def contents(project: Path) -> dict:
    """Every file's bytes by relative path; .cookiecutter.json without how the template was
    named (_template)."""
    files = {}
    for path in sorted(project.rglob("*")):
        relative = path.relative_to(project).as_posix()
        if not path.is_file() or relative in NAMED_BY_INVOCATION:
            continue
        data = path.read_bytes()
        if relative == ".cookiecutter.json":
            answers = json.loads(data)
            answers["cookiecutter"].pop("_template")
            data = json.dumps(answers, sort_keys=True).encode()
        files[relative] = data
    return files


@pytest.fixture(scope="module")
def reference(place, home) -> dict:
    """The project an absolute path gives, from a folder that is not the template's."""
    output = place / "by-absolute-path"
    template = place / "dml-template"
    succeeded(run(["cookiecutter", str(template), "--no-input", "-o", str(output), *ANSWERS],
                  cwd=home, home=home))  # fmt: skip
    return contents(project_in(output))


def assert_same_project(output: Path, reference: dict) -> Path:
    project = project_in(output)
    baked = contents(project)
    assert sorted(baked) == sorted(reference)
    assert [name for name in baked if baked[name] != reference[name]] == []
    return project


def test_cookiecutter_dot_in_the_template_folder(place, home, reference):
    succeeded(run(["cookiecutter", ".", "--no-input", "-o", "../by-dot", *ANSWERS],
                  cwd=place / "dml-template", home=home))  # fmt: skip

    project = assert_same_project(place / "by-dot", reference)
    assert (
        json.loads((project / ".cookiecutter.json").read_text("utf-8"))["cookiecutter"]["_template"]
        == "."
    )


def test_a_relative_path_from_the_parent_folder(place, home, reference):
    succeeded(run(["cookiecutter", "dml-template", "--no-input", "-o", "by-relative", *ANSWERS],
                  cwd=place, home=home))  # fmt: skip

    assert_same_project(place / "by-relative", reference)


def test_a_relative_path_from_a_sibling_folder(place, home, reference):
    sibling = place / "workshop"
    sibling.mkdir()
    succeeded(run(["cookiecutter", "../dml-template", "--no-input", *ANSWERS],
                  cwd=sibling, home=home))  # fmt: skip

    assert_same_project(sibling, reference)


def test_a_zip_of_the_template(place, home, reference):
    # As a release asset or an e-mail attachment arrives: one top-level folder inside.
    shutil.make_archive(str(place / "dml-template"), "zip", root_dir=place, base_dir="dml-template")
    succeeded(run(["cookiecutter", "dml-template.zip", "--no-input", "-o", "by-zip", *ANSWERS],
                  cwd=place, home=home))  # fmt: skip

    assert_same_project(place / "by-zip", reference)


@pytest.mark.parametrize("checkout", [[], ["--checkout", TAG]], ids=["default-branch", "tag"])
def test_a_git_url(place, home, reference, template_repository, checkout):
    url = f"git+{template_repository.as_uri()}"
    output = place / f"by-git-{len(checkout)}"
    succeeded(run(["cookiecutter", url, *checkout, "--no-input", "-o", str(output), *ANSWERS],
                  cwd=home, home=home))  # fmt: skip

    assert_same_project(output, reference)


def test_replay_of_the_last_bake(place, home, reference):
    first = place / "replay-first"
    succeeded(run(["cookiecutter", "dml-template", "--no-input", "-o", str(first), *ANSWERS],
                  cwd=place, home=home))  # fmt: skip
    again = place / "replay-again"
    succeeded(run(["cookiecutter", "--replay", "-o", str(again), "dml-template"],
                  cwd=place, home=home))  # fmt: skip

    assert_same_project(again, reference)


def test_the_projects_own_answers_file_regenerates_it(place, home, reference):
    # The README: `cookiecutter --replay-file .cookiecutter.json <template-url>`.
    first = place / "answers-first"
    succeeded(run(["cookiecutter", "dml-template", "--no-input", "-o", str(first), *ANSWERS],
                  cwd=place, home=home))  # fmt: skip
    project = project_in(first)
    again = place / "answers-again"
    succeeded(run(["cookiecutter", "--replay-file", ".cookiecutter.json", "-o", str(again),
                   "../../dml-template"], cwd=project, home=home))  # fmt: skip

    assert_same_project(again, reference)


def test_the_refusals_own_command_with_a_relative_template_path(place, home, reference):
    output = place / "refused"
    refused = run(["cookiecutter", "dml-template", "--no-input", "-o", str(output), *ANSWERS,
                   "python_version=3.13"], cwd=place, home=home)  # fmt: skip
    assert refused.returncode != 0
    assert "ERROR: Python 3.13 is not supported with the directml accelerator" in refused.stderr
    command = next(line.strip() for line in refused.stderr.splitlines() if "--replay-file" in line)
    assert command.endswith(" dml-template")  # the template as the user named it

    # The printed command, typed where the refused one was; Enter keeps the default Python.
    succeeded(run(shlex.split(command), cwd=place, home=home, stdin="\n"))

    assert_same_project(output, reference)


def test_cruft_create(place, home, reference, template_repository):
    output = place / "by-cruft"
    result = succeeded(
        run(["cruft", "create", str(template_repository), "--checkout", TAG, "--no-input",
             "--output-dir", str(output), "--extra-context", json.dumps(dict(
                 answer.split("=", 1) for answer in ANSWERS))], cwd=home, home=home)
    )  # fmt: skip

    project = assert_same_project(output, reference)
    assert json.loads((project / ".cruft.json").read_text("utf-8"))["checkout"] == TAG
    assert "Best for this machine" in result.stdout  # its hooks ran, the machine was checked


def test_cruft_update_prints_no_steps_for_its_own_temporary_folders(
    home, tmp_path, template_repository
):
    # cruft update bakes the old and the new template into temporary folders of its own, gone
    # when it ends: the hooks' "cd <folder>" and "git init" would send the user there, twice.
    repository = tmp_path / "repository"
    shutil.copytree(template_repository, repository, symlinks=True)
    succeeded(run(["cruft", "create", str(repository), "--no-input", "--output-dir",
                   str(tmp_path / "projects")], cwd=home, home=home))  # fmt: skip
    project = project_in(tmp_path / "projects")
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "p"]):
        subprocess.run(command, cwd=project, env=user_environment(home), check=True)
    editorconfig = next(repository.glob("*cookiecutter.project_slug*")) / ".editorconfig"
    editorconfig.write_text(editorconfig.read_text("utf-8") + "# updated\n", "utf-8")
    subprocess.run(["git", "commit", "-q", "-am", "update"], cwd=repository,
                   env=user_environment(home), check=True)  # fmt: skip

    result = succeeded(run(["cruft", "update", "-y"], cwd=project, home=home))

    assert (project / ".editorconfig").read_text("utf-8").endswith("# updated\n")
    output = result.stdout + result.stderr
    assert "Next steps" not in output and "git init" not in output
    assert "This machine" not in output
