"""A generated project passes its own checks: linters, pre-commit config, its test suite,
and verify_install, under the current PyTorch that runs these tests."""

from __future__ import annotations

import pytest

VARIANTS = {
    "directml-conda-pycharm": {},
    "cpu-venv-vscode": {"accelerator": "cpu", "env_manager": "venv", "ide": "vscode"},
    "cuda-python3.14-no-ide": {"accelerator": "cuda", "python_version": "3.14", "ide": "none"},
}

pytestmark = pytest.mark.slow


@pytest.fixture(params=VARIANTS.values(), ids=VARIANTS.keys())
def baked(request, bake_once):
    return bake_once(**request.param)


def test_ruff_check_passes(baked):
    result = baked.run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_check_passes(baked):
    result = baked.run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pre_commit_config_is_valid(baked):
    result = baked.run("pre_commit", "validate-config", ".pre-commit-config.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_own_test_suite_passes_on_the_cpu(baked):
    result = baked.run("pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout
