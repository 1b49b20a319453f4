"""The training loop's edges: checkpoints that look right and hold the wrong thing, settings
beyond what float32 or momentum allows, the NaN guard's advice, and the commands' files run as
scripts (PyCharm's green arrow beside ``if __name__ == "__main__":``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from {{ cookiecutter.package_name }} import (
    data,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    distributed,
    stopping,
)
from test_distributed import ARGS, ROOT, finish, not_on_windows, start, torchrun_command

SRC = Path(__file__).resolve().parents[1] / "src"


def run_train(capsys, *args):
    code = train.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def copy_of_run(trained_run, folder, edit):
    """A copy of a finished 2-epoch run's best.pt and last.pt in ``folder``, its last.pt
    changed by ``edit(state)``; returns both files' bytes, to see that nothing rewrote them."""
    for name in (checkpoints.BEST, checkpoints.LAST):
        state = checkpoints.load_checkpoint(trained_run / name)
        if name == checkpoints.LAST:
            edit(state)
        for key in ("format", "version"):
            state.pop(key)
        train.save_checkpoint(state, folder / name)
    return {name: (folder / name).read_bytes() for name in (checkpoints.BEST, checkpoints.LAST)}


def stopped_inside_epoch_2(state, **position):
    """What a run stopped in its second epoch saves, with ``position``'s entries changed."""
    where = {
        "batch": 5,
        "generator": torch.Generator().manual_seed(1).get_state(),
        "loss_sum": 12.5,
        "correct": 300,
        "seen": 320,
        "seconds": 1.5,
    }
    state.update(
        epochs_done=1,
        history=state["history"][:1],
        points=[p for p in state["points"] if p["epoch"] == 1],
        position={**where, **position},
    )


def assert_refused_and_kept(capsys, folder, before, *wanted):
    """--resume in ``folder`` is refused in one sentence naming its last.pt, twice (nothing was
    saved in between), and best.pt and last.pt are as they were."""
    for _ in range(2):
        code, _, err = run_train(capsys, "--resume", "--output-dir", str(folder))
        assert code == 2, err
        assert err.startswith(f"error: {folder / checkpoints.LAST} cannot be resumed: "), err
        assert "without --resume" in err and len(err.strip().splitlines()) == 1, err
        for text in wanted:
            assert text in err, err
    assert {name: (folder / name).read_bytes() for name in before} == before


# --------------------------------------------------------------------------------------------
# Resume state that cannot be continued


EPOCH_COUNTS = {
    "negative": (lambda state: state.update(epochs_done=-5), "epochs_done is -5, below 0"),
    "more than planned": (
        lambda state: state.update(
            epochs_done=3, history=[*state["history"], {**state["history"][-1], "epoch": 3}]
        ),
        "more than the 2 epochs planned",
    ),
    "not the history's": (
        lambda state: state.update(epochs_done=1),
        "its history has 2 epochs, but epochs_done is 1",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit, wanted", EPOCH_COUNTS.values(), ids=EPOCH_COUNTS.keys())
def test_a_resume_from_an_impossible_epoch_count_is_refused_and_keeps_both_checkpoints(
    capsys, cpu_only, small_synthetic, tmp_path, trained_run, edit, wanted
):
    before = copy_of_run(trained_run, tmp_path, edit)
    assert_refused_and_kept(capsys, tmp_path, before, wanted)


DAMAGED = {
    "position batch x": (
        lambda state: stopped_inside_epoch_2(state, batch="x"),
        "its position has batch='x'",
    ),
    "position without its generator": (
        lambda state: stopped_inside_epoch_2(state, generator=None),
        "its position has generator=None",
    ),
    "history of strings": (
        lambda state: state.update(history=["epoch 1", "epoch 2"]),
        "history row 1 is a str",
    ),
    "history without val_accuracy": (
        lambda state: [row.pop("val_accuracy") for row in state["history"]],
        "history row 1 has no val_accuracy",
    ),
    "points without epoch": (
        lambda state: [point.pop("epoch") for point in state["points"]],
        "curve point 1 has no epoch",
    ),
    "a random state that is text": (
        lambda state: state["rng"].update(torch="mt19937"),
        "its random state has no torch state",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit, wanted", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_checkpoint_with_damaged_entries_is_one_sentence_and_never_saved_again(
    capsys, cpu_only, small_synthetic, tmp_path, trained_run, edit, wanted
):
    before = copy_of_run(trained_run, tmp_path, edit)
    assert_refused_and_kept(capsys, tmp_path, before, wanted)


def momentum_buffer_of_another_shape(state):
    first = next(iter(state["optimizer"]["state"].values()))
    first["momentum_buffer"] = torch.zeros(3)


DOES_NOT_FIT = {
    "position after the epoch's end": (
        lambda state: stopped_inside_epoch_2(state, batch=10_000),
        "it stopped at batch 10000 of an epoch of 22",
    ),
    "momentum buffer of another shape": (
        momentum_buffer_of_another_shape,
        "its optimizer's momentum_buffer does not fit the model",
    ),
    "momentum that is text": (
        lambda state: state["optimizer"]["param_groups"][0].update(momentum="0.9"),
        "its optimizer's momentum is '0.9'",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit, wanted", DOES_NOT_FIT.values(), ids=DOES_NOT_FIT.keys())
def test_a_checkpoint_that_does_not_fit_the_run_is_refused_before_the_first_step(
    capsys, cpu_only, small_synthetic, tmp_path, trained_run, edit, wanted
):
    before = copy_of_run(trained_run, tmp_path, edit)
    assert_refused_and_kept(capsys, tmp_path, before, wanted)


def test_damaged_entries_count_as_missing_and_say_why(tmp_path):
    """For evaluate, export and draw, which need the model, not the run's history."""
    state = {"model": {}, "epochs_done": -2, "history": ["x"], "config": {"epochs": 2}}
    train.save_checkpoint(state, tmp_path / "last.pt")
    loaded = checkpoints.Checkpoint.load(tmp_path / "last.pt")
    assert {"epochs_done", "history"} <= set(loaded.missing)
    assert loaded.problems["epochs_done"] == "epochs_done is -2, below 0"
    assert loaded.which_epoch(tmp_path / "last.pt") == ""  # not "after epoch -2"


# --------------------------------------------------------------------------------------------
# Settings: float32's range, momentum below 1, saved settings shown short


BEYOND = [
    (["--lr", "1e39"], "--lr: must be at most 3.403e+38 (the largest float32), not 1e39"),
    (["--weight-decay", "1e39"], "--weight-decay: must be at most 3.403e+38"),
    (["--momentum", "1e39"], "--momentum: must be from 0 up to (not including) 1"),
    (["--momentum", "5"], "--momentum: must be from 0 up to (not including) 1"),
    (["--momentum", "1"], "--momentum: must be from 0 up to (not including) 1"),
]


def test_settings_beyond_float32_or_a_momentum_of_1_or_more_are_refused_at_once(capsys):
    for args, expected in BEYOND:
        with pytest.raises(SystemExit) as caught:
            train.main(["--dataset", "synthetic", "--dry-run", *args])
        assert caught.value.code == 2, args
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err, err


SAVED = {
    "lr=1e39": (lambda config: config.update(lr=1e39), "lr=1e+39 is not a positive float32"),
    "momentum=5": (lambda config: config.update(momentum=5.0), "momentum=5.0 is not a number"),
    "3 MB optimizer": (
        lambda config: config.update(optimizer="x" * 3_000_000),
        "optimizer='xxxxxxxx",
    ),
    "3 MB folder path": (
        lambda config: config.update(dataset="folder:" + "a" * 3_000_000),
        "dataset='folder:aaaa",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit, wanted", SAVED.values(), ids=SAVED.keys())
def test_saved_settings_a_run_cannot_use_are_refused_in_one_short_line(
    capsys, cpu_only, small_synthetic, tmp_path, trained_run, edit, wanted
):
    before = copy_of_run(trained_run, tmp_path, lambda state: edit(state["config"]))
    assert_refused_and_kept(capsys, tmp_path, before, wanted)
    _, _, err = run_train(capsys, "--resume", "--output-dir", str(tmp_path))
    assert len(err) < 500, err[:1000]


def test_a_dataset_path_the_system_refuses_is_one_short_sentence(capsys, cpu_only, tmp_path):
    code, _, err = run_train(
        capsys, "--dataset", "folder:" + "a" * 100_000, "--output-dir", str(tmp_path / "run")
    )
    # Linux refuses the name (File name too long); Windows says no such folder: one short
    # sentence either way
    assert code == 2 and err.startswith("error: ") and "aaaa" in err, err[:300]
    assert "subfolder" in err and len(err) < 500 and err.count("\n") <= 1, err[:300]


# --------------------------------------------------------------------------------------------
# The NaN guard's advice


@pytest.mark.slow
def test_the_nan_guard_names_the_unusual_settings_that_likely_caused_it(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, monkeypatch
):
    real_step, calls = train.train_step, []

    def diverging_step(model, optimizer, images, labels):
        calls.append(1)
        if len(calls) == 2:  # the weights blow up, as with a momentum near 1
            with torch.no_grad():
                model.fc3.weight.fill_(float("inf"))
        return real_step(model, optimizer, images, labels)

    monkeypatch.setattr(train, "train_step", diverging_step)
    cfg = tiny_config(tmp_path, momentum=0.999, weight_decay=0.5, log_interval=1, dry_run=True)
    with pytest.raises(stopping.TrainingDiverged) as caught:
        train.train(cfg, discovery=cpu_discovery, dataset=tiny_dataset)
    message = str(caught.value)
    assert "--momentum 0.999 (default 0.9)" in message, message
    assert "--weight-decay 0.5 (default 0.0005)" in message, message
    assert "--lr 0.05" not in message  # the default peak: not the likely reason


def test_the_nan_guard_with_the_default_settings_advises_a_lower_lr():
    error = stopping.diverged(0, 4, "runs/x/last.pt", 0, False, train.TrainConfig(lr=0.08))
    assert str(error).endswith("Try a lower --lr (now 0.08).")


# --------------------------------------------------------------------------------------------
# The commands' files run as scripts


SCRIPTS = {
    "train": "usage: python -m {{ cookiecutter.package_name }}.train",
    "evaluate": "usage: python -m {{ cookiecutter.package_name }}.evaluate",
    "export": "usage: python -m {{ cookiecutter.package_name }}.export",
    "draw": "usage: python -m {{ cookiecutter.package_name }}.draw",
    "predict": "usage: python -m {{ cookiecutter.package_name }}.predict",
    "benchmark": "usage: python -m {{ cookiecutter.package_name }}.benchmark",
    "data": "usage: python -m {{ cookiecutter.package_name }}.data",
    "verify_install": "usage: python -m {{ cookiecutter.package_name }}.verify_install",
}


@pytest.mark.slow
@pytest.mark.parametrize("command", SCRIPTS)
def test_a_command_file_run_as_a_script_runs_as_its_module(tmp_path, child_limit, command):
    """``python src/<package>/train.py``: what PyCharm's arrow beside ``__main__`` runs, from
    another folder and without the project on PYTHONPATH."""
    script = SRC / data.__package__ / f"{command}.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=child_limit,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert SCRIPTS[command] in done.stdout and "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())  # --help writes nothing


def test_a_copy_of_predict_run_as_a_script_still_says_it_is_a_module(tmp_path, child_limit):
    copy = tmp_path / "predict.py"
    copy.write_bytes((SRC / data.__package__ / "predict.py").read_bytes())
    done = subprocess.run(
        [sys.executable, str(copy)],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=child_limit,
    )
    assert done.returncode == 1
    assert "This file is a module: `from predict import Model`" in done.stderr


# --------------------------------------------------------------------------------------------
# torchrun: the processes leave together


@pytest.mark.slow  # starts processes: the fast set leaves it out
@pytest.mark.torchrun
@not_on_windows
def test_after_a_good_run_no_process_leaves_before_the_first_has_finished(tmp_path, child_limit):
    """A process that ends while the first still writes the run's files may end in gloo's
    "terminate called without an active exception" on a busy machine: every process waits
    for the first one."""
    exited = tmp_path / "exited"
    exited.mkdir()
    run = start(
        torchrun_command("--standalone", "--nproc-per-node=2")
        + [*ARGS, "--output-dir", str(tmp_path / "run")],
        ROOT,
        LATE_FINISH_S="2",
        EXIT_FOLDER=str(exited),
    )
    output = finish(run, child_limit)
    assert run.returncode == 0, output[-3000:]
    finished = [p for p in exited.iterdir() if p.name.startswith("finished-")]
    assert len(finished) == 1, output[-3000:]
    first = finished[0].name.partition("-")[2]
    others = [p for p in exited.iterdir() if p.name not in (first, finished[0].name)]
    assert len(others) == 1, sorted(p.name for p in exited.iterdir())
    assert others[0].stat().st_mtime_ns >= finished[0].stat().st_mtime_ns


def test_under_torchrun_a_finished_command_ends_its_process_without_finalization(
    tmp_path, child_limit
):
    """What ends a torchrun process: its exit code, its output flushed, and none of Python's
    finalization (where a gloo thread that runs late aborts the process)."""
    program = (
        "import atexit, sys\n"
        "from {{ cookiecutter.package_name }}.machinery import distributed\n"
        "atexit.register(lambda: print('finalized'))\n"
        "print('trained', end='')\n"
        "sys.exit(distributed.end_process(3) + 10)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC), WORLD_SIZE="2", RANK="1", LOCAL_RANK="1")
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=child_limit,
    )
    assert (done.returncode, done.stdout) == (3, "trained"), done.stderr[-2000:]
    assert distributed.end_process(3) == 3  # without torchrun: the code, and nothing else
