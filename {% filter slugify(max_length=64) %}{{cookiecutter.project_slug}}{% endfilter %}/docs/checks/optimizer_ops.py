"""Which aten operators one optimizer step runs: foreach or per-tensor, SGD or Adam.

torch-directml 0.2.5 has no kernel for ``lerp`` (Adam, AdamW) or for any ``_foreach_*``
operator (the default path of every optimizer on privateuseone). This check records, on the
CPU, the operators that ``optimizer.step()`` dispatches for the settings people use, and looks
the flagged ones up in the list of operators torch-directml implements
(``src/<package>/machinery/directml_ops.txt``, read from its Windows wheel). No GPU needed:

    python docs/checks/optimizer_ops.py

Exit code 0 when the result agrees with docs/directml.md: optimizers default to foreach on
privateuseone (DirectML), foreach uses ``_foreach_*`` operators, Adam and AdamW use ``lerp``,
and SGD with momentum and ``foreach=False`` uses neither.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

PROJECT = Path(__file__).resolve().parents[2]


class OperatorRecorder(TorchDispatchMode):
    """Records the name of every aten operator dispatched while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::")[-1]
        if not name.startswith("_record_function"):  # profiler markers, not computation
            self.names.add(name)
        return func(*args, **(kwargs or {}))


def step_operators(make_optimizer) -> set:
    """The operators of the second ``step()`` (the first one also creates the state)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    optimizer = make_optimizer(model.parameters())
    recorder = OperatorRecorder()
    for step in range(2):
        optimizer.zero_grad()
        model(torch.randn(16, 8)).sum().backward()
        if step == 0:
            optimizer.step()
        else:
            with recorder:
                optimizer.step()
    return recorder.names


def lacks_kernel(name: str) -> bool:
    return name.startswith("_foreach_") or name.startswith("lerp")


def functional(name: str) -> str:
    """'add_' -> 'add': an in-place operator reaches the kernel of its functional form."""
    return name[:-1] if name.endswith("_") else name


def directml_kernels() -> list:
    """The entries (``aten::name.overload``) of the project's DirectML list, if present."""
    entries = []
    for path in PROJECT.glob("src/*/machinery/directml_ops.txt"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("aten::"):
                entries.append(line[len("aten::") :])
    return entries


CONFIGURATIONS = [
    ("SGD(momentum=0.9, foreach=True)", True, False),
    ("SGD(momentum=0.9, foreach=False)", False, False),
    ("Adam(foreach=True)", True, False),
    ("Adam(foreach=False)", False, True),
    ("AdamW(foreach=False)", False, True),
]


def make(label: str):
    foreach = "foreach=True" in label
    if label.startswith("SGD"):
        return lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=foreach)
    if label.startswith("AdamW"):
        return lambda params: torch.optim.AdamW(params, lr=1e-3, foreach=foreach)
    return lambda params: torch.optim.Adam(params, lr=1e-3, foreach=foreach)


def main() -> int:
    from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices

    ok = True
    print(f"torch {torch.__version__}")
    defaults = _get_foreach_kernels_supported_devices()
    print(f"Optimizers default to the foreach path on: {', '.join(defaults)}")
    ok &= "privateuseone" in defaults
    entries = directml_kernels()
    kernels = {functional(entry.split(".")[0]) for entry in entries}
    for label, expect_foreach, expect_lerp in CONFIGURATIONS:
        names = step_operators(make(label))
        flagged = sorted(name for name in names if lacks_kernel(name))
        print(f"\n{label}: {len(names)} operators")
        print("  " + ", ".join(sorted(names)))
        if not flagged:
            print("  _foreach_* or lerp: none")
        elif not entries:
            print(f"  _foreach_* or lerp: {', '.join(flagged)}")
        else:
            listed = {name for name in flagged if functional(name) in kernels}
            verdict = "none of them" if not listed else f"{', '.join(sorted(listed))} (!)"
            print(f"  _foreach_* or lerp: {', '.join(flagged)}")
            print(f"  in directml_ops.txt ({len(entries)} DirectML kernels): {verdict}")
            ok &= not listed
        ok &= any(n.startswith("_foreach_") for n in names) == expect_foreach
        ok &= any(n.startswith("lerp") for n in names) == expect_lerp
    print("\nAgrees with docs/directml.md:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
