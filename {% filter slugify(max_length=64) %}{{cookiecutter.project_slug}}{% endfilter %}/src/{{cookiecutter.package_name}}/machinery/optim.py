"""Adam without ``lerp``, for DirectML; ``train.build_optimizer`` chooses it there.

torch-directml 0.2.5 implements ``mul_``, ``add_``, ``addcmul_``, ``addcdiv_`` and ``sqrt``
natively, but not ``lerp``, which ``torch.optim.Adam``'s single-tensor path uses for the first
moment, nor the ``_foreach`` ops of its default path: both would run on the CPU, copying every
parameter back and forth at every step.
"""

from __future__ import annotations

import math
from typing import Any

import torch


class LerpFreeAdam(torch.optim.Optimizer):
    """Adam (Kingma & Ba, with L2 weight decay like ``torch.optim.Adam``) written with
    ``mul_``, ``add_``, ``addcmul_``, ``addcdiv_`` and ``sqrt`` only: the same results as
    ``torch.optim.Adam(foreach=False)`` up to rounding."""

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
