"""Evaluation of a trained checkpoint: accuracy, per-class accuracy, confusion matrix."""

from __future__ import annotations

import json

import pytest
import torch

from {{ cookiecutter.package_name }} import (
    evaluate,
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
    with pytest.raises(evaluate.EvaluationError, match="No checkpoint in"):
        evaluate.find_checkpoint(tmp_path)


def test_a_foreign_file_is_a_clear_error(tmp_path, cpu_discovery):
    path = tmp_path / "weights.pt"
    torch.save({"fc.weight": torch.zeros(2)}, path)
    with pytest.raises(evaluate.EvaluationError, match="not a checkpoint written by this project"):
        evaluate.evaluate_checkpoint(path, "cpu", discovery=cpu_discovery)
