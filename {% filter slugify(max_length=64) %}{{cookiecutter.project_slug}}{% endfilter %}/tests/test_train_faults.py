"""A run stopped where its messages or files could go wrong: between the two saves of an
epoch, during a dry run, during the final test; options typed with --resume."""

from __future__ import annotations

import pytest

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.machinery import checkpoints, stopping


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
