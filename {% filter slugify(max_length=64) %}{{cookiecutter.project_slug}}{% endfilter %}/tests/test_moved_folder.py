"""A model trained on your own pictures, whose folder has moved since: evaluate and export say
so and advise the option they have for its new place, --data-dir, which then works."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import (
    evaluate,
    export,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    devices,
)


def _picture(shape: str, index: int):
    from PIL import Image, ImageDraw

    picture = Image.new("L", (28, 28), 0)
    lo, hi = 3 + index % 5, 24 - index % 4
    pen = ImageDraw.Draw(picture)
    (pen.ellipse if shape == "circle" else pen.rectangle)((lo, lo, hi, hi), outline=255, width=2)
    return picture


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """(the run, the folder its pictures are in now): trained on my_shapes, which then moved."""
    root = tmp_path_factory.mktemp("moved")
    pictures = root / "my_shapes"
    for shape in ("circle", "square"):
        (pictures / shape).mkdir(parents=True)
        for index in range(20):
            _picture(shape, index).save(pictures / shape / f"{index:02d}.png")
    run = root / "run"
    cfg = train.TrainConfig(
        epochs=1, batch_size=8, dataset=f"folder:{pictures}", device="cpu", output_dir=run
    )
    train.train(cfg, discovery=devices.discover(probes=[devices.probe_cpu]))
    if importlib.util.find_spec("onnx") is not None:
        export.export(
            checkpoints.Checkpoint.load(run / "best.pt"), run / "best.pt", run / "model.onnx"
        )
    now = Path(shutil.move(str(pictures), str(root / "elsewhere")))
    return run, now


def _advice(err: str, recorded_in: str) -> str:
    """The command the message advises."""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"no longer in {recorded_in}" in err and "--dataset" not in err, err
    return err.split("(one subfolder per class): ")[1].strip()


def test_evaluate_advises_data_dir_for_a_folder_that_moved(moved, capsys, cpu_only):
    run, now = moved

    assert evaluate.main(["--output-dir", str(run)]) == 2
    advised = _advice(capsys.readouterr().err, str(now.parent / "my_shapes"))

    checkpoint = ["--checkpoint", str(run / "best.pt")]
    assert advised == f"python -m {evaluate.__name__} {' '.join(checkpoint)} --data-dir <folder>"
    assert evaluate.main([*checkpoint, "--data-dir", str(now)]) == 0
    assert "2 classes: circle, square" in capsys.readouterr().out


@pytest.mark.skipif(importlib.util.find_spec("onnx") is None, reason="onnx is not installed")
def test_export_and_evaluate_onnx_advise_data_dir_too(moved, capsys, cpu_only):
    run, now = moved
    commands = [  # export, then evaluate --onnx
        (export, ["--checkpoint", str(run / "best.pt")]),
        (evaluate, ["--onnx", str(run / "model.onnx")]),
    ]
    for module, argv in commands:
        assert module.main(argv) == 2
        advised = _advice(capsys.readouterr().err, str(now.parent / "my_shapes"))

        assert advised == f"python -m {module.__name__} {' '.join(argv)} --data-dir <folder>"
        assert module.main([*argv, "--data-dir", str(now)]) == 0, capsys.readouterr()


def test_a_data_dir_that_is_no_folder_is_one_sentence(moved, tmp_path, capsys, cpu_only):
    run, _ = moved

    code = evaluate.main(["--output-dir", str(run), "--data-dir", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err

    assert code == 2 and f"--data-dir {tmp_path / 'nowhere'} is not a folder" in err
    assert "Traceback" not in err and "--dataset" not in err
