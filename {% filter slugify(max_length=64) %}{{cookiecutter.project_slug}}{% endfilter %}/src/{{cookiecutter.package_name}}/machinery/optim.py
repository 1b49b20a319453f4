"""Optimizers that stay on the GPU with DirectML (the schedule is ``get_lr`` in train.py).

Build the optimizer once, after ``model.to(device)``: in torch 2.4.1 moving a model to a
DirectML device creates new Parameter objects, so an optimizer built before the move would
update orphaned CPU tensors.
"""

from __future__ import annotations

import math
from typing import Any

import torch

DEFAULT_MOMENTUM = 0.9
DEFAULT_WEIGHT_DECAY = 5e-4


class LerpFreeAdam(torch.optim.Optimizer):
    """Adam (Kingma & Ba, with L2 weight decay like ``torch.optim.Adam``) written with
    ``mul_``, ``add_``, ``addcmul_``, ``addcdiv_`` and ``sqrt`` only.

    torch-directml 0.2.5 implements those natively, but not ``lerp``, which
    ``torch.optim.Adam``'s single-tensor path uses for the first moment, nor the ``_foreach``
    ops of its default path: both would run on the CPU, copying every parameter back and forth
    at every step. Same results as ``torch.optim.Adam(foreach=False)`` up to rounding.
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if lr <= 0 or eps <= 0 or weight_decay < 0:
            raise ValueError("lr and eps must be positive, weight_decay not negative")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must be in [0, 1), not {betas}")
        super().__init__(
            params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        )

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                if group["weight_decay"]:
                    grad = grad.add(param, alpha=group["weight_decay"])
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param)
                    state["exp_avg_sq"] = torch.zeros_like(param)
                state["step"] += 1
                step = state["step"]  # a Python int: the bias corrections stay on the host
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
                bias1 = 1.0 - beta1**step
                bias2 = 1.0 - beta2**step
                denom = exp_avg_sq.sqrt().mul_(1.0 / math.sqrt(bias2)).add_(group["eps"])
                param.addcdiv_(exp_avg, denom, value=-group["lr"] / bias1)
        return loss


OPTIMIZERS = ("sgd", "adam")


def build_optimizer(
    name: str,
    params: Any,
    lr: float,
    device_type: str,
    momentum: float = DEFAULT_MOMENTUM,
    weight_decay: float = DEFAULT_WEIGHT_DECAY,
    nesterov: bool = True,
) -> torch.optim.Optimizer:
    """The optimizer ``name`` ("sgd" or "adam") for parameters on a ``device_type`` device.

    Build it after ``model.to(device)``. On DirectML (``device_type == "privateuseone"``):
    SGD runs with ``foreach=False`` and is then fully native (torch-directml registers no
    ``_foreach_*`` kernel: older stacks ran them on the CPU, torch 2.4.1 splits most into
    per-tensor ops but ``_foreach_lerp_`` still reaches ``lerp``); Adam is LerpFreeAdam,
    because torch's Adam calls ``lerp``, which falls back to the CPU. Elsewhere torch's own
    implementations with their default fast paths.
    """
    params = list(params)
    directml = device_type == "privateuseone"
    if name == "sgd":
        options: dict[str, Any] = {
            "lr": lr,
            "momentum": momentum,
            "nesterov": nesterov and momentum > 0,
            "weight_decay": weight_decay,
        }
        if directml:
            options["foreach"] = False
        return torch.optim.SGD(params, **options)
    if name == "adam":
        if directml:
            return LerpFreeAdam(params, lr=lr, weight_decay=weight_decay)
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")


def clip_gradients(parameters: Any, max_norm: float, device_type: str) -> None:
    """Scale all gradients down together when their total norm is above ``max_norm``.

    No readback: the norm and the scale stay on the device. The ``foreach`` path (fewer
    kernel launches) only on CUDA/ROCm and XPU; torch-directml registers no ``_foreach_*``
    kernel, while the per-tensor ops (``linalg_vector_norm``, ``clamp``, ``mul``) are native
    there, and on the CPU the difference is nil for LeNet's ten tensors.
    """
    foreach = None if device_type in ("cuda", "xpu") else False
    torch.nn.utils.clip_grad_norm_(parameters, max_norm, foreach=foreach)
