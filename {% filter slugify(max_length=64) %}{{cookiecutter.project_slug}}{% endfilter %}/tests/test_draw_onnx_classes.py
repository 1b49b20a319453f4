"""The draw page run by ONNX Runtime shows the classes a model of your own pictures learned,
as the torch runtime does, not ten outputs padded with digits."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from {{ cookiecutter.package_name }} import draw, export, train
from {{ cookiecutter.package_name }}.machinery import checkpoints

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("onnx", "onnxruntime")),
    reason="onnx or onnxruntime is not installed (the environment files name both)",
)


def _exported_with_classes(trained_run, folder, classes):
    """The trained run's model exported as if it had learned a folder of ``classes``."""
    saved = checkpoints.load_checkpoint(trained_run / "best.pt")
    saved["config"] = {**saved["config"], "dataset": "folder:/photos/shapes"}
    saved["data_split"] = {"classes": classes}
    train.save_checkpoint(saved, folder / "best.pt")
    state = checkpoints.Checkpoint.load(folder / "best.pt")
    export.export(state, folder / "best.pt", folder / export.ONNX_NAME)
    return folder / export.ONNX_NAME


@pytest.mark.parametrize("classes", [["circle", "cross"], ["0", "1", "2", "3", "4"]])
def test_the_onnx_runtime_shows_the_models_own_classes(trained_run, tmp_path, classes):
    onnx_path = _exported_with_classes(trained_run, tmp_path, classes)
    reader, state = draw.load_onnx_reader(onnx_path)
    torch_reader, torch_state = draw.load_reader(tmp_path / "best.pt", "cpu")
    assert reader.classes == classes == torch_reader.classes
    note = draw.trained_on_note(state)
    assert note == draw.trained_on_note(torch_state)
    assert f"it answers {', '.join(classes)}. Draw" in note
    canvas = torch.full((280, 280), 255, dtype=torch.uint8)
    canvas[100:180, 120:160] = 0
    assert reader.read(canvas)["classes"] == classes  # the page shows one bar per class


def test_a_model_exported_before_it_counted_its_classes_drops_the_padding(trained_run, tmp_path):
    import onnx

    onnx_path = _exported_with_classes(trained_run, tmp_path, ["circle", "cross"])
    model = onnx.load(str(onnx_path))
    kept = [prop for prop in model.metadata_props if prop.key != "class_count"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(onnx_path))
    reader, _ = draw.load_onnx_reader(onnx_path)
    assert reader.classes == ["circle", "cross"]
    assert json.loads(reader.model.metadata["class_names"])[2:] == [str(d) for d in range(2, 10)]
