"""One Python version in a project: every command it prints or documents uses the project's.

A stack whose range leaves out the project's version (directml in a 3.13 project) uses that
stack's own default, in its environment file and wherever a line names that stack.
"""

from __future__ import annotations

import re

import pytest
from conftest import STACKS

CASES = {
    "default": {},
    "cpu 3.13 venv": {"accelerator": "cpu", "python_version": "3.13", "env_manager": "venv",
                      "ide": "both"},
    "cuda 3.10 venv": {"accelerator": "cuda", "python_version": "3.10", "env_manager": "venv",
                       "ide": "vscode"},
}  # fmt: skip
# A Python version inside a command: `py -3.11`, `python3.11 -m ...` (not a path such as
# lib/python3.11/site-packages), conda's `python=3.11`, pip's `--python-version 3.11`.
COMMAND_VERSION = re.compile(r"(?:\bpy -|(?<![/\w.])python=?|--python(?:-version)?[ =])(3\.\d+)\b")
DOCUMENTS = [
    "README.md",
    "README.zh-CN.md",
    "pyproject.toml",
    "environment.yml",
    "requirements.txt",
]
FOLDERS = ["docs", "environments", ".run", ".vscode", ".github"]


def version_tuple(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


def python_for(stack: str, version: str) -> str:
    """The Python a stack's environment file asks for (templates/environment.j2)."""
    low, high = STACKS[stack]["python_min"], STACKS[stack]["python_max"]
    inside = version_tuple(low) <= version_tuple(version) <= version_tuple(high)
    return version if inside else STACKS[stack]["python_default"]


def places(baked) -> dict:
    """Every document, environment file and run configuration of the project, and the hook's
    output, as {name: text}."""
    texts = {"the post-generation hook's output": baked.output}
    for name in DOCUMENTS:
        if (baked.path / name).is_file():
            texts[name] = baked.read(name)
    for folder in FOLDERS:
        for path in sorted((baked.path / folder).rglob("*")):
            if path.is_file() and path.suffix in {".md", ".yml", ".txt", ".xml", ".json", ""}:
                texts[path.relative_to(baked.path).as_posix()] = path.read_text("utf-8")
    return texts


def versions_that_differ(baked, version: str) -> list:
    wrong = []
    for place, text in places(baked).items():
        for line in text.splitlines():
            named = [stack for stack in STACKS if stack in line or stack in place]
            allowed = {version} | {python_for(stack, version) for stack in named}
            wrong += [
                f"{place}: {line.strip()}"
                for found in COMMAND_VERSION.findall(line)
                if found not in allowed
            ]
    return wrong


@pytest.mark.parametrize("overrides", CASES.values(), ids=CASES.keys())
def test_every_command_uses_the_projects_python(bake, overrides):
    baked = bake(**overrides)
    assert baked.ok, baked.output
    version = baked.answers["python_version"]

    assert versions_that_differ(baked, version) == []
    stacks, readme = baked.read("docs/stacks.md"), baked.read("README.md")
    assert f"`python{version} -m venv .venv-{baked.answers['accelerator']}`" in stacks
    if baked.answers["env_manager"] == "venv":
        assert f"py -{version} -m venv .venv" in readme


@pytest.mark.parametrize("overrides", list(CASES.values())[1:], ids=list(CASES)[1:])
def test_the_hook_says_to_install_the_projects_python_when_it_runs_on_another(bake, overrides):
    """The tests run cookiecutter on the dev environment's Python (3.11), not 3.13 or 3.10."""
    baked = bake(**overrides)
    version = overrides["python_version"]
    note = " ".join(baked.output.split("This machine:", 1)[1].split("Next steps", 1)[0].split())

    assert f"install Python {version} (python.org)" in note
    assert f"`py -{version} -m venv .venv` on Windows" in note
    assert "creates its own interpreter" not in note
