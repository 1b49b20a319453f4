"""Evaluation of a trained checkpoint: accuracy, per-class accuracy, confusion matrix."""

from __future__ import annotations

import json
import shutil
import urllib.request

import numpy as np
import pytest
import torch

from {{ cookiecutter.package_name }} import (
    evaluate,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    plots,
)


def test_confusion_matrix_counts_true_rows_and_predicted_columns():
    labels = torch.tensor([0, 0, 1, 2, 2, 2])
    predictions = torch.tensor([0, 1, 1, 2, 0, 2])
    matrix = evaluate.confusion_matrix(predictions, labels)
    assert matrix[0][:3] == [1, 1, 0] and matrix[1][:3] == [0, 1, 0] and matrix[2][:3] == [1, 0, 2]
    assert sum(map(sum, matrix)) == 6 and len(matrix) == 10


def test_report_agrees_with_the_training_run(trained_run, tiny_dataset, cpu_discovery):
    report = evaluate.evaluate_checkpoint(
        trained_run / "last.pt", "cpu", discovery=cpu_discovery, dataset=tiny_dataset
    )
    metrics = json.loads((trained_run / "metrics.json").read_text(encoding="utf-8"))
    assert report.accuracy == pytest.approx(metrics["test"]["accuracy"])  # same model, same data
    assert report.images == 512 and report.dataset == "synthetic"
    totals = [sum(row) for row in report.confusion]
    weighted = sum(a * n for a, n in zip(report.per_class, totals)) / sum(totals)
    assert weighted == pytest.approx(report.accuracy)
    assert totals == torch.bincount(tiny_dataset.test.labels, minlength=10).tolist()


def test_outputs_are_written_and_labelled(trained_run, tiny_dataset, cpu_discovery, tmp_path):
    report = evaluate.evaluate_checkpoint(
        evaluate.find_checkpoint(trained_run), "cpu", discovery=cpu_discovery, dataset=tiny_dataset
    )
    assert report.checkpoint.name == "best.pt"
    png, metrics = evaluate.write_outputs(report, tmp_path)
    assert png.read_bytes().startswith(b"\x89PNG")
    saved = json.loads(metrics.read_text(encoding="utf-8"))
    assert saved["synthetic"] is True and len(saved["confusion_matrix"]) == 10
    text = evaluate.format_report(report)
    assert "SYNTHETIC test digits (not MNIST)" in text and "most often taken for" in text


def test_no_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(evaluate.EvaluationError, match="There is no trained model in"):
        evaluate.find_checkpoint(tmp_path)


def test_a_foreign_file_is_a_clear_error(tmp_path, cpu_discovery):
    path = tmp_path / "weights.pt"
    torch.save({"fc.weight": torch.zeros(2)}, path)
    with pytest.raises(evaluate.EvaluationError, match="not a checkpoint written by this project"):
        evaluate.evaluate_checkpoint(path, "cpu", discovery=cpu_discovery)


def mnist_checkpoint(trained_run, folder, data_dir):
    """best.pt of a run on MNIST that read its data from ``data_dir`` (another machine's)."""
    state = checkpoints.load_checkpoint(trained_run / "best.pt")
    state["config"]["dataset"] = "mnist"
    state["data_dir"] = str(data_dir)
    train.save_checkpoint(state, folder / "best.pt")
    return folder / "best.pt"


@pytest.fixture
def downloads(monkeypatch):
    """Every URL torchvision tries to open, refused as offline."""
    opened = []

    def refuse(url, *args, **kwargs):
        opened.append(url)
        raise OSError("network is unreachable (blocked by the test)")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return opened


def test_the_data_folder_a_checkpoint_names_is_never_created_or_downloaded_into(
    capsys, cpu_only, downloads, trained_run, tmp_path
):
    elsewhere = tmp_path / "home" / "someone" / "data"  # where its trainer kept MNIST
    path = mnist_checkpoint(trained_run, tmp_path, elsewhere)
    assert evaluate.main(["--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"trained on MNIST from {elsewhere}, which does not hold the test files" in err
    assert "Pass --data-dir" in err and "Traceback" not in err
    assert not (tmp_path / "home").exists()
    assert downloads == []


def test_text_from_a_checkpoint_cannot_control_the_terminal(
    capsys, cpu_only, downloads, trained_run, tmp_path
):
    path = mnist_checkpoint(trained_run, tmp_path, "data\x1b]0;pwned\x07\x1b[2J")
    assert evaluate.main(["--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "data\\x1b]0;pwned\\x07" in err


@pytest.mark.slow
def test_data_dir_is_said_to_be_ignored_for_synthetic_digits(
    capsys, cpu_only, trained_run, tmp_path
):
    shutil.copy(trained_run / "best.pt", tmp_path / "best.pt")
    args = ["--checkpoint", str(tmp_path / "best.pt"), "--data-dir", str(tmp_path / "mnist")]
    assert evaluate.main(args) == 0
    out = capsys.readouterr().out
    assert "note: --data-dir is ignored: this checkpoint was trained on synthetic digits" in out
    assert "SYNTHETIC test digits" in out
    assert not (tmp_path / "mnist").exists()


def test_a_data_dir_that_is_a_file_gets_advice_that_can_work(
    capsys, cpu_only, downloads, trained_run, tmp_path
):
    path = mnist_checkpoint(trained_run, tmp_path, tmp_path)
    a_file = tmp_path / "mnist.zip"
    a_file.write_bytes(b"PK")
    assert evaluate.main(["--checkpoint", str(path), "--data-dir", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert f"--data-dir {a_file} is a file, not a folder" in err
    package = evaluate.__package__
    assert f"python -m {package}.data --data-dir data" in err
    assert f"python -m {package}.evaluate --checkpoint {path} --data-dir data" in err
    assert f"--data-dir {a_file}  (" not in err and f".data --data-dir {a_file}" not in err
    assert downloads == []


def cell_colours(figure, cells):
    """The RGB colour a viewer sees at the centre of each (row, column) cell."""
    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3] / 255.0
    ax = figure.axes[0]
    height = pixels.shape[0]
    found = {}
    for row, column in cells:
        x, y = ax.transData.transform((column + 0.3, row + 0.3))  # off the number's centre
        found[(row, column)] = pixels[int(height - y), int(x)]
    return found


def test_a_few_errors_next_to_a_thousand_correct_are_visible_and_counted():
    matrix = [[0] * 10 for _ in range(10)]
    for digit in range(10):
        matrix[digit][digit] = 970 + 10 * digit  # MNIST's test set: about 1,000 per digit
    matrix[4][9], matrix[7][2], matrix[9][4] = 7, 1, 3
    figure = plots.confusion_figure(matrix, "Confusion matrix: 99.89% correct\nMNIST")
    colours = cell_colours(figure, [(4, 9), (7, 2), (0, 1), (3, 3)])
    empty = colours[(0, 1)]
    assert np.abs(colours[(4, 9)] - empty).max() > 0.5  # the worst confusion stands out
    assert np.abs(colours[(7, 2)] - empty).max() > 0.1  # a single error is still seen
    assert np.abs(colours[(3, 3)] - colours[(4, 9)]).max() > 0.3  # correct != error
    texts = {text.get_text() for text in figure.axes[0].texts}
    assert {"7", "1", "3", "970", "1060"} <= texts  # the numbers are kept
    assert "0" not in texts  # empty cells stay blank


def test_the_confusion_title_names_the_dataset(
    trained_run, tiny_dataset, cpu_discovery, tmp_path, monkeypatch
):
    titles = []
    plot = plots.plot_confusion
    monkeypatch.setattr(
        plots,
        "plot_confusion",
        lambda m, p, title, *names: titles.append(title) or plot(m, p, title, *names),
    )
    report = evaluate.evaluate_checkpoint(
        trained_run / "last.pt", "cpu", discovery=cpu_discovery, dataset=tiny_dataset
    )
    evaluate.write_outputs(report, tmp_path)
    assert titles == [
        f"Confusion matrix: {100 * report.accuracy:.2f}% correct\n"
        "SYNTHETIC digits (generated, not MNIST), test set"
    ]
