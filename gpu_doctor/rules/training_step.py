"""Rules about the run on the device, read from what the probes measured (``probes``): the
smoke test against the CPU, a smoke test or training step that raised (with the step that
fails), the operators that fell back to the CPU, warnings, and the time of one step.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..bounded import describe_error
from ..findings import FAIL, NO_ACTION, OK, WARN, Finding
from ..project import Project
from ..stepwise import FailingStep
from . import cuda, rocm, rocm_windows

CODES = {
    "SMOKE-TEST-OK": "LeNet forward and backward agree with the CPU.",
    "SMOKE-TEST-WRONG": "LeNet on the device computes wrong or non-finite values.",
    "SMOKE-TEST-ERROR": "LeNet forward and backward raised an error on the device.",
    "TRAIN-STEP-ERROR": "One training step raised an error on the device.",
    "TRAIN-STEP-WARNINGS": "Warnings during the training step.",
    "CPU-FALLBACK-NONE": "No operator fell back to the CPU.",
    "CPU-FALLBACK-OPERATORS": "Operators of the training step ran on the CPU instead.",
    "TIMING-STEP": "The time of one training step.",
    "TIMING-CPU-FASTER": "The CPU is faster than the device for this model.",
}

SMOKE_TEST, TRAIN_STEP = "Smoke test", "Train step"


def smoke_test(smoke: dict[str, Any], device: Any, accelerator: bool) -> Finding:
    """The smoke test that ran: on an accelerator compared with the CPU, on the CPU finite."""
    if not accelerator:
        summary = (
            f"LeNet forward+backward on the CPU: loss {smoke['loss']:.3f}, "
            f"{'all values finite' if smoke['finite'] else 'NaN or infinite values'}."
        )
    else:
        summary = (
            f"LeNet forward+backward on {device} vs the CPU: largest relative difference "
            f"{smoke['max_relative_error']:.1e} ({smoke['worst']}), tolerance "
            f"{smoke['tolerance']:g}."
        )
    if not smoke["passed"]:
        return Finding(
            SMOKE_TEST,
            FAIL,
            summary,
            "Do not train on this device: use `--device cpu` and update the GPU driver.",
            code="SMOKE-TEST-WRONG",
            brief=f"LeNet on {device} gives wrong numbers, unlike the CPU."
            if accelerator
            else "LeNet on the CPU gives NaN or infinite values.",
        )
    return Finding(SMOKE_TEST, OK, summary, code="SMOKE-TEST-OK")


def failure(
    check: str,
    work: str,
    error: BaseException,
    located: FailingStep | None,
    recommendation: dict[str, Any] | None = None,
    project: Project | None = None,
    torch_said: str = "",
    measured: Sequence[tuple[str, str]] = (),
) -> Finding:
    """The FAIL line of a smoke test or training step that raised, naming the step that fails.
    ROCm's "invalid device function" names the GPU's gfx target and its override instead;
    CUDA's "no kernel image" (or torch's warning, ``torch_said``) the GPU's compute capability
    and the environment whose build runs it."""
    code = "SMOKE-TEST-ERROR" if check == SMOKE_TEST else "TRAIN-STEP-ERROR"
    seen = f"{error} {located.error if located else ''}"
    kernels = rocm.invalid_device_function(seen, recommendation, project)
    wrong_kernels = rocm_windows.invalid_image(seen, recommendation, project)
    image = cuda.no_kernel_image(f"{seen} {torch_said}", recommendation, project, measured)
    if image:
        found, fix, follows = image
        return Finding(
            check,
            FAIL,
            f"{work} failed. {found}",
            fix,
            "CUDA-NO-KERNEL-IMAGE",
            follows=follows,
            brief="This torch has no CUDA kernels for this GPU.",
        )
    if located is None:
        found = f"{work} failed: {describe_error(error)}."
        fix = "Train with `--device cpu`; update the GPU driver."
    else:
        found = f"{work} failed in {located.describe()}: {located.error}."
        if located.timed_out:  # the step hung on its own: the first error still says what failed
            found = (
                f"{work} failed: {describe_error(error)}. Run one step at a time, "
                f"{located.what} gave {located.error}."
            )
        fix = located.fix()
    if kernels:
        return Finding(
            check,
            FAIL,
            f"{found} {kernels[0]}",
            kernels[1],
            "ROCM-INVALID-DEVICE-FUNCTION",
            brief="ROCm has no kernels for this GPU: invalid device function.",
        )
    if wrong_kernels:
        return Finding(
            check,
            FAIL,
            f"{found} {wrong_kernels[0]}",
            wrong_kernels[1],
            "ROCM-WINDOWS-INVALID-IMAGE",
            brief="AMD's build has no kernels for this GPU: invalid image.",
        )
    return Finding(check, FAIL, found, fix, code=code, brief=f"{work} failed.")


def training_step(operators: Sequence[str], others: Sequence[str], device: Any) -> list[Finding]:
    """The operators of one training step that fell back to the CPU, and its other warnings."""
    if operators:
        findings = [
            Finding(
                "CPU fallback",
                WARN,
                f"{len(operators)} operator(s) of one training step ran on the CPU instead of "
                f"{device}: {', '.join(operators)}.",
                "Each fallback copies tensors to the CPU and back in every step. The training "
                "code avoids them on DirectML (SGD with foreach=False, a lerp-free Adam): check "
                "that torch and torch-directml match the pins above and report the operators.",
                code="CPU-FALLBACK-OPERATORS",
            )
        ]
    else:
        findings = [
            Finding(
                "CPU fallback",
                OK,
                "No operator of one training step fell back to the CPU.",
                code="CPU-FALLBACK-NONE",
            )
        ]
    if others:
        findings.append(
            Finding(
                "Warnings",
                WARN,
                "During the training step: " + " | ".join(others),
                "These are torch's own warnings; the step itself worked, so training can go on. "
                "If training fails, report them with this output.",
                code="TRAIN-STEP-WARNINGS",
                role=NO_ACTION,
            )
        )
    return findings


def timing(measured: dict[str, Any], device: Any) -> Finding:
    """The time of one training step on the device, and on the CPU when both were timed.
    ``measured["emulated"]``: what emulates the GPU on the CPU, if one does (no speed claim)."""
    device_ms, batch = measured["device_ms"], measured["batch"]
    if "cpu_ms" not in measured:
        return Finding(
            "Timing",
            OK,
            f"One step of {batch} images: {device_ms:.1f} ms on the CPU.",
            code="TIMING-STEP",
            brief=f"{device_ms:.0f} ms a step of {batch} images.",
        )
    if measured.get("emulated"):
        return Finding(
            "Timing",
            OK,
            f"One step of {batch} images: {device_ms:.1f} ms on {device}, "
            f"{measured['cpu_ms']:.1f} ms on the CPU. The device is emulated (a CPU emulating "
            f"a GPU: {measured['emulated']}): these times say nothing about a GPU's speed.",
            code="TIMING-STEP",
            brief="Emulated on the CPU: its times say nothing of a GPU.",
        )
    ratio = measured["cpu_ms"] / device_ms if device_ms > 0 else float("inf")
    return Finding(
        "Timing",
        OK if ratio >= 1 else WARN,
        f"One step of {batch} images: {device_ms:.1f} ms on {device}, "
        f"{measured['cpu_ms']:.1f} ms on the CPU ({ratio:.1f}x).",
        ""
        if ratio >= 1
        else "The CPU is faster for this small model here: "
        "`--device cpu` trains faster; larger batches favour the GPU.",
        code="TIMING-STEP" if ratio >= 1 else "TIMING-CPU-FASTER",
        brief=f"{device_ms:.0f} ms a step, {measured['cpu_ms']:.0f} ms on the CPU.",
    )
