"""Windows on ARM (Snapdragon laptops) and old Macs: the machine read apart from the Python,
what the doctor recommends to each laptop, and what ONNX Runtime's area says about the NPU and
Windows ML. The decisions run for real; only the machine's readings (OS, GPUs) and the plug-in
provider's modules are stand-ins."""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import importlib.machinery
import importlib.util
import sys
import types
from types import SimpleNamespace

import pytest

from gpu_doctor import areas, envcheck, first_look, onnx_runtime_check, os_info
from gpu_doctor.findings import FAIL, NO_ACTION, OK, WARN
from gpu_doctor.gpus import Gpu, GpuScan
from gpu_doctor.os_info import OsInfo
from gpu_doctor.project import PROJECT_ROOT, Project, load_project
from gpu_doctor.rules import system

CPU = {
    "python_min": "3.10",
    "python_max": "3.14",
    "python_note": "PyTorch 2.14 ships wheels for CPython 3.10-3.14.",
    "pins": {"torch": "2.14.1", "torchvision": "0.29.1"},
    "index_url": "https://download.pytorch.org/whl/cpu",
}
DIRECTML = {
    "python_min": "3.8",
    "python_max": "3.12",
    "python_note": "torch-directml ships wheels for CPython 3.8-3.12 only.",
    "pins": {"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
    "index_url": "",
}


def project(accelerator: str = "cpu") -> Project:
    stack = DIRECTML if accelerator == "directml" else CPU
    return Project(
        project_name="LeNet test",
        package_name="lenet_test",
        accelerator=accelerator,
        python_version="3.12",
        env_manager="",
        **stack,
    )


def windows(native: str, python_platform: str, machine: str = "ARM64") -> OsInfo:
    """Windows 11 24H2 as the doctor reads it; ``machine``: what platform.machine() said."""
    return os_info.detect(
        "Windows", "11", "10.0.26100", machine,
        native_machine=native, python_platform=python_platform,
    )  # fmt: skip


def codes(findings):
    return [(f.status, f.code) for f in findings]


# ------------------------------------------------------- the machine, through IsWow64Process2


PSEUDO_HANDLE = 2**64 - 1  # GetCurrentProcess(): (HANDLE)-1


def current_process():
    return PSEUDO_HANDLE


def fake_kernel32(process: int, native: int, succeeds: bool = True) -> SimpleNamespace:
    """kernel32 whose IsWow64Process2 fills its two out-parameters as Windows does; its
    ``handles`` list what it was asked about."""
    handles = []

    def is_wow64_process2(handle, process_out, native_out):
        handles.append(handle.value)
        if not succeeds:
            return 0
        process_out.contents.value, native_out.contents.value = process, native
        return 1

    return SimpleNamespace(
        IsWow64Process2=is_wow64_process2, GetCurrentProcess=current_process, handles=handles
    )


def old_kernel32() -> SimpleNamespace:
    """Windows 10 before 1709: no IsWow64Process2."""
    return SimpleNamespace(GetCurrentProcess=current_process)


def test_an_x64_python_on_an_arm64_machine_reads_the_machine_as_arm64():
    kernel32 = fake_kernel32(process=0, native=0xAA64)  # 0: not a WOW64 process
    assert os_info.windows_native_machine(kernel32) == "ARM64"
    assert kernel32.handles == [ctypes.c_void_p(PSEUDO_HANDLE).value]


def test_an_intel_or_amd_machine_reads_as_amd64_and_a_32_bit_python_does_not_change_that():
    assert os_info.windows_native_machine(fake_kernel32(0, 0x8664)) == "AMD64"
    assert os_info.windows_native_machine(fake_kernel32(0x014C, 0x8664)) == "AMD64"


def test_without_iswow64process2_or_when_it_fails_the_machine_is_unknown_not_an_error():
    assert os_info.windows_native_machine(old_kernel32()) == ""
    assert os_info.windows_native_machine(fake_kernel32(0, 0xAA64, succeeds=False)) == ""


def test_an_unknown_machine_value_is_shown_as_its_number():
    assert os_info.windows_native_machine(fake_kernel32(0, 0x1234)) == "0x1234"


def test_off_windows_nothing_is_asked():
    if os_info.sys.platform != "win32":
        assert os_info.windows_native_machine() == ""
        assert os_info.interpreter_platform() == ""


# ----------------------------------------------------------------- what the report says


def test_the_description_names_an_emulated_python_whatever_platform_machine_said():
    for said in ("AMD64", "ARM64"):  # cpython #98962: either, by Python version
        info = windows("ARM64", "win-amd64", machine=said)
        assert info.emulated and info.python_architecture == "AMD64"
        assert info.describe() == (
            "Windows 11 build 26100 (ARM64 machine, x64 Python under emulation)"
        )


def test_a_native_python_is_described_as_before():
    assert windows("ARM64", "win-arm64").describe() == "Windows 11 build 26100 (ARM64)"
    intel = windows("AMD64", "win-amd64", machine="AMD64")
    assert intel.describe() == "Windows 11 build 26100 (AMD64)" and not intel.emulated


def test_the_report_carries_the_machine_and_the_python_apart():
    data = windows("ARM64", "win-amd64").to_dict()
    assert (data["native_machine"], data["interpreter_platform"]) == ("ARM64", "win-amd64")


# ------------------------------------------------------------------------ the situations


def test_snapdragon_with_a_native_arm64_python_3_12_is_fine_for_the_cpu_stack():
    findings = system.check_os(project("cpu"), windows("ARM64", "win-arm64"), (3, 12, 8))
    assert codes(findings) == [(OK, "OS-OK")]


def test_snapdragon_with_an_emulated_x64_python_is_told_to_install_the_arm64_python():
    info = windows("ARM64", "win-amd64", machine="AMD64")
    finding = [f for f in system.check_os(project("cpu"), info, (3, 12, 8)) if f.status != OK]
    assert codes(finding) == [(WARN, "OS-X64-PYTHON-EMULATED")]
    assert "x64 Python under emulation" in finding[0].found
    fix = finding[0].fix
    assert "ARM64 installer" in fix and "`py -V:3.13-arm64`" in fix
    # a plain `uv python install 3.13` installs x64 on Windows on ARM (uv #13724)
    assert "uv python install cpython-3.13-windows-aarch64-none" in fix
    assert "3.11 to 3.13" in fix and "CPU index" in fix


def test_snapdragon_with_an_emulated_python_and_the_directml_stack_hears_there_is_no_arm64_wheel():
    info = windows("ARM64", "win-amd64")
    warned = [f for f in system.check_os(project("directml"), info, (3, 12, 8)) if f.status == WARN]
    assert [f.code for f in warned] == ["OS-X64-PYTHON-EMULATED"]
    assert "torch-directml has no ARM64 wheel" in warned[0].found


def test_an_arm64_python_3_14_has_no_torch_wheel_and_is_sent_to_3_13():
    findings = system.check_os(project("cpu"), windows("ARM64", "win-arm64"), (3, 14, 2))
    failed = [f for f in findings if f.status == FAIL]
    assert [f.code for f in failed] == ["OS-ARM64-NO-TORCH-WHEEL"]
    assert "this is Python 3.14" in failed[0].found
    assert "ARM64 Python 3.13" in failed[0].fix
    assert "cpython-3.13-windows-aarch64-none" in failed[0].fix


def test_an_arm64_python_with_the_directml_stack_still_names_its_missing_wheel_once():
    findings = system.check_os(project("directml"), windows("ARM64", "win-arm64"), (3, 12, 8))
    assert [f.code for f in findings if f.status == FAIL] == ["OS-ARM64-PYTHON"]


def test_an_intel_x64_machine_hears_nothing_about_arm():
    info = windows("AMD64", "win-amd64", machine="AMD64")
    for accelerator in ("cpu", "directml"):
        assert codes(system.check_os(project(accelerator), info, (3, 12, 8))) == [(OK, "OS-OK")]


def test_a_mac_on_macos_13_cannot_install_current_torch():
    mac = OsInfo("Darwin", "22.6.0", "13.6.7", "arm64")
    findings = system.check_os(project("cpu"), mac)
    assert codes(findings) == [(FAIL, "OS-MACOS-TOO-OLD")]
    assert "torch 2.14.1's macOS wheels need macOS 14 or later" in findings[0].found
    assert "Update macOS to 14 or later" in findings[0].fix and "another machine" in findings[0].fix


def test_a_mac_on_macos_13_is_fine_for_torch_2_4_and_names_macos_14_for_current_torch():
    mac13 = OsInfo("Darwin", "22.6.0", "13.6.7", "arm64")
    assert [f.code for f in system.check_os(project("directml"), mac13)] == ["OS-MACOS-MPS"]
    mac14 = OsInfo("Darwin", "23.5.0", "14.5", "arm64")
    assert [f.code for f in system.check_os(project("cpu"), mac14)] == ["OS-OK"]


# ------------------------------------------- what the doctor recommends, laptop by laptop
#
# The doctor's first look (`python doctor.pyz`, the README's first step) on each kind of
# laptop: envcheck.run_checks with this project, and a machine described by its readings.

GB = 2**30
ADRENO = Gpu("Qualcomm(R) Adreno(TM) X1-85 GPU", 0x5143, 0x0C36, 0, "31.0.96.0", source="DXGI")
IRIS_XE = Gpu("Intel(R) Iris(R) Xe Graphics", 0x8086, 0x9A49, GB // 8, "31.0.101.4502")
ARC_140V = Gpu("Intel(R) Arc(TM) 140V GPU (16GB)", 0x8086, 0x64A0, GB // 8, "32.0.101.6129")
RX_7600 = Gpu("AMD Radeon RX 7600", 0x1002, 0x7480, 8 * GB, "31.0.24027.1012")
RTX_4060 = Gpu("NVIDIA GeForce RTX 4060 Laptop GPU", 0x10DE, 0x28E0, 8 * GB, "32.0.15.8129")

SNAPDRAGON_NATIVE = windows("ARM64", "win-arm64")
SNAPDRAGON_EMULATED = windows("ARM64", "win-amd64", machine="AMD64")
INTEL_X64 = windows("AMD64", "win-amd64", machine="AMD64")
MAC_13 = OsInfo("Darwin", "22.6.0", "13.6.7", "arm64")
MAC_14 = OsInfo("Darwin", "23.5.0", "14.5", "arm64")


@dataclasses.dataclass
class FirstLook:
    findings: list
    recommendation: dict

    def codes(self) -> list[str]:
        return [finding.code for finding in self.findings]

    def finding(self, code: str):
        (found,) = [finding for finding in self.findings if finding.code == code]
        return found

    def fixes(self) -> str:
        return "\n".join(finding.fix for finding in self.findings)


def this_project(accelerator: str, python: tuple[int, ...], env_manager: str) -> Project:
    """This generated project, as if made for ``accelerator``, this Python and manager."""
    return dataclasses.replace(
        load_project().for_stack(accelerator),
        python_version=f"{python[0]}.{python[1]}",
        env_manager=env_manager,
    )


def first_look_at(
    info: OsInfo,
    gpus: list,
    python: tuple[int, ...] = (3, 12, 8),
    accelerator: str = "cpu",
    env_manager: str = "venv",
) -> FirstLook:
    details: dict = {}
    findings = envcheck.run_checks(
        context="first",
        project=this_project(accelerator, python, env_manager),
        version_info=python,
        pointer_bits=64,
        os_facts=info,
        gpu_scan=GpuScan(list(gpus), source="DXGI" if info.is_windows else ""),
        details=details,
    )
    return FirstLook(findings, details["recommendation"])


def test_a_snapdragon_with_a_native_arm64_python_3_12_gets_the_cpu_stack_made_with_venv():
    look = first_look_at(SNAPDRAGON_NATIVE, [ADRENO], accelerator="directml")
    advice = look.recommendation

    assert advice["stack"] == "cpu" and advice["gpu"]["name"] == ADRENO.name
    assert "no PyTorch backend trains on the Adreno GPU or the Hexagon NPU" in advice["why"]
    assert advice["commands"]["venv"][0] == "py -V:3.12-arm64 -m venv .venv-cpu"
    assert "--python cpython-3.12-windows-aarch64-none" in advice["commands"]["uv"][0]
    choice = look.finding("ENV-OTHER-BEST")  # the project's default is directml: cpu is better
    assert "with venv and an ARM64 Python: `py -V:3.12-arm64 -m venv .venv-cpu`" in choice.fix
    assert "conda env create" not in choice.fix


def test_a_snapdragons_gpu_line_says_it_is_not_for_training_and_the_npu_runs_the_model():
    look = first_look_at(SNAPDRAGON_NATIVE, [ADRENO])
    (gpu_area,) = [area for area in areas.by_area(look.findings) if area.name == "GPU"]
    assert gpu_area.headline().brief == (  # the summary's GPU line
        f"{ADRENO.name}: no training on it; the NPU runs exported models."
    )
    adreno = look.finding("GPU-ADRENO")
    assert adreno.status == OK
    assert "training runs on the CPU" in adreno.found
    assert "The NPU runs the exported model: ONNX Runtime with onnxruntime-qnn" in adreno.found
    assert "GPU-UNUSED" not in look.codes()  # which would send it to the directml environment
    assert "directml environment" not in look.fixes()


def test_directml_on_an_adreno_is_named_experimental_never_advised():
    look = first_look_at(SNAPDRAGON_NATIVE, [ADRENO], accelerator="directml")
    assert "experimental" in look.finding("GPU-ADRENO").found
    assert "Create the directml" not in look.fixes()


def test_a_snapdragon_with_an_emulated_x64_python_is_never_sent_to_directml():
    for accelerator in ("cpu", "directml"):
        look = first_look_at(SNAPDRAGON_EMULATED, [ADRENO], accelerator=accelerator)
        assert look.recommendation["stack"] == "cpu"
        # the commands name the ARM64 Python: the py launcher prefers the x64 one it runs now
        assert look.recommendation["commands"]["venv"][0] == "py -V:3.12-arm64 -m venv .venv-cpu"
        emulated = look.finding("OS-X64-PYTHON-EMULATED")
        assert "x64 Python under emulation" in emulated.found
        assert "Install the ARM64 Python" in emulated.fix
        assert "directml" not in look.recommendation["commands"]["venv"][-1]
        assert "Create the directml" not in look.fixes()


def test_an_arm64_python_3_14_is_sent_to_3_13_by_the_os_line_and_the_commands_alike():
    look = first_look_at(SNAPDRAGON_NATIVE, [ADRENO], python=(3, 14, 2))
    assert look.finding("OS-ARM64-NO-TORCH-WHEEL").status == FAIL
    assert "ARM64 Python 3.13" in look.finding("OS-ARM64-NO-TORCH-WHEEL").fix
    assert look.recommendation["stack"] == "cpu"
    assert look.recommendation["commands"]["venv"][0] == "py -V:3.13-arm64 -m venv .venv-cpu"
    assert "cpython-3.13-windows-aarch64-none" in look.recommendation["commands"]["uv"][0]


def test_windows_on_arm_takes_cpu_whatever_gpu_it_reports():
    """A Windows ARM64 machine with no Adreno listed (a virtual machine, a failed driver):
    still only PyTorch's CPU builds exist for it."""
    for gpus in ([], [Gpu("Parallels Display Adapter (WDDM)", 0x1AB8, 0x0010, 0, "1.0")]):
        look = first_look_at(SNAPDRAGON_NATIVE, gpus, accelerator="directml")
        assert look.recommendation["stack"] == "cpu"
        assert "Windows on ARM" in look.recommendation["why"]


@pytest.mark.parametrize("info", [SNAPDRAGON_NATIVE, SNAPDRAGON_EMULATED], ids=["arm64", "x64"])
def test_a_conda_project_on_windows_on_arm_hears_why_venv_or_uv_instead(info):
    look = first_look_at(info, [ADRENO], env_manager="conda")
    no_conda = look.finding("ENV-ARM64-NO-CONDA")
    assert no_conda.status == WARN
    assert "Miniforge" in no_conda.found and "no Windows ARM64 build yet" in no_conda.found
    assert no_conda.fix.startswith("Use venv (or uv) with an ARM64 Python instead of conda")
    assert "`py -V:3.12-arm64 -m venv .venv-cpu`" in no_conda.fix


def test_beside_the_environment_fix_the_conda_advice_adds_no_second_fix():
    look = first_look_at(SNAPDRAGON_NATIVE, [ADRENO], accelerator="directml", env_manager="conda")
    assert {"ENV-OTHER-BEST", "ENV-ARM64-NO-CONDA"} <= set(look.codes())
    (environment,) = [fix for fix in areas.actions(look.findings) if "Environment" in fix.areas]
    assert environment.text == look.finding("ENV-OTHER-BEST").fix


def test_a_venv_project_or_another_machine_hears_nothing_about_conda():
    assert "ENV-ARM64-NO-CONDA" not in first_look_at(SNAPDRAGON_NATIVE, [ADRENO]).codes()
    intel = first_look_at(INTEL_X64, [IRIS_XE], env_manager="conda")
    assert "ENV-ARM64-NO-CONDA" not in intel.codes()


def test_the_first_look_prints_venv_commands_to_a_conda_project_on_windows_on_arm(
    monkeypatch, capsys
):
    project = this_project("cpu", (3, 12, 8), "conda")
    real_run_checks = envcheck.run_checks

    def on_a_snapdragon(context, details):
        return real_run_checks(
            context, project, (3, 12, 8), 64, SNAPDRAGON_NATIVE, GpuScan([ADRENO]), details=details
        )

    monkeypatch.setattr(first_look, "run_checks", on_a_snapdragon)
    monkeypatch.setattr(first_look, "load_project", lambda: project)
    assert first_look.main([]) == 0
    out = capsys.readouterr().out
    assert "  py -V:3.12-arm64 -m venv .venv-cpu" in out
    assert "conda env create" not in out


@pytest.mark.parametrize(
    "gpu,stack",
    [(IRIS_XE, "directml"), (ARC_140V, "xpu"), (RX_7600, "rocm-windows"), (RTX_4060, "cuda")],
)
def test_an_x64_windows_laptop_keeps_its_stack_and_hears_nothing_about_arm(gpu, stack):
    look = first_look_at(INTEL_X64, [gpu], accelerator="cpu", env_manager="conda")
    assert look.recommendation["stack"] == stack
    assert look.recommendation["commands"]["venv"][0].startswith("py -3.")
    assert "arm64" not in str(look.recommendation["commands"]).lower()
    said = " ".join(finding.found + finding.fix for finding in look.findings)
    assert "ARM64" not in said and "GPU-ADRENO" not in look.codes()


def test_a_mac_on_macos_13_is_told_macos_14_by_the_os_line_and_the_recommendation():
    look = first_look_at(MAC_13, [])
    assert look.finding("OS-MACOS-TOO-OLD").status == FAIL
    assert look.recommendation["stack"] == "cpu"
    assert "macOS 14 and later only, and this is macOS 13.6.7" in look.recommendation["why"]
    assert "macOS 14" not in first_look_at(MAC_14, []).recommendation["why"]


# What the coordinator's table shows: each laptop kind, the doctor's recommendation.
LAPTOPS = [
    ("Snapdragon, native ARM64 Python 3.12", SNAPDRAGON_NATIVE, [ADRENO], (3, 12, 8), "cpu"),
    ("Snapdragon, emulated x64 Python 3.12", SNAPDRAGON_EMULATED, [ADRENO], (3, 12, 8), "cpu"),
    ("Snapdragon, ARM64 Python 3.14", SNAPDRAGON_NATIVE, [ADRENO], (3, 14, 2), "cpu"),
    ("x64 Windows, Intel Iris Xe", INTEL_X64, [IRIS_XE], (3, 12, 8), "directml"),
    ("x64 Windows, Intel Arc 140V", INTEL_X64, [ARC_140V], (3, 12, 8), "xpu"),
    ("x64 Windows, AMD RX 7600", INTEL_X64, [RX_7600], (3, 12, 8), "rocm-windows"),
    ("x64 Windows, NVIDIA RTX 4060", INTEL_X64, [RTX_4060], (3, 12, 8), "cuda"),
    ("Mac, macOS 13", MAC_13, [], (3, 12, 8), "cpu"),
    ("Mac, macOS 14", MAC_14, [], (3, 12, 8), "cpu"),
]


@pytest.mark.parametrize("laptop,info,gpus,python,stack", LAPTOPS, ids=[row[0] for row in LAPTOPS])
def test_each_laptop_kind_gets_one_recommendation_and_no_failing_fix_contradicts_it(
    laptop, info, gpus, python, stack
):
    look = first_look_at(info, gpus, python)
    assert look.recommendation["stack"] == stack
    other_stacks = {"directml", "cuda", "xpu", "rocm-windows"} - {stack}
    for other in other_stacks:
        assert f"Create the {other} environment" not in look.fixes(), laptop


# ------------------------------------------ ONNX Runtime's area: the NPU, through onnxruntime-qnn

DLL = r"C:\\lab\\.venv-cpu\\Lib\\site-packages\\onnxruntime_qnn\\onnxruntime_providers_qnn.dll"
DeviceType = enum.Enum("OrtHardwareDeviceType", "CPU GPU NPU")


def ep_device(provider: str, kind: str, vendor: str = "Qualcomm") -> SimpleNamespace:
    """An OrtEpDevice as onnxruntime 1.32 shows it: ep_name, and its hardware device."""
    return SimpleNamespace(
        ep_name=provider, device=SimpleNamespace(type=DeviceType[kind], vendor=vendor)
    )


class FakeOnnxRuntime(types.ModuleType):
    """onnxruntime's plug-in API: a library registers once (a second time fails, as in 1.32);
    then its devices are listed. A session on a device answers in float16, as the HTP does,
    or ``answer`` when given."""

    def __init__(self, devices=("NPU", "GPU"), fails: str = "", answer=None, plugins=True):
        super().__init__("onnxruntime")
        self.__version__ = "1.32.0"
        self.OrtHardwareDeviceType = DeviceType
        self.qnn_kinds, self.fails, self.answer = devices, fails, answer
        self.registered: list[tuple[str, str]] = []
        self.sessions: list = []
        if plugins:
            self.register_execution_provider_library = self._register

    def _register(self, name: str, path: str) -> None:
        if any(registered == name for registered, _ in self.registered):
            raise RuntimeError(f"EP library is already registered under {name}")
        if self.fails:
            raise RuntimeError(self.fails)
        self.registered.append((name, path))

    def get_ep_devices(self) -> list:
        devices = [ep_device("CPUExecutionProvider", "CPU", "Intel")]
        for name, _ in self.registered:
            devices += [ep_device(name, kind) for kind in self.qnn_kinds]
        return devices

    def SessionOptions(self):  # noqa: N802  (onnxruntime's name)
        return SimpleNamespace(
            add_provider_for_devices=lambda devices, options: self.sessions.append(devices)
        )

    def InferenceSession(self, model, sess_options):  # noqa: N802
        _, _, expected = onnx_runtime_check.tiny_model()
        answer = (
            expected.astype("float16").astype("float32") if self.answer is None else self.answer
        )
        return SimpleNamespace(run=lambda names, feeds: [answer])


def fake_qnn() -> types.ModuleType:
    """onnxruntime_qnn 2.7.0 as its __init__.py defines it: the provider's name and its DLL."""
    module = types.ModuleType("onnxruntime_qnn")
    module.__spec__ = importlib.machinery.ModuleSpec("onnxruntime_qnn", None)
    module.__version__ = "2.7.0"
    module.get_ep_name = lambda: "QNNExecutionProvider"
    module.get_library_path = lambda: DLL
    return module


# The check's model is written with onnx, which the environment files install beside ONNX
# Runtime; an environment made without it skips the tests that run that model.
needs_onnx = pytest.mark.skipif(
    importlib.util.find_spec("onnx") is None, reason="onnx is not installed here"
)


@pytest.fixture
def plug_in(monkeypatch):
    """Install a fake onnxruntime and, unless told otherwise, onnxruntime_qnn."""

    def install(ort: FakeOnnxRuntime, qnn: bool = True) -> FakeOnnxRuntime:
        monkeypatch.setitem(sys.modules, "onnxruntime", ort)
        if qnn:
            monkeypatch.setitem(sys.modules, "onnxruntime_qnn", fake_qnn())
        else:
            monkeypatch.delitem(sys.modules, "onnxruntime_qnn", raising=False)
            monkeypatch.setattr(sys, "path", [])  # nothing to find it on
        return ort

    return install


@needs_onnx
def test_the_npu_area_registers_qnns_library_and_runs_one_model_on_the_npu(plug_in):
    ort = plug_in(FakeOnnxRuntime())
    (finding,) = onnx_runtime_check.npu_findings()
    assert (finding.status, finding.code) == (OK, "ORT-NPU")
    assert ort.registered == [("QNNExecutionProvider", DLL)]
    assert [device.device.type.name for device in ort.sessions[0]] == ["NPU"]
    assert "onnxruntime-qnn 2.7.0: QNNExecutionProvider is registered" in finding.found
    assert "Qualcomm NPU runs one inference within float16 precision" in finding.found
    assert finding.brief == "onnxruntime-qnn 2.7.0: the NPU runs exported models."


@needs_onnx
def test_a_provider_registered_already_in_this_process_is_not_registered_twice(plug_in):
    ort = plug_in(FakeOnnxRuntime())
    ort.register_execution_provider_library("QNNExecutionProvider", DLL)  # predict did
    assert [f.code for f in onnx_runtime_check.npu_findings()] == ["ORT-NPU"]


NO_NPU = [
    (FakeOnnxRuntime(devices=("GPU", "CPU")), "lists no NPU (Qualcomm GPU, Qualcomm CPU)"),
    (
        FakeOnnxRuntime(fails="LoadLibrary failed with error 126"),
        "cannot register its provider: RuntimeError: LoadLibrary failed with error 126",
    ),
    (
        FakeOnnxRuntime(plugins=False),
        "has no plug-in providers: onnxruntime-qnn 2 needs onnxruntime 1.24.2 or later",
    ),
    pytest.param(
        FakeOnnxRuntime(answer=[[9.0, 9.0, 9.0, 9.0]]),
        "the Qualcomm NPU computes wrong values",
        marks=needs_onnx,
    ),
]


@pytest.mark.parametrize(
    "ort,said", NO_NPU, ids=["no-npu-listed", "dll-fails", "onnxruntime-too-old", "wrong-values"]
)
def test_an_npu_that_cannot_run_the_model_says_why_and_the_cpu_runs_it(plug_in, ort, said):
    plug_in(ort)
    (finding,) = onnx_runtime_check.npu_findings()
    assert (finding.status, finding.code) == (WARN, "ORT-NPU-UNAVAILABLE")
    assert said in finding.found
    assert finding.found.endswith("Exported models run on the CPU instead.")
    assert "Windows Update > Optional updates" in finding.fix


def test_without_onnxruntime_qnn_the_area_says_nothing_about_an_npu(plug_in):
    plug_in(FakeOnnxRuntime(), qnn=False)
    assert onnx_runtime_check.npu_findings() == []


# -------------------------------------------- ONNX Runtime's area: Windows ML where it fits

DIRECTML_ORT = ["onnxruntime-directml 1.24.4"]


@pytest.mark.parametrize("python", [(3, 11, 9), (3, 12, 8), (3, 13, 1), (3, 14, 2)])
def test_windows_11_24h2_hears_of_windows_ml_as_information(python):
    (offer,) = onnx_runtime_check.windows_ml_findings(INTEL_X64, python, DIRECTML_ORT)
    assert (offer.status, offer.code, offer.role) == (OK, "ORT-WINDOWS-ML", NO_ACTION)
    assert not offer.asks_action
    assert "Windows 11 build 26100" in offer.found and "successor of DirectML" in offer.found
    assert 'pip install "windowsml[with-ort]"' in offer.fix
    assert "replaces onnxruntime-directml, never beside it" in offer.fix


@pytest.mark.parametrize(
    "info,python,packages",
    [
        (dataclasses.replace(INTEL_X64, windows_build=22631), (3, 12, 8), DIRECTML_ORT),
        (INTEL_X64, (3, 10, 11), DIRECTML_ORT),  # onnxruntime-windowsml 1.27.1+: cp311 to cp314
        (INTEL_X64, (3, 12, 8), ["onnxruntime-windowsml 1.30.0.202609102321"]),
        (OsInfo("Linux", "6.11.0", "#1", "x86_64"), (3, 12, 8), ["onnxruntime 1.32.0"]),
    ],
    ids=["windows-11-23h2", "python-3.10", "installed-already", "linux"],
)  # fmt: skip
def test_windows_ml_is_not_offered_where_it_does_not_fit(info, python, packages):
    assert onnx_runtime_check.windows_ml_findings(info, python, packages) == []


def test_the_onnx_area_runs_the_real_runtime_and_offers_windows_ml_after_it(monkeypatch):
    monkeypatch.setattr(onnx_runtime_check, "npu_findings", lambda: [])
    found = onnx_runtime_check.findings(SNAPDRAGON_NATIVE, (3, 12, 8))
    if not found:
        pytest.skip("ONNX Runtime is not installed in this environment")
    assert [f.code for f in found][-1] == "ORT-WINDOWS-ML"
    assert found[0].code in ("ORT-OK", "ORT-PROVIDER-FAILED")


def test_a_working_npu_speaks_for_the_area_and_needs_no_windows_ml(monkeypatch):
    npu = onnx_runtime_check.Finding(onnx_runtime_check.CHECK, OK, "npu", code="ORT-NPU")
    monkeypatch.setattr(onnx_runtime_check, "npu_findings", lambda: [npu])
    found = onnx_runtime_check.findings(SNAPDRAGON_NATIVE, (3, 12, 8))
    if not found:
        pytest.skip("ONNX Runtime is not installed in this environment")
    assert found[0] is npu and "ORT-WINDOWS-ML" not in [f.code for f in found]


def test_the_first_look_from_another_folder_says_to_go_to_the_project_folder(
    monkeypatch, capsys, tmp_path
):
    """Its commands name the project's files: "in this folder" was wrong from elsewhere."""
    project = this_project("cpu", (3, 12, 8), "venv")
    real_run_checks = envcheck.run_checks

    def on_a_laptop(context, details):
        return real_run_checks(
            context, project, (3, 12, 8), 64, INTEL_X64, GpuScan([IRIS_XE]), details=details
        )

    monkeypatch.setattr(first_look, "run_checks", on_a_laptop)
    monkeypatch.setattr(first_look, "load_project", lambda: project)
    monkeypatch.chdir(tmp_path)
    assert first_look.main([]) == 0
    out = capsys.readouterr().out

    assert "in this folder" not in " ".join(out.split())
    assert "Create it, in the project folder:" in " ".join(out.split())
    assert f'  cd "{PROJECT_ROOT}"\n' in out

    monkeypatch.chdir(PROJECT_ROOT)
    assert first_look.main([]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Create it, in this folder:" in out and "cd " not in out
