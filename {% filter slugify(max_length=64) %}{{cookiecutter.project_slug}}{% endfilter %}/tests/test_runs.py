"""Runs a learner can compare: every run keeps its own folder, one picture shows several runs
labelled by what differs, and --resume and evaluate take the latest run by default."""

from __future__ import annotations

import datetime
import os
import time
from dataclasses import replace

import pytest

from {{ cookiecutter.package_name }} import (
    evaluate,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    devices,
    plots,
    run_folders,
    stopping,
)

NOW = datetime.datetime(2026, 3, 14, 10, 9, 13)


def _train(runs_dir, discovery, dataset, **settings):
    cfg = train.TrainConfig(
        epochs=1, dataset="synthetic", device="cpu", batch_size=64, runs_dir=runs_dir, **settings
    )
    return train.train(cfg, discovery=discovery, dataset=dataset)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_dataset):
    """runs/ after the README's experiment: the default run, then ``--optimizer adam``."""
    cpu = devices.discover(probes=[devices.probe_cpu])
    runs_dir = tmp_path_factory.mktemp("experiment") / "runs"
    first = _train(runs_dir, cpu, tiny_dataset)
    first_bytes = (first.output_dir / "last.pt").read_bytes()
    second = _train(runs_dir, cpu, tiny_dataset, optimizer="adam")
    return runs_dir, first, second, first_bytes


@pytest.mark.slow
def test_a_second_run_keeps_the_first_one_and_its_folder_says_what_changed(two_runs):
    runs_dir, first, second, first_bytes = two_runs
    assert first.output_dir != second.output_dir
    assert first.output_dir.parent == second.output_dir.parent == runs_dir
    # named after the time and what differs from the defaults (here also 1 epoch, batch 64...)
    assert "_adam_" in second.output_dir.name and "adam" not in first.output_dir.name
    assert (first.output_dir / "last.pt").read_bytes() == first_bytes  # not replaced
    for run in (first, second):
        for name in ("last.pt", "best.pt", "metrics.json", "curves.png"):
            assert (run.output_dir / name).is_file(), (run.output_dir, name)


@pytest.mark.slow
def test_the_runs_are_drawn_together_labelled_by_what_differs(two_runs):
    runs_dir, first, second, _ = two_runs
    assert first.compared is None  # alone, there is nothing to compare
    assert second.compared == runs_dir / run_folders.COMPARE_PNG
    assert second.compared.read_bytes().startswith(b"\x89PNG")
    found = [run_folders._read(folder) for folder in run_folders.runs_in(runs_dir)]
    run_folders.label_runs(found)
    assert [r.label for r in found] == ["sgd, lr 0.05", "adam, lr 0.002"]


@pytest.mark.slow
def test_resume_continues_the_latest_run_by_default(two_runs, tiny_dataset, cpu_discovery):
    runs_dir, _, second, _ = two_runs
    cfg = train.TrainConfig(device="cpu", runs_dir=runs_dir, resume=True)
    result = train.train(cfg, discovery=cpu_discovery, dataset=tiny_dataset)
    assert result.output_dir == second.output_dir  # the adam run: nothing left to train
    assert [row["epoch"] for row in result.history] == [1]


@pytest.mark.slow
def test_evaluate_tests_the_latest_run_by_default(two_runs):
    runs_dir, _, second, _ = two_runs
    assert evaluate.find_checkpoint(runs_dir) == second.output_dir / "best.pt"


def test_the_latest_run_is_the_one_trained_last_not_the_last_name(tmp_path):
    runs_dir = tmp_path / "runs"
    # "." is runs/ itself: a run written there with --output-dir runs, before the others
    named = (("2026-03-14_10-00-00", 10), ("my-own-name", 100), ("2026-03-14_09", 0), (".", 50))
    for name, age in named:
        (runs_dir / name).mkdir(parents=True, exist_ok=True)
        (runs_dir / name / "last.pt").write_bytes(b"x")
        stamp = time.time() - 1000 + age
        os.utime(runs_dir / name / "last.pt", (stamp, stamp))
    (runs_dir / "not-a-run").mkdir()
    assert run_folders.latest_run(runs_dir) == runs_dir / "my-own-name"
    assert evaluate.find_checkpoint(runs_dir) == runs_dir / "my-own-name" / "last.pt"
    assert run_folders.latest_run(tmp_path / "nothing-here") is None


def test_resume_with_no_run_says_what_to_do(tmp_path, tiny_dataset, cpu_discovery):
    cfg = train.TrainConfig(device="cpu", runs_dir=tmp_path / "runs", resume=True)
    with pytest.raises(stopping.TrainError) as caught:
        train.train(cfg, discovery=cpu_discovery, dataset=tiny_dataset)
    assert str(caught.value) == (
        f"Nothing to resume: no run in {tmp_path / 'runs'} has a last.pt. Start without --resume."
    )


def test_run_names_say_what_differs_and_are_safe_on_windows(tmp_path):
    assert run_folders.run_name(train.TrainConfig(), NOW) == "2026-03-14_10-09-13"
    cfg = train.TrainConfig(optimizer="adam", lr=0.001, epochs=10, dataset="folder:C:\\my pics")
    name = run_folders.run_name(cfg, NOW)
    assert name.startswith("2026-03-14_10-09-13_adam_lr0.001_10epochs_folder-C-")
    assert not set(name) & set(':\\/*?"<>| ')
    (tmp_path / name).mkdir()  # a name the file system accepts
    assert run_folders.new_run_folder(tmp_path, name) == tmp_path / f"{name}-2"


def test_a_run_name_keeps_the_sign_of_an_exponent():
    """lr 1e+09 and lr 1e-09 are a billion and a billionth: the folder must not swap them."""
    big, small = (train.TrainConfig(lr=lr) for lr in (1e9, 1e-9))
    assert run_folders.run_name(big, NOW) == "2026-03-14_10-09-13_lr1e+09"
    assert run_folders.run_name(small, NOW) == "2026-03-14_10-09-13_lr1e-09"


@pytest.mark.slow
def test_an_explicit_output_dir_is_the_run_folder_itself(tmp_path, tiny_dataset, cpu_discovery):
    out = tmp_path / "mine"
    result = _train(tmp_path / "runs", cpu_discovery, tiny_dataset, output_dir=out)
    assert result.output_dir == out and (out / "last.pt").is_file()
    assert checkpoints.load_checkpoint(out / "last.pt")["epochs_done"] == 1
    assert not (tmp_path / "runs").exists()


def test_the_comparison_names_each_run_in_its_legend(tmp_path):
    history = [{"epoch": 1, "val_loss": 0.2, "val_accuracy": 0.95}]
    history += [{"epoch": 2, "val_loss": 0.1, "val_accuracy": 1.0}]  # no error: on the floor
    within = [{"epoch": 0.5, "train_loss": 0.6, "train_accuracy": 0.8}]
    figure = plots.comparison_figure(
        [("sgd, lr 0.05", history, within), ("adam, lr 0.002", history, within)], "Runs"
    )
    loss_ax, error_ax = figure.axes[:2]
    labels = [text.get_text() for text in error_ax.get_legend().get_texts()]
    assert labels == ["sgd, lr 0.05", "adam, lr 0.002"]
    assert loss_ax.get_yscale() == error_ax.get_yscale() == "log"


# --------------------------------------------------------------------------------------------
# Runs folders as users leave them: other runs' files edited, odd names, runs removed


def _fake_run(runs_dir, name, metrics, age=0):
    """A run folder as training leaves it: last.pt, and ``metrics`` as its metrics.json."""
    import json

    folder = runs_dir / name
    folder.mkdir(parents=True)
    (folder / "last.pt").write_bytes(b"x")
    text = metrics if isinstance(metrics, str) else json.dumps(metrics)
    (folder / "metrics.json").write_text(text, encoding="utf-8")
    stamp = time.time() - 1000 + age
    os.utime(folder / "last.pt", (stamp, stamp))
    return folder


def _metrics(dataset="synthetic", **config):
    return {
        "epochs": [{"epoch": 1, "val_loss": 0.3, "val_accuracy": 0.9}],
        "within_epochs": [{"epoch": 0.5, "train_loss": 0.6, "train_accuracy": 0.8}],
        "config": {"dataset": dataset, "optimizer": "sgd", "lr": None, "peak_lr": 0.05, **config},
    }


def test_a_run_whose_metrics_cannot_be_read_is_left_out_with_one_line(tmp_path):
    runs_dir = tmp_path / "runs"
    _fake_run(runs_dir, "a-good", _metrics(), age=1)
    _fake_run(runs_dir, "b-list", "[]", age=2)
    _fake_run(runs_dir, "c-wrong-type", {**_metrics(), "epochs": "many"}, age=3)
    _fake_run(runs_dir, "d-wrong-row", {**_metrics(), "epochs": [{"epoch": "1"}]}, age=4)
    no_lr = _metrics(optimizer="adam")
    del no_lr["config"]["lr"], no_lr["config"]["peak_lr"]
    _fake_run(runs_dir, "e-no-lr", no_lr, age=5)
    _fake_run(runs_dir, "f-lr-text", _metrics(peak_lr="fast"), age=6)
    _fake_run(runs_dir, "g-garbled", "{not json", age=7)
    said = []
    assert run_folders.compare(runs_dir, said.append) == runs_dir / run_folders.COMPARE_PNG
    assert said == [
        f"note: {name} is left out of compare.png: its metrics.json {why}."
        for name, why in [
            ("b-list", "holds no run's metrics"),
            ("c-wrong-type", "is not one this project writes"),
            ("d-wrong-row", "is not one this project writes"),
            ("g-garbled", "cannot be read (JSONDecodeError)"),
        ]
    ]


def test_a_neighbours_extreme_metrics_draw_without_a_raw_warning(tmp_path):
    """A loss of 1e300 in another run's metrics.json (edited, or from other code) overflows
    the log axis inside numpy: compare.png is drawn as training draws it, and no warning is
    printed."""
    import warnings

    runs_dir = tmp_path / "runs"
    _fake_run(runs_dir, "a-good", _metrics(), age=1)
    extreme = _metrics(seed=2)
    extreme["epochs"][0]["val_loss"] = extreme["within_epochs"][0]["train_loss"] = 1e300
    _fake_run(runs_dir, "b-extreme", extreme, age=2)
    picture = runs_dir / run_folders.COMPARE_PNG
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = plots.draw_safely(lambda: run_folders.compare(runs_dir), picture)
    assert drawn == picture and picture.read_bytes().startswith(b"\x89PNG")
    assert [str(w.message) for w in caught] == []


def test_a_dollar_in_a_folder_name_is_drawn_as_written(tmp_path):
    runs_dir = tmp_path / "runs"
    _fake_run(runs_dir, "one", _metrics(dataset="folder:/data/sh$\\foo$pes"), age=1)
    _fake_run(runs_dir, "two", _metrics(dataset="folder:/data/$x$", seed=2), age=2)
    assert run_folders.compare(runs_dir) == runs_dir / run_folders.COMPARE_PNG
    title = "LeNet-5 on your images (sh$\\foo$pes) - cpu"
    row = {"epoch": 1, "train_loss": 0.5, "train_accuracy": 0.8}
    figure = plots.curves_figure([{**row, "val_loss": 0.3, "val_accuracy": 0.9}], title)
    figure.canvas.draw()  # mathtext would raise here
    assert figure.texts[0].get_text() == "LeNet-5 on your images (sh\\$\\foo\\$pes) - cpu"


@pytest.mark.slow
def test_a_picture_that_cannot_be_drawn_never_fails_the_run(
    tmp_path, tiny_dataset, cpu_discovery, capsys, monkeypatch
):
    def broken(*args, **kwargs):
        raise ValueError("no font for this title")

    monkeypatch.setattr(plots, "plot_curves", broken)
    cfg = train.TrainConfig(epochs=2, dataset="synthetic", device="cpu", batch_size=256)
    result = train.train(
        replace(cfg, runs_dir=tmp_path / "runs"), discovery=cpu_discovery, dataset=tiny_dataset
    )
    assert [row["epoch"] for row in result.history] == [1, 2]
    for name in ("last.pt", "best.pt", "metrics.json"):
        assert (result.output_dir / name).is_file()
    out = capsys.readouterr().out
    note = "note: curves.png could not be drawn (ValueError: no font for this title); "
    assert out.count(note) == 1  # said once, not every epoch


def test_a_run_removed_while_the_runs_are_listed_is_no_crash(tmp_path, monkeypatch):
    runs_dir = tmp_path / "runs"
    kept = _fake_run(runs_dir, "kept", _metrics(), age=1)
    going = _fake_run(runs_dir, "going", _metrics(), age=2)
    real_stat = type(going).stat

    def removed_right_after(path, *args, **kwargs):  # another process deletes the run
        found = real_stat(path, *args, **kwargs)
        if path == going / "last.pt" and os.path.exists(path):
            path.unlink()
        return found

    monkeypatch.setattr(type(going), "stat", removed_right_after)
    assert run_folders.runs_in(runs_dir) in ([kept], [kept, going])
    assert run_folders.compare(runs_dir) in (None, runs_dir / run_folders.COMPARE_PNG)
