"""The doctor reads an AMD GPU's gfx target on Windows CPython (3.11, under Wine) through its real
ctypes path, from a stand-in for the HIP runtime that AMD's driver installs.

tools/amdhip/amdhip64.c, built here with MinGW-w64 (as the DirectML tier builds its DXCore),
is put where the driver puts it, the prefix's System32, as amdhip64_7.dll: a laptop whose iGPU
(gfx1036) enumerates before its discrete RX 7900 XTX (gfx1100). DXGI under Wine shows Wine's
own adapter, so the script gives the scan the two AMD adapters DXGI would list; everything after
(loading the DLL, hipGetDeviceCount, hipGetDevicePropertiesR0600, matching, recommending) runs
for real. Without the DLL the doctor falls back to its PCI id table. Built again with other
settings (-D, see the C file), the DLL is also a runtime whose R0600 call fails, and a newer
runtime beside the older one. About 20 s per case with the Windows tier's caches
(TEMPLATE_TEST_CACHE) filled; each DLL builds in about a second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEMPLATE_DIR

sys.path.insert(0, str(TEMPLATE_DIR / "tools"))
import system_packages  # noqa: E402
import wine_python  # noqa: E402

pytestmark = [pytest.mark.windows, pytest.mark.slow]

SOURCE = TEMPLATE_DIR / "tools" / "amdhip" / "amdhip64.c"
MINGW_GCC = system_packages.MINGW_GCC
RUN_TIMEOUT = 900  # a hang guard: Wine on a busy 2-core machine is several times slower
SCRIPT = r"""
import json
from gpu_doctor import amd_windows, dxgi, recommend
from gpu_doctor.gpus import Gpu, GpuScan
from gpu_doctor.os_info import OsInfo

GB = 2**30
listed = [  # as DXGI lists this laptop's adapters (Wine's DXGI shows its own)
    Gpu("AMD Radeon(TM) Graphics", 0x1002, 0x164E, GB // 2, "32.0.21013.1000", source="DXGI"),
    Gpu("AMD Radeon RX 7900 XTX", 0x1002, 0x744C, 24 * GB, "32.0.21013.1000", source="DXGI"),
]
dxgi._scan = lambda timeout: GpuScan(listed, "DXGI")
hip = amd_windows.read_hip()
scan = dxgi.scan()
best = recommend.recommend(OsInfo("Windows", "10", "10.0.26100", "AMD64", 26100), scan.hardware,
                           "3.12")
print(json.dumps({
    "hip": [[device.name, device.target] for device in hip],
    "gpus": [[gpu.name, gpu.gfx_target, gpu.target_source] for gpu in scan.hardware],
    "problems": scan.problems,
    "stack": best.stack,
    "gpu": best.gpu.name if best.gpu else None,
    "venv": best.commands("lab", "3.12", windows=True)["venv"],
}))
"""


@pytest.fixture(scope="module")
def build_hip(tmp_path_factory):
    """build_hip(DISCRETE_ARCH='"gfx1201"', ...) -> a stand-in HIP DLL built with those -D."""
    system_packages.ensure("mingw")

    def build(**defines: str) -> Path:
        dll = tmp_path_factory.mktemp("amdhip") / "amdhip64.dll"
        flags = [f"-D{name}={value}" for name, value in defines.items()]
        subprocess.run(
            [MINGW_GCC, "-shared", "-O2", "-Wall", *flags, "-o", str(dll), str(SOURCE)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return dll

    return build


@pytest.fixture(scope="module")
def hip_dll(build_hip) -> Path:
    return build_hip()


@pytest.fixture(scope="module")
def doctor(bake_once) -> Path:
    return bake_once().path / "src"


def read_targets(winpy, src: Path) -> dict:
    doctor = src.parent / "doctor.pyz"  # the project's doctor file: a zip on the path imports
    path = ";".join(wine_python.winpath(folder) for folder in (src, doctor))
    env = {"PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
    # In the project folder: from the template's folder, its gpu_doctor/ source would shadow
    # the project's doctor.pyz (python -c puts the working folder first on the path).
    result = winpy.run(["-c", SCRIPT], cwd=src.parent, env=env, timeout=RUN_TIMEOUT, display=False)
    assert result.returncode == 0, result.output[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def system32(winpy) -> Path:
    return winpy.prefix / "drive_c" / "windows" / "system32"


def read_with_runtimes(winpy, doctor: Path, runtimes: dict[str, Path]) -> dict:
    """What the doctor reads with ``runtimes`` ({"amdhip64_7.dll": built DLL}) in System32."""
    installed = [system32(winpy) / name for name in runtimes]
    try:
        for name, dll in runtimes.items():
            shutil.copyfile(dll, system32(winpy) / name)
        return read_targets(winpy, doctor)
    finally:
        for path in installed:
            path.unlink(missing_ok=True)


def test_the_doctor_reads_each_gpus_target_from_the_drivers_hip_runtime(winpy, hip_dll, doctor):
    seen = read_with_runtimes(winpy, doctor, {"amdhip64_7.dll": hip_dll})

    assert seen["hip"] == [
        ["AMD Radeon(TM) Graphics", "gfx1036"],
        ["AMD Radeon RX 7900 XTX", "gfx1100"],
    ]
    assert seen["gpus"] == [
        ["AMD Radeon(TM) Graphics", "gfx1036", "HIP runtime"],
        ["AMD Radeon RX 7900 XTX", "gfx1100", "HIP runtime"],
    ]
    assert seen["problems"] == []
    # The iGPU is HIP's device 0; the discrete GPU, whose target the build runs, is chosen.
    assert (seen["stack"], seen["gpu"]) == ("rocm-windows", "AMD Radeon RX 7900 XTX")
    assert seen["venv"][-1] == (
        'python -m pip install "torch[device-gfx1100]==2.14.0+rocm10.1.0" '
        '"torchvision[device-gfx1100]==0.29.0a0+rocm10.1.0" --index-url '
        "https://stable.repo.amd.com/rocm/whl-next/ --extra-index-url https://pypi.org/simple"
    )


def test_a_runtime_whose_r0600_call_fails_is_answered_by_r0000(winpy, build_hip, doctor):
    failing_r0600 = build_hip(R0600_STATUS="1")  # hipErrorInvalidValue

    seen = read_with_runtimes(winpy, doctor, {"amdhip64_7.dll": failing_r0600})

    assert seen["hip"] == [
        ["AMD Radeon(TM) Graphics", "gfx1036"],
        ["AMD Radeon RX 7900 XTX", "gfx1100"],
    ]
    assert seen["problems"] == []
    assert (seen["stack"], seen["gpu"]) == ("rocm-windows", "AMD Radeon RX 7900 XTX")


def test_of_two_runtimes_the_newest_is_read(winpy, hip_dll, build_hip, doctor):
    """A driver upgrade can leave amdhip64_7.dll beside amdhip64_8.dll: each reports its own
    target for the discrete GPU here, so the target read says which DLL answered."""
    newer = build_hip(DISCRETE_ARCH='"gfx1201"')

    seen = read_with_runtimes(winpy, doctor, {"amdhip64_7.dll": hip_dll, "amdhip64_8.dll": newer})

    assert seen["hip"] == [
        ["AMD Radeon(TM) Graphics", "gfx1036"],
        ["AMD Radeon RX 7900 XTX", "gfx1201"],
    ]
    assert seen["gpus"][1] == ["AMD Radeon RX 7900 XTX", "gfx1201", "HIP runtime"]
    assert seen["problems"] == []


def test_without_the_hip_runtime_the_doctor_falls_back_to_its_pci_id_table(winpy, doctor):
    assert not list(system32(winpy).glob("amdhip64*.dll"))

    seen = read_targets(winpy, doctor)

    assert seen["hip"] == []
    assert seen["gpus"] == [
        ["AMD Radeon(TM) Graphics", "gfx1036", "PCI id table"],
        ["AMD Radeon RX 7900 XTX", "gfx1100", "PCI id table"],
    ]
    assert (seen["stack"], seen["gpu"]) == ("rocm-windows", "AMD Radeon RX 7900 XTX")
