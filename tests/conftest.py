"""Helpers that keep the template's tests reading like a specification.

``bake(**answers)`` generates a project with pytest-cookies and returns a ``Baked`` project:
its files, parsed config files, and ``run()`` to execute a command inside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

TEMPLATE_DIR = Path(__file__).resolve().parents[1]
# The generated project's template folder (its name is a Jinja expression: see the README).
PROJECT_TEMPLATE = next(TEMPLATE_DIR.glob("*cookiecutter.project_slug*"))
CONTEXT = json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text(encoding="utf-8"))
STACKS = CONTEXT["_stacks"]
sys.path.insert(0, str(TEMPLATE_DIR / "tools"))
import wine_python  # noqa: E402  (tools/ is not a package)

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".json", ".xml", ".txt", ".cfg", ""}


@dataclass
class Baked:
    """A generated project, or the error cookiecutter reported for its answers."""

    path: Path | None
    exit_code: int
    exception: BaseException | None
    output: str = ""
    answers: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exception is None and self.path is not None

    def files(self) -> set[str]:
        """Every file, as a POSIX path relative to the project root."""
        return {
            p.relative_to(self.path).as_posix()
            for p in self.path.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
        }

    def read(self, relative: str) -> str:
        return (self.path / relative).read_text(encoding="utf-8")

    def toml(self, relative: str) -> dict:
        return tomllib.loads(self.read(relative))

    def yaml(self, relative: str):
        return yaml.safe_load(self.read(relative))

    def json(self, relative: str):
        return json.loads(self.read(relative))

    def xml(self, relative: str) -> ET.Element:
        return ET.fromstring(self.read(relative))

    @property
    def package(self) -> str:
        return self.answers["package_name"]

    def run(self, *command: str, python: str | None = None, timeout: float = 900, env=None):
        """Run ``python -m <command>`` (or a plain command) in the project; returns the process."""
        full_env = {**os.environ, "PYTHONPATH": str(self.path / "src"), **(env or {})}
        full_env.pop("PYTEST_ADDOPTS", None)
        args = [python or sys.executable, "-m", *command]
        return subprocess.run(
            args,
            cwd=self.path,
            env=full_env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
        )


def default_answers(**overrides) -> dict:
    """The answers cookiecutter would use with --no-input, with overrides applied."""
    answers = {key: value for key, value in CONTEXT.items() if not key.startswith("_")}
    answers = {k: (v[0] if isinstance(v, list) else v) for k, v in answers.items()}
    answers.update(overrides)
    return answers


@pytest.fixture
def bake(cookies, capfd):
    """bake(**answers) -> Baked; hook output (stdout and stderr) is kept in ``output``."""

    def _bake(**extra_context) -> Baked:
        capfd.readouterr()
        result = cookies.bake(extra_context=extra_context)
        captured = capfd.readouterr()
        path = result.project_path if result.exception is None else None
        answers = dict(result.context or {})
        return Baked(path, result.exit_code, result.exception, captured.out + captured.err, answers)

    return _bake


@pytest.fixture(scope="session")
def bake_once(tmp_path_factory):
    """A session-wide cache of bakes, for tests that only read or run a project."""
    from cookiecutter.main import cookiecutter

    cache: dict = {}

    def _bake(**extra_context) -> Baked:
        key = json.dumps(extra_context, sort_keys=True)
        if key not in cache:
            out = tmp_path_factory.mktemp("baked")
            path = cookiecutter(
                str(TEMPLATE_DIR), no_input=True, extra_context=extra_context, output_dir=str(out)
            )
            answers = json.loads((Path(path) / ".cookiecutter.json").read_text("utf-8"))
            cache[key] = Baked(Path(path), 0, None, "", answers["cookiecutter"])
        return cache[key]

    return _bake


@pytest.fixture(scope="session")
def winpy() -> wine_python.WindowsPython:
    """Windows CPython 3.11 under Wine with the DirectML stack's Windows wheels (the tiers)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the Wine tiers run on Linux; a Windows host runs the whole suite natively")
    return wine_python.setup()
