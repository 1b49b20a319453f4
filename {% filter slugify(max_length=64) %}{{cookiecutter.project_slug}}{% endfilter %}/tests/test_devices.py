"""Device discovery and choice, with fake backends for every failure a user can meet.

The fakes stand in for torch_directml and the native backends; the decision logic
(fallback order, reasons, discrete over integrated, error messages) is the real code.
"""

from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pytest
import torch

from {{ cookiecutter.package_name }}.machinery import devices, discovery
from {{ cookiecutter.package_name }}.machinery import directml_probe as dml_probe

CPU = torch.device("cpu")
BROKEN = torch.device("meta")  # computes nothing: a smoke test on it fails


class FakeDirectML:
    """The torch_directml 0.2.5 functions devices.py uses, for a list of adapters."""

    def __init__(self, adapters, available=True, float64=False):
        self.adapters = adapters  # [(name, torch.device)]
        self.available = available
        self.float64 = float64

    def is_available(self):
        if isinstance(self.available, Exception):
            raise self.available
        return self.available

    def device_count(self):
        return len(self.adapters)

    def device_name(self, index):
        return self.adapters[index][0]

    def device(self, index=None):
        if index is None or not 0 <= index < len(self.adapters):
            raise Exception("invalid device index")  # what the real module raises
        return self.adapters[index][1]

    def has_float64_support(self, index):
        return self.float64


def directml_probe(fake=None, error=None):
    """A probe_directml that loads ``fake`` or fails to import with ``error``."""

    def load():
        if error is not None:
            raise error
        return fake

    def probe_directml():
        return devices.probe_directml(load=load)

    return probe_directml


def discovery_with(directml_probe_fn, *others):
    return devices.discover(probes=[*others, directml_probe_fn, devices.probe_cpu])


MACHINES = [("darwin", "arm64"), ("linux", "aarch64"), ("win32", "AMD64"), ("linux", "x86_64")]


def test_directml_wheels_are_where_the_environment_files_install_torch_directml():
    from packaging.markers import Marker

    from gpu_doctor.project import load_project

    marker = Marker(load_project().stacks["directml"]["markers"]["torch-directml"])
    for system, machine in MACHINES:
        wheels = marker.evaluate({"sys_platform": system, "platform_machine": machine})
        assert dml_probe.directml_has_wheels(system, machine) is wheels, (system, machine)


def test_a_mac_in_a_directml_project_is_not_told_to_pip_install_torch_directml(monkeypatch):
    """pip finds no torch-directml for a Mac or an ARM machine: the reason says so instead."""
    monkeypatch.setattr(dml_probe, "directml_has_wheels", lambda: False)
    reason = dml_probe.directml_missing_reason("directml")
    assert reason.startswith("torch-directml is not installed: it has builds only for Windows")
    assert "pip install" not in reason
    monkeypatch.setattr(dml_probe, "directml_has_wheels", lambda: True)
    assert "pip install torch-directml==" in dml_probe.directml_missing_reason("directml", "2.4.1")


def test_an_environment_with_another_torch_is_not_told_to_pip_install_torch_directml(
    monkeypatch,
):
    """The cpu environment of a directml project: pip install torch-directml there would put
    torch 2.4.1 back in place of its torch. The reason points at the directml environment."""
    monkeypatch.setattr(dml_probe, "directml_has_wheels", lambda: True)
    for torch_version in ["2.14.1", "2.14.1+cpu", "2.4.0"]:
        reason = dml_probe.directml_missing_reason("directml", torch_version)
        assert "pip install" not in reason and "directml environment" in reason, reason
        assert torch_version.split("+")[0] in reason, reason


LIBD3D12 = OSError("libd3d12.so: cannot open shared object file: No such file or directory")


LOAD_FAILURES = [  # what importing torch_directml raised, the reason's words, its code
    (LIBD3D12, "OSError: libd3d12.so: cannot open shared object file", discovery.LIBRARY_MISSING),
    (ImportError("DLL load failed while importing torch_directml_native"), "ImportError: DLL",
     discovery.LOAD_FAILED),
    (RuntimeError("Unknown error -2107306512"), "RuntimeError: Unknown error -2107306512",
     discovery.LOAD_FAILED),
]  # fmt: skip


def test_directml_that_fails_to_load_falls_back_to_cpu_with_the_reason():
    for error, expected, code in LOAD_FAILURES:
        found = discovery_with(directml_probe(error=error))
        assert devices.choose("auto", found).kind == "cpu"
        (missing,) = [u for u in found.unavailable if u.kind == "directml"]
        assert missing.reason.startswith("torch_directml failed to load: ")
        assert expected in missing.reason
        assert (missing.code, missing.detail) == (code, f"{type(error).__name__}: {error}")
        assert "\n" not in missing.reason
        assert missing in found.warnings()  # installed but broken: worth a line at start-up


def test_is_available_raising_is_a_reason_not_a_crash():
    fake = FakeDirectML(
        [("AMD Radeon RX 6600", CPU)], available=RuntimeError("Unknown error -2107306512")
    )
    found = discovery_with(directml_probe(fake))
    assert [o.kind for o in found.options] == ["cpu"]
    assert "Unknown error -2107306512" in found.unavailable[0].reason
    assert found.unavailable[0].code == discovery.INIT_FAILED


def test_no_adapter_is_a_reason():
    found = discovery_with(directml_probe(FakeDirectML([], available=False)))
    assert [o.kind for o in found.options] == ["cpu"]
    assert "is_available() is False" in found.unavailable[0].reason
    assert found.unavailable[0].code == discovery.NO_DEVICE


def test_adapter_that_fails_the_smoke_test_is_skipped_and_the_other_used():
    fake = FakeDirectML([("NVIDIA GeForce GTX 1060", BROKEN), ("Intel(R) UHD Graphics 630", CPU)])
    found = discovery_with(directml_probe(fake))
    option = devices.choose("auto", found)
    assert (option.kind, option.index, option.name) == ("directml", 1, "Intel(R) UHD Graphics 630")
    (failed,) = found.unavailable
    assert failed.reason.startswith("directml:0 (NVIDIA GeForce GTX 1060) failed a smoke test")
    assert failed.code == discovery.SMOKE_FAILED
    with pytest.raises(devices.DeviceNotAvailable, match="failed a smoke test"):
        devices.choose("directml:0", found)


def test_auto_prefers_the_discrete_adapter_whatever_its_index():
    fake = FakeDirectML(
        [
            ("Intel(R) UHD Graphics 770", CPU),
            ("Microsoft Basic Render Driver", CPU),
            ("AMD Radeon RX 7800 XT", CPU),
        ],
        float64=True,
    )
    found = discovery_with(directml_probe(fake))
    assert [o.label for o in found.options] == ["directml:2", "directml:0", "directml:1", "cpu"]
    best = devices.choose("auto", found)
    assert best.name == "AMD Radeon RX 7800 XT" and best.details["float64"] is True
    assert devices.choose("directml", found).index == 2
    assert devices.choose("directml:0", found).name == "Intel(R) UHD Graphics 770"
    assert devices.choose("DML:1", found).name == "Microsoft Basic Render Driver"


ADAPTER_RANKS = [  # 2: a discrete GPU, 1: not known, 0: integrated, -1: a software renderer
    ("NVIDIA GeForce RTX 4070 Laptop GPU", 2),
    ("AMD Radeon RX 6700 XT", 2),
    ("AMD Radeon Pro W6800", 2),
    ("Intel(R) Arc(TM) A770 Graphics", 2),
    ("Intel(R) Arc(TM) B580 Graphics", 2),
    ("Intel(R) UHD Graphics 620", 0),
    ("Intel(R) Iris(R) Xe Graphics", 0),
    ("Intel(R) Arc(TM) Graphics", 0),
    ("Intel(R) Arc(TM) 140V GPU (16GB)", 0),
    ("AMD Radeon(TM) Graphics", 0),
    ("AMD Radeon 780M Graphics", 0),
    ("AMD Radeon(TM) Vega 8 Graphics", 0),
    ("Qualcomm(R) Adreno(TM) X1-85 GPU", 0),
    ("Some Future GPU 9000", 1),
    ("Microsoft Basic Render Driver", -1),
]


def test_adapter_rank_tells_discrete_from_integrated():
    ranks = {name: dml_probe.adapter_rank(name) for name, _ in ADAPTER_RANKS}
    assert ranks == dict(ADAPTER_RANKS)


def test_directml_reports_float64_support():
    found = discovery_with(
        directml_probe(FakeDirectML([("AMD Radeon RX 580", CPU)], float64=False))
    )
    assert devices.choose("directml", found).details["float64"] is False


def fake_native(kind, name):
    def probe():
        return [devices.DeviceOption(kind, 0, name, CPU, {"float64": True})], []

    probe.__name__ = f"probe_{kind}"
    return probe


def test_native_backends_come_before_directml():
    fake = FakeDirectML([("NVIDIA GeForce RTX 3060", CPU)])
    found = discovery_with(directml_probe(fake), fake_native("cuda", "NVIDIA GeForce RTX 3060"))
    assert [o.kind for o in found.options] == ["cuda", "directml", "cpu"]
    assert devices.choose("auto", found).kind == "cuda"
    assert devices.choose("rocm", found).kind == "cuda"
    assert devices.choose("directml", found).kind == "directml"


def test_a_probe_that_crashes_becomes_a_reason():
    def probe_xpu():
        raise RuntimeError("driver exploded")

    found = devices.discover(probes=[probe_xpu, devices.probe_cpu])
    assert [o.kind for o in found.options] == ["cpu"]
    assert found.unavailable[0].kind == "xpu"
    assert "RuntimeError: driver exploded" in found.unavailable[0].reason


def test_asking_for_a_missing_device_names_what_is_available():
    found = discovery_with(directml_probe(error=LIBD3D12))
    for request_ in ["cuda", "cuda:0", "xpu", "mps", "directml", "directml:1"]:
        with pytest.raises(devices.DeviceNotAvailable) as caught:
            devices.choose(request_, found)
        message = str(caught.value)
        assert f"'{request_}' is not available" in message
        assert "Available: cpu (" in message
        if request_.startswith("directml"):
            assert "libd3d12.so" in message  # and why not


def test_an_unknown_device_name_is_a_clear_error():
    found = devices.discover(probes=[devices.probe_cpu])
    for request_ in ["gpu", "cuda:x", "auto:1", ""]:
        with pytest.raises(devices.DeviceNotAvailable, match="Available: cpu"):
            devices.choose(request_, found)


def test_explicit_cpu_is_always_there():
    found = discovery_with(directml_probe(error=LIBD3D12))
    assert devices.choose(" CPU ", found).device == torch.device("cpu")


def test_cpu_0_is_the_cpu_as_torch_names_it():
    """torch.device("cpu:0") is the CPU: --device cpu:0 chooses it; there is no cpu:1."""
    found = discovery_with(directml_probe(error=LIBD3D12))
    assert devices.choose("cpu:0", found).kind == "cpu"
    with pytest.raises(devices.DeviceNotAvailable, match="no cpu device with index 1"):
        devices.choose("cpu:1", found)


def test_real_discovery_on_this_machine_never_raises():
    found = devices.discover()
    assert found.options[-1].kind == "cpu"
    kinds = {u.kind for u in found.unavailable} | {o.kind for o in found.options}
    assert {"cuda", "xpu", "mps", "directml", "cpu"} <= kinds
    for missing in found.unavailable:
        assert missing.reason and "\n" not in missing.reason
    chosen = devices.choose("auto", found)
    devices.smoke_test(chosen.device)


# The first look at DirectML runs in a child process: these fakes of torch_directml fail the
# ways real installs do, including crashing or hanging the whole process.
FAKE_MODULES = {
    "oserror": "raise OSError('libd3d12.so: cannot open shared object file: No such file')",
    "crash": "import os\nos.abort()",
    "hang": "import time\ntime.sleep(60)",
    "raising": "def is_available():\n    raise RuntimeError('Unknown error -2107306512')",
}


@pytest.fixture
def fake_torch_directml(tmp_path, monkeypatch):
    def install(kind):
        folder = tmp_path / kind
        folder.mkdir()
        (folder / "torch_directml.py").write_text(textwrap.dedent(FAKE_MODULES[kind]) + "\n")
        monkeypatch.setenv("PYTHONPATH", str(folder))

    return install


def test_child_probe_reports_an_import_failure(fake_torch_directml, child_limit):
    fake_torch_directml("oserror")
    failed = dml_probe._probe_directml_in_child(timeout=child_limit)
    assert failed.reason.startswith("torch_directml failed to load: OSError: libd3d12.so")
    assert failed.code == discovery.LIBRARY_MISSING


@pytest.mark.skipif(sys.platform == "win32", reason="os.abort opens an error dialog on Windows")
def test_child_probe_survives_a_crash(fake_torch_directml, child_limit):
    fake_torch_directml("crash")
    failed = dml_probe._probe_directml_in_child(timeout=child_limit)
    assert failed.reason.startswith("the DirectML check crashed (exit code ")
    assert failed.code == discovery.CHECK_FAILED


@pytest.mark.slow
def test_child_probe_gives_up_on_a_hang(fake_torch_directml):
    fake_torch_directml("hang")
    failed = dml_probe._probe_directml_in_child(timeout=2)
    assert "did not finish within 2 s" in failed.reason


@pytest.mark.slow
def test_child_probe_reports_is_available_raising(fake_torch_directml, child_limit):
    fake_torch_directml("raising")
    failed = dml_probe._probe_directml_in_child(timeout=child_limit)
    expected = "torch_directml.is_available() failed: RuntimeError: Unknown error -2107306512"
    assert (failed.reason, failed.code) == (expected, discovery.INIT_FAILED)


# ------------------------------------------------------------------- Intel XPU and AMD ROCm
# The real probe_cuda and probe_xpu, on a torch whose GPU parts are replaced: ROCm builds of
# torch present AMD GPUs through torch.cuda with torch.version.hip set; Intel's XPU builds
# through torch.xpu. The smoke test runs for real, on the CPU or on a device that computes
# nothing (meta), since this machine has neither GPU.


class FakeGpuApi:
    """torch.cuda or torch.xpu for a list of (name, device the smoke test computes on), and
    the properties ROCm builds report: (gcnArchName, is_integrated) per GPU."""

    def __init__(self, gpus, available=True, properties=()):
        self.gpus, self.available, self.properties = gpus, available, list(properties)

    def is_available(self):
        if isinstance(self.available, Exception):
            raise self.available
        return self.available

    def device_count(self):
        return len(self.gpus)

    def get_device_name(self, index):
        return self.gpus[index][0]

    def get_device_properties(self, index):
        arch, integrated = self.properties[index] if self.properties else ("", False)
        return SimpleNamespace(name=self.gpus[index][0], gcnArchName=arch, is_integrated=integrated)


@pytest.fixture
def gpu_torch(monkeypatch):
    """gpu_torch(cuda=..., xpu=..., hip=...): the torch devices.py sees, with these GPUs (a
    second call replaces the first machine)."""
    real_device = torch.device

    def install(cuda=None, xpu=None, hip=None):
        by_kind = {"cuda": cuda or FakeGpuApi([]), "xpu": xpu or FakeGpuApi([])}
        monkeypatch.setattr(devices.torch, "cuda", by_kind["cuda"], raising=False)
        monkeypatch.setattr(devices.torch, "xpu", by_kind["xpu"], raising=False)
        monkeypatch.setattr(devices.torch.version, "hip", hip, raising=False)
        monkeypatch.setattr(devices.torch.backends.cuda, "is_built", lambda: True)

        def device(kind, index=None):  # where each fake GPU really computes
            api = by_kind.get(kind)
            if api is not None and index is not None and index < len(api.gpus):
                return api.gpus[index][1]
            return real_device(kind) if index is None else real_device(kind, index)

        monkeypatch.setattr(devices.torch, "device", device)

    return install


def test_rocm_is_found_through_torch_cuda_and_named_rocm(gpu_torch):
    gpu_torch(cuda=FakeGpuApi([("AMD Radeon RX 7900 XTX", CPU)]), hip="7.2.26015")
    found = devices.discover(probes=[devices.probe_cuda, devices.probe_cpu])
    chosen = devices.choose("auto", found)
    assert (chosen.kind, chosen.name, chosen.details["backend"]) == (
        "cuda", "AMD Radeon RX 7900 XTX", "ROCm"
    )  # fmt: skip
    assert devices.choose("rocm", found) is chosen


def test_auto_trains_on_the_gpu_the_doctor_recommends_not_on_rocm_device_0(gpu_torch):
    gpus = [("AMD Radeon(TM) Graphics", CPU), ("AMD Radeon RX 7900 XTX", CPU)]
    for properties in [
        [("gfx1036:xnack-", True), ("gfx1100", False)],  # the Ryzen iGPU enumerates first
        [("gfx1036", False), ("gfx1100", False)],  # no integrated flag: the target decides
        [("gfx1103", True), ("gfx1101", False)],  # both run: the discrete one
    ]:
        gpu_torch(cuda=FakeGpuApi(gpus, properties=properties), hip="7.1.52802")
        found = devices.discover(probes=[devices.probe_cuda, devices.probe_cpu])

        chosen = devices.choose("auto", found)
        assert (chosen.name, chosen.index) == ("AMD Radeon RX 7900 XTX", 1), properties
        assert devices.choose("cuda:0", found).name == "AMD Radeon(TM) Graphics"  # reachable


ROCM_MACHINES = [  # each GPU's (gcnArchName, is_integrated), in torch's order
    [("gfx1036:xnack-", True), ("gfx1100", False)],
    [("gfx1103", True), ("gfx1101", False), ("gfx900", False)],
    [("", False), ("gfx1201:sramecc-", True)],  # a build without gcnArchName: torch's order
    [RuntimeError("no properties"), ("gfx1030", False), ("gfx1151", True)],
    [("gfx1100", False)],
]


def test_auto_ranks_rocm_gpus_in_the_order_verify_install_recommends_them():
    """The package ranks GPUs itself, from its own copy of the targets (this_project.json),
    so that it stands without the doctor; the order is the doctor's."""
    from gpu_doctor.amd_windows import recommended_first

    for properties in ROCM_MACHINES:
        options = [SimpleNamespace(index=index) for index in range(len(properties))]

        def read(index, properties=properties):
            if isinstance(properties[index], Exception):
                raise properties[index]
            arch, integrated = properties[index]
            return SimpleNamespace(gcnArchName=arch, is_integrated=integrated)

        ranked = devices.best_rocm_gpu_first(options, read)
        assert ranked == recommended_first(options, read), properties


def test_a_gpu_that_fails_the_smoke_test_is_a_reason_and_the_next_one_is_used(
    gpu_torch, monkeypatch
):
    real_smoke_test = devices.smoke_test

    def smoke_test(device):  # the first GPU's kernels do not run, as on an unsupported chip
        if device == BROKEN:
            raise RuntimeError("HIP error: invalid device function")
        real_smoke_test(device)

    # A Python error, not a C++ one from a meta tensor: under Wine those can crash the process.
    monkeypatch.setattr(devices, "smoke_test", smoke_test)
    for kind in ("rocm", "xpu"):
        gpus = FakeGpuApi([("first GPU", BROKEN), ("second GPU", CPU)])
        if kind == "rocm":
            gpu_torch(cuda=gpus, hip="7.2.26015")
            probe, prefix = devices.probe_cuda, "cuda"
        else:
            gpu_torch(xpu=gpus)
            probe, prefix = devices.probe_xpu, "xpu"
        found = devices.discover(probes=[probe, devices.probe_cpu])
        assert [(o.kind, o.name) for o in found.options][0] == (prefix, "second GPU")
        assert [o.kind for o in found.options] == [prefix, "cpu"]
        (reason,) = [u.reason for u in found.unavailable]
        failed = "failed a smoke test: RuntimeError: HIP error: invalid device function"
        assert reason == f"{prefix}:0 {failed}"


def test_intel_xpu_comes_before_directml_on_an_xpu_stack(gpu_torch):
    gpu_torch(xpu=FakeGpuApi([("Intel(R) Arc(TM) A770 Graphics", CPU)]))
    fake = FakeDirectML([("Intel(R) Arc(TM) A770 Graphics", CPU)])
    found = devices.discover(
        probes=[devices.probe_cuda, devices.probe_xpu, directml_probe(fake), devices.probe_cpu]
    )
    assert [o.kind for o in found.options] == ["xpu", "directml", "cpu"]
    assert devices.choose("auto", found).name == "Intel(R) Arc(TM) A770 Graphics"
    assert devices.choose("auto", found).kind == "xpu"


DRIVER_FAILURES = {
    "xpu": (RuntimeError("level_zero backend failed with error: 2"), "Intel XPU failed to"),
    "rocm": (RuntimeError("No HIP GPUs are available"), "ROCm failed to initialise"),
}


def test_a_gpu_stack_whose_driver_fails_is_a_reason_not_a_crash(gpu_torch):
    """As reported for Intel Iris Xe, where torch.xpu.is_available() itself raises."""
    probes = [devices.probe_cuda, devices.probe_xpu, devices.probe_cpu]
    for kind, (error, expected) in DRIVER_FAILURES.items():
        if kind == "rocm":
            gpu_torch(cuda=FakeGpuApi([], available=error), hip="7.2.26015")
        else:
            gpu_torch(xpu=FakeGpuApi([], available=error))
        found = devices.discover(probes=probes)
        assert devices.choose("auto", found).kind == "cpu"
        (missing,) = [u for u in found.unavailable if expected in u.reason]
        assert str(error) in missing.reason
        detail = f"RuntimeError: {error}"
        assert (missing.code, missing.detail) == (discovery.INIT_FAILED, detail)


def test_a_gpu_stack_that_sees_no_gpu_says_which_runtime_saw_none(gpu_torch):
    """The doctor names the variables that hide GPUs from this runtime by the code alone."""
    for hip, code in [(None, discovery.NO_DEVICE), ("7.2.26015", discovery.NO_ROCM_DEVICE)]:
        gpu_torch(cuda=FakeGpuApi([]), hip=hip)
        found = devices.discover(probes=[devices.probe_cuda, devices.probe_cpu])
        (missing,) = found.unavailable
        assert (missing.kind, missing.code, missing.installed) == ("cuda", code, False)
        assert missing.reason == f"torch has {'ROCm' if hip else 'CUDA'} support but sees no GPU"


# ------------------------------------------------------------------ names from the drivers


def test_a_directml_adapter_name_loses_the_nul_of_its_c_string():
    """torch_directml.device_name() returned 'NVIDIA GeForce GTX 470\\x00' on a real machine."""
    fake = FakeDirectML(
        [("Intel(R) HD Graphics 4000\x00", CPU), ("NVIDIA GeForce GTX 470\x00", CPU)]
    )
    found = discovery_with(directml_probe(fake))
    chosen = devices.choose("auto", found)
    assert chosen.describe() == "directml:1 (NVIDIA GeForce GTX 470)"  # still ranked discrete
    assert [o.name for o in found.by_kind("directml")][1] == "Intel(R) HD Graphics 4000"


def test_a_gpu_name_from_torch_loses_its_nul(gpu_torch):
    for kind in ("cuda", "xpu"):
        gpu_torch(**{kind: FakeGpuApi([("NVIDIA GeForce GTX 470\x00\r\n", CPU)])})
        probes = [devices.probe_cuda, devices.probe_xpu, devices.probe_cpu]
        found = devices.discover(probes=probes)
        assert devices.choose("auto", found).name == "NVIDIA GeForce GTX 470", kind
