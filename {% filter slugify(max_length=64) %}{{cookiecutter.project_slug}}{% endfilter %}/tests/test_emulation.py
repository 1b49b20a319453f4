"""verify_install tells an emulated GPU (Wine on a CPU Vulkan driver) from a real one."""

from __future__ import annotations

import sys

import pytest

from {{ cookiecutter.package_name }}.doctor import emulation

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
