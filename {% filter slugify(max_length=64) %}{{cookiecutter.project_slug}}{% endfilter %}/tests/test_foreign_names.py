"""Names read from a .pt file are shown escaped in every message about it: a file from
elsewhere may hold escape sequences that retitle the window, clear the screen or hide text."""

from __future__ import annotations

import importlib.util

import torch

from {{ cookiecutter.package_name }} import (
    draw,
    evaluate,
    export,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
)

HOSTILE = "\x1b]0;owned\x07\x1b[2J\u202eevil"
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\u202eevil"


def _commands():
    yield "evaluate", evaluate.main
    yield "draw", draw.main  # fails before it serves: the file is no model
    if importlib.util.find_spec("onnx") is not None:
        yield "export", export.main


def _shown_escaped(err: str) -> None:
    assert SHOWN in err, err
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_keys_of_a_foreign_file_are_shown_escaped(tmp_path, capsys, cpu_only):
    foreign = tmp_path / "weights.pt"
    torch.save({HOSTILE: torch.zeros(2), "fc.weight": torch.zeros(2)}, foreign)

    for name, main in _commands():
        code = main(["--checkpoint", str(foreign)])
        err = capsys.readouterr().err
        assert code == 2 and "not a checkpoint written by this project" in err, name
        _shown_escaped(err)


def test_the_names_in_a_checkpoints_model_are_shown_escaped(
    trained_run, tmp_path, capsys, cpu_only
):
    state = checkpoints.load_checkpoint(trained_run / "best.pt")
    state["model"][HOSTILE] = torch.zeros(1)  # a model of another shape than LeNet-5's
    checkpoint = tmp_path / "best.pt"
    train.save_checkpoint(state, checkpoint)

    for name, main in _commands():
        code = main(["--checkpoint", str(checkpoint)])
        err = capsys.readouterr().err
        assert code == 2 and "holds a different model" in err, (name, err)
        _shown_escaped(err)
    assert not (tmp_path / "model.onnx").exists()


def test_a_checkpoint_version_from_the_file_is_shown_escaped(trained_run, tmp_path, capsys):
    state = checkpoints.load_checkpoint(trained_run / "best.pt")
    checkpoint = tmp_path / "best.pt"
    torch.save({**state, "version": HOSTILE}, checkpoint)

    assert evaluate.main(["--checkpoint", str(checkpoint)]) == 2
    err = capsys.readouterr().err
    assert "has checkpoint version" in err
    _shown_escaped(err)
