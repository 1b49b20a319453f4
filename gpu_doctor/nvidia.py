"""NVIDIA GPUs and the CUDA builds of torch: which compute capability a GPU has, and which
build has kernels for it. Facts only; the rules that use them are ``recommend`` and ``rules/``.

A CUDA build of torch runs a GPU only when it was compiled for the GPU's compute capability
(or, through PTX, an older one it can translate). PyTorch 2.14's builds (RELEASE.md's support
matrix, RFCs pytorch/pytorch#172352, #190355 and #190385):

- cu130 (the cuda stack): Turing 7.5, Ampere 8.0/8.6, Hopper 9.0, Blackwell 10.0/12.0
  (+PTX on Linux). CUDA 13 cannot build for anything older.
- cu126 (the cuda-legacy stack): Maxwell 5.0, Pascal 6.0, Volta 7.0, Turing 7.5, Ampere
  8.0/8.6, Hopper 9.0. PyTorch 2.15 publishes no CUDA 12.x wheels, so 2.14.1+cu126 is the last
  prebuilt torch for Maxwell, Pascal and Volta.
- Below 5.0 (Kepler, Fermi): no current PyTorch build at all.

Kernels built for X.y run on X.z with z >= y (same major): sm_60 runs a GTX 1060 (6.1), sm_86
runs an RTX 4090 (8.9). The compute capability comes, in this order, from ``nvidia-smi
--query-gpu=compute_cap`` (the field exists in the R525 drivers and later, commonly said to
come with R510; the R470 branch, the last for Kepler, answers 'Field "compute_cap" is not a
valid field to query' with exit code 2), from the model names below, or from torch's
``get_device_capability`` once torch is installed. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable, Sequence

from .gpus import NVIDIA, Gpu

CUDA_STACKS = ("cuda", "cuda-legacy")
# The architectures each CUDA stack's build is compiled for: cookiecutter.json's _stacks
# (cuda_archs), kept equal by a test. "+PTX": newer GPUs run it through the driver's JIT.
CUDA_ARCHS = {
    "cuda": ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"),
    "cuda-legacy": ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"),
}
CUDA_BUILDS = {"cuda": "2.14.1+cu130", "cuda-legacy": "2.14.1+cu126"}
FINAL = {"cuda-legacy": "final: PyTorch 2.15 has no CUDA 12.x build"}
OLDEST_ANY_BUILD = (5, 0)  # below this (Kepler, Fermi) no current PyTorch build runs

SMI_SOURCE, NAME_SOURCE, TORCH_SOURCE = "nvidia-smi", "model name", "torch"

# Model names -> compute capability, for the families a workshop meets (NVIDIA's "CUDA GPUs"
# list, developer.nvidia.com/cuda-gpus). First match wins: specific names before families.
# Matched against the name without "NVIDIA", "(R)" and "(TM)", lower case.
_NAMES: tuple[tuple[str, str, str], ...] = (
    # Titans first: the same word spans five architectures.
    (r"\btitan rtx\b", "7.5", "Turing"),
    (r"\btitan v\b", "7.0", "Volta"),
    (r"\btitan xp\b|\btitan x \(pascal\)", "6.1", "Pascal"),
    (r"\btitan x\b", "5.2", "Maxwell"),
    (r"\btitan\b", "3.5", "Kepler"),
    # Data centre and workstation, by model number.
    (r"\bgb10\b", "12.1", "Blackwell"),
    (r"\bg?b300\b", "10.3", "Blackwell"),
    (r"\bg?b[12]00\b", "10.0", "Blackwell"),
    (r"\brtx pro \d+ blackwell\b", "12.0", "Blackwell"),
    (r"\bg?h(?:100|200|800|20)\b", "9.0", "Hopper"),
    (r"\bl(?:4|40s?|20)\b|\brtx \d000 ada\b", "8.9", "Ada Lovelace"),
    (r"\ba(?:100|800|30)\b", "8.0", "Ampere"),
    (r"\ba(?:2|10g?|16|40)\b|\brtx a\d{3,4}\b", "8.6", "Ampere"),
    (
        r"\bquadro rtx \d000\b|\b(?:quadro )?t(?:4|400|500|550|600|1000|1200|2000)\b",
        "7.5",
        "Turing",
    ),
    (r"\bv100\b|\bgv100\b", "7.0", "Volta"),
    (r"\bp100\b|\bgp100\b", "6.0", "Pascal"),
    (r"\bp(?:4|6|40)\b|\bquadro p\d{3,4}\b", "6.1", "Pascal"),
    (r"\bm(?:4|6|40|60)\b|\bquadro m[2-6]000\b|\bquadro m5500\b", "5.2", "Maxwell"),
    (r"\bm10\b|\bquadro m\d{3,4}m?\b|\bquadro k(?:620|1200|2200)\b", "5.0", "Maxwell"),
    (r"\bk80\b", "3.7", "Kepler"),
    (r"\bk(?:20x?|40)\b|\bquadro k6000\b", "3.5", "Kepler"),
    (r"\bk10\b|\bquadro k\d{3,4}m?\b", "3.0", "Kepler"),
    # GeForce, newest first.
    (r"\brtx 50\d0\b", "12.0", "Blackwell"),
    (r"\brtx 40\d0\b", "8.9", "Ada Lovelace"),
    (r"\brtx 30\d0\b|\bmx570\b", "8.6", "Ampere"),
    (r"\brtx 20\d0\b|\bgtx 16\d0\b|\bmx[45]50\b", "7.5", "Turing"),
    (r"\bgtx 10\d0\b|\bgt 1030\b|\bmx(?:150|2[35]0|3[35]0)\b", "6.1", "Pascal"),
    (r"\bgtx 9[5-9]0\b|\bgtx 9(?:65|70|80)m\b", "5.2", "Maxwell"),
    (r"\bgtx 9[0-6]0m\b|\b9[34]0mx?\b|\bgtx 75\d\b|\bgtx 8[56]0m\b|\bmx1[13]0\b", "5.0", "Maxwell"),
    (r"\bgtx 7[89]0\b|\bgt 7[123]0\b|\b920m\b", "3.5", "Kepler"),
    (r"\bgtx 7\d0m?\b|\bgt 740\b|\bgtx 8[78]0m\b|\bgt[x]? 6\d0m?\b", "3.0", "Kepler"),
    (r"\bgtx (?:465|470|480|570|580|590)\b", "2.0", "Fermi"),
    (r"\bgt[sx]? [45]\d0m?\b", "2.1", "Fermi"),
)
_COMPILED = tuple((re.compile(pattern), cap, family) for pattern, cap, family in _NAMES)


def _plain(name: str) -> str:
    """'NVIDIA GeForce(R) GTX 1060  6GB' -> 'geforce gtx 1060 6gb'."""
    name = re.sub(r"\((?:r|tm)\)|\bnvidia\b|\btesla\b", " ", name, flags=re.IGNORECASE)
    return " ".join(name.lower().split())


def from_name(name: str) -> tuple[str, str] | None:
    """(compute capability, architecture) of an NVIDIA model name, or None when unknown."""
    plain = _plain(name)
    for pattern, capability, family in _COMPILED:
        if pattern.search(plain):
            return capability, family
    return None


def parse(text: str) -> tuple[int, int] | None:
    """'6.1' -> (6, 1); '12.0+PTX' -> (12, 0); anything else -> None."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\+ptx)?\s*", text or "", re.IGNORECASE)
    return (int(match.group(1)), int(match.group(2))) if match else None


def capability_of(gpu: Gpu) -> str:
    """The GPU's compute capability ('6.1'): measured when known, else by its model name."""
    if gpu.vendor_id != NVIDIA:
        return ""
    if parse(gpu.compute_capability):
        return gpu.compute_capability
    known = from_name(gpu.name)
    return known[0] if known else ""


def with_capabilities(gpus: Iterable[Gpu]) -> list[Gpu]:
    """The GPUs, each NVIDIA one given its compute capability from its model name when no tool
    measured it (DXGI and sysfs give names only)."""
    done = []
    for gpu in gpus:
        if gpu.vendor_id == NVIDIA and not parse(gpu.compute_capability):
            known = from_name(gpu.name)
            if known:
                gpu = replace(gpu, compute_capability=known[0], capability_source=NAME_SOURCE)
        done.append(gpu)
    return done


def runs_on(capability: str, archs: Sequence[str]) -> bool:
    """True when a build compiled for ``archs`` has kernels this capability runs: one of the
    same major version and no newer minor, or PTX of an older version (JIT)."""
    cap = parse(capability)
    if cap is None:
        return False
    for arch in archs:
        built = parse(arch)
        if built is None:
            continue
        if built[0] == cap[0] and built[1] <= cap[1]:
            return True
        if arch.lower().endswith("+ptx") and built <= cap:
            return True
    return False


def stacks_running(capability: str) -> list[str]:
    """The CUDA stacks whose build runs a GPU of this capability, in CUDA_STACKS order."""
    return [stack for stack in CUDA_STACKS if runs_on(capability, CUDA_ARCHS[stack])]


def oldest(stack: str) -> str:
    """The oldest compute capability a CUDA stack's build runs ('7.5')."""
    return CUDA_ARCHS[stack][0].split("+")[0]


def family_of(capability: str) -> str:
    """'6.1' -> 'Pascal': the architecture, for a sentence."""
    cap = parse(capability)
    if cap is None:
        return ""
    for floor, family in (
        ((12, 0), "Blackwell"),
        ((10, 0), "Blackwell"),
        ((9, 0), "Hopper"),
        ((8, 9), "Ada Lovelace"),
        ((8, 0), "Ampere"),
        ((7, 5), "Turing"),
        ((7, 0), "Volta"),
        ((6, 0), "Pascal"),
        ((5, 0), "Maxwell"),
        ((3, 0), "Kepler"),
        ((2, 0), "Fermi"),
    ):
        if cap >= floor:
            return family
    return "Tesla"
