"""export --output never replaces a file the run needs: its checkpoints, its other files, the
checkpoint being exported. It is refused in one sentence before anything is written."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

import pytest

from {{ cookiecutter.package_name }} import (
    export,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnx") is None,
    reason="onnx is not installed (the environment files name it)",
)

RUN_FILES = ("best.pt", "last.pt", "metrics.json", "metrics.csv", "curves.png")


@pytest.fixture
def run(trained_run, tmp_path):
    """A copy of the trained run's folder, to be exported from."""
    folder = tmp_path / "run"
    shutil.copytree(trained_run, folder)
    return folder


def _contents(folder):
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.mark.parametrize("output", RUN_FILES)
@pytest.mark.parametrize("checkpoint", ("best.pt", "last.pt"))
def test_an_output_that_is_a_file_of_the_run_is_refused_and_nothing_is_written(
    run, checkpoint, output, capsys
):
    before = _contents(run)

    code = export.main(["--checkpoint", str(run / checkpoint), "--output", str(run / output)])
    captured = capsys.readouterr()

    assert code == 2, captured.out
    assert _contents(run) == before  # the trained model, the resume point, the metrics
    assert "Nothing was written" in captured.err and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and captured.out == ""


def test_the_checkpoint_itself_is_refused_under_any_name_that_reaches_it(run, capsys):
    checkpoint = run / "model-as-checkpoint.onnx"  # a checkpoint may carry any name
    shutil.copyfile(run / "best.pt", checkpoint)
    before = checkpoint.read_bytes()
    names = [
        checkpoint,
        run / "." / checkpoint.name,
        run.parent / "run" / ".." / "run" / checkpoint.name,
    ]
    if sys.platform == "win32" or os.path.exists(str(checkpoint).upper()):
        names.append(checkpoint.with_name(checkpoint.name.upper()))  # one file, either case
    try:
        (run / "linked.onnx").symlink_to(checkpoint)
        names.append(run / "linked.onnx")
    except OSError:  # Windows without the right to make links
        pass

    for name in names:
        code = export.main(["--checkpoint", str(checkpoint), "--output", str(name)])
        err = capsys.readouterr().err
        assert code == 2 and "is the checkpoint being exported" in err, (name, err)
        assert checkpoint.read_bytes() == before


def test_a_model_file_may_still_be_written_anywhere(run, tmp_path, small_synthetic, capsys):
    output = tmp_path / "elsewhere" / "lenet.ONNX"
    output.parent.mkdir()

    code = export.main(
        ["--checkpoint", str(run / "best.pt"), "--output", str(output), "--check-images", "50"]
    )

    assert code == 0, capsys.readouterr()
    assert output.is_file() and "So they agree." in capsys.readouterr().out
