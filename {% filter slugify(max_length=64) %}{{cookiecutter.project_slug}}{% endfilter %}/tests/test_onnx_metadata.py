""".onnx files that carry this project's mark but not what its models hold (damaged metadata,
another input or output shape, hostile text), and the advice for a run without model.onnx:
one clear sentence each, when the model is loaded, never a traceback or a failing page."""

from __future__ import annotations

import importlib.util
import json
import shutil

import numpy as np
import pytest

from {{ cookiecutter.package_name }} import (
    draw,
    evaluate,
    export,
)
from {{ cookiecutter.package_name }}.machinery import (
    onnx_runtime,
)

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("onnx", "onnxruntime")),
    reason="onnx or onnxruntime is not installed (the environment files name both)",
)

DIGITS = [str(d) for d in range(10)]
MARKED = {  # what export writes into a model's metadata
    "format": onnx_runtime.FORMAT,
    "class_names": json.dumps(DIGITS),
    "preparation": json.dumps({"mean": 0.1307, "std": 0.3081}),
    "dataset": "synthetic",
    "trained": "the model after epoch 1 of 1",
}


def model_file(path, input_shape=(1, 1, 28, 28), outputs=10, **metadata):
    """A small model written with onnx.helper: a flattened image times a matrix, whose last
    output is the largest; ``metadata`` replaces entries of MARKED (None leaves one out)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    features = int(np.prod(input_shape[1:]))
    bias = np.zeros(outputs, np.float32)
    bias[-1] = 1.0
    graph = helper.make_graph(
        [
            helper.make_node("Flatten", ["image"], ["flat"]),
            helper.make_node("MatMul", ["flat", "weight"], ["product"]),
            helper.make_node("Add", ["product", "bias"], ["logits"]),
        ],
        "marked",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, list(input_shape))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, outputs])],
        initializer=[
            numpy_helper.from_array(np.zeros((features, outputs), np.float32), "weight"),
            numpy_helper.from_array(bias, "bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", export.OPSET)])
    model.ir_version = 9  # what ONNX Runtime of every stack reads
    props = {key: value for key, value in {**MARKED, **metadata}.items() if value is not None}
    helper.set_model_props(model, props)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _one_sentence(err: str, *words: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


def test_a_marked_model_of_the_right_shapes_is_used(tmp_path, small_synthetic, capsys):
    """The files the tests below damage are good models otherwise."""
    path = model_file(tmp_path / "model.onnx")

    assert evaluate.main(["--onnx", str(path)]) == 0, capsys.readouterr()
    metrics = json.loads((tmp_path / "test_metrics_onnx.json").read_text(encoding="utf-8"))
    assert all(row[:9] == [0] * 9 for row in metrics["confusion_matrix"])  # always a 9
    assert draw.load_onnx_reader(path)[0].classes == DIGITS


DAMAGED = {
    "no preparation": ({"preparation": None}, "preparation"),
    "no class names": ({"class_names": None}, "class_names"),
    "class names not JSON": ({"class_names": "0, 1, 2, 3"}, "class_names"),
    "class names a number": ({"class_names": "10"}, "class_names"),
    "class names not text": ({"class_names": json.dumps(list(range(10)))}, "class_names"),
    "preparation a list": ({"preparation": "[0.1307, 0.3081]"}, "preparation"),
    "preparation not JSON": ({"preparation": "{mean: 0.1}"}, "preparation"),
    "no std": ({"preparation": json.dumps({"mean": 0.1})}, "preparation"),
    "a std of zero": ({"preparation": json.dumps({"mean": 0.1, "std": 0})}, "preparation"),
    "too few class names": ({"class_names": json.dumps(["a", "b"])}, "names 2 classes"),
}


def test_marked_metadata_that_is_missing_or_damaged_is_one_sentence(tmp_path, capsys):
    for case, (metadata, words) in DAMAGED.items():
        path = model_file(tmp_path / f"{case}.onnx", **metadata)

        code = evaluate.main(["--onnx", str(path)])
        err = capsys.readouterr().err

        assert code == 2, case
        said = ("is marked as exported by this project", words, "export your checkpoint")
        _one_sentence(err, *said)
        with pytest.raises(draw.DrawError, match=words):
            draw.load_onnx_reader(path)


SHAPES = {
    "a colour 32x32 input": ({"input_shape": (1, 3, 32, 32)}, "(1, 3, 32, 32)"),
    "a batch of four": ({"input_shape": (4, 1, 28, 28)}, "(4, 1, 28, 28)"),
    "a batch of any size": ({"input_shape": ("batch", 1, 28, 28)}, "(batch, 1, 28, 28)"),
    "1000 outputs": (
        {"outputs": 1000, "class_names": json.dumps([f"n{i}" for i in range(1000)])},
        "has 1000 outputs",
    ),
    "1000 outputs, ten names": ({"outputs": 1000}, "names 10 classes for its 1000 outputs"),
}


def test_a_marked_model_of_other_shapes_is_refused_when_it_is_loaded(tmp_path, capsys):
    for case, (shape, words) in SHAPES.items():
        path = model_file(tmp_path / f"{case}.onnx", **shape)

        code = evaluate.main(["--onnx", str(path)])
        err = capsys.readouterr().err

        assert code == 2, case
        _one_sentence(err, words, "export your checkpoint again")
        with pytest.raises(draw.DrawError, match="xport your checkpoint again"):
            draw.load_onnx_reader(path)  # at once, not an HTTP 500 for every drawing


def test_text_from_the_model_is_shown_escaped(tmp_path, small_synthetic, capsys):
    hostile = "epoch 1\x1b]0;owned\x07\x1b[2J\r\u202eevil"
    path = model_file(tmp_path / "model.onnx", trained=hostile)

    code = evaluate.main(["--onnx", str(path)])
    out = capsys.readouterr().out

    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\u202e" not in out
    assert "exported from epoch 1\\x1b]0;owned\\x07\\x1b[2J\\r\\u202eevil" in out


def test_a_name_in_the_model_is_shown_escaped_when_the_model_is_refused(tmp_path, capsys):
    path = model_file(tmp_path / "model.onnx", input_shape=("\x1b[2Jn", 1, 28, 28))

    assert evaluate.main(["--onnx", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "(\\x1b[2Jn, 1, 28, 28)" in err


def test_a_run_without_model_onnx_is_told_the_export_of_that_run(
    trained_run, tmp_path, small_synthetic, capsys
):
    """draw --runtime onnx --output-dir RUN: the export it advises is RUN's, not the latest."""
    runs = tmp_path / "runs"
    older, latest = runs / "older", runs / "latest"
    shutil.copytree(trained_run, older)
    shutil.copytree(trained_run, latest)  # copied last: the latest run
    for name in ("best.pt", "last.pt"):  # and written last
        (latest / name).touch()

    code = draw.main(["--output-dir", str(older), "--runtime", "onnx", "--no-browser"])
    err = capsys.readouterr().err

    assert code == 2
    _one_sentence(err, f"There is no ONNX model at {older / 'model.onnx'}")
    advice = err.split("first: ")[1].strip()
    assert advice == f"python -m {export.__package__}.export --checkpoint {older / 'best.pt'}"
    # The advice, followed, gives the model draw looked for.
    assert export.main(["--checkpoint", str(older / "best.pt"), "--check-images", "50"]) == 0
    assert (older / "model.onnx").is_file() and not (latest / "model.onnx").exists()
    assert draw.load_onnx_reader(older / "best.pt")[0].classes == DIGITS
