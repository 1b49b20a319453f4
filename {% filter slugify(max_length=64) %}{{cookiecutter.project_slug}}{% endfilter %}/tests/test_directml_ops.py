"""No CPU fallback on DirectML, checked on the CPU.

``machinery/directml_ops.txt`` (read from the registrations in the native module of the
torch-directml 0.2.5 Windows wheel) lists every aten operator that has a DirectML (PrivateUse1)
kernel. Here a
``TorchDispatchMode`` records the aten overloads that one training step and one evaluation
step execute on CPU tensors, with the optimizer built exactly as for DirectML, and each is
routed the way torch 2.4.1's dispatcher routes it for a privateuseone tensor:

1. The overload is in the list: DirectML computes it (``relu``, ``view``, ``copy_``...).
2. The overload is not in the list but has a composite kernel, which torch uses for every
   backend without a kernel of its own. The composite is run on copies of the recorded
   arguments under a recorder and the operators *it* calls are routed in turn:
   ``CompositeExplicitAutogradNonFunctional`` is how structured ops reach a backend's
   ``out=`` kernel (``add_.Tensor`` -> ``add.out``, ``_log_softmax`` -> ``_log_softmax.out``);
   ``CompositeExplicitAutograd`` decomposes (``_to_copy`` -> ``empty_strided`` + ``copy_``).
3. A composite that picks its callee by device cannot be replayed on the CPU; its
   privateuseone route is written down in ``DEVICE_ROUTES`` (torch's
   ``select_conv_backend`` returns ``ConvBackend::Overrideable`` for an out-of-tree device).
4. View ops (the result aliases an input and nothing is written) move no data: one with a
   composite kernel only computes sizes and strides; one without (``view``, ``as_strided``,
   ``_unsafe_view``, ``alias``) needs a DirectML kernel, like any other op.
5. ``_foreach_*`` ops are refused outright. DirectML has no foreach kernel; with torch <= 2.3
   (torch-directml <= 0.2.4) they went straight to the CPU fallback (microsoft/DirectML
   #604, #626); in torch 2.4.1 they run torch's composite "slow" kernel, a per-tensor loop
   of ordinary ops (so ``_foreach_lerp_`` still falls back, through ``lerp``). The example
   must not depend on either, so the optimizer is built with ``foreach=False`` on DirectML.
6. Anything else would run on the CPU fallback, and the test fails naming it and the chain
   of composites that led to it. Other namespaces fail too, except ``profiler``
   (``record_function`` bookkeeping around ``optimizer.step``, which runs on the host).

The routing uses the composite kernels of the torch that runs the test; the DirectML stack
pins torch 2.4.1, and the test passes on it and on the CPU/CUDA stack's torch. When
torch-directml's native module is installed (the directml stack, or its manylinux wheel with
the bundled stub libraries), a subprocess also loads it, no GPU needed, and asks the real
dispatcher: its PrivateUse1 registrations must equal the list, and no operator the routing
went through may land on DirectML's ``backend fallback``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from {{ cookiecutter.package_name }} import (
    data,
)
from {{ cookiecutter.package_name }}.evaluate import eval_step
from {{ cookiecutter.package_name }}.model import LeNet5
from {{ cookiecutter.package_name }}.train import (
    OPTIMIZERS,
    build_optimizer,
    train_step,
)

OPS_FILE = Path(data.__file__).parent / "machinery" / "directml_ops.txt"
LINE = re.compile(r"^aten::[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)?$")

# Composite kernels tried in the dispatcher's order for a backend without its own kernel.
COMPOSITE_KEYS = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)
# Composites that choose their callee by the tensors' device: the privateuseone route.
DEVICE_ROUTES = {
    "aten::_convolution": ("aten::convolution_overrideable",),
    "aten::convolution_backward": ("aten::convolution_backward_overrideable",),
}
HOST_NAMESPACES = ("profiler",)
BATCH = 16


def load_ops(path: Path = OPS_FILE) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    ops = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    bad = [op for op in ops if not LINE.match(op)]
    assert not bad, f"malformed lines in {path.name}: {bad[:5]}"
    assert ops == sorted(set(ops)), f"{path.name} must be sorted and free of duplicates"
    return set(ops)


def _copy(tree):
    return tree_map(lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, tree)


class OpRecorder(TorchDispatchMode):
    """Records each operator overload that reaches the backends, with a copy of its first
    arguments (enough to replay a composite kernel later)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in self.calls:
            self.calls[func] = _copy((args, kwargs))
        return func(*args, **kwargs)

    def names(self) -> set[str]:
        return {func.name() for func in self.calls}


def _is_view(func) -> bool:
    schema = func._schema
    return not schema.is_mutable and any(r.alias_info is not None for r in schema.returns)


def route(
    func, args, kwargs, native: set[str], via: tuple[str, ...] = (), seen: set | None = None
) -> dict[str, str]:
    """Operators that ``func`` would run on DirectML's CPU fallback -> why (see the module
    docstring for the rules). ``seen`` collects every operator the routing went through."""
    name = func.name()
    if seen is not None:
        seen.add(name)
    chain = " -> ".join((*via, name))
    namespace = name.split("::", 1)[0]
    if namespace in HOST_NAMESPACES:
        return {}
    if namespace != "aten":
        return {name: f"{chain}: not an aten operator"}
    if name in native:
        return {}
    if name.split("::", 1)[1].startswith("_foreach_"):
        return {name: f"{chain}: foreach op (no DirectML kernel; build with foreach=False)"}
    if name in DEVICE_ROUTES:
        if seen is not None:
            seen.update(DEVICE_ROUTES[name])
        return {
            target: f"{chain} -> {target}: no DirectML kernel"
            for target in DEVICE_ROUTES[name]
            if target not in native
        }
    composites = [
        key for key in COMPOSITE_KEYS if torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
    ]
    if composites and _is_view(func):
        return {}
    if composites and name not in via:
        inner = OpRecorder()
        replay_args, replay_kwargs = _copy((args, kwargs))
        with inner:
            func._op_dk(getattr(torch._C.DispatchKey, composites[0]), *replay_args, **replay_kwargs)
        missing: dict[str, str] = {}
        for callee, (callee_args, callee_kwargs) in inner.calls.items():
            missing.update(route(callee, callee_args, callee_kwargs, native, (*via, name), seen))
        return missing
    return {name: f"{chain}: no DirectML kernel, no composite: the CPU fallback runs it"}


def fallbacks(recorder: OpRecorder, native: set[str], seen: set | None = None) -> dict[str, str]:
    missing: dict[str, str] = {}
    for func, (args, kwargs) in recorder.calls.items():
        missing.update(route(func, args, kwargs, native, seen=seen))
    return missing


def record_steps(make_optimizer) -> OpRecorder:
    """An epoch's shuffle and first batch (the data lives on the device), two training steps
    (the first creates the optimizer state) and one evaluation step."""
    torch.manual_seed(0)
    model = LeNet5()
    optimizer = make_optimizer(list(model.parameters()))
    split = data.synthetic_digits(2 * BATCH, seed=1)
    generator = torch.Generator().manual_seed(0)
    recorder = OpRecorder()
    with recorder:
        images, labels = next(data.batches(data.shuffled(split, generator), BATCH))
        for _ in range(2):
            train_step(model, optimizer, images, labels)
        eval_step(model, images, labels)
    assert images.dtype == torch.uint8 and images.shape == (BATCH, 1, 28, 28)
    return recorder


def directml_optimizer(name: str = "sgd"):
    """The optimizer exactly as training builds it for a DirectML device."""
    return lambda params: build_optimizer(name, params, lr=0.01, device_type="privateuseone")


@functools.lru_cache(maxsize=None)
def directml_recording(name: str) -> OpRecorder:
    return record_steps(directml_optimizer(name))


@pytest.fixture(scope="module")
def native() -> set[str]:
    return load_ops()


def test_op_list_parses_and_holds_the_known_natives(native):
    assert len(native) > 250
    for op in (
        "aten::convolution_overrideable",
        "aten::convolution_backward_overrideable",
        "aten::max_pool2d_with_indices",
        "aten::max_pool2d_with_indices_backward",
        "aten::relu",
        "aten::addmm.out",
        "aten::_log_softmax.out",
        "aten::_log_softmax_backward_data.out",
        "aten::nll_loss_forward.output",
        "aten::nll_loss_backward.grad_input",
        "aten::argmax.out",
        "aten::eq.Tensor_out",
        "aten::sum.IntList_out",
        "aten::mean.out",
        "aten::add.out",
        "aten::mul.out",
        "aten::addcmul.out",
        "aten::addcdiv.out",
        "aten::sqrt.out",
        "aten::view",
        "aten::copy_",
    ):
        assert op in native, op
    assert not {op for op in native if "lerp" in op or "_foreach_" in op}
    assert "aten::_foreach_add_.List" not in native
    header = OPS_FILE.read_text(encoding="utf-8").splitlines()[0]
    assert "torch_directml-0.2.5.dev240914" in header


def test_directml_optimizers_are_built_without_foreach():
    """On CPU tensors torch never picks the foreach path by itself, so the recording below
    cannot see it: ``foreach=None`` means "torch's default", which is the foreach path on
    privateuseone. Every DirectML optimizer must therefore say ``foreach=False`` (or have no
    such option, like the lerp-free Adam)."""
    assert "privateuseone" in _get_foreach_kernels_supported_devices()
    for name in OPTIMIZERS:
        optimizer = directml_optimizer(name)(list(LeNet5().parameters()))
        for group in optimizer.param_groups:
            assert group.get("foreach", False) is False, (name, group.get("foreach"))
            assert not group.get("fused"), name


def test_train_and_eval_steps_have_directml_kernels(native):
    for name in OPTIMIZERS:
        recorder = directml_recording(name)
        seen = recorder.names()
        # the recorder really saw the step: forward, backward, loss, optimizer and metrics
        for op in (
            "aten::convolution",
            "aten::convolution_backward",
            "aten::max_pool2d_with_indices_backward",
            "aten::nll_loss_backward",
            "aten::argmax",
        ):
            assert op in seen, f"{name}: {op} not recorded; recorded: {sorted(seen)}"
        missing = fallbacks(recorder, native)
        assert not missing, f"{name} would fall back to the CPU on DirectML:\n" + "\n".join(
            sorted(missing.values())
        )


def test_foreach_optimizer_is_caught(native):
    recorder = record_steps(
        lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=True)
    )
    missing = fallbacks(recorder, native)
    assert any(op.startswith("aten::_foreach_") for op in missing), missing


def test_adam_lerp_is_caught(native):
    recorder = record_steps(lambda params: torch.optim.Adam(params, lr=1e-3, foreach=False))
    missing = fallbacks(recorder, native)
    assert "aten::lerp.Scalar_out" in missing, missing
    assert "lerp_" in missing["aten::lerp.Scalar_out"]  # reached through Adam's exp_avg.lerp_
    assert not any(op.startswith("aten::_foreach_") for op in missing)


def test_router_is_not_vacuous(native):
    """An op without kernel or composite is reported; a structured op reaches its out=."""
    assert fallbacks(_record(lambda: torch.ones(3).cumprod(0)), native)  # cumprod.out: none
    assert not fallbacks(_record(lambda: torch.ones(3).add(1)), native)


def _record(fn) -> OpRecorder:
    recorder = OpRecorder()
    with recorder:
        fn()
    return recorder


def _native_module_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("torch_directml")
        native_spec = importlib.util.find_spec("torch_directml_native")
    except (ImportError, ValueError):
        return None
    if spec is None or native_spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


_DUMP = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import torch
    folder = Path(sys.argv[1])
    name = "DirectML.dll" if sys.platform == "win32" else "libdirectml.so"
    torch.ops.load_library(str(folder / name))
    import torch_directml_native  # registers the kernels; no device is opened
    regs = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    table = {}
    for op in json.loads(sys.argv[2]):
        lines = torch._C._dispatch_dump_table(op).splitlines()
        table[op] = next((x for x in lines if x.startswith("PrivateUse1:")), "")
    print(json.dumps({"registrations": sorted(regs), "table": table}))
    """
)


@pytest.mark.skipif(_native_module_dir() is None, reason="torch-directml is not installed")
def test_installed_torch_directml_agrees(native, child_limit):
    folder = _native_module_dir()
    routed: set[str] = set()  # what the steps call, and what the routing went through
    for name in OPTIMIZERS:
        assert not fallbacks(directml_recording(name), native, routed)
    probes = sorted(routed | {"aten::lerp.Scalar_out"})  # the last: a known fallback
    env = dict(os.environ)
    if sys.platform != "win32":  # the manylinux wheel bundles stub d3d12/dxcore libraries
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(folder), env.get("LD_LIBRARY_PATH", "")) if p
        )
    result = subprocess.run(
        [sys.executable, "-c", _DUMP, str(folder), json.dumps(probes)],
        capture_output=True,
        text=True,
        timeout=child_limit,
        env=env,
    )
    if result.returncode != 0:
        pytest.skip("torch-directml's native module does not load here: " + result.stderr[-300:])
    dump = json.loads(result.stdout.strip().splitlines()[-1])
    registered = {op for op in dump["registrations"] if op.startswith("aten::")}
    assert registered == native, (sorted(registered - native), sorted(native - registered))
    table = dump["table"]
    assert "[backend fallback]" in table.pop("aten::lerp.Scalar_out")  # the probe works
    on_cpu = {op: line for op, line in table.items() if "[backend fallback]" in line}
    assert not on_cpu, on_cpu
    assert all("[kernel]" in table[op] for op in routed & native)
