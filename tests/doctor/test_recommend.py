"""Which environment file the doctor recommends, for each family of laptop GPU.

The machines are data: Gpu records as DXGI (Windows) or /sys/class/drm and nvidia-smi (Linux)
report them, with real product names, PCI ids and driver versions. The rules run for real.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from gpu_doctor import active_environment, envcheck, recommend
from gpu_doctor.findings import FAIL, OK, WARN
from gpu_doctor.gpus import Gpu, GpuScan
from gpu_doctor.os_info import OsInfo
from gpu_doctor.project import PROJECT_ROOT, load_project

PROJECT_DIR = PROJECT_ROOT  # the default project the doctor reads (conftest.py)
GB = 2**30

WINDOWS = OsInfo("Windows", "10", "10.0.26100", "AMD64", windows_build=26100)
WINDOWS_ARM = OsInfo(
    "Windows", "10", "10.0.26100", "ARM64", windows_build=26100, native_machine="ARM64",
    interpreter_platform="win-arm64",
)  # fmt: skip
LINUX = OsInfo("Linux", "6.11.0-19-generic", "#19~24.04.1-Ubuntu SMP", "x86_64")
WSL2 = OsInfo(
    "Linux", "5.15.167.4-microsoft-standard-WSL2", "#1 SMP", "x86_64", 22631, 2, True, True
)
WSL2_NO_DXG = OsInfo(
    "Linux", "5.15.167.4-microsoft-standard-WSL2", "#1 SMP", "x86_64", 22631, 2, False, False
)
MAC_ARM = OsInfo("Darwin", "24.1.0", "15.1", "arm64")
MAC_INTEL = OsInfo("Darwin", "21.6.0", "12.7.6", "x86_64")


def dxgi(name, vendor, device, memory, driver):
    return Gpu(name, vendor, device, memory, driver_version=driver, source="DXGI")


def drm(name, vendor, device, driver):
    return Gpu(name, vendor, device, driver=driver, source="/sys/class/drm")


ARC_140V = dxgi("Intel(R) Arc(TM) 140V GPU (16GB)", 0x8086, 0x64A0, 128 * 2**20, "32.0.101.6129")
METEOR_LAKE = dxgi("Intel(R) Arc(TM) Graphics", 0x8086, 0x7D55, 128 * 2**20, "31.0.101.5590")
CORE_ULTRA_PLAIN = dxgi("Intel(R) Graphics", 0x8086, 0x7D45, 128 * 2**20, "31.0.101.5590")
ARC_A770 = dxgi("Intel(R) Arc(TM) A770 Graphics", 0x8086, 0x56A0, 16 * GB, "32.0.101.6078")
ARC_A370M = dxgi("Intel(R) Arc(TM) A370M Graphics", 0x8086, 0x5693, 4 * GB, "31.0.101.5186")
IRIS_XE = dxgi("Intel(R) Iris(R) Xe Graphics", 0x8086, 0x9A49, 128 * 2**20, "31.0.101.4502")
UHD_620 = dxgi("Intel(R) UHD Graphics 620", 0x8086, 0x5917, 128 * 2**20, "31.0.101.2111")
RX_7600 = dxgi("AMD Radeon RX 7600", 0x1002, 0x7480, 8 * GB, "31.0.24027.1012")
RADEON_780M = dxgi("AMD Radeon(TM) 780M Graphics", 0x1002, 0x15BF, 512 * 2**20, "31.0.24027.1012")
# Driver 581.29: new enough for the cuda environment's CUDA 13.0 build (test_driver_minimum_advice)
RTX_4060 = dxgi("NVIDIA GeForce RTX 4060 Laptop GPU", 0x10DE, 0x28E0, 8 * GB, "32.0.15.8129")
ADRENO = dxgi("Qualcomm(R) Adreno(TM) X1-85 GPU", 0x5143, 0x0C36, 0, "31.0.96.0")

LINUX_RX_7900 = drm("AMD Radeon RX 7900 XTX", 0x1002, 0x744C, "amdgpu")
LINUX_780M = drm("AMD Radeon 780M Graphics", 0x1002, 0x15BF, "amdgpu")
LINUX_HD_7850 = drm("AMD Radeon HD 7850", 0x1002, 0x6819, "radeon")
LINUX_B580 = drm("Intel Arc B580", 0x8086, 0xE20B, "xe")
LINUX_UHD_770 = drm("Intel UHD Graphics 770", 0x8086, 0x4680, "i915")
NVIDIA_SMI_4070 = Gpu(
    "NVIDIA GeForce RTX 4070 Laptop GPU", 0x10DE, None, 8 * GB, "550.120", driver="nvidia",
    source="nvidia-smi",
)  # fmt: skip


@pytest.mark.parametrize(
    "info,gpus,stack,named",
    [
        # Intel: native XPU on Arc and Core Ultra; DirectML on older Windows iGPUs.
        (WINDOWS, [ARC_140V], "xpu", "Arc(TM) 140V"),
        (WINDOWS, [METEOR_LAKE], "xpu", "Arc(TM) Graphics"),
        (WINDOWS, [CORE_ULTRA_PLAIN], "xpu", "Intel(R) Graphics"),  # known by its PCI id
        (WINDOWS, [ARC_A770], "xpu", "A770"),
        (WINDOWS, [IRIS_XE], "directml", "Iris(R) Xe"),
        (WINDOWS, [UHD_620], "directml", "UHD Graphics 620"),
        (LINUX, [LINUX_B580], "xpu", "Arc B580"),
        (LINUX, [LINUX_UHD_770], "cpu", None),
        # AMD: AMD's ROCm build on Windows 11, ROCm on Linux (not with the legacy radeon driver).
        (WINDOWS, [RX_7600], "rocm-windows", "RX 7600"),
        (WINDOWS, [RADEON_780M], "rocm-windows", "780M"),
        (LINUX, [LINUX_RX_7900], "rocm", "RX 7900 XTX"),
        (LINUX, [LINUX_HD_7850], "cpu", None),
        # NVIDIA: CUDA everywhere it exists.
        (WINDOWS, [RTX_4060], "cuda", "RTX 4060"),
        (WSL2, [NVIDIA_SMI_4070], "cuda", "RTX 4070"),
        # Qualcomm on Windows on ARM: PyTorch's native ARM64 build trains on the CPU.
        (WINDOWS_ARM, [ADRENO], "cpu", "Adreno"),
        # WSL2 shows no AMD/Intel GPU itself: DirectML reaches it through /dev/dxg.
        (WSL2, [], "directml", None),
        (WSL2_NO_DXG, [], "cpu", None),
        # Apple: the cpu environment, whose torch includes MPS.
        (MAC_ARM, [], "cpu", None),
        (MAC_INTEL, [], "cpu", None),
        (LINUX, [], "cpu", None),
    ],
)
def test_each_gpu_family_gets_its_stack(info, gpus, stack, named):
    best = recommend.recommend(info, gpus)

    assert best.stack == stack
    assert best.conda_file == f"environments/{stack}.yml"
    assert best.pip_file == f"environments/{stack}.txt"
    if named:
        assert named in best.gpu_text()
    else:
        assert best.gpu is None


def test_apple_silicon_is_told_about_mps():
    assert "MPS" in recommend.recommend(MAC_ARM, []).why


@pytest.mark.parametrize(
    "info,gpus,stack,chosen",
    [
        (WINDOWS, [IRIS_XE, RTX_4060], "cuda", RTX_4060),  # the common student laptop
        (WINDOWS, [METEOR_LAKE, RTX_4060], "cuda", RTX_4060),  # Core Ultra + GeForce
        (WINDOWS, [RADEON_780M, RTX_4060], "cuda", RTX_4060),  # Ryzen + GeForce
        (WINDOWS, [IRIS_XE, ARC_A370M], "xpu", ARC_A370M),  # Intel iGPU + Arc dGPU
        (WINDOWS, [RADEON_780M, RX_7600], "rocm-windows", RX_7600),
        (LINUX, [LINUX_780M, LINUX_RX_7900], "rocm", LINUX_RX_7900),
        (LINUX, [LINUX_UHD_770, LINUX_RX_7900], "rocm", LINUX_RX_7900),
    ],
)
def test_integrated_plus_discrete_laptops_train_on_the_discrete_gpu(info, gpus, stack, chosen):
    best = recommend.recommend(info, gpus)

    assert (best.stack, best.gpu.name) == (stack, chosen.name)
    assert recommend.recommend(info, list(reversed(gpus))).gpu.name == chosen.name  # any order


def test_the_gpu_is_identified_by_name_ids_and_driver():
    assert METEOR_LAKE.identify() == (
        "Intel(R) Arc(TM) Graphics [8086:7d55] (driver 31.0.101.5590)"
    )
    assert LINUX_RX_7900.identify() == "AMD Radeon RX 7900 XTX [1002:744c] (driver amdgpu)"


def test_commands_create_the_recommended_file_on_each_system():
    best = recommend.recommend(WINDOWS, [ARC_140V])

    commands = best.commands("digits", "3.12", windows=True)
    assert commands["conda"] == [
        "conda env create -f environments/xpu.yml",
        "conda activate digits-xpu",
    ]
    assert commands["venv"] == [
        "py -3.12 -m venv .venv-xpu",
        ".venv-xpu\\Scripts\\activate",
        "python -m pip install -r environments/xpu.txt",
    ]
    linux = recommend.recommend(LINUX, [LINUX_RX_7900]).commands("digits", "3.12", windows=False)
    assert linux["venv"][0] == "python3.12 -m venv .venv-rocm"


@pytest.mark.parametrize(
    "version,directml,stack",
    [
        ("2.14.1+xpu", False, "xpu"),
        ("2.14.1+rocm7.2", False, "rocm"),
        ("2.14.0+rocm10.1.0", False, "rocm-windows"),
        ("2.14.1+cu130", False, "cuda"),
        ("2.14.1+cpu", False, "cpu"),
        ("2.4.1", True, "directml"),
        ("2.14.1", False, None),  # PyPI's torch: not told apart
        (None, False, None),
    ],
)
def test_the_installed_stack_is_read_from_torchs_version(version, directml, stack):
    assert active_environment.stack_of_torch(version, directml) == stack
    versions = {"torch": version, "torch-directml": "0.2.5.dev240914" if directml else None}
    assert active_environment.installed_stack(versions.get) == stack


# ----------------------------------------------------------- the doctor's finding


def project_with(accelerator: str, env_manager: str = "conda"):
    """The project as if generated for ``accelerator`` (whatever this copy's answers were)."""
    project = load_project()
    stack = project.stacks[accelerator]
    return dataclasses.replace(
        project,
        accelerator=accelerator,
        python_version="3.12",
        pins=dict(stack["pins"]),
        index_url=stack["index_url"],
        env_manager=env_manager,
    )


def choice(project, info, gpus, active=None, context="project"):
    findings = envcheck.environment_findings(project, info, GpuScan(gpus), active, context)
    assert len(findings) == 1
    return findings[0]


def test_the_wrong_environment_warns_with_the_switch_command_never_fails():
    finding = choice(project_with("directml"), WINDOWS, [IRIS_XE, ARC_A370M], active="directml")

    assert finding.status == WARN
    assert "Best for this machine: xpu" in finding.found
    assert "this environment runs the directml stack" in finding.found
    assert "A370M Graphics [8086:5693]" in finding.found
    assert "`conda env create -f environments/xpu.yml`" in finding.fix
    assert "`py -3.12 -m venv .venv-xpu`" in finding.fix
    assert "`python -m pip install -r environments/xpu.txt`" in finding.fix


def test_in_a_uv_project_one_uv_sync_switches_the_venv_to_the_best_stack():
    project = project_with("directml", env_manager="uv")
    finding = choice(project, WINDOWS, [IRIS_XE, ARC_A370M], active="directml")

    assert finding.status == WARN
    assert "`uv sync --python 3.12 --no-default-groups --group dev --group xpu`" in finding.fix
    assert "`.venv\\Scripts\\activate`" in finding.fix
    assert "a plain `uv sync` (PyCharm offers one) installs no stack" in finding.fix
    assert "conda" not in finding.fix and "pip install" not in finding.fix


def test_the_right_environment_is_ok():
    finding = choice(project_with("directml"), LINUX, [LINUX_RX_7900], active="rocm")

    assert finding.status == OK
    assert "rocm (environments/rocm.yml or environments/rocm.txt)" in finding.found
    assert "this environment" in finding.found


def test_in_the_hook_the_default_file_is_compared():
    finding = choice(project_with("directml"), WINDOWS, [RTX_4060], context="hook")

    assert finding.status == WARN
    assert "the project's default environment file is directml" in finding.found
    assert "environments/cuda.yml" in finding.fix


def test_gpus_that_could_not_be_listed_recommend_nothing():
    scan = GpuScan([], problems=["DXGI: CreateDXGIFactory1 failed"])
    findings = envcheck.environment_findings(project_with("xpu"), WINDOWS, scan)

    assert [f.status for f in findings] == [OK]
    assert "could not be listed" in findings[0].found


def test_run_checks_reports_the_recommendation_and_never_fails_for_it():
    project = project_with("directml")
    findings = envcheck.run_checks(
        context="hook",
        project=project,
        version_info=(3, 12, 7),
        pointer_bits=64,
        os_facts=WINDOWS,
        gpu_scan=GpuScan([METEOR_LAKE], source="DXGI"),
    )
    choices = [f for f in findings if f.check == "Environment"]

    assert [f.status for f in choices] == [WARN]
    assert "xpu" in choices[0].found
    assert FAIL not in [f.status for f in choices]


# ------------------------------------------------- files and README stay in step


def test_every_stack_has_the_files_the_commands_name():
    project = load_project()
    for name in project.stacks:
        best = recommend.Recommendation(name, "")
        conda = (PROJECT_DIR / best.conda_file).read_text(encoding="utf-8")
        assert f"\nname: {best.env_name(project.project_slug)}\n" in conda
        assert (PROJECT_DIR / best.pip_file).is_file()
    assert {rule.stack for rule in recommend.RULES} <= set(project.stacks)


def test_the_stacks_page_table_is_the_rules_table():
    text = (PROJECT_DIR / "docs" / "stacks.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (.+?) \| (.+?) \| `environments/([\w-]+)\.yml` \|", text, re.MULTILINE)

    assert rows == recommend.readme_rows()


# ------------------------------------------------- AMD on Windows: AMD's ROCm build or DirectML
WINDOWS_10 = OsInfo("Windows", "10", "10.0.19045", "AMD64", windows_build=19045)
WSL2_AMD = dataclasses.replace(WSL2)
# DXGI's view of the GPUs of a room of AMD machines: names and PCI ids as drivers report them.
AMD_ROOM = [
    (dxgi("AMD Radeon RX 7900 XTX", 0x1002, 0x744C, 24 * GB, "32.0.21013.1000"), "gfx1100"),
    (dxgi("AMD Radeon RX 7800 XT", 0x1002, 0x747E, 16 * GB, "32.0.21013.1000"), "gfx1101"),
    (dxgi("AMD Radeon RX 9070 XT", 0x1002, 0x7550, 16 * GB, "32.0.21013.1000"), "gfx1201"),
    (dxgi("AMD Radeon(TM) 780M Graphics", 0x1002, 0x15BF, GB // 2, "32.0.21013.1000"), "gfx1103"),
    (dxgi("AMD Radeon(TM) 890M Graphics", 0x1002, 0x150E, GB // 2, "32.0.21013.1000"), "gfx1150"),
    (dxgi("AMD Radeon(TM) 8060S Graphics", 0x1002, 0x1586, GB // 2, "32.0.21013.1000"), "gfx1151"),
    (dxgi("AMD Radeon RX 6700 XT", 0x1002, 0x73DF, 12 * GB, "32.0.12033.1030"), "gfx1031"),
    (dxgi("Radeon RX 580 Series", 0x1002, 0x67DF, 8 * GB, "31.0.12029.10015"), "gfx803"),
    (dxgi("AMD Radeon(TM) Vega 8 Graphics", 0x1002, 0x15D8, GB // 2, "27.20.20913.2000"), "gfx902"),
]
NATIVE = {"gfx1100", "gfx1101", "gfx1201", "gfx1103", "gfx1150", "gfx1151"}


@pytest.mark.parametrize("python", ["3.10", "3.13"])
@pytest.mark.parametrize("system", ["Windows 11", "Windows 10", "WSL2"])
@pytest.mark.parametrize("gpu,target", AMD_ROOM, ids=[gpu.name for gpu, _ in AMD_ROOM])
def test_each_amd_gpu_gets_the_stack_whose_build_runs_it(gpu, target, system, python):
    info = {"Windows 11": WINDOWS, "Windows 10": WINDOWS_10, "WSL2": WSL2_AMD}[system]
    best = recommend.recommend(info, [gpu], python)

    # AMD publishes its Windows wheels for Windows 11 and Python 3.11 to 3.14 only.
    native = system == "Windows 11" and target in NATIVE and python != "3.10"
    assert best.stack == ("rocm-windows" if native else "directml")
    assert "\n" not in best.why and best.why
    commands = best.commands("digits", python, windows=system != "WSL2")
    device = [line for line in commands["venv"] if "[device-" in line]
    if native:
        assert best.gpu.gfx_target == target
        assert device == [
            f'python -m pip install "torch[device-{target}]==2.14.0+rocm10.1.0" '
            f'"torchvision[device-{target}]==0.29.0a0+rocm10.1.0" --index-url '
            "https://stable.repo.amd.com/rocm/whl-next/ --extra-index-url https://pypi.org/simple"
        ]
        assert commands["conda"][-1] == device[0]
    else:
        assert device == [] and "device-all" not in " ".join(commands["venv"])
    if system == "Windows 10" and target in NATIVE:
        assert "needs Windows 11, and this is Windows 10 (build 19045)" in best.why
    if system == "Windows 11" and target in NATIVE and python == "3.10":
        assert "needs Python 3.11 to 3.14, and this project uses Python 3.10" in best.why
    if system == "Windows 11" and target not in NATIVE:
        assert f"has no kernels for its {target}" in best.why


def test_the_discrete_radeon_wins_over_an_igpu_the_build_does_not_run():
    igpu = dxgi("AMD Radeon(TM) Graphics", 0x1002, 0x164E, GB // 2, "32.0.21013.1000")
    xtx = AMD_ROOM[0][0]
    best = recommend.recommend(WINDOWS, [igpu, xtx], "3.12")

    assert (best.stack, best.gpu.name, best.gpu.gfx_target) == ("rocm-windows", xtx.name, "gfx1100")


def test_an_amd_gpu_whose_target_nothing_names_stays_on_directml_and_says_why():
    unknown = dxgi("AMD Radeon(TM) Graphics", 0x1002, 0x1900, GB // 2, "32.0.21013.1000")
    best = recommend.recommend(WINDOWS, [unknown], "3.12")

    assert best.stack == "directml" and "gfx target could not be read" in best.why
