"""verify_install tells an emulated GPU (Wine on a CPU Vulkan driver) from a real one."""

from __future__ import annotations

import sys

import pytest

from gpu_doctor import emulation
from gpu_doctor.findings import OK
from gpu_doctor.rules import training_step as step_rules

CPU, DISCRETE = emulation.VK_PHYSICAL_DEVICE_TYPE_CPU, 2


def test_outside_wine_no_device_is_called_emulated():
    if sys.platform == "win32" and emulation.wine_version() is not None:
        pytest.skip("this Windows Python runs under Wine")
    assert emulation.wine_version() is None
    assert emulation.emulated_gpu() is None


@pytest.mark.parametrize(
    "devices, expected",
    [
        ([("llvmpipe (LLVM 19.1.7)", CPU)], "Wine 8.0 on llvmpipe (LLVM 19.1.7)"),
        ([("NVIDIA GeForce RTX 4070", DISCRETE)], None),  # Wine on a real GPU: real timings
        ([("llvmpipe", CPU), ("Radeon RX 7600", DISCRETE)], None),
        ([], None),  # Vulkan cannot say: no claim either way
    ],
)
def test_under_wine_only_a_cpu_vulkan_driver_means_emulated(monkeypatch, devices, expected):
    monkeypatch.setattr(emulation, "wine_version", lambda: "8.0")
    monkeypatch.setattr(emulation, "vulkan_devices", lambda: devices)

    assert emulation.emulated_gpu() == expected


def test_an_emulated_device_makes_no_speed_claim_from_its_timing():
    measured = {"device": "privateuseone:0", "batch": 64, "steps": 1, "device_ms": 40.0,
                "cpu_ms": 10.0, "emulated": "Wine 8.0 on llvmpipe"}  # fmt: skip
    emulated = step_rules.timing(measured, "directml:0")
    assert (emulated.status, emulated.code, emulated.fix) == (OK, "TIMING-STEP", "")
    assert "emulated (a CPU emulating a GPU: Wine 8.0 on llvmpipe)" in emulated.found
    assert "x)." not in emulated.found  # no speed ratio
    real = step_rules.timing({**measured, "emulated": None}, "directml:0")
    assert real.code == "TIMING-CPU-FASTER" and "(0.2x)." in real.found
