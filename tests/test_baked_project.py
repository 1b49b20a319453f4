"""A generated project passes its own checks: linters, pre-commit config, its test suite,
and verify_install, under the current PyTorch that runs these tests."""

from __future__ import annotations

import json

import pytest

VARIANTS = {
    "directml-conda-pycharm": {},
    "cpu-venv-vscode": {"accelerator": "cpu", "env_manager": "venv", "ide": "vscode"},
    "cuda-python3.14-no-ide": {"accelerator": "cuda", "python_version": "3.14", "ide": "none"},
    # The longest package name, on the legacy CUDA stack (its README and files, linted).
    "longest-package-name": {
        "project_name": "Handwritten digit recognition workshop 2",
        "accelerator": "cuda-legacy",
    },
}
# verify_install's exit code on this GPU-less machine: 0 when the chosen accelerator (here
# the CPU) works, 3 when it falls back to the CPU.
EXPECTED_VERDICT = {
    "directml": (3, "cpu-fallback"),
    "cpu": (0, "works"),
    "cuda": (3, "cpu-fallback"),
    "cuda-legacy": (3, "cpu-fallback"),
}

pytestmark = pytest.mark.slow


@pytest.fixture(params=VARIANTS.values(), ids=VARIANTS.keys())
def baked(request, bake_once):
    return bake_once(**request.param)


def test_ruff_check_passes(baked):
    result = baked.run("ruff", "check", "--no-cache", ".")  # the bake stays as generated
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_check_passes(baked):
    result = baked.run("ruff", "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pre_commit_config_is_valid(baked):
    result = baked.run("pre_commit", "validate-config", ".pre-commit-config.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


# The generated tests marked torchrun start real training processes (about a minute): one
# variant runs them; the code they test is the same in every variant.
TORCHRUN_VARIANT = "cpu-venv-vscode"


def test_own_test_suite_passes_on_the_cpu(baked, request):
    # The whole suite (torchrun's processes too) on one variant; the others run the fast
    # set, which checks what differs between variants (files, READMEs, run configurations).
    # Their slow tests (training, the doctor end to end) run again on the default variant in
    # the DirectML stack's tier and under Wine: four whole runs here took about 30 minutes.
    selection = [] if request.node.callspec.id == TORCHRUN_VARIANT else ["-m", "not slow"]
    # The limit catches a hang, not slowness: a loaded 2-core machine takes several times longer.
    result = baked.run("pytest", "-q", "-p", "no:cacheprovider", *selection, timeout=2700)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout


def test_verify_install_gives_a_verdict_without_a_traceback(baked):
    result = baked.run(f"{baked.package}.verify_install", "--json")
    report = json.loads(result.stdout)
    code, status = EXPECTED_VERDICT[baked.answers["accelerator"]]

    assert "Traceback" not in result.stderr
    assert (result.returncode, report["verdict"]["status"]) == (code, status)
