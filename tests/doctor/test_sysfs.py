"""GPUs on Linux: /sys/class/drm trees built in a temporary folder, nvidia-smi/rocm-smi fakes."""

from __future__ import annotations

import json

import pytest

from gpu_doctor import (
    amd_linux,
    envcheck,
    recommend,
    sysfs,
)
from gpu_doctor.bounded import (
    CommandResult,
)
from gpu_doctor.findings import (
    OK,
    WARN,
)
from gpu_doctor.os_info import (
    OsInfo,
)
from gpu_doctor.project import (
    Project,
)

NVIDIA_SMI_OUTPUT = "NVIDIA GeForce RTX 3080, 550.120, 10240\n"
ROCM_SMI_OUTPUT = json.dumps(
    {
        "card0": {
            "Card Series": "Navi 22 [Radeon RX 6700/6700 XT/6750 XT / 6800M/6850M XT]",
            "Card Model": "0x73df",
            "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
            "Card SKU": "EXT94513",
            "GFX Version": "gfx1031",
        }
    }
)


def card(root, name, vendor, device, driver, vram=None, slot="0000:01:00.0"):
    """/sys/class/drm/<name>/device with the files the kernel writes (no symlinks needed)."""
    folder = root / name / "device"
    folder.mkdir(parents=True)
    (folder / "vendor").write_text(f"0x{vendor:04x}\n")
    (folder / "device").write_text(f"0x{device:04x}\n")
    (folder / "uevent").write_text(
        f"DRIVER={driver}\nPCI_CLASS=30000\nPCI_ID={vendor:04X}:{device:04X}\n"
        f"PCI_SLOT_NAME={slot}\n"
    )
    if vram is not None:
        (folder / "mem_info_vram_total").write_text(f"{vram}\n")


@pytest.fixture
def drm(tmp_path):
    root = tmp_path / "sys" / "class" / "drm"
    root.mkdir(parents=True)
    (root / "version").write_text("drm 1.1.0 20060810\n")
    (root / "renderD128").mkdir()
    (root / "card0-eDP-1").mkdir()
    return root


@pytest.fixture
def tools(monkeypatch):
    """Replace nvidia-smi and rocm-smi: answers[name] is a CommandResult; calls are recorded."""
    answers, calls = {}, []

    def run_tool(args, timeout):
        calls.append((args[0], timeout))
        missing = CommandResult(tuple(args), None, problem=f"{args[0]} was not found")
        return answers.get(args[0], missing)

    monkeypatch.setattr(sysfs, "run_tool", run_tool)
    return answers, calls


def test_cards_are_read_by_vendor_id_and_driver_ignoring_connectors_and_render_nodes(drm):
    card(drm, "card0", 0x8086, 0x9A49, "i915", slot="0000:00:02.0")
    card(drm, "card1", 0x10DE, 0x2206, "nvidia")
    (drm / "card2" / "device").mkdir(parents=True)  # simpledrm: no PCI vendor file
    gpus = sysfs.drm_gpus(drm)
    assert [(g.vendor, g.device_id, g.driver) for g in gpus] == [
        ("Intel", 0x9A49, "i915"),
        ("NVIDIA", 0x2206, "nvidia"),
    ]
    assert gpus[0].name == "Intel GPU 0x9a49" and gpus[0].source.endswith("card0")


def test_card10_sorts_after_card2(drm):
    for number in (10, 2):
        card(drm, f"card{number}", 0x1002, 0x7400 + number, "amdgpu")
    assert [g.source[-6:] for g in sysfs.drm_gpus(drm)] == ["/card2", "card10"]


def test_no_drm_folder_means_no_cards(tmp_path):
    assert sysfs.drm_gpus(tmp_path / "missing") == []


def test_nvidia_names_and_driver_version_come_from_nvidia_smi(drm, tools):
    answers, calls = tools
    card(drm, "card0", 0x8086, 0x9A49, "i915")
    card(drm, "card1", 0x10DE, 0x2206, "nvidia")
    answers["nvidia-smi"] = CommandResult(("nvidia-smi",), 0, NVIDIA_SMI_OUTPUT)
    scan = sysfs.scan(drm, timeout=4)
    assert calls == [("nvidia-smi", 4)]
    nvidia = scan.gpus[0]
    assert nvidia.name == "NVIDIA GeForce RTX 3080" and nvidia.driver_version == "550.120"
    assert nvidia.device_id == 0x2206 and nvidia.dedicated_memory == 10 * 2**30
    assert scan.problems == [] and "nvidia-smi" in scan.source


def test_nvidia_smi_is_not_started_without_an_nvidia_card(drm, tools):
    _answers, calls = tools
    card(drm, "card0", 0x8086, 0x9A49, "i915")
    sysfs.scan(drm)
    assert calls == []


@pytest.mark.parametrize(
    ("answer", "seen"),
    [
        (CommandResult(("nvidia-smi",), None, problem="nvidia-smi did not answer within 5 s"),
         "did not answer within 5 s"),
        (CommandResult(("nvidia-smi",), 9, "NVIDIA-SMI has failed because it couldn't "
                       "communicate with the NVIDIA driver."),
         "exited with 9: NVIDIA-SMI has failed"),
        (CommandResult(("nvidia-smi",), 0, "No devices were found"), "unreadable output"),
    ],
)  # fmt: skip
def test_a_failing_nvidia_smi_is_a_warning_and_the_card_stays_listed(drm, tools, answer, seen):
    answers, _calls = tools
    card(drm, "card0", 0x10DE, 0x2206, "nvidia")
    answers["nvidia-smi"] = answer
    scan = sysfs.scan(drm)
    assert [g.name for g in scan.gpus] == ["NVIDIA GPU 0x2206"]
    assert len(scan.problems) == 1 and seen in scan.problems[0]
    findings = envcheck.gpu_findings(project(), LINUX, scan)
    assert any(f.status == WARN and seen in f.found for f in findings)


def test_amd_names_come_from_rocm_smi_and_its_absence_is_no_problem(drm, tools):
    answers, _calls = tools
    card(drm, "card0", 0x1002, 0x73DF, "amdgpu", vram=12 * 2**30)
    plain = sysfs.scan(drm)
    assert plain.problems == [] and plain.gpus[0].dedicated_memory == 12 * 2**30
    answers["rocm-smi"] = CommandResult(("rocm-smi",), 0, ROCM_SMI_OUTPUT)
    named = sysfs.scan(drm).gpus[0]
    assert named.name.startswith("Navi 22 [Radeon RX 6700") and "gfx1031" in named.name
    assert named.dedicated_memory == 12 * 2**30


def test_wsl2_has_no_cards_and_asks_nvidia_smi(tmp_path, tools):
    answers, calls = tools
    assert sysfs.scan(tmp_path / "drm", wsl=True).problems == []  # no NVIDIA GPU: fine
    answers["nvidia-smi"] = CommandResult(("nvidia-smi",), 0, NVIDIA_SMI_OUTPUT)
    scan = sysfs.scan(tmp_path / "drm", wsl=True)
    assert [g.name for g in scan.gpus] == ["NVIDIA GeForce RTX 3080"]
    assert [name for name, _ in calls] == ["nvidia-smi", "nvidia-smi"]


def test_an_amd_laptop_is_pointed_at_rocm_and_its_older_intel_igpu_at_nothing(drm, tools):
    card(drm, "card0", 0x8086, 0x46A6, "i915")  # Alder Lake UHD: not an XPU GPU
    card(drm, "card1", 0x1002, 0x73DF, "amdgpu", vram=12 * 2**30)
    findings = envcheck.gpu_findings(project(), LINUX, sysfs.scan(drm))
    fixes = " ".join(f.fix for f in findings if f.status == WARN)
    assert "environments/rocm.txt" in fixes and "xpu" not in fixes
    assert "pip install" not in fixes  # the rocm environment, not ROCm into the directml one
    intel = next(f for f in findings if f.code == "GPU-INTEL-NO-XPU-BUILD")
    assert intel.status == OK and "not this one" in intel.found


def test_an_old_radeon_driver_card_gets_no_rocm_advice(drm, tools):
    card(drm, "card0", 0x1002, 0x6798, "radeon")
    findings = envcheck.gpu_findings(project(), LINUX, sysfs.scan(drm))
    legacy = next(f for f in findings if f.code == "GPU-AMD-LEGACY-DRIVER")
    assert "'radeon'" in legacy.found
    assert not [f for f in findings if "rocm" in f.fix.lower()]


def test_a_cpu_project_on_a_machine_with_no_gpu_is_fine(drm, tools):
    (finding,) = envcheck.gpu_findings(project("cpu"), LINUX, sysfs.scan(drm))
    assert finding.status == OK and "CPU" in finding.found


LINUX = OsInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "x86_64")


def project(accelerator="directml"):
    pins = {"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"}
    if accelerator != "directml":
        pins = {"torch": "2.14.1", "torchvision": "0.29.1"}
    return Project("LeNet test", "lenet_test", accelerator, "3.11", "3.8", "3.12", "", pins, "")


def test_names_from_nvidia_smi_and_sysfs_lose_nuls(drm, tools):
    answers, _calls = tools
    card(drm, "card0", 0x10DE, 0x06CD, "nvidia\x00")
    answers["nvidia-smi"] = CommandResult(
        ("nvidia-smi",), 0, "GeForce GTX 470\x00, 390.157\x00, 1280\n"
    )
    (gpu,) = sysfs.scan(drm, timeout=4).gpus
    assert (gpu.name, gpu.driver_version, gpu.driver) == ("GeForce GTX 470", "390.157", "nvidia")


# ------------------------------------------------------------------ AMD: gfx targets, ROCm
# The kernel's KFD topology as amdgpu writes it: node 0 is the CPU, node 1 the GPU. The
# properties are those of an RX 6700 XT (Ubuntu 24.04, kernel 6.8), with the target and ids
# of each family swapped in.

KFD_CPU_NODE = """\
cpu_cores_count 16
simd_count 0
mem_banks_count 1
caches_count 0
io_links_count 1
p2p_links_count 0
cpu_core_id_base 0
simd_id_base 0
max_waves_per_simd 0
lds_size_in_kb 0
gds_size_in_kb 0
num_gws 0
wave_front_size 0
array_count 0
gfx_target_version 0
vendor_id 0
device_id 0
location_id 0
domain 0
drm_render_minor 0
hive_id 0
num_sdma_engines 0
"""
KFD_GPU_NODE = """\
cpu_cores_count 0
simd_count 80
mem_banks_count 1
caches_count 125
io_links_count 1
p2p_links_count 0
cpu_core_id_base 0
simd_id_base 2147487744
max_waves_per_simd 16
lds_size_in_kb 64
gds_size_in_kb 0
num_gws 64
wave_front_size 32
array_count 4
simd_arrays_per_engine 2
cu_per_simd_array 10
simd_per_cu 2
max_slots_scratch_cu 32
gfx_target_version {version}
vendor_id 4098
device_id {device}
location_id 768
domain 0
drm_render_minor {minor}
hive_id 0
num_sdma_engines 2
num_sdma_xgmi_engines 0
num_sdma_queues_per_engine 8
num_cp_queues 8
max_engine_clk_fcompute 2855
local_mem_size 0
fw_version 115
capability 671588992
debug_prop 1495
sdma_fw_version 80
unique_id 2723742362512541190
num_xcc 1
max_engine_clk_ccompute 3800
"""
# (GPU, PCI device id, gfx_target_version, target, ROCm support, override)
AMD_FAMILIES = [
    ("RX 6800 XT (RDNA2, Navi 21)", 0x73BF, 100300, "gfx1030", "supported", ""),
    ("RX 6700 XT (RDNA2, Navi 22)", 0x73DF, 100301, "gfx1031", "override", "10.3.0"),
    ("RX 6600 (RDNA2, Navi 23)", 0x73FF, 100302, "gfx1032", "override", "10.3.0"),
    ("Radeon 780M (RDNA3 iGPU, Phoenix)", 0x15BF, 110003, "gfx1103", "override", "11.0.0"),
    ("RX 7900 XTX (RDNA3, Navi 31)", 0x744C, 110000, "gfx1100", "supported", ""),
    ("RX 9070 XT (RDNA4, Navi 48)", 0x7550, 120001, "gfx1201", "supported", ""),
    ("Instinct MI210 (CDNA2)", 0x740F, 90010, "gfx90a", "supported", ""),
    ("RX 5700 XT (RDNA1, Navi 10)", 0x731F, 100100, "gfx1010", "unsupported", ""),
    ("RX 580 (Polaris)", 0x67DF, 80003, "gfx803", "unsupported", ""),
    ("Radeon Graphics of a Ryzen 7 5700G (Vega)", 0x1638, 90012, "gfx90c", "unsupported", ""),
]  # fmt: skip


def kfd_node(drm, number, text):
    """<tmp>/sys/class/kfd/kfd/topology/nodes/<number>/properties beside the fake drm tree."""
    folder = drm.parent / "kfd" / "kfd" / "topology" / "nodes" / str(number)
    folder.mkdir(parents=True)
    (folder / "properties").write_text(text)


def amd_machine(drm, device, version, minor=128, dev=("kfd", "dri/renderD128")):
    card(drm, "card1", 0x1002, device, "amdgpu", vram=12 * 2**30)
    kfd_node(drm, 0, KFD_CPU_NODE)
    kfd_node(drm, 1, KFD_GPU_NODE.format(version=version, device=device, minor=minor))
    system = drm.parents[2]
    for name in dev:
        (system / "dev" / name).parent.mkdir(parents=True, exist_ok=True)
        (system / "dev" / name).write_text("")


@pytest.mark.parametrize("family", AMD_FAMILIES, ids=[f[0] for f in AMD_FAMILIES])
def test_each_amd_family_is_read_from_the_kfd_topology_and_judged_for_rocm(drm, tools, family):
    name, device, version, target, support, override = family
    amd_machine(drm, device, version)

    scan = sysfs.scan(drm)
    (gpu,) = scan.gpus
    assert (gpu.gfx_target, gpu.render_node) == (target, "/dev/dri/renderD128")
    assert target in gpu.describe() and scan.denied == []
    findings = envcheck.gpu_findings(project("rocm"), LINUX, scan)
    judged = [f for f in findings if f.code.startswith("GPU-AMD-ROCM-")]
    assert [f.code for f in judged] == [f"GPU-AMD-ROCM-{support.upper()}"]
    if support == "override":
        assert f"HSA_OVERRIDE_GFX_VERSION={override}`" in judged[0].fix
        assert "unofficial" in judged[0].found.lower() + judged[0].fix.lower()
        assert "invalid device function" in judged[0].found
    elif support == "unsupported":
        assert "HSA_OVERRIDE" not in judged[0].fix and "cpu environment" in judged[0].fix
    else:
        assert judged[0].status == OK and not judged[0].fix
    best = recommend.recommend(LINUX, scan.hardware)
    assert best.stack == ("cpu" if support == "unsupported" else "rocm")
    assert best.gpu == gpu  # the advice names the GPU either way


def test_gfx_target_versions_are_named_as_rocm_names_them():
    names = {100301: "gfx1031", 90010: "gfx90a", 90012: "gfx90c", 110003: "gfx1103",
             120001: "gfx1201", 80003: "gfx803", 90402: "gfx942"}  # fmt: skip
    assert {version: amd_linux.gfx_name(version) for version in names} == names


def test_a_user_outside_the_render_group_is_told_which_group_to_join(drm, tools, monkeypatch):
    amd_machine(drm, 0x73DF, 100301)
    monkeypatch.setattr(amd_linux, "_can_open", lambda path: path.name != "kfd")
    monkeypatch.setattr(amd_linux, "_group_of", lambda path: "render")

    scan = sysfs.scan(drm)
    findings = envcheck.gpu_findings(project("rocm"), LINUX, scan)

    (denied,) = [f for f in findings if f.code == "GPU-AMD-NO-ACCESS"]
    assert denied.status == WARN and "/dev/kfd (group render)" in denied.found
    assert "renderD128" not in denied.found  # that one opens
    assert "`sudo usermod -aG render,video $USER`" in denied.fix and "log out" in denied.fix
    assert not [
        f for f in envcheck.gpu_findings(project("cpu"), LINUX, scan) if f.code == denied.code
    ]


def test_a_machine_without_dev_kfd_is_told_that_rocm_finds_no_gpu(drm, tools):
    amd_machine(drm, 0x744C, 110000, dev=("dri/renderD128",))  # a container without --device
    findings = envcheck.gpu_findings(project("rocm"), LINUX, sysfs.scan(drm))
    (missing,) = [f for f in findings if f.code == "GPU-AMD-NO-ACCESS"]
    assert "/dev/kfd does not exist" in missing.found and "--device=/dev/kfd" in missing.fix


def test_an_amd_card_without_a_kfd_node_has_no_target_and_no_judgement(drm, tools):
    card(drm, "card0", 0x1002, 0x73DF, "amdgpu", vram=12 * 2**30)
    scan = sysfs.scan(drm)
    assert scan.gpus[0].gfx_target == ""
    codes = [f.code for f in envcheck.gpu_findings(project("rocm"), LINUX, scan)]
    assert not [code for code in codes if code.startswith("GPU-AMD-ROCM-")]
    assert recommend.recommend(LINUX, scan.hardware).stack == "rocm"


ROCMINFO_OUTPUT = """\
ROCk module version 6.8.5 is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.14
Runtime Ext Version:     1.6
System Timestamp Freq.:  1000.000000MHz
Sig. Max Wait Duration:  18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)
Machine Model:           LARGE
System Endianness:       LITTLE
Mwaitx:                  DISABLED
DMAbuf Support:          YES

==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD Ryzen 7 5800X 8-Core Processor
  Uuid:                    CPU-XX
  Marketing Name:          AMD Ryzen 7 5800X 8-Core Processor
  Vendor Name:             CPU
  Feature:                 None specified
  Profile:                 FULL_PROFILE
  Node:                    0
  Device Type:             CPU
  Cache Info:
    L1:                      32768(0x8000) KB
  Chip ID:                 0(0x0)
*******
Agent 2
*******
  Name:                    gfx1031
  Uuid:                    GPU-XX
  Marketing Name:          AMD Radeon RX 6700 XT
  Vendor Name:             AMD
  Feature:                 KERNEL_DISPATCH
  Profile:                 BASE_PROFILE
  Node:                    1
  Device Type:             GPU
  Cache Info:
    L1:                      16(0x10) KB
    L2:                      3072(0xc00) KB
    L3:                      98304(0x18000) KB
  Chip ID:                 29663(0x73df)
  Compute Unit:            40
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx1031
      Machine Models:          HSA_MACHINE_MODEL_LARGE
*** Done ***
"""


def test_rocminfo_names_the_amd_gpu_and_its_target_where_rocm_is_installed(drm, tools):
    answers, calls = tools
    card(drm, "card1", 0x1002, 0x73DF, "amdgpu", vram=12 * 2**30)
    answers["rocminfo"] = CommandResult(("rocminfo",), 0, ROCMINFO_OUTPUT)

    scan = sysfs.scan(drm)

    (gpu,) = scan.gpus
    assert (gpu.name, gpu.gfx_target, gpu.device_id) == ("AMD Radeon RX 6700 XT", "gfx1031", 0x73DF)
    assert gpu.dedicated_memory == 12 * 2**30 and "rocminfo" in scan.source
    assert [name for name, _ in calls] == ["rocminfo"]  # no need for rocm-smi then


def test_rocminfo_without_agents_is_unreadable_and_rocm_smi_is_asked():
    with pytest.raises(ValueError):
        sysfs.parse_rocminfo("hsa api call failure at: rocminfo.cc:1306\n")
    assert sysfs.parse_rocminfo(ROCMINFO_OUTPUT.split("*******\nAgent 2")[0]) == []
