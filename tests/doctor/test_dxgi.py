"""GPUs on Windows: DXGI through a fake COM object, PowerShell output, the fallback between them.

The fake DXGI factory and adapters are real COM-shaped objects in memory (a pointer to a
vtable of C function pointers), so the walk over EnumAdapters1 / GetDesc1 /
CheckInterfaceSupport / Release runs exactly as on Windows, slot numbers included.
"""

from __future__ import annotations

import ctypes
import datetime
import sys
import time
import uuid

import pytest

from gpu_doctor import (
    amd_windows,
    dxgi,
    envcheck,
    recommend,
)
from gpu_doctor.bounded import (
    CommandResult,
)
from gpu_doctor.findings import (
    WARN,
)
from gpu_doctor.gpus import (
    DISCRETE,
    INTEGRATED,
    SOFTWARE,
    Gpu,
    GpuScan,
)
from gpu_doctor.os_info import (
    OsInfo,
)
from gpu_doctor.project import (
    Project,
)

FUNCTYPE = getattr(ctypes, "WINFUNCTYPE", ctypes.CFUNCTYPE)
S_OK = 0
E_NOTIMPL = ctypes.c_int32(0x80004001).value
DXGI_ERROR_NOT_FOUND = ctypes.c_int32(0x887A0002).value
DXGI_ERROR_UNSUPPORTED = ctypes.c_int32(0x887A0004).value
IID_IDXGIDEVICE = uuid.UUID("54ec77fa-1377-44e6-8c32-88fd5f44c84c").bytes_le

# The slots from the facts sheet, written out here independently of the module's constants.
RELEASE, CHECK_INTERFACE_SUPPORT, GET_DESC1, ENUM_ADAPTERS1 = 2, 9, 10, 12


class FakeCom:
    """A COM object: its first field points to a vtable; unknown slots answer E_NOTIMPL."""

    def __init__(self, methods):
        self.calls = []
        self.released = 0
        self._keep = []
        self.vtable = (ctypes.c_void_p * 16)()
        for slot in range(16):
            if slot in methods:
                restype, argtypes, function = methods[slot]
            else:
                restype, argtypes, function = ctypes.c_int32, [], self._not_implemented(slot)
            callback = FUNCTYPE(restype, ctypes.c_void_p, *argtypes)(function)
            self._keep.append(callback)
            self.vtable[slot] = ctypes.cast(callback, ctypes.c_void_p).value
        self.object = (ctypes.c_void_p * 1)(ctypes.addressof(self.vtable))

    @property
    def address(self) -> int:
        return ctypes.addressof(self.object)

    def _not_implemented(self, slot):
        def method(this):
            self.calls.append(f"unexpected slot {slot}")
            return E_NOTIMPL

        return method

    def release_method(self):
        def release(this):
            assert this == self.address
            self.released += 1
            return 0

        return (ctypes.c_uint32, [], release)


class FakeAdapter(FakeCom):
    def __init__(self, name, vendor, device, memory, flags=0, umd=None, desc_result=S_OK):
        self.name, self.vendor, self.device, self.memory = name, vendor, device, memory
        self.flags, self.umd, self.desc_result = flags, umd, desc_result
        super().__init__(
            {
                RELEASE: self.release_method(),
                CHECK_INTERFACE_SUPPORT: (
                    ctypes.c_int32,
                    [ctypes.POINTER(dxgi.GUID), ctypes.POINTER(ctypes.c_longlong)],
                    self.check_interface_support,
                ),
                GET_DESC1: (
                    ctypes.c_int32,
                    [ctypes.POINTER(dxgi.DXGI_ADAPTER_DESC1)],
                    self.get_desc1,
                ),
            }
        )

    def get_desc1(self, this, desc_pointer):
        assert this == self.address
        if self.desc_result != S_OK:
            return self.desc_result
        desc = desc_pointer.contents
        encoded = self.name.encode("utf-16-le")
        ctypes.memmove(ctypes.addressof(desc.Description), encoded, len(encoded))
        desc.VendorId, desc.DeviceId = self.vendor, self.device
        desc.DedicatedVideoMemory, desc.Flags = self.memory, self.flags
        return S_OK

    def check_interface_support(self, this, iid_pointer, version_pointer):
        if bytes(iid_pointer.contents) != IID_IDXGIDEVICE or self.umd is None:
            return DXGI_ERROR_UNSUPPORTED
        version_pointer[0] = self.umd
        return S_OK


class FakeFactory(FakeCom):
    def __init__(self, adapters):
        self.adapters = adapters
        super().__init__(
            {
                RELEASE: self.release_method(),
                ENUM_ADAPTERS1: (
                    ctypes.c_int32,
                    [ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)],
                    self.enum_adapters1,
                ),
            }
        )

    def enum_adapters1(self, this, index, out):
        assert this == self.address
        if index >= len(self.adapters):
            return DXGI_ERROR_NOT_FOUND
        out[0] = self.adapters[index].address
        return S_OK


def walk(factory):
    """adapters_of_factory on a fake; the caller keeps ``factory`` (its vtable) alive."""
    return dxgi.adapters_of_factory(ctypes.c_void_p(factory.address))


def umd(a, b, c, d):
    return (a << 48) | (b << 32) | (c << 16) | d


def laptop():
    """An Intel integrated + AMD discrete laptop, with the software adapter last."""
    return [
        FakeAdapter("Intel(R) UHD Graphics 630", 0x8086, 0x3E9B, 128 * 2**20,
                    umd=umd(31, 0, 101, 2125)),
        FakeAdapter("AMD Radeon RX 6700 XT", 0x1002, 0x73DF, 12 * 2**30,
                    umd=umd(32, 0, 12033, 1030)),
        FakeAdapter("Microsoft Basic Render Driver", 0x1414, 0x008C, 0, flags=2,
                    umd=umd(10, 0, 22621, 3672)),
    ]  # fmt: skip


def test_dxgi_walk_reads_every_adapter_and_releases_each_once():
    adapters = laptop()
    factory = FakeFactory(adapters)
    gpus = walk(factory)
    assert [gpu.name for gpu in gpus] == [
        "Intel(R) UHD Graphics 630",
        "AMD Radeon RX 6700 XT",
        "Microsoft Basic Render Driver",
    ]
    assert [gpu.kind for gpu in gpus] == [INTEGRATED, DISCRETE, SOFTWARE]
    assert gpus[1].vendor == "AMD" and gpus[1].device_id == 0x73DF
    assert gpus[1].dedicated_memory == 12 * 2**30
    assert gpus[0].driver_version == "31.0.101.2125"
    assert gpus[1].driver_version == "32.0.12033.1030"
    assert [adapter.released for adapter in adapters] == [1, 1, 1]
    assert factory.released == 0  # the caller owns the factory
    assert not factory.calls and not any(adapter.calls for adapter in adapters)


def test_an_adapter_without_a_driver_version_still_counts():
    adapter = FakeAdapter("NVIDIA GeForce RTX 3060", 0x10DE, 0x2503, 12 * 2**30, umd=None)
    factory = FakeFactory([adapter])
    gpus = walk(factory)
    assert gpus[0].name == "NVIDIA GeForce RTX 3060" and gpus[0].driver_version == ""


def test_a_failing_getdesc1_raises_and_still_releases_the_adapter():
    adapter = FakeAdapter("x", 0x1002, 1, 0, desc_result=E_NOTIMPL)
    factory = FakeFactory([adapter])
    with pytest.raises(OSError, match="GetDesc1 of adapter 0 returned 0x80004001"):
        walk(factory)
    assert adapter.released == 1


def test_no_adapters_at_all_is_an_empty_list():
    factory = FakeFactory([])
    assert walk(factory) == []


def test_the_user_mode_driver_version_is_four_16_bit_fields():
    assert dxgi.format_umd_version(umd(31, 0, 101, 4091)) == "31.0.101.4091"
    assert dxgi.format_umd_version(-1) == "65535.65535.65535.65535"


@pytest.mark.skipif(sys.platform == "win32", reason="off Windows only")
def test_dxgi_is_not_touched_off_windows():
    with pytest.raises(OSError, match="Windows only"):
        dxgi.dxgi_adapters()


# ------------------------------------------------------------------------------ PowerShell

POWERSHELL_TWO = (
    '[{"Name":"Intel(R) UHD Graphics 630","AdapterCompatibility":"Intel Corporation",'
    '"PNPDeviceID":"PCI\\\\VEN_8086&DEV_3E9B&SUBSYS_09261028&REV_00\\\\3&11583659&0&10",'
    '"DriverVersion":"27.20.100.8681","AdapterRAM":1073741824,"DriverDate":"2020-09-10"},'
    '{"Name":"AMD Radeon RX 6700 XT","AdapterCompatibility":"Advanced Micro Devices, Inc.",'
    '"PNPDeviceID":"PCI\\\\VEN_1002&DEV_73DF&SUBSYS_E4451DA2&REV_C1\\\\6&2A3B5C4D&0&00000019",'
    '"DriverVersion":"32.0.12033.1030","AdapterRAM":4293918720,"DriverDate":"2025-02-20"}]'
)
POWERSHELL_NO_DRIVER = (
    '{"Name":"Microsoft Basic Display Adapter","AdapterCompatibility":"(Standard display types)",'
    '"PNPDeviceID":"PCI\\\\VEN_10DE&DEV_2484&SUBSYS_146B10DE&REV_A1\\\\4&1C3D25BB&0&0019",'
    '"DriverVersion":"10.0.19041.3636","AdapterRAM":null,"DriverDate":"2006-06-21"}'
)


def test_powershell_json_becomes_gpus_with_ids_dates_and_capped_memory():
    intel, amd = dxgi.parse_video_controllers(POWERSHELL_TWO)
    assert (intel.vendor, intel.device_id, intel.kind) == ("Intel", 0x3E9B, INTEGRATED)
    assert intel.driver_date == datetime.date(2020, 9, 10)
    assert amd.memory_capped and amd.kind == DISCRETE
    assert "at least 4.0 GB" in amd.describe()


def test_a_single_controller_is_an_object_not_a_list():
    (gpu,) = dxgi.parse_video_controllers(POWERSHELL_NO_DRIVER)
    assert gpu.vendor == "NVIDIA" and gpu.kind == SOFTWARE


@pytest.mark.parametrize("garbage", ["", "Get-CimInstance : Access denied", "42", "[1, 2]"])
def test_garbage_output_is_rejected(garbage):
    with pytest.raises(ValueError):
        dxgi.parse_video_controllers(garbage)


def fake_powershell(monkeypatch, result):
    calls = []

    def run_powershell(script, timeout):
        calls.append((script, timeout))
        return result

    monkeypatch.setattr(dxgi, "run_powershell", run_powershell)
    return calls


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (CommandResult(("powershell.exe",), None, problem="powershell.exe was not found"),
         "powershell.exe was not found"),
        (CommandResult(("powershell.exe",), None,
                       problem="powershell.exe did not answer within 10 s"),
         "did not answer within 10 s"),
        (CommandResult(("powershell.exe",), 1, "", "Get-CimInstance : Invalid class"),
         "exited with 1: Get-CimInstance : Invalid class"),
        (CommandResult(("powershell.exe",), 0, "\x00\x00garbage [ not json"),
         "unreadable output from Get-CimInstance"),
    ],
)  # fmt: skip
def test_powershell_problems_are_reported_with_what_was_seen(monkeypatch, result, expected):
    fake_powershell(monkeypatch, result)
    gpus, problem = dxgi.powershell_adapters()
    assert gpus == [] and expected in problem


def test_powershell_runs_with_a_timeout(monkeypatch):
    calls = fake_powershell(monkeypatch, CommandResult(("powershell.exe",), 0, POWERSHELL_TWO))
    gpus, problem = dxgi.powershell_adapters(timeout=7.5)
    assert len(gpus) == 2 and problem == ""
    assert calls[0][1] == 7.5 and "Win32_VideoController" in calls[0][0]


# ------------------------------------------------------------------- DXGI first, then PS


def adapters_as_gpus():
    factory = FakeFactory(laptop())
    return walk(factory)


REGISTRY = [
    {"DriverDesc": "Intel(R) UHD Graphics 630", "DriverVersion": "31.0.101.2125",
     "DriverDate": "3-14-2025", "MatchingDeviceId": "PCI\\VEN_8086&DEV_3E9B"},
    {"DriverDesc": "AMD Radeon RX 6700 XT", "DriverVersion": "32.0.12033.1030",
     "DriverDate": "2-20-2025", "MatchingDeviceId": "pci\\ven_1002&dev_73df"},
]  # fmt: skip


def test_dxgi_with_a_gpu_does_not_start_powershell_and_dates_come_from_the_registry(
    monkeypatch,
):
    monkeypatch.setattr(dxgi, "dxgi_adapters", adapters_as_gpus)
    monkeypatch.setattr(dxgi, "registry_display_drivers", lambda: REGISTRY)
    calls = fake_powershell(monkeypatch, CommandResult(("powershell.exe",), 0, "[]"))
    scan = dxgi.scan()
    assert calls == [] and scan.source == "DXGI" and scan.problems == []
    dates = {gpu.name: gpu.driver_date for gpu in scan.hardware}
    assert dates == {
        "Intel(R) UHD Graphics 630": datetime.date(2025, 3, 14),
        "AMD Radeon RX 6700 XT": datetime.date(2025, 2, 20),
    }


def test_a_registry_entry_of_another_vendor_gives_no_date():
    gpu = Gpu("AMD Radeon RX 6700 XT", 0x1002, 0x73DF, driver_version="31.0.101.2125")
    assert dxgi.attach_registry([gpu], REGISTRY)[0].driver_date is None


def test_failing_dxgi_falls_back_to_powershell(monkeypatch):
    def broken():
        raise OSError("CreateDXGIFactory1 returned 0x887A0004")

    monkeypatch.setattr(dxgi, "dxgi_adapters", broken)
    fake_powershell(monkeypatch, CommandResult(("powershell.exe",), 0, POWERSHELL_TWO))
    scan = dxgi.scan()
    assert scan.source == "PowerShell" and len(scan.hardware) == 2
    assert scan.problems == ["DXGI: OSError: CreateDXGIFactory1 returned 0x887A0004"]


def test_a_hanging_dxgi_is_abandoned_after_its_timeout(monkeypatch):
    monkeypatch.setattr(dxgi, "DXGI_TIMEOUT", 0.2)
    monkeypatch.setattr(dxgi, "dxgi_adapters", lambda: time.sleep(3))
    fake_powershell(monkeypatch, CommandResult(("powershell.exe",), 0, POWERSHELL_TWO))
    started = time.perf_counter()
    scan = dxgi.scan()
    assert time.perf_counter() - started < 2
    assert "did not finish within 0.2 s" in scan.problems[0] and len(scan.hardware) == 2


def test_only_the_software_adapter_asks_powershell_which_finds_a_gpu_without_driver(
    monkeypatch,
):
    def software_only():
        return [Gpu("Microsoft Basic Render Driver", 0x1414, 0x8C, 0, software=True, source="DXGI")]

    monkeypatch.setattr(dxgi, "dxgi_adapters", software_only)
    monkeypatch.setattr(dxgi, "registry_display_drivers", lambda: [])
    fake_powershell(monkeypatch, CommandResult(("powershell.exe",), 0, POWERSHELL_NO_DRIVER))
    scan = dxgi.scan()
    assert scan.source == "DXGI + PowerShell"
    findings = envcheck.gpu_findings(project(), WINDOWS, scan)
    warning = [f for f in findings if f.status == WARN and "NVIDIA" in f.found]
    assert warning and "driver is not installed" in warning[0].found


def test_dxgi_and_powershell_both_failing_is_one_warning_with_both_reasons(monkeypatch):
    monkeypatch.setattr(dxgi, "dxgi_adapters", lambda: 1 / 0)
    fake_powershell(
        monkeypatch,
        CommandResult(("powershell.exe",), None, problem="powershell.exe was not found"),
    )
    scan = dxgi.scan()
    assert scan.gpus == []
    (finding,) = envcheck.gpu_findings(project(), WINDOWS, scan)
    assert finding.status == WARN
    assert "ZeroDivisionError" in finding.found and "powershell.exe was not found" in finding.found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10-24-2023", datetime.date(2023, 10, 24)),
        ("2023-10-24", datetime.date(2023, 10, 24)),
        ("/Date(1698105600000)/", datetime.date(2023, 10, 24)),
        ("20231024000000.000000-000", datetime.date(2023, 10, 24)),
        ("13-45-2023", None),
        ("yesterday", None),
        (None, None),
    ],
)
def test_driver_dates_in_every_form_windows_writes_them(text, expected):
    assert dxgi.parse_driver_date(text) == expected


WINDOWS = OsInfo("Windows", "10", "10.0.19045", "AMD64", windows_build=19045)


def project():
    return Project(
        project_name="LeNet test",
        package_name="lenet_test",
        accelerator="directml",
        python_version="3.11",
        python_min="3.8",
        python_max="3.12",
        python_note="",
        pins={"torch": "2.4.1", "torchvision": "0.19.1", "torch-directml": "0.2.5.dev240914"},
        index_url="",
    )


# ------------------------------------------------------------- names from the system


class FakeWinreg:
    """The winreg calls registry_display_drivers makes, for one display class subkey."""

    HKEY_LOCAL_MACHINE = "HKLM"

    def __init__(self, values):
        self.values = values

    def OpenKey(self, parent, name):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def EnumKey(self, key, index):
        if index > 0:
            raise OSError("no more subkeys")
        return "0000"

    def QueryValueEx(self, key, name):
        return self.values[name], 1


def test_registry_strings_lose_their_nuls_and_still_give_the_driver_date(monkeypatch):
    """REG_SZ values may keep the NUL of their C string; the version must still compare."""
    winreg = FakeWinreg(
        {"DriverDesc": "NVIDIA GeForce GTX 470\x00", "DriverVersion": "21.21.13.7653\x00",
         "DriverDate": "10-21-2021\x00", "MatchingDeviceId": "PCI\\VEN_10DE&DEV_06CD\x00"}
    )  # fmt: skip
    monkeypatch.setitem(sys.modules, "winreg", winreg)
    records = dxgi.registry_display_drivers()
    assert records[0]["DriverDesc"] == "NVIDIA GeForce GTX 470"
    gpu = Gpu("NVIDIA GeForce GTX 470", 0x10DE, 0x06CD, driver_version="21.21.13.7653")
    assert dxgi.attach_registry([gpu], records)[0].driver_date == datetime.date(2021, 10, 21)


def test_powershell_names_lose_their_nuls():
    (gpu,) = dxgi.parse_video_controllers(
        '{"Name":"NVIDIA GeForce GTX 470\\u0000","PNPDeviceID":"PCI\\\\VEN_10DE&DEV_06CD",'
        '"DriverVersion":"21.21.13.7653\\u0000\\r\\n","DriverDate":"2021-10-21\\u0000"}'
    )
    assert gpu.describe() == (
        "NVIDIA GeForce GTX 470 (NVIDIA, discrete, driver 21.21.13.7653 of 2021-10-21)"
    )


# ------------------------------------------------- AMD on Windows: the gfx target on the GPU line
WINDOWS_11 = OsInfo("Windows", "10", "10.0.26100", "AMD64", windows_build=26100)
# DXGI adapters as a Radeon desktop and laptops report them (names, PCI ids, drivers).
RDNA_ADAPTERS = [
    (Gpu("AMD Radeon RX 7800 XT", 0x1002, 0x747E, 16 * 2**30, "32.0.21013.1000",
         datetime.date(2025, 1, 20), source="DXGI"), "gfx1101", "rocm-windows"),
    (Gpu("AMD Radeon RX 9070 XT", 0x1002, 0x7550, 16 * 2**30, "32.0.21013.1000",
         datetime.date(2025, 3, 5), source="DXGI"), "gfx1201", "rocm-windows"),
    (Gpu("AMD Radeon RX 6700 XT", 0x1002, 0x73DF, 12 * 2**30, "32.0.12033.1030",
         datetime.date(2025, 2, 20), source="DXGI"), "gfx1031", "directml"),
    (Gpu("AMD Radeon(TM) 780M Graphics", 0x1002, 0x15BF, 512 * 2**20, "31.0.24027.1012",
         datetime.date(2024, 6, 1), source="DXGI"), "gfx1103", "rocm-windows"),
]  # fmt: skip


@pytest.mark.parametrize("gpu,target,stack", RDNA_ADAPTERS, ids=[g[0].name for g in RDNA_ADAPTERS])
def test_an_amd_gpu_line_names_its_target_and_where_it_came_from(gpu, target, stack, monkeypatch):
    monkeypatch.setattr(dxgi.amd_windows, "read_hip", lambda: [])  # no HIP runtime
    monkeypatch.setattr(dxgi, "_scan", lambda timeout: GpuScan([gpu], "DXGI"))
    scan = dxgi.scan()
    findings = envcheck.gpu_findings(project(), WINDOWS, scan)

    (listed,) = [f for f in findings if f.code == "GPU-FOUND"]
    assert f"{target} from the PCI id table" in listed.found
    (line,) = [f for f in findings if f.code == "GPU-AMD-WINDOWS-TARGET"]
    assert line.status == "ok" and not line.fix  # information: the Environment line recommends
    assert ("runs it" in line.found) == (stack == "rocm-windows")
    assert recommend.recommend(WINDOWS_11, scan.hardware, "3.12").stack == stack
    listed = scan.hardware[0].to_dict()  # the JSON report's GPU
    assert (listed["gfx_target"], listed["gfx_target_source"]) == (target, "PCI id table")
    assert recommend.recommend(WINDOWS, scan.hardware, "3.12").stack == "directml"  # Windows 10


class FakeHip:
    """The HIP runtime's two property calls as ctypes functions would be: each writes the
    struct of its version (name at 0, gcnArchName at 1160 or 396) into the caller's buffer."""

    def __init__(self, devices, versions=("R0600", "R0000"), status=0):
        self.devices, self.status = devices, status
        for version in versions:
            offset = {"R0600": 1160, "R0000": 396}[version]
            setattr(self, f"hipGetDevicePropertiesR{version[1:]}", self._call(offset))

    def _call(self, offset):
        def properties(buffer, index):  # buffer: the c_void_p the doctor passes
            name, arch = self.devices[index]
            ctypes.memmove(buffer.value, name.encode(), len(name))
            ctypes.memmove(buffer.value + offset, arch.encode(), len(arch))
            return self.status

        return properties


@pytest.mark.parametrize("versions", [("R0600", "R0000"), ("R0000",)])
def test_the_gfx_target_is_read_at_the_offset_of_each_property_call(versions):
    hip = FakeHip([("AMD Radeon RX 7900 XTX", "gfx1100:sramecc-:xnack-")], versions)

    device = amd_windows._device(hip, 0, "amdhip64_7.dll")

    assert (device.name, device.target) == ("AMD Radeon RX 7900 XTX", "gfx1100")


def test_a_failing_hip_runtime_is_named_and_the_pci_id_table_still_answers():
    def failing():
        raise OSError("amdhip64_7.dll: hipGetDeviceCount returned 999")

    rx_7800 = Gpu("AMD Radeon RX 7800 XT", 0x1002, 0x747E, 16 * 2**30, source="DXGI")
    gpus, problem = amd_windows.scan_targets([rx_7800], failing)

    assert "hipGetDeviceCount returned 999" in problem
    assert (gpus[0].gfx_target, gpus[0].target_source) == ("gfx1101", "PCI id table")


def test_hip_devices_match_dxgis_gpus_by_name_else_by_order():
    igpu = Gpu("AMD Radeon(TM) Graphics", 0x1002, 0x1900, 2**29, source="DXGI")  # not in the table
    xtx = Gpu("AMD Radeon RX 7900 XTX", 0x1002, 0x744C, 24 * 2**30, source="DXGI")
    hip = [amd_windows.HipDevice("AMD Radeon RX 7900 XTX", "gfx1100"),
           amd_windows.HipDevice("AMD Radeon(TM) 780M", "gfx1103")]  # fmt: skip

    named = amd_windows.with_targets([igpu, xtx], hip)
    assert [(gpu.gfx_target, gpu.target_source) for gpu in named] == [
        ("gfx1103", "HIP runtime"),  # two of each: the one left over goes by order
        ("gfx1100", "HIP runtime"),
    ]
    unsure = amd_windows.with_targets([igpu, xtx], hip[:1])  # one left in DXGI, none in HIP
    assert [gpu.target_source for gpu in unsure] == ["", "HIP runtime"]
    assert unsure[0].gfx_target == ""  # no id in the table, no name: nothing is guessed
