"""Which step of LeNet's training a device fails: the work again, one step at a time.

verify_install's smoke test runs the forward and backward pass in one go, which is fast, but
a driver's error then names no operator: DirectML says only ``device1->CompileGraph(...)``.
After such a failure, and only then, ``locate`` runs the same work step by step (the model
and the images to the device, the forward pass layer by layer, the loss, the backward pass,
the optimizer step) and names the first step that fails, with a fix for that step.

Every step reads its result back to the CPU before the next one starts: a GPU may queue its
work and report an error only at the next readback, which would otherwise land on a later
step. The run has a time limit, so a driver that hangs cannot hang the doctor.

torch comes in as an argument, as in verify_install: this module imports without it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from .bounded import call_with_timeout, describe_error

TIMEOUT_S = 60.0  # the whole step-by-step run; LeNet's steps take milliseconds when they work
BATCH = 16

# What each step does, as the finding names it; the keys go to --json as "step".
STEPS = {
    "model": "copying the model to the device",
    "images": "copying the images to the device",
    "forward": "the forward pass",
    "loss": "the loss (cross-entropy)",
    "backward": "the backward pass (the gradients)",
    "optimizer": "the optimizer step",
}
# One fix per step ({what} is the step as named above, with its layer or optimizer); each
# ends with MEANWHILE: whatever the step, the CPU trains correctly.
FIXES = {
    "model": "Even the weights cannot be copied to this device: update the GPU driver and restart.",
    "images": "Even the images cannot be copied to this device: update the GPU driver and restart.",
    "forward": "This device fails in {what}, while the layers before it work: a newer GPU "
    "driver may support it.",
    "loss": "This device runs LeNet's layers but not the cross-entropy loss (log_softmax and "
    "nll_loss): a newer GPU driver may support it.",
    "backward": "This device computes the forward pass and the loss but not the gradients: a "
    "newer GPU driver may support them.",
    "optimizer": "This device computes the gradients but fails in {what}: try the other "
    "optimizer (`--optimizer sgd` or `--optimizer adam`: other operators), or a newer GPU "
    "driver.",
}
MEANWHILE = "Meanwhile train with `--device cpu` (correct results, only slower)."


@dataclass
class FailingStep:
    """The first step that failed when the work ran one step at a time."""

    step: str  # a key of STEPS
    what: str  # "the loss (cross-entropy)", "the forward pass in conv2 (Conv2d)"
    error: str  # "RuntimeError: ...", or "no answer within 60 s"
    read_back: bool = False  # the error came when the step's result was read back
    timed_out: bool = False  # the step gave no answer: the run was abandoned there

    def describe(self) -> str:
        return self.what + (" (when its result was read back to the CPU)" if self.read_back else "")

    def fix(self) -> str:
        return f"{FIXES[self.step].format(what=self.what)} {MEANWHILE}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Progress:
    """Where the step-by-step run stands; layer hooks make "forward" precise."""

    def __init__(self) -> None:
        self.step, self.what, self.reading = "model", STEPS["model"], False

    def at(self, step: str, detail: str = "") -> None:
        self.step, self.what, self.reading = step, STEPS[step] + detail, False

    def failed(self, error: str, timed_out: bool = False) -> FailingStep:
        return FailingStep(self.step, self.what, error, self.reading, timed_out)

    def read_back(self, *values: Any) -> None:
        """Copy results to the CPU: a queued error of this step shows up here, not later."""
        self.reading = True
        for value in values:
            if hasattr(value, "detach"):
                value.detach().to("cpu")
        self.reading = False


def _watch_layers(model: Any, progress: Progress) -> list[Any]:
    """Hooks on every layer without sublayers: the step names the layer running, or the
    functions between two layers (pooling, activation, reshaping in forward())."""

    def entering(label: str) -> Callable[..., None]:
        def hook(module: Any, inputs: Any) -> None:
            progress.at("forward", f" in {label}")

        return hook

    def leaving(label: str) -> Callable[..., None]:
        def hook(module: Any, inputs: Any, output: Any) -> None:
            progress.read_back(output)
            progress.at("forward", f" after {label} (pooling, activation or reshaping)")

        return hook

    handles = []
    for name, layer in model.named_modules():
        if name and next(layer.children(), None) is None:
            label = f"{name} ({type(layer).__name__})"
            handles.append(layer.register_forward_pre_hook(entering(label)))
            handles.append(layer.register_forward_hook(leaving(label)))
    return handles


def run_steps(
    torch: Any,
    lenet: Callable[[], Any],
    device: Any,
    to_input: Callable[[Any], Any],
    make_optimizer: Callable[[Any], Any],
    progress: Progress,
) -> None:
    """LeNet's training step on ``device``, one step at a time; raises where it fails."""
    torch.manual_seed(0)
    images = torch.randint(0, 256, (BATCH, 1, 28, 28), dtype=torch.uint8)
    labels = torch.arange(BATCH) % 10

    model = lenet().to(device)
    progress.read_back(*model.parameters())
    optimizer = make_optimizer(model)  # after .to(): see docs/directml.md
    progress.at("images")
    inputs, targets = to_input(images.to(device)), labels.to(device)
    progress.read_back(inputs, targets)

    handles = _watch_layers(model, progress)
    try:
        progress.at("forward")
        logits = model(inputs)
    finally:
        for handle in handles:
            handle.remove()
    progress.at("loss")
    loss = torch.nn.functional.cross_entropy(logits, targets)
    progress.read_back(loss)
    progress.at("backward")
    loss.backward()
    progress.read_back(*(p.grad for p in model.parameters() if p.grad is not None))
    progress.at("optimizer", f" ({type(optimizer).__name__})")
    optimizer.step()
    progress.read_back(*model.parameters())


def locate(
    torch: Any,
    lenet: Callable[[], Any],
    device: Any,
    to_input: Callable[[Any], Any],
    make_optimizer: Callable[[Any], Any],
    timeout: float = TIMEOUT_S,
) -> FailingStep | None:
    """The first step that fails on ``device``, or None when every step works on its own."""
    progress = Progress()
    outcome: dict[str, FailingStep] = {}

    def attempt() -> None:
        try:
            run_steps(torch, lenet, device, to_input, make_optimizer, progress)
        except Exception as error:
            outcome["failed"] = progress.failed(describe_error(error))

    _, problem = call_with_timeout(attempt, timeout)
    if problem:  # still running: a hang in the step it stands at
        return progress.failed(f"no answer within {timeout:g} s", timed_out=True)
    return outcome.get("failed")
