"""Does an optimizer built before ``model.to(device)`` still update the model's parameters?

``Module.to()`` keeps the same Parameter objects only when the old and the new tensor types are
"shallow-copy compatible" (dense CPU, CUDA, HIP, XPU, MPS, HPU). DirectML's device type,
privateuseone, is not in that list, so ``.to()`` creates new Parameters and an optimizer built
earlier keeps updating the old CPU tensors: the model never learns. Building the optimizer
after ``.to()`` is right on every device.

The check uses every device it can reach: DirectML when torch-directml loads, CUDA/ROCm when
present, and always the ``meta`` device, which sits outside the compatible list exactly like
privateuseone and exists in every torch, so the mechanism can be seen on any machine:

    python docs/checks/optimizer_after_to.py

Exit code 0 when the result agrees with docs/directml.md.
"""

from __future__ import annotations

import sys

import torch
from torch import nn


def directml_device():
    """(device, None) when DirectML works here, else (None, the reason)."""
    try:
        import torch_directml

        if not torch_directml.is_available():
            return None, "torch_directml.is_available() is False"
        return torch_directml.device(), None
    except Exception as error:  # ImportError, OSError (no libd3d12.so), RuntimeError, ...
        return None, f"{type(error).__name__}: {error}"


def optimizer_sees_model(model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """How many of the tensors the optimizer updates are parameters of the model."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    return sum(any(p is q for q in model.parameters()) for p in params)


def check(device: torch.device) -> tuple:
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    total = len(list(model.parameters()))
    before = torch.optim.SGD(model.parameters(), lr=0.01)
    model.to(device)
    after = torch.optim.SGD(model.parameters(), lr=0.01)
    compatible = torch._has_compatible_shallow_copy_type(
        torch.zeros(1), torch.zeros(1, device=device)
    )
    return (
        compatible,
        optimizer_sees_model(model, before),
        optimizer_sees_model(model, after),
        total,
    )


def main() -> int:
    print(f"torch {torch.__version__}")
    devices = []
    dml, reason = directml_device()
    if dml is not None:
        devices.append((dml, False))
    else:
        print(f"DirectML: not available here ({reason})")
    if torch.cuda.is_available():
        devices.append((torch.device("cuda"), True))
    devices.append((torch.device("meta"), False))
    ok = True
    for device, keeps_parameters in devices:
        compatible, before, after, total = check(device)
        print(f"\nmodel.to({device.type!r}):")
        print(f"  shallow-copy compatible with CPU tensors: {compatible}")
        print(f"  optimizer built BEFORE .to(): updates {before} of the model's {total} parameters")
        print(f"  optimizer built AFTER  .to(): updates {after} of the model's {total} parameters")
        ok &= compatible == keeps_parameters and after == total
        ok &= before == (total if keeps_parameters else 0)
    print("\nAgrees with docs/directml.md:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
