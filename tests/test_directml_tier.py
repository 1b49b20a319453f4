"""The generated project on real DirectML kernels: DirectML.dll itself, under Wine.

`tools/wine_directml.py` gives the Windows tier's CPython a DXCore of the project's own
(`tools/dxcore/dxcore.c`, built with MinGW-w64) and Mesa 25's lavapipe, a CPU Vulkan driver,
under Wine's D3D12 (vkd3d). torch-directml then finds one adapter, Wine's "NVIDIA GeForce GTX
470", and DirectML compiles and runs its own shaders on it. A CPU emulates the GPU: this
shows what DirectML computes, never how fast.

The wall (Wine 8.0, its vkd3d 1.6, Mesa 25.0.7): DirectML hands some kernels to D3D12 as DXIL
(shader model 6) only, which vkd3d 1.6 cannot compile (VKD3D_DEBUG=warn: "Skipping DXIL shader
model 6+ code chunk", then CreateComputePipelineState fails with E_INVALIDARG). torch raises
`RuntimeError: Invalid parameter.` for such an operator, or `device1->CompileGraph(...)` for a
fused graph such as cross-entropy. The facts behind those operators are asserted as that exact
symptom (WALLS), so the day a newer Wine moves the wall, a test here says so.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import wine_directml  # noqa: E402  (tools/ is on sys.path: see conftest)
from conftest import wine_python

pytestmark = [pytest.mark.windows, pytest.mark.directml, pytest.mark.slow]

RUN_TIMEOUT = 900  # Wine start-up, a cold `import torch` and DirectML's first shaders
ADAPTER = "NVIDIA GeForce GTX 470"  # what Wine's DXGI calls its adapter under Xvfb
INVALID = "RuntimeError: Invalid parameter."
COMPILE_GRAPH = (
    "RuntimeError: device1->CompileGraph(&graphDesc, flags, IID_PPV_ARGS(&compiledGraph))"
)
FACTS_FILE = "tests/test_directml_device.py"
# The generated project's DirectML facts that hold on these kernels.
HOLDS = [
    "test_the_optimizer_holds_the_parameters_that_are_on_the_device",
    "test_lenet_forward_matches_the_cpu",
    "test_lenet_gradients_match_the_cpu",
    "test_torch_adam_falls_back_to_the_cpu_so_the_project_has_its_own",
    "test_a_checkpoint_of_directml_tensors_loads_on_the_cpu_and_on_directml",
]
# The facts this device cannot run, each with the exact symptom of the DXIL wall.
WALLS = {
    # (argmax == labels).sum(): the sum of a bool tensor
    "test_argmax_and_comparison_count_the_correct_answers_on_the_device": INVALID,
    "test_cross_entropy_matches_the_cpu": COMPILE_GRAPH,
    "test_training_steps_follow_the_cpu_without_a_cpu_fallback[sgd]": COMPILE_GRAPH,
    "test_training_steps_follow_the_cpu_without_a_cpu_fallback[adam]": COMPILE_GRAPH,
    # has_float64_support() is True here (D3D12 reports double-precision shader ops), but
    # float64 arithmetic is one more DXIL kernel
    "test_float64_works_only_where_the_device_says_it_does": INVALID,
}


@pytest.fixture(scope="session")
def dml(winpy) -> wine_directml.DirectMLWine:
    """The DirectML Wine, trusted only after ``ones(2, 2) * 2`` read back exactly 2."""
    runner = wine_directml.setup(winpy)
    probe = wine_directml.probe(runner)  # raises DirectMLUnavailable with its reason
    print(f"\nDirectML under Wine: {probe.adapter!r}, probe {probe.seconds:.1f} s")
    return runner


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


def test_directml_computes_ones_times_two_exactly(dml):
    result = dml.run(["-c", wine_directml.PROBE_SCRIPT], timeout=RUN_TIMEOUT)
    marked = [line for line in result.stdout.splitlines() if line.startswith("DIRECTML-PROBE ")]

    assert result.returncode == 0, result.output[-3000:]
    report = json.loads(marked[-1][len("DIRECTML-PROBE ") :])
    assert report["result"] == [[2.0, 2.0], [2.0, 2.0]]
    assert report["count"] == 1


def test_the_directml_facts_hold_on_directml_kernels_or_stop_at_the_known_wall(
    dml, project, tmp_path
):
    junit = tmp_path / "junit.xml"
    args = ["-m", "pytest", "-v", "-p", "no:cacheprovider", FACTS_FILE]
    result = run_project(dml, project, *args, "--junitxml", wine_python.winpath(junit))
    found = outcomes(junit)

    assert sorted(found) == sorted([*HOLDS, *WALLS]), result.output[-3000:]
    assert {name: found[name] for name in HOLDS} == {name: "passed" for name in HOLDS}
    moved = {name: found[name] for name in WALLS if found[name] != f"failed: {WALLS[name]}"}
    assert not moved, f"the DXIL wall moved (update WALLS and docs/directml.md): {moved}"
    print(f"\nDirectML facts under Wine: {len(HOLDS)} hold, {len(WALLS)} at the DXIL wall")


def test_verify_install_finds_the_real_device_and_names_the_step_it_cannot_run(dml, project):
    result = run_project(dml, project, "-m", f"{package_of(project)}.verify_install", "--json")
    report = json.loads(result.stdout)

    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == report["verdict"]["exit_code"] == 4, report["verdict"]
    step = report["failed_step"]
    assert step["step"] == "loss" and "cross-entropy" in step["what"], step
    assert step["error"] == COMPILE_GRAPH
    assert ADAPTER in json.dumps(report)
    assert "\\u0000" not in json.dumps(report)  # the NUL that ends DXCore's name is gone


def test_training_on_directml_stops_at_the_wall_with_one_clear_sentence(dml, project, tmp_path):
    out = tmp_path / "run"
    args = ["-m", f"{package_of(project)}.train", "--dataset", "synthetic", "--device"]
    args += ["directml", "--epochs", "1", "--output-dir", wine_python.winpath(out)]
    result = run_project(dml, project, *args)

    assert "Traceback" not in result.output, result.output[-3000:]
    assert f"device  : directml:0 ({ADAPTER})" in result.stdout, result.stdout[-3000:]
    assert result.returncode == 4, result.output[-3000:]
    failed = f"error: directml:0 ({ADAPTER}) failed while training: {COMPILE_GRAPH}."
    assert result.stderr.startswith(failed), result.stderr[-3000:]
    assert "verify_install" in result.stderr and "--device cpu" in result.stderr
