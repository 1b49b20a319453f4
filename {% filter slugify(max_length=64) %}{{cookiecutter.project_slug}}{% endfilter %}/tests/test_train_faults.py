"""A run stopped where its messages or files could go wrong: between the two saves of an
epoch, during a dry run, during the final test; options typed with --resume."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import pytest
import torch

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.datasets.folder_split import split_change
from {{ cookiecutter.package_name }}.machinery import checkpoints, run_folders, stopping


def run(cfg, dataset, discovery, stop=None):
    return train.train(cfg, stop=stop, discovery=discovery, dataset=dataset)


def best_epoch(history):
    """The epoch best.pt must hold: the best validation accuracy, then the lower loss."""
    return max(history, key=lambda row: (row["val_accuracy"], -row["val_loss"]))["epoch"]


@pytest.mark.slow
def test_a_stop_between_the_two_saves_of_the_best_epoch_never_loses_it(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch
):
    """A second Ctrl+C (or a kill) right after the first file of epoch 2 is written: after
    --resume, best.pt is the best epoch of the history the run ends with."""
    real_save, saves = train.save_checkpoint, []

    def stopped_after_the_first_save_of_epoch_2(state, path):
        real_save(state, path)
        saves.append(path.name)
        if state["epochs_done"] == 2 and len(saves) == 3:
            raise KeyboardInterrupt  # a second Ctrl+C: stop at once

    monkeypatch.setattr(train, "save_checkpoint", stopped_after_the_first_save_of_epoch_2)
    cfg = tiny_config(tmp_path)
    with pytest.raises(stopping.Interrupted):
        run(cfg, tiny_dataset, cpu_discovery)
    monkeypatch.undo()
    run(train.TrainConfig(**{**cfg.__dict__, "resume": True}), tiny_dataset, cpu_discovery)
    history = checkpoints.Checkpoint.load(tmp_path / checkpoints.LAST).history
    assert best_epoch(history) == 2  # else this run would not show what is at stake
    assert checkpoints.Checkpoint.load(tmp_path / checkpoints.BEST).epochs_done == 2


@pytest.mark.slow
def test_resume_puts_the_best_epoch_into_a_best_pt_left_behind(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, trained_run, capsys
):
    """A run stopped between its saves by an older version (last.pt written first): its best
    epoch is in last.pt only, and --resume copies it into best.pt."""
    for name in (checkpoints.LAST, checkpoints.BEST):
        (tmp_path / name).write_bytes((trained_run / name).read_bytes())
    history = checkpoints.Checkpoint.load(tmp_path / checkpoints.LAST).history
    assert best_epoch(history) == 2
    state = checkpoints.load_checkpoint(tmp_path / checkpoints.BEST)
    state.update(epochs_done=1, history=history[:1])  # best.pt as epoch 1 left it
    for key in ("format", "version"):
        state.pop(key)
    train.save_checkpoint(state, tmp_path / checkpoints.BEST)
    cfg = tiny_config(tmp_path, resume=True)
    run(cfg, tiny_dataset, cpu_discovery)
    assert checkpoints.Checkpoint.load(tmp_path / checkpoints.BEST).epochs_done == 2
    assert "now holds epoch 2" in capsys.readouterr().out


def copy_of(trained_run, folder):
    """A copy of a finished 2-epoch run's checkpoints in ``folder``."""
    folder.mkdir(exist_ok=True)
    for name in (checkpoints.LAST, checkpoints.BEST):
        (folder / name).write_bytes((trained_run / name).read_bytes())
    return folder


def run_train(capsys, *args):
    code = train.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.slow
def test_an_option_typed_with_resume_counts_even_when_it_is_the_default(
    capsys, cpu_only, small_synthetic, tmp_path, trained_run
):
    """``--epochs 5`` (the default) on a finished 2-epoch run: said to be ignored, not taken
    for "nothing typed"."""
    out = str(copy_of(trained_run, tmp_path / "run"))
    code, text, _ = run_train(capsys, "--resume", "--epochs", "5", "--output-dir", out)
    assert code == 0
    assert "ignored: --epochs" in text and "This run is complete" in text


class PressedAt(stopping.StopSignal):
    """Ctrl+C pressed (a real one, through the run's handler) as training step ``at`` starts."""

    def __init__(self, at):
        super().__init__()
        self.at, self.steps = at, 0

    def step(self, real_step):
        def counted(*args):
            self.steps += 1
            if self.steps == self.at:
                signal.raise_signal(signal.SIGINT)
            return real_step(*args)

        return counted


@pytest.mark.slow
def test_ctrl_c_at_the_end_of_a_dry_run_claims_no_checkpoint(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch, capsys
):
    stop = PressedAt(train.TrainConfig.DRY_RUN_BATCHES)  # in the last batch: the epoch ends
    monkeypatch.setattr(train, "train_step", stop.step(train.train_step))
    out = tmp_path / "run"
    with pytest.raises(stopping.Interrupted) as caught:
        run(tiny_config(out, dry_run=True), tiny_dataset, cpu_discovery, stop)
    assert "Stopped after epoch 1." in str(caught.value)
    assert "last.pt" not in str(caught.value) and not out.exists()
    assert "saving a checkpoint" not in capsys.readouterr().out


@pytest.mark.slow
def test_a_second_ctrl_c_during_an_epochs_save_names_the_epoch_saved_before(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch
):
    real_save = train.save_checkpoint

    def pressed_again_while_saving_epoch_2(state, path):
        if state["epochs_done"] == 2:
            raise KeyboardInterrupt
        real_save(state, path)

    monkeypatch.setattr(train, "save_checkpoint", pressed_again_while_saving_epoch_2)
    with pytest.raises(stopping.Interrupted) as caught:
        run(tiny_config(tmp_path), tiny_dataset, cpu_discovery)
    message = str(caught.value)
    assert "the model after epoch 1 of 2" in message and "epoch 2" not in message
    assert checkpoints.Checkpoint.load(tmp_path / checkpoints.LAST).epochs_done == 1


@pytest.mark.slow
def test_a_full_disk_before_the_first_checkpoint_says_nothing_was_saved(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch
):
    def full_disk(obj, handle, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(stopping.TrainError) as caught:
        run(tiny_config(tmp_path), tiny_dataset, cpu_discovery)
    message = str(caught.value)
    assert "Could not write" in message and "Nothing was saved." in message
    assert "checkpoint is kept" not in message


def test_a_checkpoint_saved_inside_an_epoch_says_so():
    where = {"batch": 5, "generator": torch.Generator().get_state(), "loss_sum": 1.0}
    held = checkpoints.Checkpoint(
        model={}, config={"epochs": 3}, epochs_done=0, position={**where, "correct": 1}
    )
    assert held.which_epoch(Path("last.pt")) == "the model during epoch 1 of 3, after 5 batches"


@pytest.mark.slow
def test_ctrl_c_during_the_final_test_stops_it_and_says_what_is_saved(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch, capsys
):
    real_load_best = run_folders.load_best

    def pressed_as_the_test_starts(run_):
        tested = real_load_best(run_)
        signal.raise_signal(signal.SIGINT)  # a real Ctrl+C, through the run's handler
        return tested

    monkeypatch.setattr(run_folders, "load_best", pressed_as_the_test_starts)
    with pytest.raises(stopping.Interrupted) as caught:
        run(tiny_config(tmp_path), tiny_dataset, cpu_discovery)
    assert caught.value.exit_code == 130
    assert f"All 2 epochs are saved in {tmp_path}" in str(caught.value)
    assert "saving a checkpoint" not in capsys.readouterr().out  # no promise it breaks


@pytest.mark.slow
def test_a_dry_run_resumes_a_run_stopped_past_its_few_batches_and_writes_nothing(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch
):
    stop = PressedAt(5)  # stopped in epoch 1 after batch 5: past a dry run's 3
    with monkeypatch.context() as patched:
        patched.setattr(train, "train_step", stop.step(train.train_step))
        with pytest.raises(stopping.Interrupted):
            run(tiny_config(tmp_path), tiny_dataset, cpu_discovery, stop)
    saved = (tmp_path / checkpoints.LAST).read_bytes()
    assert checkpoints.Checkpoint.load(tmp_path / checkpoints.LAST).position["batch"] == 5
    result = run(tiny_config(tmp_path, resume=True, dry_run=True), tiny_dataset, cpu_discovery)
    assert [row["epoch"] for row in result.history] == [1]
    assert (tmp_path / checkpoints.LAST).read_bytes() == saved


def test_pictures_changed_in_the_same_number_are_not_called_a_different_count():
    part = {"images": 61, "hash": "a"}
    saved = {"classes": ["cat", "dog"], "train": part, "val": part, "test": part}
    now = {**saved, "train": {"images": 61, "hash": "b"}}
    change = split_change(saved, now)
    assert "train: other pictures, 61 as before" in change.sentence
    assert "61 now, 61 then" not in change.sentence


def test_a_runs_dir_that_is_a_file_is_told_to_name_another_runs_dir(capsys, cpu_only, tmp_path):
    not_a_folder = tmp_path / "runs.txt"
    not_a_folder.write_text("notes", encoding="utf-8")
    code, _, err = run_train(capsys, "--dataset", "synthetic", "--runs-dir", str(not_a_folder))
    assert code == 2 and "Name a folder you can write to with --runs-dir." in err
    assert "--output-dir" not in err
    assert not_a_folder.read_text(encoding="utf-8") == "notes"


@pytest.mark.skipif(
    os.name == "nt",
    reason="the folder is made read-only by replacing os.open, which not every "
    "write of a run goes through on Windows",
)
def test_resume_in_a_folder_it_cannot_write_keeps_the_run_in_its_advice(
    capsys, cpu_only, tmp_path, trained_run, monkeypatch
):
    real_open = os.open
    for typed in (True, False):  # --output-dir typed, or the latest run in --runs-dir
        runs = tmp_path / f"runs-{typed}"
        runs.mkdir()
        folder = copy_of(trained_run, runs / "run")

        # The folder's files can be read, not made.
        def read_only(path, flags, *args, folder=folder, **kwargs):
            if Path(path).parent == folder and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise PermissionError(errno.EROFS, "Read-only file system", str(path))
            return real_open(path, flags, *args, **kwargs)

        where = ["--output-dir", str(folder)] if typed else ["--runs-dir", str(runs)]
        with monkeypatch.context() as patched:
            patched.setattr(os, "open", read_only)
            code, _, err = run_train(capsys, "--resume", *where)
        assert code == 2 and "Cannot write to the output directory" in err, where
        assert f"make {folder} writable" in err and "Choose another one" not in err
