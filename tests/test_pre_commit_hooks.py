"""A fresh project passes every hook of its own .pre-commit-config.yaml, as
`git init && git add . && pre-commit run --all-files` would run them, offline.

pre-commit cannot clone hook repositories here, so the same code is installed from the package
index at the revs the generated config pins (pre-commit-hooks vX -> pre-commit-hooks==X,
ruff-pre-commit vX -> ruff==X; the revs are read from the baked config, nowhere else), and
pre-commit itself runs each hook as a `language: system` hook with the definition its
repository gives it (entry and file types, from its .pre-commit-hooks.yaml), plus the baked
config's own arguments and excludes. pre-commit lists the files with git, picks them by type,
and fails a hook that reports a problem or changes a file.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from test_dml_stack import cache_root, venv_python

# Hook repository -> the distribution on the package index that ships the same hooks.
HOOK_PACKAGES = {
    "https://github.com/pre-commit/pre-commit-hooks": "pre-commit-hooks",
    "https://github.com/astral-sh/ruff-pre-commit": "ruff",
}
RUFF_FILES = {"types_or": ["python", "pyi", "jupyter"], "require_serial": True}
# Each hook as its repository's .pre-commit-hooks.yaml defines it (pre-commit-hooks v6.0.0,
# ruff-pre-commit): the command and the files it is given.
HOOK_DEFINITIONS = {
    "check-yaml": {"entry": "check-yaml", "types": ["yaml"]},
    "check-toml": {"entry": "check-toml", "types": ["toml"]},
    "check-xml": {"entry": "check-xml", "types": ["xml"]},
    "check-json": {"entry": "check-json", "types": ["json"]},
    "check-added-large-files": {"entry": "check-added-large-files"},
    "end-of-file-fixer": {"entry": "end-of-file-fixer", "types": ["text"]},
    "trailing-whitespace": {"entry": "trailing-whitespace-fixer", "types": ["text"]},
    "mixed-line-ending": {"entry": "mixed-line-ending", "types": ["text"]},
    "ruff-check": {"entry": "ruff check --force-exclude", **RUFF_FILES},
    "ruff-format": {"entry": "ruff format --force-exclude", **RUFF_FILES},
}
# What a baked project's config may set on a hook, passed on as written.
CONFIG_KEYS = ("args", "files", "exclude", "types", "types_or", "exclude_types")
VARIANTS = {
    "default": {},
    "every-file-kind": {"ide": "both", "env_manager": "venv", "license": "Apache-2.0"},
}


def pinned_packages(config: dict) -> list:
    """`name==version` for each hook repository of the config, from its rev."""
    return sorted(f"{HOOK_PACKAGES[r['repo']]}=={r['rev'].lstrip('v')}" for r in config["repos"])


@pytest.fixture(scope="module")
def hook_bin(bake_once) -> Path:
    """A cached virtual environment with the hook packages at the pinned revs; its bin folder."""
    config = bake_once().yaml(".pre-commit-config.yaml")
    packages = pinned_packages(config)
    key = hashlib.sha256(f"{sys.version_info[:2]}{packages}".encode()).hexdigest()[:12]
    directory = cache_root() / f"pre-commit-hooks-{key}"
    python = venv_python(directory)
    if not (directory / "installed.txt").exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(directory)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *packages],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
        (directory / "installed.txt").write_text("\n".join(packages) + "\n")
    return python.parent


def offline_config(config: dict, bin_dir: Path) -> dict:
    """The same hooks as local `system` hooks that call the installed packages' commands."""
    hooks = []
    for repo in config["repos"]:
        for hook in repo["hooks"]:
            definition = dict(HOOK_DEFINITIONS[hook["id"]])
            command, *options = definition.pop("entry").split()
            executable = bin_dir / (command + (".exe" if os.name == "nt" else ""))
            local = {"id": hook["id"], "name": hook["id"], "language": "system"}
            local["entry"] = " ".join([str(executable), *options])
            local.update(definition)
            local.update({k: hook[k] for k in CONFIG_KEYS if k in hook})
            hooks.append(local)
    return {"repos": [{"repo": "local", "hooks": hooks}]}


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True, text=True)


def test_every_configured_hook_has_its_definition_and_package(bake_once):
    config = bake_once().yaml(".pre-commit-config.yaml")
    ids = [hook["id"] for repo in config["repos"] for hook in repo["hooks"]]

    assert set(ids) == set(HOOK_DEFINITIONS)
    assert {repo["repo"] for repo in config["repos"]} == set(HOOK_PACKAGES)
    assert "ruff==0.17.6" in pinned_packages(config)


@pytest.mark.parametrize("answers", VARIANTS.values(), ids=VARIANTS.keys())
def test_a_fresh_project_passes_every_pre_commit_hook(bake, answers, hook_bin, tmp_path):
    baked = bake(**answers)
    assert baked.ok, baked.output
    config = offline_config(baked.yaml(".pre-commit-config.yaml"), hook_bin)
    local_config = tmp_path / "offline-pre-commit-config.yaml"
    local_config.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    git(baked.path, "init", "-q")
    git(baked.path, "add", ".")

    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--config", str(local_config)],
        cwd=baked.path,
        env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")},
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    report = result.stdout.splitlines()
    for hook_id in HOOK_DEFINITIONS:
        line = next(line for line in report if line.startswith(hook_id))
        assert line.endswith(("Passed", "Skipped")), line
    checked = {line.split(".")[0] for line in report if line.endswith("Passed")}
    assert {"check-yaml", "check-toml", "check-json", "ruff-check", "ruff-format"} <= checked
