"""The generated project on real DirectML kernels: DirectML.dll itself, under Wine.

`tools/wine_directml.py` gives the Windows tier's CPython a DXCore of the project's own
(`tools/dxcore/dxcore.c`), a D3D12 that compiles DXIL (vkd3d from Debian's wine 10 source,
built with its DXIL compiler: `tools/vkd3d/`) and Mesa 25's lavapipe, a CPU Vulkan driver.
torch-directml then finds one adapter, Wine's "NVIDIA GeForce GTX 470", and DirectML compiles
and runs its own shaders on it. A CPU emulates the GPU: this shows what DirectML computes,
never how fast.

The device is trusted only after `ones * 2` and a cross-entropy (a kernel DirectML ships only
as DXIL, the wall of Wine 8's own vkd3d 1.6) read back the CPU's answer. Then the generated
project's DirectML facts (its `tests/test_directml_device.py`, training and resume included),
verify_install, and the training and evaluate commands run on it against the CPU.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy
import pytest
import torch
import wine_directml  # noqa: E402  (tools/ is on sys.path: see conftest)
from conftest import CONTEXT, wine_python

pytestmark = [pytest.mark.windows, pytest.mark.directml, pytest.mark.slow]

RUN_TIMEOUT = 900  # Wine start-up, a cold `import torch` and DirectML's first shaders
ADAPTER = "NVIDIA GeForce GTX 470"  # what Wine's DXGI calls its adapter under Xvfb
FACTS_FILE = "tests/test_directml_device.py"
# The generated project's DirectML facts, each seen to hold on these kernels.
HOLDS = [
    "test_the_optimizer_holds_the_parameters_that_are_on_the_device",
    "test_lenet_forward_matches_the_cpu",
    "test_lenet_gradients_match_the_cpu",
    "test_argmax_and_comparison_count_the_correct_answers_on_the_device",
    "test_cross_entropy_matches_the_cpu",
    "test_training_steps_follow_the_cpu_without_a_cpu_fallback[sgd]",
    "test_training_steps_follow_the_cpu_without_a_cpu_fallback[adam]",
    "test_torch_adam_falls_back_to_the_cpu_so_the_project_has_its_own",
    "test_a_checkpoint_of_directml_tensors_loads_on_the_cpu_and_on_directml",
    "test_float64_works_only_where_the_device_says_it_does",
    "test_training_on_directml_follows_the_cpu_step_by_step",
    "test_the_training_step_runs_every_operator_on_directml",
    "test_a_directml_checkpoint_gives_the_same_answers_on_the_cpu",
    "test_a_directml_run_stopped_after_epoch_1_and_resumed_ends_as_the_whole_run",
]
# The training command on both devices, small: 11 steps an epoch at the default batch (128).
STEPS_COMPARED = 20
STEP_LOSS_RTOL = 1e-3  # as the generated tests/test_directml_device.py states
ACCURACY_POINTS = 0.5
RUN_MARK = "TIER-RUN "
DRAW_MARK = "TIER-DRAW "
PROBABILITY_ATOL = 1e-3  # the page rounds to 4 digits
# docs/checks scripts that run on the device. Not here: directml_wheels.py asks PyPI, not a
# device; device_names.py makes torch raise C++ exceptions on purpose, whose unwinding under
# Wine 8 ends in an access violation ("Unhandled page fault on write access ... at address
# 0000000170028930", seen here as in the Windows tier's WINE_LIMITS).
DEVICE_CHECKS = ["optimizer_ops.py", "directml_api.py", "optimizer_after_to.py"]
AGREES = "Agrees with docs/directml.md: yes"
CHECKS_CHILD = f"""
import runpy, sys
for script in sys.argv[1:]:
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code
    print({RUN_MARK!r} + script + " " + str(code), flush=True)
"""
COMMANDS_CHILD = f"""
import http.client, io, json, sys, threading
from pathlib import Path
from PIL import Image, ImageDraw
from {{package}} import data, draw, evaluate, train
data.SYNTHETIC_TRAIN_SIZE, data.SYNTHETIC_TEST_SIZE = 1536, 512
for module, argv in json.loads(sys.argv[1]):
    code = {{{{"train": train, "evaluate": evaluate}}}}[module].main(argv)
    print({RUN_MARK!r} + json.dumps([module, argv, code]), flush=True)
# The draw page served from DirectML: one drawn stroke posted as the page posts it, and the
# same drawing read by the CPU.
paper = Image.new("L", (280, 280), 255)
ImageDraw.Draw(paper).line([(150, 40), (130, 240)], fill=0, width=22)
png = io.BytesIO()
paper.save(png, "PNG")
reader, _ = draw.load_reader(Path(sys.argv[2]), "directml")
server = draw.make_server(reader)
threading.Thread(target=server.serve_forever, daemon=True).start()
connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
connection.request("POST", "/predict", png.getvalue(), {{{{"Content-Type": "image/png"}}}})
served = json.loads(connection.getresponse().read())
connection.close()
server.shutdown()
server.server_close()
cpu, _ = draw.load_reader(Path(sys.argv[2]), "cpu")
local = cpu.read(draw.decode_png(png.getvalue()))
answers = {{{{name: {{{{key: answer[key]["probabilities"] for key in ("prepared", "as_drawn")}}}}
           for name, answer in (("directml", served), ("cpu", local))}}}}
print({DRAW_MARK!r} + json.dumps({{{{"device": served["device"], **answers}}}}), flush=True)
"""


ORT_MARK = "TIER-ORT "
ORT_LOGIT_ATOL = 1e-3  # the export's own tolerance between PyTorch and ONNX Runtime
# The copyable predict.py, run as a learner's program runs it: the best provider, then the CPU.
ORT_CHILD = f"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])  # the Windows wheel of onnxruntime-directml, unpacked
import predict
images = np.load(sys.argv[3])
best = predict.Model(sys.argv[2])
cpu = predict.Model(sys.argv[2], "CPUExecutionProvider")
on_best = np.concatenate([best.logits(image[None]) for image in images])
on_cpu = np.concatenate([cpu.logits(image[None]) for image in images])
print({ORT_MARK!r} + json.dumps({{
    "provider": best.provider, "fallback": best.fallback,
    "largest_difference": float(np.abs(on_best - on_cpu).max()),
    "same_answers": int((on_best.argmax(1) == on_cpu.argmax(1)).sum()), "images": len(images),
}}), flush=True)
"""


def windows_onnxruntime_directml(cache: Path) -> Path:
    """The DirectML stack's ONNX Runtime for Windows CPython 3.11 (the version its environment
    files pin), unpacked with what it imports beyond numpy; cached by that version."""
    wanted = [
        (name, version)
        for name, version, marker in CONTEXT["_onnx"]["directml"]
        if name == "onnxruntime-directml" and '>= "3.11"' in marker
    ]
    ((name, version),) = wanted
    site = cache / f"onnxruntime-directml-{version}"
    if (site / "onnxruntime").is_dir():
        return site
    wheels = cache / f"onnxruntime-directml-{version}-wheels"
    packages = [f"{name}=={version}", "flatbuffers", "protobuf", "sympy", "mpmath", "packaging"]
    download = ["download", "--no-deps", "--only-binary=:all:", "--platform", "win_amd64"]
    download += ["--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"]
    download += ["--abi", "abi3", "--abi", "none", "-d", str(wheels), *packages]
    result = wine_python.pip(*download)
    assert result.returncode == 0, f"the Windows wheels could not be downloaded: {result.stderr}"
    partial = site.with_name(site.name + ".partial")
    for wheel in wheels.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(partial)
    partial.rename(site)
    return site


@pytest.fixture(scope="session")
def probed(winpy) -> tuple[wine_directml.DirectMLWine, wine_directml.ProbeResult]:
    """The DirectML Wine and its probe: trusted only after ``ones(2, 2) * 2`` read back
    exactly 2 and a cross-entropy (a DXIL-only kernel) the CPU's value. Setting it up may
    build d3d12.dll; a piece that cannot be built or run fails here with its reason."""
    runner = wine_directml.setup(winpy)
    probe = wine_directml.probe(runner)  # raises DirectMLUnavailable with its reason
    print(
        f"\nDirectML under Wine: {probe.adapter!r}, D3D12 from vkd3d of Debian's wine "
        f"{runner.vkd3d_source}, probe {probe.seconds:.1f} s"
    )
    return runner, probe


@pytest.fixture(scope="session")
def dml(probed) -> wine_directml.DirectMLWine:
    return probed[0]


@pytest.fixture(scope="session")
def project(bake_once) -> Path:
    """The default project (a Windows bake is byte-identical: see the Windows tier)."""
    return bake_once().path


def run_project(dml, project: Path, *args: str) -> wine_python.WineResult:
    env = {"PYTHONPATH": wine_python.winpath(project / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    return dml.run(list(args), cwd=project, env=env, timeout=RUN_TIMEOUT)


def package_of(project: Path) -> str:
    return json.loads((project / ".cookiecutter.json").read_text("utf-8"))["cookiecutter"][
        "package_name"
    ]


def outcomes(junit: Path) -> dict[str, str]:
    """test name -> "passed", or "failed: <message>" / "skipped: <reason>"."""
    results = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        verdict = "passed"
        if problems:
            kind = "skipped" if problems[0].tag == "skipped" else "failed"
            verdict = f"{kind}: {problems[0].get('message') or ''}"
        results[case.get("name")] = verdict
    return results


def test_directml_computes_ones_times_two_and_a_dxil_kernel_as_the_cpu(probed):
    dml, probe = probed

    assert probe.result == [[2.0, 2.0], [2.0, 2.0]]
    assert probe.cross_entropy == pytest.approx(0.7064831852912903, abs=1e-6)  # the CPU's
    assert probe.adapter.rstrip("\0") == ADAPTER
    assert dml.d3d12.name == "d3d12.dll" and dml.vkd3d_source.startswith("10.0")


def test_the_directml_facts_hold_on_directml_kernels(dml, project, tmp_path):
    junit = tmp_path / "junit.xml"
    options = ["-v", "-s", "--durations=5", "-p", "no:cacheprovider"]
    args = wine_python.pytest_args(*options, FACTS_FILE)
    result = run_project(dml, project, *args, "--junitxml", wine_python.winpath(junit))
    found = outcomes(junit)

    assert sorted(found) == sorted(HOLDS), result.output[-3000:]
    failed = {name: verdict for name, verdict in found.items() if verdict != "passed"}
    assert not failed, result.output[-3000:]
    table = result.stdout[result.stdout.find("step  cpu loss") :].split("\n\n")[0]
    slowest = result.stdout[result.stdout.find("slowest") :].split("\n\n")[0]
    print(f"\nDirectML facts under Wine: all {len(HOLDS)} hold; the training run:\n{table}")
    print(f"{slowest}\n(the whole Wine call {result.seconds:.0f} s)")


def test_verify_install_says_it_works_on_the_real_device_and_that_it_is_emulated(dml, project):
    result = run_project(dml, project, "-m", f"{package_of(project)}.verify_install", "--json")
    report = json.loads(result.stdout)
    findings = {finding["check"]: finding for finding in report["findings"]}

    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == report["verdict"]["exit_code"] == 0, report["verdict"]
    assert report["verdict"]["message"] == f"Ready to train on directml:0 ({ADAPTER})."
    assert report["failed_step"] is None
    assert report["smoke_test"] and report["fallback_operators"] == []
    assert findings["CPU fallback"]["code"] == "CPU-FALLBACK-NONE"
    assert report["timing"]["device"] == "privateuseone:0", report["timing"]
    assert report["timing"]["device_ms"] > 0 and report["timing"]["cpu_ms"] > 0
    # Measured on the device, and said to be an emulation: no speed claim.
    emulated = report["timing"]["emulated"]
    assert emulated.startswith("Wine 8.") and "llvmpipe" in emulated, report["timing"]
    timing = findings["Timing"]
    assert timing["status"] == "ok" and timing["code"] == "TIMING-STEP", timing
    assert f"The device is emulated (a CPU emulating a GPU: {emulated})" in timing["found"]
    assert "x)" not in timing["found"]  # no device-to-CPU speed ratio
    assert "\\u0000" not in json.dumps(report)  # the NUL that ends DXCore's name is gone
    # Wine's adapter is a Fermi (compute capability 2.0, known by its model name: no
    # nvidia-smi here): no CUDA build runs it, so the DirectML environment is the right one.
    recommendation = report["recommendation"]
    assert recommendation["stack"] == "directml", recommendation
    assert recommendation["gpu"]["compute_capability"] == "2.0", recommendation["gpu"]
    assert recommendation["gpu"]["compute_capability_source"] == "model name"
    assert findings["Environment"]["code"] == "ENV-BEST", findings["Environment"]


def test_training_evaluate_and_draw_on_directml_give_the_cpus_results(dml, project, tmp_path):
    """``train --dataset synthetic`` for 2 epochs on each device with the same seed (small
    synthetic digits), then ``evaluate`` of the DirectML checkpoint on each device, then the
    draw page served from DirectML answering one drawing: one Windows Python runs it all (a
    cold ``import torch`` under Wine costs 25-45 s)."""
    out = {device: tmp_path / device for device in ("directml", "cpu")}
    common = ["--dataset", "synthetic", "--epochs", "2", "--seed", "1"]
    commands = [
        ["train", [*common, "--device", device, "--output-dir", wine_python.winpath(out[device])]]
        for device in out
    ]
    checkpoint = wine_python.winpath(out["directml"] / "last.pt")
    for device in out:
        commands.append(["evaluate", ["--checkpoint", checkpoint, "--device", device]])
    child = COMMANDS_CHILD.format(package=package_of(project))
    result = run_project(dml, project, "-c", child, json.dumps(commands), checkpoint)
    codes = [json.loads(line[len(RUN_MARK) :])[2] for line in result.stdout.splitlines()
             if line.startswith(RUN_MARK)]  # fmt: skip

    assert codes == [0, 0, 0, 0], result.output[-4000:]
    assert "Traceback" not in result.output and "fall back" not in result.output
    assert f"device  : directml:0 ({ADAPTER})" in result.stdout
    metrics = {d: json.loads((out[d] / "metrics.json").read_text("utf-8")) for d in out}
    losses = {d: [p["train_loss"] for p in metrics[d]["within_epochs"]] for d in out}
    accuracy = {d: 100 * metrics[d]["test"]["accuracy"] for d in out}
    cpu, directml = (losses[d][:STEPS_COMPARED] for d in ("cpu", "directml"))
    print("\nstep  cpu loss  directml loss")
    for step, (a, b) in enumerate(zip(cpu, directml, strict=True), 1):
        print(f"{step:4d}  {a:.6f}  {b:.6f}")
    print(f"test accuracy: cpu {accuracy['cpu']:.2f} %, directml {accuracy['directml']:.2f} %")
    assert len(directml) == len(cpu) == STEPS_COMPARED
    assert directml == pytest.approx(cpu, rel=STEP_LOSS_RTOL), (cpu, directml)
    assert abs(accuracy["directml"] - accuracy["cpu"]) <= ACCURACY_POINTS
    # The DirectML checkpoint on this Linux machine's own torch (CPU): same test accuracy.
    state = torch.load(out["directml"] / "last.pt", map_location="cpu", weights_only=True)
    assert {t.device.type for t in state["model"].values()} == {"cpu"}
    # evaluate of the DirectML checkpoint: on DirectML, then on the CPU, the same accuracy.
    evaluated = [line for line in result.stdout.splitlines() if line.startswith("Test accuracy")]
    print("evaluate of the DirectML checkpoint (directml, cpu):", evaluated)
    assert len(evaluated) == 2 and evaluated[0] == evaluated[1], evaluated
    assert evaluated[0].startswith(f"Test accuracy: {accuracy['directml']:.2f}%"), evaluated
    # The draw page served from DirectML answers a drawn stroke as the CPU reads it.
    drawn = [line for line in result.stdout.splitlines() if line.startswith(DRAW_MARK)]
    assert len(drawn) == 1, result.output[-4000:]
    answers = json.loads(drawn[0][len(DRAW_MARK) :])
    print("draw page on", answers["device"], {k: answers[k] for k in ("directml", "cpu")})
    assert answers["device"].startswith("directml:0")
    for kind in ("prepared", "as_drawn"):
        served, local = answers["directml"][kind], answers["cpu"][kind]
        assert served.index(max(served)) == local.index(max(local))
        assert served == pytest.approx(local, abs=PROBABILITY_ATOL)


def test_the_checks_of_docs_directml_md_agree_on_the_device(dml, project):
    """Each runnable script of docs/checks, on DirectML itself: its verdict is the docs'."""
    scripts = [f"docs/checks/{name}" for name in DEVICE_CHECKS]
    result = run_project(dml, project, "-c", CHECKS_CHILD, *scripts)
    ends = [
        line[len(RUN_MARK) :] for line in result.stdout.splitlines() if line.startswith(RUN_MARK)
    ]

    assert ends == [f"{script} 0" for script in scripts], result.output[-4000:]
    assert result.stdout.count(AGREES) == len(scripts), result.stdout[-4000:]
    # Those that look for DirectML found it: the device itself was used.
    assert "DirectML: not available" not in result.stdout
    assert "model.to('privateuseone')" in result.stdout


def test_onnx_runtime_runs_the_exported_model_on_directml_as_on_the_cpu(dml, project, tmp_path):
    """The exported model (export on this machine's torch), run by the project's predict.py
    with the Windows wheel of onnxruntime-directml: its DirectML execution provider on the
    emulated device answers, and gives the CPU provider's logits."""
    package = package_of(project)
    run = tmp_path / "run"
    model = tmp_path / "model.onnx"
    for command in (
        ["train", "--dataset", "synthetic", "--epochs", "1", "--output-dir", str(run)],
        ["export", "--checkpoint", str(run / "best.pt"), "--output", str(model)],
    ):
        finished = subprocess.run(
            [sys.executable, "-m", f"{package}.{command[0]}", *command[1:]], cwd=project,
            env={**os.environ, "PYTHONPATH": str(project / "src")}, capture_output=True,
            text=True, timeout=600,
        )  # fmt: skip
        assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    sys.path.insert(0, str(project / "src"))
    try:  # the test digits as the model takes them, prepared by the project itself
        data = importlib.import_module(f"{package}.data")
        test = data.load_test_split("synthetic", None)[0]
        images = data.to_model_input(test.images[:64], torch.device("cpu")).numpy()
    finally:
        sys.path.remove(str(project / "src"))
    numpy.save(tmp_path / "images.npy", images)
    site = windows_onnxruntime_directml(wine_python.cache_root())

    arguments = [wine_python.winpath(path) for path in (site, model, tmp_path / "images.npy")]
    result = dml.run(["-c", ORT_CHILD, *arguments], cwd=project / "src" / package,
                     env={"PYTHONDONTWRITEBYTECODE": "1"}, timeout=RUN_TIMEOUT)  # fmt: skip

    lines = [line for line in result.stdout.splitlines() if line.startswith(ORT_MARK)]
    assert len(lines) == 1, result.output[-4000:]
    answer = json.loads(lines[0][len(ORT_MARK) :])
    print("\nONNX Runtime under the emulation:", answer)
    assert answer["provider"] == "DmlExecutionProvider" and answer["fallback"] == ""
    assert answer["largest_difference"] <= ORT_LOGIT_ATOL
    assert answer["same_answers"] == answer["images"] == 64
