"""A Windows clone keeps LF: Git for Windows checks text out with CRLF (core.autocrlf=true)
unless .gitattributes says otherwise, and cookiecutter copies each template file's line endings
into the generated project, whose .editorconfig and checks expect LF."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEMPLATE_DIR

pytestmark = pytest.mark.slow

REPLAY = ".cookiecutter.json"


def git(*args: str, cwd: Path) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def windows_clone(source: Path, into: Path) -> Path:
    """`git clone` with the setting Git for Windows installs by default."""
    git("clone", "-q", "-c", "core.autocrlf=true", str(source), str(into), cwd=source.parent)
    return into


def snapshot_of_working_tree(tmp_path: Path) -> Path:
    """A repository holding this working tree's template files as they are (uncommitted too)."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=TEMPLATE_DIR)
    repo = tmp_path / "template-repo"
    for relative in filter(None, listed.split("\0")):
        source = TEMPLATE_DIR / relative
        if source.is_file():
            target = repo / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "snapshot", cwd=repo)
    return repo


def text_files_with_crlf(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if ".git" in path.parts or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" not in data and b"\r\n" in data:
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def bake(template: Path, out: Path) -> Path:
    from cookiecutter.main import cookiecutter

    return Path(cookiecutter(str(template), no_input=True, output_dir=str(out)))


def ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ruff", *args, "--no-cache", "."]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_crlf_checkout_of_the_template_bakes_the_same_lf_project(tmp_path):
    clone = windows_clone(snapshot_of_working_tree(tmp_path), tmp_path / "windows-clone")

    assert text_files_with_crlf(clone) == []
    from_clone = bake(clone, tmp_path / "from-clone")
    from_tree = bake(TEMPLATE_DIR, tmp_path / "from-tree")
    assert text_files_with_crlf(from_clone) == []
    files = sorted(p.relative_to(from_tree).as_posix() for p in from_tree.rglob("*") if p.is_file())
    for relative in files:
        if relative != REPLAY:
            assert (from_clone / relative).read_bytes() == (from_tree / relative).read_bytes()
    assert ruff("check", cwd=from_clone).returncode == 0
    assert ruff("format", "--check", cwd=from_clone).returncode == 0


def test_a_crlf_checkout_of_a_generated_project_keeps_lf(bake_once, tmp_path):
    project = bake_once().path
    repo = tmp_path / "project-repo"
    git("init", "-q", str(repo), cwd=tmp_path)
    for path in project.rglob("*"):
        if path.is_file():
            target = repo / path.relative_to(project)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "generated", cwd=repo)
    clone = windows_clone(repo, tmp_path / "windows-clone")

    assert text_files_with_crlf(clone) == []
    assert ruff("check", cwd=clone).returncode == 0
    assert ruff("format", "--check", cwd=clone).returncode == 0
