"""The DirectML facts this project relies on, checked on a real DirectML device.

Runs only where torch_directml finds a device (a Windows or WSL2 machine with a DirectX 12
GPU); everywhere else every test here is skipped with the reason, and the rest of the suite
checks the same code with fakes and the operator list. On a machine with a GPU, run
``pytest tests/test_directml_device.py -v`` after ``verify_install`` to see each fact hold
on your own device: a failure names the operator your driver cannot run.

Tolerances: DirectML and the CPU add in different orders, so float32 results agree to
rounding, not bit for bit: activations within 1e-5, gradients within 1e-5 of the largest
gradient of their tensor (a near-zero entry has no meaningful relative error), losses within
1e-4 relative. Whole training runs drift further apart step by step as those roundings feed
into the next step: the first 20 steps' losses within 1e-3 relative, the final test accuracy
within 0.5 points.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
import torch
from torch.nn import functional as F

from {{ cookiecutter.package_name }} import (
    data,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    devices,
    stopping,
)
from {{ cookiecutter.package_name }}.model import (
    LeNet5,
    to_device,
)
from {{ cookiecutter.package_name }}.train import (
    build_optimizer,
)

FALLBACK = "will fall back to run on the CPU"
CPU = torch.device("cpu")
BATCH = 8
STEPS_COMPARED = 20  # the per-step losses compared between the CPU and DirectML
STEP_LOSS_RTOL = 1e-3
ACCURACY_POINTS = 0.5


@pytest.fixture(scope="module")
def dml() -> torch.device:
    """The first DirectML device, trusted only once ``ones * 2`` reads back exactly 2."""
    try:
        import torch_directml
    except Exception as error:  # ImportError, OSError: no DirectX 12 here
        pytest.skip(f"torch_directml does not load here: {type(error).__name__}: {error}")
    if not torch_directml.is_available() or torch_directml.device_count() == 0:
        pytest.skip("torch_directml finds no DirectX 12 device here")
    device = torch_directml.device(0)
    probe = (torch.ones(2, 2, device=device) * 2).cpu()
    # A device that computes nothing returns whatever memory held: never trust it then.
    assert probe.tolist() == [[2.0, 2.0], [2.0, 2.0]], f"ones * 2 read back as {probe}"
    return device


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Eight synthetic digits (uint8 images, int64 labels) on the CPU."""
    digits = data.synthetic_digits(BATCH, seed=5)
    return digits.images, digits.labels


def models(device: torch.device) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The same LeNet-5 twice: on the CPU, and on ``device`` the project's way."""
    torch.manual_seed(0)
    on_cpu = LeNet5()
    on_device = to_device(LeNet5(), device)
    on_device.load_state_dict(on_cpu.state_dict())
    return on_cpu, on_device


def close(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-4, atol=1e-5) -> bool:
    return torch.allclose(actual.cpu(), expected, rtol=rtol, atol=atol)


def close_in_scale(actual: torch.Tensor, expected: torch.Tensor, rel: float = 1e-5) -> bool:
    """Every entry within ``rel`` times the tensor's largest entry."""
    return bool((actual.cpu() - expected).abs().max() <= rel * expected.abs().max())


def test_the_optimizer_holds_the_parameters_that_are_on_the_device(dml):
    model = to_device(LeNet5(), dml)  # 1. the model to the device
    optimizer = build_optimizer("sgd", model.parameters(), 0.05, dml.type)  # 2. then this
    held = [p for group in optimizer.param_groups for p in group["params"]]

    assert [id(p) for p in held] == [id(p) for p in model.parameters()]
    assert {p.device.type for p in held} == {"privateuseone"}
    # The popular mistake, for contrast: built before .to(), it holds orphaned CPU tensors.
    early = LeNet5()
    orphaned = torch.optim.SGD(early.parameters(), lr=0.05)
    early.to(dml)
    assert {p.device.type for p in orphaned.param_groups[0]["params"]} == {"cpu"}


def test_lenet_forward_matches_the_cpu(dml, batch):
    on_cpu, on_device = models(dml)
    images, _ = batch
    expected = on_cpu(data.to_model_input(images, CPU))
    actual = on_device(data.to_model_input(images, dml))

    assert actual.device.type == "privateuseone" and actual.dtype == torch.float32
    assert close(actual, expected, rtol=0, atol=1e-5), (actual.cpu() - expected).abs().max()


def test_lenet_gradients_match_the_cpu(dml, batch):
    on_cpu, on_device = models(dml)
    images, _ = batch
    for model, device in ((on_cpu, CPU), (on_device, dml)):
        model(data.to_model_input(images, device)).square().sum().backward()

    for (name, expected), actual in zip(on_cpu.named_parameters(), on_device.parameters()):
        assert close_in_scale(actual.grad, expected.grad), name


def test_argmax_and_comparison_count_the_correct_answers_on_the_device(dml, batch):
    on_cpu, on_device = models(dml)
    images, labels = batch
    logits = on_device(data.to_model_input(images, dml))
    expected = (on_cpu(data.to_model_input(images, CPU)).argmax(dim=1) == labels).sum()
    # train_step's expression, all on the device: no copy to the CPU to compare.
    correct = (logits.argmax(dim=1) == labels.to(dml)).sum()

    assert correct.device.type == "privateuseone"
    assert int(correct.item()) == int(expected)


def test_cross_entropy_matches_the_cpu(dml, batch):
    on_cpu, on_device = models(dml)
    images, labels = batch
    expected = F.cross_entropy(on_cpu(data.to_model_input(images, CPU)), labels)
    actual = F.cross_entropy(on_device(data.to_model_input(images, dml)), labels.to(dml))

    assert close(actual, expected), (float(actual.cpu()), float(expected))


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_steps_follow_the_cpu_without_a_cpu_fallback(dml, batch, optimizer):
    """train_step with the project's optimizer, five steps on each device, same losses."""
    images, labels = batch
    losses = {}
    for device in (CPU, dml):
        torch.manual_seed(0)
        model = to_device(LeNet5(), device)
        opt = build_optimizer(optimizer, model.parameters(), 0.01, device.type)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            steps = [train.train_step(model, opt, images, labels)[0] for _ in range(5)]
            losses[device.type] = torch.stack([loss.cpu() for loss in steps])
        assert not [str(w.message) for w in caught if FALLBACK in str(w.message)]

    assert close(losses["privateuseone"], losses["cpu"]), losses


def test_torch_adam_falls_back_to_the_cpu_so_the_project_has_its_own(dml, child_limit):
    """Why build_optimizer gives DirectML its own Adam: torch's calls lerp, which has no
    DirectML kernel. torch warns once per process, so this runs in a child process."""
    code = (
        "import torch, torch_directml, warnings; warnings.simplefilter('always');"
        "d = torch_directml.device(0); w = torch.nn.Parameter(torch.ones(3, device=d));"
        "opt = torch.optim.Adam([w], foreach=False); w.sum().backward(); opt.step()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=child_limit
    )
    assert "aten::lerp" in done.stderr and FALLBACK in done.stderr, done.stderr[-2000:]


def test_a_checkpoint_of_directml_tensors_loads_on_the_cpu_and_on_directml(dml, batch, tmp_path):
    _, on_device = models(dml)
    path = tmp_path / "last.pt"
    train.save_checkpoint({"model": on_device.state_dict()}, path)
    state = checkpoints.load_checkpoint(path)  # map_location="cpu", weights_only=True
    on_cpu = LeNet5()
    checkpoints.restore_module(on_cpu, state["model"], path)
    again = to_device(LeNet5(), dml)
    checkpoints.restore_module(again, state["model"], path)
    images, _ = batch

    assert {t.device.type for t in state["model"].values()} == {"cpu"}
    expected = on_device(data.to_model_input(images, dml)).cpu()
    assert close(on_cpu(data.to_model_input(images, CPU)), expected, rtol=0)
    assert torch.equal(again(data.to_model_input(images, dml)).cpu(), expected)


def test_float64_works_only_where_the_device_says_it_does(dml):
    import torch_directml

    if torch_directml.has_float64_support(dml.index or 0):
        doubled = torch.ones(2, dtype=torch.float64, device=dml) * 2
        assert doubled.cpu().tolist() == [2.0, 2.0]
    else:
        with pytest.raises(RuntimeError, match="does not support Double"):
            (torch.ones(2, dtype=torch.float64, device=dml) * 2).cpu()


class StopAfterSteps(stopping.StopSignal):
    """Asks to stop after ``steps`` training steps, as a first Ctrl+C would (one check a step)."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps, self.checks = steps, 0

    @property
    def requested(self) -> bool:
        self.checks += 1
        if self.checks == self.steps:
            self.request()
        return self._requested


@pytest.fixture(scope="module")
def runs(dml, tmp_path_factory) -> dict:
    """Two epochs on small synthetic digits (11 steps an epoch) with the project's training
    loop and SGD: on the CPU, on DirectML (its warnings recorded), and on DirectML stopped
    after epoch 1 and resumed."""
    dataset = data.load_synthetic(train_size=768, test_size=256, seed=3)
    found = devices.discover(
        probes=[devices.probe_cpu, lambda: devices.probe_directml(isolate=False)]
    )
    results = {}

    def config(out, device: str, **changes) -> train.TrainConfig:
        values = {"epochs": 2, "batch_size": 64, "dataset": "synthetic", "device": device}
        return train.TrainConfig(output_dir=out, **{**values, **changes})

    def run(name: str, device: str) -> None:
        out = tmp_path_factory.mktemp(name)
        results[name] = (out, train.train(config(out, device), discovery=found, dataset=dataset))

    run("cpu", "cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run("directml", "directml")
    results["fallbacks"] = [str(w.message) for w in caught if FALLBACK in str(w.message)]
    stopped = tmp_path_factory.mktemp("directml-resumed")
    cfg = config(stopped, "directml")
    steps = data.num_batches(len(dataset.train), cfg.batch_size)
    with pytest.raises(stopping.Interrupted, match="Stopped after epoch 1"):
        train.train(cfg, stop=StopAfterSteps(steps), discovery=found, dataset=dataset)
    resumed = config(stopped, "directml", resume=True)
    results["resumed"] = (stopped, train.train(resumed, discovery=found, dataset=dataset))
    results["dataset"] = dataset
    return results


def step_losses(out) -> list[float]:
    """The training loss of each step (metrics.json keeps every step when an epoch has 25
    or fewer)."""
    points = json.loads((out / "metrics.json").read_text("utf-8"))["within_epochs"]
    return [point["train_loss"] for point in points]


def test_training_on_directml_follows_the_cpu_step_by_step(runs):
    (cpu_out, on_cpu), (dml_out, on_dml) = runs["cpu"], runs["directml"]
    expected = torch.tensor(step_losses(cpu_out)[:STEPS_COMPARED])
    actual = torch.tensor(step_losses(dml_out)[:STEPS_COMPARED])
    print("\nstep  cpu loss  directml loss")
    for step, (a, b) in enumerate(zip(expected.tolist(), actual.tolist()), 1):
        print(f"{step:4d}  {a:.6f}  {b:.6f}")
    print(
        f"test accuracy: cpu {100 * on_cpu.test_accuracy:.2f} %, "
        f"directml {100 * on_dml.test_accuracy:.2f} %"
    )

    assert on_dml.device.startswith("directml:0"), on_dml.device
    assert len(actual) == STEPS_COMPARED
    assert torch.allclose(actual, expected, rtol=STEP_LOSS_RTOL, atol=0), actual - expected
    assert abs(on_dml.test_accuracy - on_cpu.test_accuracy) * 100 <= ACCURACY_POINTS


def test_the_training_step_runs_every_operator_on_directml(runs):
    """No CPU fallback warning while training on DirectML with the project's optimizer."""
    assert runs["fallbacks"] == []


def test_a_directml_checkpoint_gives_the_same_answers_on_the_cpu(runs):
    out, on_dml = runs["directml"]
    state = checkpoints.load_checkpoint(out / "last.pt")  # map_location="cpu"
    model = LeNet5()
    checkpoints.restore_module(model, state["model"], out / "last.pt")
    test = runs["dataset"].test
    with torch.no_grad():
        predicted = model(data.to_model_input(test.images, CPU)).argmax(dim=1)
    accuracy = float((predicted == test.labels).float().mean())

    assert abs(accuracy - on_dml.test_accuracy) * 100 <= ACCURACY_POINTS


def test_a_directml_run_stopped_after_epoch_1_and_resumed_ends_as_the_whole_run(runs):
    (whole_out, whole), (resumed_out, resumed) = runs["directml"], runs["resumed"]
    a = checkpoints.load_checkpoint(whole_out / "last.pt")
    b = checkpoints.load_checkpoint(resumed_out / "last.pt")

    assert step_losses(resumed_out) == step_losses(whole_out)
    assert resumed.test_accuracy == whole.test_accuracy
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
