"""Checkpoints: CPU tensors, atomic writes, safe loading, clear errors for bad files, and names
read from a file shown escaped."""

from __future__ import annotations

import dataclasses
import errno
import importlib.util
import pickle
import re
from pathlib import Path

import pytest
import torch

from {{ cookiecutter.package_name }} import (
    draw,
    evaluate,
    export,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    predict_command,
)
from {{ cookiecutter.package_name }}.model import (
    LeNet5,
)


def sample_state():
    torch.manual_seed(0)
    model = LeNet5()
    return {
        "model": model.state_dict(),
        "history": [{"epoch": 1, "val_accuracy": 0.9}],
        "rng": {"generator": torch.Generator().manual_seed(1).get_state()},
        "note": "text",
    }


def test_round_trip_keeps_every_tensor_and_value(tmp_path):
    state = sample_state()
    path = tmp_path / "last.pt"
    train.save_checkpoint(state, path)
    loaded = checkpoints.load_checkpoint(path)
    assert loaded["format"] == checkpoints.FORMAT and loaded["version"] == checkpoints.VERSION
    assert loaded["history"] == state["history"] and loaded["note"] == "text"
    for key, tensor in state["model"].items():
        assert loaded["model"][key].device.type == "cpu"
        assert torch.equal(loaded["model"][key], tensor)
    assert torch.equal(loaded["rng"]["generator"], state["rng"]["generator"])
    model = LeNet5()
    checkpoints.restore_module(model, loaded["model"], path)
    assert torch.equal(model.fc3.weight, state["model"]["fc3.weight"])


def good_checkpoint(tmp_path):
    path = tmp_path / "last.pt"
    train.save_checkpoint(sample_state(), path)
    return path, path.read_bytes()


def leftovers(folder: Path):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# How a full disk surfaces: as OSError from a plain write, and as RuntimeError from torch.save's
# zip writer (the message seen when a checkpoint fills a small tmpfs).
FULL_DISK_ERRORS = {
    "oserror": (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    "torch-zip-writer": (
        RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"),
        "is the disk full?",
    ),
}


def test_a_full_disk_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path, before = good_checkpoint(tmp_path)
    for kind, (error, said) in FULL_DISK_ERRORS.items():

        def full_disk(obj, handle, error=error):
            handle.write(b"PK\x03\x04 half a checkpoint")
            raise error

        with monkeypatch.context() as patched:
            patched.setattr(checkpoints.torch, "save", full_disk)
            with pytest.raises(checkpoints.CheckpointWriteError, match=re.escape(said)) as caught:
                train.save_checkpoint({"model": {}}, path)
        assert "previous last.pt" in str(caught.value) and "unchanged" in str(caught.value)
        assert path.read_bytes() == before, kind
        assert leftovers(tmp_path) == [], kind
        assert checkpoints.load_checkpoint(path)["note"] == "text"


def test_ctrl_c_while_writing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path, before = good_checkpoint(tmp_path)

    def interrupted(obj, handle):
        handle.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoints.torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train.save_checkpoint({"model": {}}, path)
    assert path.read_bytes() == before and leftovers(tmp_path) == []


def test_a_truncated_checkpoint_is_a_clear_error(tmp_path):
    path, data = good_checkpoint(tmp_path)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(
        checkpoints.CheckpointError, match="truncated, corrupt or not a PyTorch file"
    ):
        checkpoints.load_checkpoint(path)


def test_garbage_is_a_clear_error(tmp_path):
    path = tmp_path / "last.pt"
    for content in (b"", b"not a checkpoint at all\n" * 10):
        path.write_bytes(content)
        with pytest.raises(checkpoints.CheckpointError, match=re.escape(str(path))):
            checkpoints.load_checkpoint(path)


def test_a_foreign_pytorch_file_is_recognised(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(LeNet5().state_dict(), path)  # what most tutorials save
    with pytest.raises(
        checkpoints.CheckpointError, match="not a checkpoint written by this project"
    ):
        checkpoints.load_checkpoint(path)


def test_a_checkpoint_of_another_version_is_refused(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"format": checkpoints.FORMAT, "version": 999}, path)
    with pytest.raises(checkpoints.CheckpointError, match="version 999"):
        checkpoints.load_checkpoint(path)


class Payload:
    """A pickle that would create a file when loaded without weights_only."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_loading_never_runs_code_from_the_file(tmp_path):
    marker = tmp_path / "code-ran"
    path = tmp_path / "evil.pt"
    torch.save({"format": checkpoints.FORMAT, "version": 1, "x": Payload(marker)}, path)
    with pytest.raises(checkpoints.CheckpointError):
        checkpoints.load_checkpoint(path)
    assert not marker.exists()
    pickle.loads(pickle.dumps(Payload(marker)))  # the payload is real: plain pickle runs it
    assert marker.exists()


def test_a_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(checkpoints.CheckpointError, match="There is no checkpoint at"):
        checkpoints.load_checkpoint(tmp_path / "nothing.pt")


def test_weights_of_another_model_are_refused(tmp_path):
    model = LeNet5()
    wrong = torch.nn.Linear(3, 2).state_dict()
    with pytest.raises(checkpoints.CheckpointError, match="holds a different model"):
        checkpoints.restore_module(model, wrong, tmp_path / "x.pt")


def test_to_cpu_copies_nested_containers():
    value = {"a": [torch.ones(2, requires_grad=True), (torch.zeros(1), 3)], "b": "s"}
    moved = checkpoints.to_cpu(value)
    assert moved["a"][0].requires_grad is False and isinstance(moved["a"][1], tuple)
    assert moved["b"] == "s"


# --------------------------------------------------------------------------------------------
# The checkpoint a run saves, as evaluate, export, draw and --resume read it


EPOCH_NUMBERS = {"train_loss": 0.5, "train_accuracy": 0.9, "val_loss": 0.4, "val_accuracy": 0.9}


def test_a_checkpoint_reads_back_as_it_was_saved(tmp_path):
    saved = checkpoints.Checkpoint(
        model=LeNet5().state_dict(),
        config={"dataset": "folder:/photos", "epochs": 5},
        data_split={"classes": ["cat", "dog"]},
        epochs_done=3,
        history=[{"epoch": e, **EPOCH_NUMBERS} for e in (1, 2, 3)],
        rng={"generator": torch.Generator().get_state(), "torch": torch.get_rng_state()},
    )
    entries = dataclasses.asdict(saved)
    train.save_checkpoint(
        {k: entries[k] for k in entries if k not in ("missing", "problems")}, tmp_path / "best.pt"
    )
    loaded = checkpoints.Checkpoint.load(tmp_path / "best.pt")
    assert loaded.missing == ()
    assert (loaded.dataset, loaded.classes, loaded.epochs_done) == (
        "folder:/photos",
        ["cat", "dog"],
        3,
    )
    assert loaded.history == saved.history
    assert loaded.which_epoch(tmp_path / "best.pt") == (
        "the model after epoch 3 of 5, the best validation accuracy"
    )
    assert loaded.which_epoch(tmp_path / "last.pt") == "the model after epoch 3 of 5"


def test_what_train_saves_is_every_entry_of_the_format(trained_run):
    """train.py writes its checkpoints itself (torch.save on screen): every entry that
    evaluate, export, draw and --resume read is there, of the right kind."""
    for name in ("last.pt", "best.pt"):
        saved = checkpoints.Checkpoint.load(trained_run / name)
        assert saved.missing == (), (name, saved.missing)
        assert saved.model_class == "LeNet5" and saved.config["dataset"] == "synthetic"


def test_entries_an_older_or_edited_file_lacks_are_named_and_never_raise(tmp_path):
    """Entries of the wrong type count as missing: the readers need no checks of their own."""
    state = {"model": LeNet5().state_dict(), "config": "mnist", "epochs_done": True}
    state["data_split"] = {"classes": "not a list"}
    train.save_checkpoint(state, tmp_path / "old.pt")
    loaded = checkpoints.Checkpoint.load(tmp_path / "old.pt")
    assert {"config", "epochs_done", "optimizer", "rng", "position"} <= set(loaded.missing)
    assert (loaded.dataset, loaded.classes, loaded.which_epoch(tmp_path / "old.pt")) == (
        "mnist",
        None,
        "",
    )


def test_a_file_without_a_model_is_one_sentence(tmp_path):
    train.save_checkpoint({"config": {}}, tmp_path / "empty.pt")
    with pytest.raises(checkpoints.CheckpointError, match="holds no model; use a best.pt"):
        checkpoints.Checkpoint.load(tmp_path / "empty.pt")


def onnx_model(path: Path) -> Path:
    """A valid ONNX model (one Identity node), as any exporter writes one."""
    onnx = pytest.importorskip("onnx")
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    onnx.save(onnx.helper.make_model(graph, producer_name="pytorch"), str(path))
    return path


def test_an_exported_onnx_model_is_recognised_not_called_corrupt(tmp_path):
    """An ONNX model where a checkpoint was wanted is named as what it is, whatever its file
    name: never "corrupt", and never the advice to delete it."""
    for name in ("model.onnx", "renamed.pt"):
        path = onnx_model(tmp_path / name)
        with pytest.raises(checkpoints.CheckpointError) as refused:
            checkpoints.load_checkpoint(path)
        message = str(refused.value)
        assert f"{path} is an exported ONNX model, not a checkpoint" in message
        assert "corrupt" not in message and "Delete" not in message


def test_each_command_says_what_reads_an_onnx_model_given_as_checkpoint(capsys, cpu_only, tmp_path):
    """``--checkpoint model.onnx``: each command names its own way to read the model."""
    path = onnx_model(tmp_path / "model.onnx")
    for command, fix in [
        (predict_command.main, "add --runtime onnx to run it with ONNX Runtime"),
        (draw.main, "add --runtime onnx to run it with ONNX Runtime"),
        (evaluate.main, "evaluate it with --onnx {path} instead"),
        (export.main, "it is exported already; export reads a checkpoint, such as a best.pt"),
    ]:
        args = ["--checkpoint", str(path)]
        if command is predict_command.main:
            args.insert(0, str(tmp_path / "digit.png"))
        assert command(args) == 2
        err = capsys.readouterr().err
        assert fix.format(path=path) in err, err
        assert "corrupt" not in err and "Traceback" not in err


def test_a_folder_given_for_a_model_file_is_called_a_folder(capsys, cpu_only, tmp_path):
    """A folder where a file was wanted is not "missing": it is there, and is a folder."""
    folder = tmp_path / "runs" / "run1"
    folder.mkdir(parents=True)
    best = "name a checkpoint in it, such as {best}"
    for command, option, fix in [
        (predict_command.main, "--checkpoint", best),
        (draw.main, "--checkpoint", best),
        (evaluate.main, "--checkpoint", best),
        (export.main, "--checkpoint", best),
        (evaluate.main, "--onnx", "name the model in it, such as {onnx}"),
    ]:
        args = [option, str(folder)]
        if command is predict_command.main:
            args.insert(0, str(tmp_path / "digit.png"))
        assert command(args) == 2
        err = capsys.readouterr().err
        named = fix.format(best=folder / "best.pt", onnx=folder / "model.onnx")  # this system's
        assert f"{folder} is a folder: {named}" in err, err
        assert "There is no" not in err


# ---------------------------------------------------------- names from a file, escaped
# Names read from a .pt file are shown escaped in every message about it: a file from
# elsewhere may hold escape sequences that retitle the window, clear the screen or hide text.

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
