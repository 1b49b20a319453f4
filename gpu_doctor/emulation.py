"""Whether the DirectX 12 "GPU" is a CPU emulating one: Wine over a CPU Vulkan driver.

Under Wine, Direct3D 12 runs on Vulkan. When every Vulkan device there is a CPU (Mesa's
lavapipe, for example), DirectML computes correctly but on the processor, so a timing
measured on it says nothing about a GPU. Windows itself offers torch-directml no such device
(it skips software adapters): outside Wine the answer is always None.
"""

from __future__ import annotations

import ctypes
import sys

VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
VK_PHYSICAL_DEVICE_TYPE_CPU = 4
PROPERTIES_BYTES = 1024  # VkPhysicalDeviceProperties is 824 bytes; room to spare
TYPE_OFFSET, NAME_OFFSET, NAME_BYTES = 16, 20, 256


class _InstanceCreateInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("pApplicationInfo", ctypes.c_void_p),
        ("enabledLayerCount", ctypes.c_uint32),
        ("ppEnabledLayerNames", ctypes.c_void_p),
        ("enabledExtensionCount", ctypes.c_uint32),
        ("ppEnabledExtensionNames", ctypes.c_void_p),
    ]


def wine_version() -> str | None:
    """Wine's version when this Windows process runs under Wine, else None."""
    if sys.platform != "win32":
        return None
    try:
        get_version = ctypes.WinDLL("ntdll").wine_get_version
    except (OSError, AttributeError):  # real Windows: no such export
        return None
    get_version.restype = ctypes.c_char_p
    return (get_version() or b"").decode("ascii", "replace")


def vulkan_devices() -> list[tuple[str, int]]:
    """(name, VkPhysicalDeviceType) of each Vulkan device; [] when Vulkan cannot say."""
    try:
        vulkan = ctypes.WinDLL("vulkan-1")
    except OSError:
        return []
    info = _InstanceCreateInfo(sType=VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO)
    instance = ctypes.c_void_p()
    if vulkan.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance)) != 0:
        return []
    try:
        count = ctypes.c_uint32()
        enumerate_devices = vulkan.vkEnumeratePhysicalDevices
        if enumerate_devices(instance, ctypes.byref(count), None) != 0 or not count.value:
            return []
        handles = (ctypes.c_void_p * count.value)()
        if enumerate_devices(instance, ctypes.byref(count), handles) != 0:
            return []
        found = []
        for handle in handles[: count.value]:
            properties = ctypes.create_string_buffer(PROPERTIES_BYTES)
            vulkan.vkGetPhysicalDeviceProperties(ctypes.c_void_p(handle), properties)
            kind = int.from_bytes(properties.raw[TYPE_OFFSET : TYPE_OFFSET + 4], "little")
            name = properties.raw[NAME_OFFSET : NAME_OFFSET + NAME_BYTES].split(b"\0")[0]
            found.append((name.decode("utf-8", "replace"), kind))
        return found
    finally:
        vulkan.vkDestroyInstance(instance, None)


def emulated_gpu() -> str | None:
    """What emulates the GPU (e.g. "Wine 8.0 on llvmpipe (LLVM 19.1.7, 256 bits)"), or None
    for a real GPU and whenever it cannot be told."""
    version = wine_version()
    if version is None:
        return None
    try:
        devices = vulkan_devices()
    except (OSError, AttributeError, ValueError):
        return None
    if not devices or any(kind != VK_PHYSICAL_DEVICE_TYPE_CPU for _, kind in devices):
        return None
    return f"Wine {version} on {', '.join(name for name, _ in devices)}"
