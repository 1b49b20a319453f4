"""The trained model exported to ONNX and run by ONNX Runtime: export (and the run's files it
never replaces), predict.py, evaluate --onnx and the draw page (with a model's own classes), on
the CPU (the only execution provider every machine has)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gpu_doctor import (
    onnx_runtime_check,
)
from gpu_doctor.project import (
    load_project,
)

from {{ cookiecutter.package_name }} import (
    draw,
    evaluate,
    export,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    onnx_runtime,
    this_project,
)
from test_draw import drawn_large

# The environment files install both; an environment made otherwise skips these tests (and
# verify_install says whether ONNX Runtime is there).
pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("onnx", "onnxruntime")),
    reason="onnx or onnxruntime is not installed (the environment files name both)",
)


@pytest.fixture(scope="module")
def predict():
    """The learner's predict.py (it imports onnxruntime)."""
    return onnx_runtime.load_predict()


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    """model.onnx of the trained run's best.pt, in a folder of its own."""
    folder = tmp_path_factory.mktemp("exported")
    state = checkpoints.Checkpoint.load(trained_run / "best.pt")
    export.export(state, trained_run / "best.pt", folder / export.ONNX_NAME)
    return folder / export.ONNX_NAME


def test_the_model_file_has_a_fixed_input_the_opset_and_what_a_program_needs(exported, predict):
    import onnx

    model = onnx.load(str(exported))
    onnx.checker.check_model(model, full_check=True)
    meta = {prop.key: prop.value for prop in model.metadata_props}

    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 1, 28, 28]  # static: no symbolic batch dimension
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [18]
    assert json.loads(meta["class_names"]) == [str(d) for d in range(10)]
    preparation = json.loads(meta["preparation"])
    assert (preparation["mean"], preparation["std"]) == (0.1307, 0.3081)
    assert meta["format"] == predict.FORMAT == onnx_runtime.FORMAT
    assert meta["dataset"] == "synthetic" and "epoch" in meta["trained"]


def test_onnx_runtime_computes_what_torch_computes(trained_run, exported, tiny_dataset):
    state = checkpoints.Checkpoint.load(trained_run / "best.pt")

    result = export.compare(state, trained_run / "best.pt", exported, tiny_dataset.test)

    assert result.images == 512 and result.provider == "CPUExecutionProvider"
    assert result.largest_difference < export.TOLERANCE and result.agrees
    assert result.torch_accuracy > 0.8
    assert abs(result.torch_accuracy - result.onnx_accuracy) <= export.ACCURACY_TOLERANCE


@pytest.mark.slow
def test_the_command_exports_beside_the_checkpoint_and_reports_the_agreement(
    trained_run, tmp_path, small_synthetic, capsys
):
    checkpoint = tmp_path / "best.pt"
    checkpoint.write_bytes((trained_run / "best.pt").read_bytes())

    code = export.main(["--checkpoint", str(checkpoint), "--check-images", "200"])
    out = capsys.readouterr().out

    assert code == 0, out
    assert (tmp_path / "model.onnx").is_file() and "onnx.checker finds it valid" in out
    assert "Checked on 200 test images" in out and "So they agree." in out
    assert "accuracy with PyTorch" in out and "accuracy with ONNX Runtime" in out


def test_predict_reads_digits_with_onnx_runtime_and_numpy_alone(exported, tiny_dataset, predict):
    model = predict.Model(exported, provider=predict.CPU)
    pixels = tiny_dataset.test.images[:50, 0].numpy()

    answers = model.predict(pixels)

    assert model.provider == "CPUExecutionProvider" and model.fallback == ""
    right = sum(label == str(int(t)) for (label, _), t in zip(answers, tiny_dataset.test.labels))
    assert right >= 40
    assert all(abs(float(p.sum()) - 1.0) < 1e-4 for _, p in answers)
    assert model.predict(pixels[0])[0][0] == answers[0][0]  # one (28, 28) image works too
    # The file a learner copies imports nothing but onnxruntime, numpy and the standard library.
    tree = ast.parse(Path(predict.__file__).read_text(encoding="utf-8"))
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert imported <= {"__future__", "json", "threading", "pathlib", "numpy", "onnxruntime"}


@pytest.mark.filterwarnings("ignore:Specified provider:UserWarning")  # ONNX Runtime's own note
def test_a_provider_that_does_not_start_falls_back_to_the_cpu_and_says_so(exported, predict):
    """A provider asked of a package without it (DirectML of the plain onnxruntime)."""
    available = predict.ort.get_available_providers()
    absent = next(name for name in predict.PREFERRED if name not in available)
    model = predict.Model(exported, provider=absent)

    assert model.provider == "CPUExecutionProvider"
    assert absent in model.fallback and "the CPU answers" in model.fallback
    assert "CPU answers instead" in onnx_runtime.describe(model)


def test_evaluate_onnx_gives_the_checkpoints_accuracy_and_says_who_answers(
    trained_run, exported, tiny_dataset, cpu_discovery
):
    by_torch = evaluate.evaluate_checkpoint(
        trained_run / "best.pt", "cpu", discovery=cpu_discovery, dataset=tiny_dataset
    )

    by_onnx = evaluate.evaluate_onnx(exported, "cpu", dataset=tiny_dataset)

    assert by_onnx.accuracy == pytest.approx(by_torch.accuracy, abs=export.ACCURACY_TOLERANCE)
    assert by_onnx.images == 512 and by_onnx.device.startswith("ONNX Runtime")
    assert "CPUExecutionProvider" in evaluate.format_report(by_onnx)


def test_the_draw_page_reads_a_drawing_with_onnx_runtime_as_with_torch(
    trained_run, exported, tiny_dataset, cpu_discovery
):
    by_torch, _ = draw.load_reader(trained_run / "best.pt", "cpu", discovery=cpu_discovery)
    by_onnx, state = draw.load_onnx_reader(exported)
    canvas = drawn_large(tiny_dataset.test.images[3], 180, 60, 40)

    torch_answer, onnx_answer = by_torch.read(canvas), by_onnx.read(canvas)

    assert draw.trained_on(state) == "synthetic"
    assert onnx_answer["device"].startswith("ONNX Runtime")
    for key in ("prepared", "as_drawn"):
        assert onnx_answer[key]["digit"] == torch_answer[key]["digit"]
        assert onnx_answer[key]["probabilities"] == pytest.approx(
            torch_answer[key]["probabilities"], abs=1e-3
        )


# ---------------------------------------------------------------------------- bad input


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch 2.9+: the TorchScript exporter
def test_a_damaged_or_foreign_onnx_file_is_one_clear_sentence(tmp_path, capsys):
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(b"not a model")
    foreign = tmp_path / "foreign.onnx"
    torch.onnx.export(
        torch.nn.Linear(4, 2), (torch.zeros(1, 4),), str(foreign), **export._exporter_options()
    )

    for path, words in (
        (damaged, "damaged or not an ONNX model"),
        (foreign, "not one exported by this project"),
        (tmp_path / "missing.onnx", "Export one from a checkpoint first"),
    ):
        code = evaluate.main(["--onnx", str(path)])
        err = capsys.readouterr().err
        assert code == 2 and words in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1


def test_exporting_what_is_no_checkpoint_of_this_project_is_one_clear_sentence(tmp_path, capsys):
    foreign = tmp_path / "weights.pt"
    torch.save({"fc.weight": torch.zeros(2)}, foreign)

    code = export.main(["--checkpoint", str(foreign)])
    err = capsys.readouterr().err

    assert code == 2 and "not a checkpoint written by this project" in err
    assert not (tmp_path / "model.onnx").exists()


def test_without_onnx_runtime_the_message_says_how_to_install_it(exported, monkeypatch, predict):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, predict.__name__)

    with pytest.raises(onnx_runtime.OnnxRuntimeMissing) as raised:
        onnx_runtime.open_model(exported)

    assert this_project.pip_command("install onnxruntime") in str(raised.value)
    assert sys.executable in str(raised.value)


def test_logits_of_no_images_are_an_empty_answer(exported, predict):
    model = predict.Model(exported, provider=predict.CPU)

    assert model.predict(np.zeros((0, 28, 28), np.uint8)) == []


# ---------------------------------------------------------------------------- the doctor


def test_the_doctor_runs_one_inference_on_the_best_provider(predict):
    best = predict.best_provider()

    (finding,) = onnx_runtime_check.findings()

    if best == "CPUExecutionProvider" or finding.code == "ORT-OK":
        assert (finding.code, finding.status) == ("ORT-OK", "ok")
        assert f"one inference on {best} gives numpy's answer" in finding.found
    else:  # a GPU provider this machine's package lists but cannot start (an emulated GPU)
        assert finding.code == "ORT-PROVIDER-FAILED" and best in finding.found


@pytest.mark.filterwarnings("ignore:Specified provider:UserWarning")
def test_the_doctor_says_when_the_best_provider_does_not_run(monkeypatch, predict):
    """A provider that the package lists but that cannot start (DirectML on a broken driver)."""
    monkeypatch.setattr(predict, "best_provider", lambda providers: "DmlExecutionProvider")

    (finding,) = onnx_runtime_check.findings()

    assert finding.code == "ORT-PROVIDER-FAILED" and finding.status == "warn"
    assert "DmlExecutionProvider" in finding.found and "run on the CPU instead" in finding.found


def test_the_doctor_warns_of_two_onnx_runtime_packages_and_is_silent_without_one(monkeypatch):
    two = ["onnxruntime 1.32.0", "onnxruntime-directml 1.24.4"]
    monkeypatch.setattr(onnx_runtime_check, "installed_packages", lambda: two)
    (finding,) = onnx_runtime_check.findings()
    assert finding.code == "ORT-TWO-PACKAGES"
    if load_project().env_manager == "uv":  # its sync reinstalls one and removes the other
        both = "--reinstall-package onnxruntime --reinstall-package onnxruntime-directml`"
        assert both in finding.fix
    else:
        assert "`python -m pip uninstall onnxruntime onnxruntime-directml`" in finding.fix

    monkeypatch.setattr(onnx_runtime_check, "installed_packages", lambda: [])
    assert onnx_runtime_check.findings() == []


# --------------------------------------------------------------------- export --output
# export --output never replaces a file the run needs: its checkpoints, its other files, the
# checkpoint being exported. It is refused in one sentence before anything is written.

RUN_FILES = ("best.pt", "last.pt", "metrics.json", "metrics.csv", "curves.png")


@pytest.fixture
def run(trained_run, tmp_path):
    """A copy of the trained run's folder, to be exported from."""
    folder = tmp_path / "run"
    shutil.copytree(trained_run, folder)
    return folder


def _contents(folder):
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def test_an_output_that_is_a_file_of_the_run_is_refused_and_nothing_is_written(run, capsys):
    before = _contents(run)
    for checkpoint in ("best.pt", "last.pt"):
        for output in RUN_FILES:
            argv = ["--checkpoint", str(run / checkpoint), "--output", str(run / output)]
            code = export.main(argv)
            captured = capsys.readouterr()

            assert code == 2, (checkpoint, output, captured.out)
            assert _contents(run) == before  # the trained model, the resume point, the metrics
            assert "Nothing was written" in captured.err and "Traceback" not in captured.err
            assert len(captured.err.strip().splitlines()) == 1 and captured.out == ""


def test_the_checkpoint_itself_is_refused_under_any_name_that_reaches_it(run, capsys):
    checkpoint = run / "model-as-checkpoint.onnx"  # a checkpoint may carry any name
    shutil.copyfile(run / "best.pt", checkpoint)
    before = checkpoint.read_bytes()
    names = [
        checkpoint,
        run / "." / checkpoint.name,
        run.parent / "run" / ".." / "run" / checkpoint.name,
    ]
    if sys.platform == "win32" or os.path.exists(str(checkpoint).upper()):
        names.append(checkpoint.with_name(checkpoint.name.upper()))  # one file, either case
    try:
        (run / "linked.onnx").symlink_to(checkpoint)
        names.append(run / "linked.onnx")
    except OSError:  # Windows without the right to make links
        pass

    for name in names:
        code = export.main(["--checkpoint", str(checkpoint), "--output", str(name)])
        err = capsys.readouterr().err
        assert code == 2 and "is the checkpoint being exported" in err, (name, err)
        assert checkpoint.read_bytes() == before


def test_a_model_file_may_still_be_written_anywhere(run, tmp_path, small_synthetic, capsys):
    output = tmp_path / "elsewhere" / "lenet.ONNX"
    output.parent.mkdir()

    code = export.main(
        ["--checkpoint", str(run / "best.pt"), "--output", str(output), "--check-images", "50"]
    )

    assert code == 0, capsys.readouterr()
    assert output.is_file() and "So they agree." in capsys.readouterr().out


# ------------------------------------------------------------- the draw page's classes
# The draw page run by ONNX Runtime shows the classes a model of your own pictures learned,
# as the torch runtime does, not ten outputs padded with digits.


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
