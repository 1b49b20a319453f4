"""The exported model on a Snapdragon's NPU through onnxruntime-qnn (machinery/npu.py): the
plug-in is registered, the NPU comes first, and where it cannot answer the CPU does, with one
sentence that says why. No NPU here: a fake onnxruntime_qnn module stands in for the package
(its library path, its provider name), and ONNX Runtime's own device list is replaced where a
test needs a QNN device; registration and sessions are ONNX Runtime's real ones otherwise."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from {{ cookiecutter.package_name }} import (
    draw,
    export,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    npu,
    onnx_runtime,
)

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("onnx", "onnxruntime")),
    reason="onnx or onnxruntime is not installed (the environment files name both)",
)
QNN = "QNNExecutionProvider"


@pytest.fixture(scope="module")
def ort():
    return onnx_runtime.load_predict().ort


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("exported")
    state = checkpoints.Checkpoint.load(trained_run / "best.pt")
    export.export(state, trained_run / "best.pt", folder / export.ONNX_NAME)
    return folder / export.ONNX_NAME


def fake_plugin(monkeypatch, library: Path) -> None:
    """An installed onnxruntime-qnn, as its module gives itself (onnxruntime_qnn 2.7.0)."""
    module = types.ModuleType(npu.PLUGIN)
    module.EP_NAME = QNN
    module.get_library_path = lambda: str(library)
    monkeypatch.setitem(sys.modules, npu.PLUGIN, module)
    monkeypatch.setattr(npu, "_registered", set())


def device(ort, ep_name: str, kind: str):
    """An entry of ort.get_ep_devices(): the provider and its hardware device's type."""
    hardware = types.SimpleNamespace(type=getattr(ort.OrtHardwareDeviceType, kind))
    return types.SimpleNamespace(ep_name=ep_name, device=hardware)


def fake_registration(monkeypatch, ort, *after: tuple[str, str]) -> list:
    """ONNX Runtime's registration, recorded; once registered, QNN lists ``after`` devices."""
    calls, cpu = [], [device(ort, "CPUExecutionProvider", "CPU")]
    monkeypatch.setattr(ort, "register_execution_provider_library", lambda *a: calls.append(a))
    listed = [device(ort, QNN, kind) for _, kind in after]
    monkeypatch.setattr(ort, "get_ep_devices", lambda: cpu + (listed if calls else []))
    return calls


def test_the_plugin_is_registered_once_and_its_npu_comes_first(monkeypatch, ort, tmp_path):
    library = tmp_path / "onnxruntime_providers_qnn.dll"
    fake_plugin(monkeypatch, library)
    calls = fake_registration(monkeypatch, ort, (QNN, "GPU"), (QNN, "NPU"))

    found = npu.find_npu(ort)
    again = npu.find_npu(ort)  # the draw page opens models again: no second registration

    assert calls == [(QNN, str(library))]
    assert [d.device.type for d in found.devices] == [ort.OrtHardwareDeviceType.NPU]
    assert found.options == {"backend_type": "htp"} and found.why_not == ""
    assert again.devices == found.devices


def test_without_onnxruntime_qnn_nothing_changes_and_nothing_is_said(monkeypatch, ort, exported):
    monkeypatch.setitem(sys.modules, npu.PLUGIN, None)  # import fails: not installed
    assert npu.find_npu(ort) == npu.Npu()

    model = onnx_runtime.open_model(exported)

    predict = onnx_runtime.load_predict()
    assert model.provider == predict.best_provider() and model.fallback == ""
    # DirectML still comes first where the package has it (onnxruntime-directml).
    assert predict.best_provider([predict.CPU, "DmlExecutionProvider"]) == "DmlExecutionProvider"


def test_a_registration_that_fails_leaves_the_cpu_with_one_sentence(monkeypatch, ort, exported):
    fake_plugin(monkeypatch, exported.parent / "missing" / "onnxruntime_providers_qnn.dll")

    model = onnx_runtime.open_model(exported)  # ONNX Runtime's real registration fails

    assert model.provider == "CPUExecutionProvider"
    assert model.fallback.startswith("onnxruntime-qnn did not register with ONNX Runtime (")
    assert model.fallback.endswith("; the CPU answers instead") and "\n" not in model.fallback
    assert model.fallback in onnx_runtime.describe(model)


def test_no_npu_on_the_machine_leaves_the_cpu_with_one_sentence(monkeypatch, ort, exported):
    fake_plugin(monkeypatch, exported.parent / "onnxruntime_providers_qnn.dll")
    fake_registration(monkeypatch, ort, (QNN, "GPU"))  # an Adreno, no NPU

    reader, _ = draw.load_onnx_reader(exported)  # the draw page (and predict --runtime onnx)

    assert reader.model.provider == "CPUExecutionProvider"
    expected = "onnxruntime-qnn finds no NPU on this machine; the CPU answers instead"
    assert reader.model.fallback == expected and expected in reader.who_answers()


def test_an_npu_session_that_fails_leaves_the_cpu_with_one_sentence(monkeypatch, ort, exported):
    """The NPU is tried first, before any other provider; a session it cannot make (here:
    ONNX Runtime refuses the stand-in device) leaves the CPU, and the answers are the CPU's."""
    fake_plugin(monkeypatch, exported.parent / "onnxruntime_providers_qnn.dll")
    fake_registration(monkeypatch, ort, (QNN, "NPU"))

    model = onnx_runtime.open_model(exported)

    assert model.provider == "CPUExecutionProvider"
    assert model.fallback.startswith(f"{QNN} failed (") and "\n" not in model.fallback
    on_cpu = onnx_runtime.open_model(exported, "CPUExecutionProvider")
    image = on_cpu.normalise(np.full((28, 28), 255, np.uint8))
    assert (model.logits(image) == on_cpu.logits(image)).all()


@pytest.mark.filterwarnings("error")  # providers given beside the devices: ORT warns
def test_a_plugins_devices_make_the_session(monkeypatch, ort, exported):
    """predict.Model runs on the devices it is given, through add_provider_for_devices: here
    ONNX Runtime's real CPU device stands in for the NPU's (the same call, another device)."""
    predict = onnx_runtime.load_predict()
    (cpu,) = [d for d in ort.get_ep_devices() if d.ep_name == "CPUExecutionProvider"]
    added = []

    class Recorded(ort.SessionOptions):
        def add_provider_for_devices(self, devices, options):
            added.append(([d.ep_name for d in devices], options))
            super().add_provider_for_devices(devices, options)

    monkeypatch.setattr(ort, "SessionOptions", Recorded)

    model = predict.Model(exported, devices=[cpu], device_options={"a": "b"})

    assert added == [(["CPUExecutionProvider"], {"a": "b"})]
    assert model.provider == "CPUExecutionProvider" and model.fallback == ""
    assert model.predict(np.zeros((28, 28), np.uint8))[0][0] in model.classes
