"""The probes: work run with torch on the chosen device, torch passed in (never imported here).

A LeNet forward and backward pass against the same on the CPU (``smoke_test``); one training
step with its warnings captured (the operators that fell back to the CPU), then timed on the
device and on the CPU (``training_step``); after a failure, the same work one step at a time
to name the step that fails (``locate_failure``, with ``stepwise``). Probes measure and return
data; the rules of ``rules/run.py`` turn it into findings.
"""

from __future__ import annotations

import copy
import re
import time
import warnings
from typing import Any, Callable

from . import stepwise

SMOKE_BATCH = 16
SMOKE_TOLERANCE = 1e-2  # relative to the largest value; TF32 convolutions stay below 1e-3
STEP_BATCH = 64
TIMED_STEPS = 5
TIME_BUDGET_S = 1.0  # per device for the timed steps
FALLBACK_WARNING = re.compile(
    r"The operator '([^']+)' is not currently (?:supported|implemented) on the (\S+) "
    r"(?:backend|device)"
)
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def model_input(torch: Any, images_uint8: Any) -> Any:
    return (images_uint8.float() / 255.0 - MNIST_MEAN) / MNIST_STD


def _relative_error(torch: Any, candidate: Any, reference: Any) -> float:
    candidate = candidate.detach().to("cpu", torch.float32)
    reference = reference.detach().to(torch.float32)
    scale = max(float(reference.abs().max()), 1e-6)
    return float((candidate - reference).abs().max()) / scale


def smoke_test(torch: Any, lenet: Callable[[], Any], device: Any) -> dict[str, Any]:
    """LeNet forward and backward on ``device`` against the same on the CPU."""
    torch.manual_seed(0)
    reference = lenet()
    candidate = copy.deepcopy(reference).to(device)
    images = torch.randint(0, 256, (SMOKE_BATCH, 1, 28, 28), dtype=torch.uint8)
    labels = torch.arange(SMOKE_BATCH) % 10
    cross_entropy = torch.nn.functional.cross_entropy

    ref_logits = reference(model_input(torch, images))
    ref_loss = cross_entropy(ref_logits, labels)
    ref_loss.backward()
    logits = candidate(model_input(torch, images.to(device)))
    loss = cross_entropy(logits, labels.to(device))
    loss.backward()

    errors = {"logits": _relative_error(torch, logits, ref_logits)}
    errors["loss"] = _relative_error(torch, loss, ref_loss)
    for (name, param), (_, ref_param) in zip(
        candidate.named_parameters(), reference.named_parameters()
    ):
        if param.grad is None:
            raise RuntimeError(f"no gradient for {name} on {device}")
        errors[f"grad {name}"] = _relative_error(torch, param.grad, ref_param.grad)
    worst = max(errors, key=lambda key: errors[key])
    finite = bool(torch.isfinite(loss.detach().cpu()).all()) and all(  # checked on the CPU
        bool(torch.isfinite(param.grad.detach().cpu()).all()) for param in candidate.parameters()
    )
    return {
        "device": str(device),
        "loss": float(loss.detach().cpu()),
        "max_relative_error": errors[worst],
        "worst": worst,
        "tolerance": SMOKE_TOLERANCE,
        "finite": finite,
        "passed": finite and errors[worst] <= SMOKE_TOLERANCE,
    }


def locate_failure(
    torch: Any, lenet: Callable[[], Any], train: Any, device: Any
) -> stepwise.FailingStep | None:
    """After a failure only: the step that fails when the work runs one step at a time."""
    name, lr = training_defaults(train)

    def make_optimizer(model: Any) -> Any:
        return train.build_optimizer(name, model.parameters(), lr, device.type)

    def to_input(images: Any) -> Any:
        return model_input(torch, images)

    return stepwise.locate(torch, lenet, device, to_input, make_optimizer)


def training_defaults(train: Any) -> tuple[str, float]:
    """The optimizer and learning rate ``train`` uses without options: what users will run."""
    try:
        config = train.TrainConfig()
        return str(config.optimizer), float(config.peak_lr)
    except Exception:  # an older or changed train module: plain SGD still exercises the step
        return "sgd", 0.01


def _step_setup(torch: Any, lenet: Callable[[], Any], train: Any, device: Any) -> tuple[Any, ...]:
    torch.manual_seed(1)
    model = lenet().to(device)  # to the device first, then the optimizer (see docs)
    name, lr = training_defaults(train)
    optimizer = train.build_optimizer(name, model.parameters(), lr, device.type)
    images = torch.randint(0, 256, (STEP_BATCH, 1, 28, 28), dtype=torch.uint8).to(device)
    labels = (torch.arange(STEP_BATCH) % 10).to(device)
    return model, optimizer, images, labels


def _timed_steps(torch: Any, train: Any, setup: tuple[Any, ...], steps: int) -> tuple[float, int]:
    """(seconds per training step, steps run): at most ``steps``, fewer once TIME_BUDGET_S is
    spent (a busy CPU must not make the check slow). The readback at the end is the barrier:
    DirectML has no synchronize."""
    model, optimizer, images, labels = setup
    start = time.perf_counter()
    loss_sum, done = None, 0
    while done < steps:
        loss_sum, _correct = train.train_step(model, optimizer, images, labels)
        done += 1
        if time.perf_counter() - start > TIME_BUDGET_S:
            break
    float(loss_sum.detach().cpu())
    return (time.perf_counter() - start) / done, done


def training_step(
    torch: Any, lenet: Callable[[], Any], train: Any, device: Any, against_cpu: bool = True
) -> tuple[list[str], list[str], dict[str, Any]]:
    """One training step with warnings captured: (fallback operators, other warnings, timing).

    The step is then timed on ``device`` and, with ``against_cpu``, on the CPU too."""
    setup = _step_setup(torch, lenet, train, device)
    set_warn_always = getattr(torch, "set_warn_always", None)
    was_always = torch.is_warn_always_enabled() if set_warn_always else False
    if set_warn_always:
        set_warn_always(True)  # else a warning raised in C++ may appear once per process only
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss_sum, _correct = train.train_step(*setup)
            loss = float(loss_sum.detach().cpu())
    finally:
        if set_warn_always:
            set_warn_always(was_always)
    operators, others = [], []
    for warning in caught:
        message = str(warning.message)
        match = FALLBACK_WARNING.search(message)
        if match:
            if match.group(1) not in operators:
                operators.append(match.group(1))
        elif message not in others:
            others.append(" ".join(message.split())[:200])
    if loss != loss:
        raise RuntimeError(f"the training step on {device} produced a NaN loss")
    seconds, steps = _timed_steps(torch, train, setup, TIMED_STEPS)
    timing = {"device": str(device), "batch": STEP_BATCH, "steps": steps}
    timing["device_ms"] = 1000 * seconds
    if against_cpu:
        cpu_setup = _step_setup(torch, lenet, train, torch.device("cpu"))
        _timed_steps(torch, train, cpu_setup, 1)  # warm-up
        seconds, timing["cpu_steps"] = _timed_steps(torch, train, cpu_setup, TIMED_STEPS)
        timing["cpu_ms"] = 1000 * seconds
    return operators, others[:5], timing
