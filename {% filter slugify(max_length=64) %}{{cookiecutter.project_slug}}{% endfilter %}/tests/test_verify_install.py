"""verify_install is the doctor's command in this project: ``python -m <package>.verify_install``
imports the checks from doctor.pyz in the project folder and runs them on the project's own
package. Run here as a user runs it, in a child Python; the doctor's own tests live with the
template it comes from."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import data

PACKAGE = data.__package__
SRC = Path(data.__file__).resolve().parents[1]
EXIT_OK, EXIT_CPU_FALLBACK, EXIT_BROKEN = 0, 3, 4  # docs/report.md's exit codes


def verify_install(*args: str, path: list, child_limit: float, code: str = "", cwd=None):
    """``python -m <package>.verify_install args`` (after ``code``) with ``path`` first."""
    paths = [str(p) for p in path]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    run = f"{code}import runpy, sys; sys.argv[1:] = {list(args)!r}; "
    run += f"runpy.run_module({PACKAGE + '.verify_install'!r}, run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", run],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(paths)),
        timeout=child_limit,
    )


def findings(report, check, status=None):
    return [f for f in report["findings"] if f["check"] == check and status in (None, f["status"])]


@pytest.mark.slow
def test_the_real_thing_on_this_machine(child_limit):
    """No fakes: whatever this machine has, a verdict consistent with the chosen device."""
    done = verify_install("--json", path=[SRC], child_limit=child_limit)

    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["project"]["package"] == PACKAGE
    accelerator = report["project"]["accelerator"]
    chosen = report["chosen"]["kind"]
    expected = EXIT_CPU_FALLBACK if chosen == "cpu" and accelerator != "cpu" else EXIT_OK
    assert done.returncode == report["verdict"]["exit_code"] == expected, report["verdict"]
    assert report["smoke_test"]["passed"] and report["timing"]["device_ms"] > 0
    runtime = [f for f in report["findings"] if f["check"] == "ONNX Runtime"]
    if importlib.util.find_spec("onnxruntime") is None:  # an environment made without it
        assert runtime == []
    else:
        (finding,) = runtime
        # ORT-PROVIDER-FAILED: a GPU provider that is listed but cannot start here
        assert finding["code"] in ("ORT-OK", "ORT-PROVIDER-FAILED"), finding
    if expected == EXIT_CPU_FALLBACK:  # then the report says why the accelerator is not usable
        torchs = {"cuda-legacy": "cuda", "rocm": "cuda", "rocm-windows": "cuda"}
        kind = torchs.get(accelerator, accelerator)  # torch's name of the device kind
        assert any(u["kind"] == kind and u["reason"] for u in report["unavailable"])


@pytest.mark.slow
def test_a_project_without_tqdm_says_so_without_a_traceback(child_limit):
    """The project's real module tree, in a Python where `import tqdm` fails."""
    no_tqdm = "import sys; sys.modules['tqdm'] = None; "
    done = verify_install("--json", path=[SRC], child_limit=child_limit, code=no_tqdm)

    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == EXIT_BROKEN
    report = json.loads(done.stdout)
    (finding,) = findings(report, "Requirements", "fail")
    assert "imports tqdm (package tqdm), which is not installed" in finding["found"]
    assert "torch does not import" not in report["verdict"]["message"]


def test_a_torch_whose_dlls_do_not_load_gives_the_fix_and_no_traceback(tmp_path, child_limit):
    shadow = tmp_path / "torch"
    shadow.mkdir()
    message = (
        "[WinError 126] The specified module could not be found. Error loading "
        '"C:\\env\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.'
    )
    (shadow / "__init__.py").write_text(f"raise OSError({message!r})\n")

    done = verify_install("--json", path=[tmp_path, SRC], child_limit=child_limit)

    assert "Traceback" not in done.stderr
    assert done.returncode == EXIT_BROKEN, done.stderr
    (finding,) = findings(json.loads(done.stdout), "torch", "fail")
    assert "WinError 126" in finding["found"] and "vc_redist.x64.exe" in finding["fix"]


def test_without_the_doctor_file_it_says_to_restore_it(tmp_path, child_limit):
    """A project folder whose doctor.pyz was deleted: one sentence with the fix."""
    shutil.copytree(SRC, tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))

    done = verify_install(path=[tmp_path / "src"], child_limit=child_limit, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr.startswith("doctor.pyz is not in the project folder: restore it")
    assert "Traceback" not in done.stderr and done.stdout == ""
