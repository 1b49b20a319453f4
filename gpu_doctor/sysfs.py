"""GPUs on Linux and WSL2: PCI vendor ids from /sys/class/drm, names from nvidia-smi/rocm-smi.

Standard library only. /sys/class/drm/cardN/device holds ``vendor`` and ``device`` ids, a
``uevent`` file whose DRIVER= line names the kernel driver (amdgpu, i915, xe, nvidia, nouveau,
radeon), and for amdgpu ``mem_info_vram_total``.
nvidia-smi and rocm-smi run only when a card of theirs is present (or, for nvidia-smi, in
WSL2, which has no DRM cards), each with a timeout. Tests pass a fake tree as ``root`` and
replace ``run_tool``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

from . import amd_linux
from . import nvidia as nvidia_table
from .bounded import CommandResult, describe_error, run_command
from .gpus import AMD, NVIDIA, Gpu, GpuScan, vendor_name

DRM_ROOT = Path("/sys/class/drm")
TOOL_TIMEOUT = 5.0
# compute_cap exists in nvidia-smi from the R510/R525 drivers on; older ones (R470, the last
# for Kepler) exit with 2: 'Field "compute_cap" is not a valid field to query.' Then the query
# without it runs, and the model name gives the capability (nvidia.py).
NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=name,driver_version,memory.total,compute_cap",
    "--format=csv,noheader,nounits",
]
NVIDIA_SMI_OLD_QUERY = [
    "nvidia-smi",
    "--query-gpu=name,driver_version,memory.total",
    "--format=csv,noheader,nounits",
]
ROCM_SMI_QUERY = ["rocm-smi", "--showproductname", "--json"]
ROCMINFO_QUERY = ["rocminfo"]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def _hex(text: str) -> int | None:
    try:
        return int(text, 16)
    except ValueError:
        return None


def _uevent_driver(text: str) -> str:
    """'DRIVER=amdgpu' from a device's uevent file."""
    for line in text.splitlines():
        if line.startswith("DRIVER="):
            return line[len("DRIVER=") :].strip()
    return ""


def drm_gpus(root: Path = DRM_ROOT) -> list[Gpu]:
    """One Gpu per /sys/class/drm/cardN backed by a PCI device; raises OSError if unreadable."""
    if not root.is_dir():
        return []
    cards = [entry for entry in root.iterdir() if re.fullmatch(r"card\d+", entry.name)]
    gpus, seen = [], set()
    for card in sorted(cards, key=lambda entry: int(entry.name[4:])):
        device = card / "device"
        vendor = _hex(_read(device / "vendor"))
        if vendor is None:  # simpledrm/efifb framebuffers: no PCI device behind them
            continue
        identity = os.path.realpath(str(device))
        if identity in seen:
            continue
        seen.add(identity)
        device_id = _hex(_read(device / "device"))
        driver = _uevent_driver(_read(device / "uevent"))
        if not driver and (device / "driver").exists():  # the link the uevent line names
            driver = os.path.basename(os.path.realpath(str(device / "driver")))
        vram = _read(device / "mem_info_vram_total")
        gpus.append(
            Gpu(
                name=f"{vendor_name(vendor)} GPU 0x{device_id or 0:04x}",
                vendor_id=vendor,
                device_id=device_id,
                dedicated_memory=int(vram) if vram.isdigit() else None,
                driver=driver,
                source=f"/sys/class/drm/{card.name}",
            )
        )
    return gpus


def run_tool(args: list[str], timeout: float) -> CommandResult:
    return run_command(args, timeout)


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """'NVIDIA GeForce RTX 3080, 535.183.01, 10240, 8.6' per line (memory in MiB; the compute
    capability only from drivers that know the field). Raises ValueError."""
    gpus = []
    for line in text.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) < 3 or not fields[0]:
            raise ValueError(f"unexpected line {line!r}")
        memory = int(fields[2]) * 2**20 if fields[2].isdigit() else None
        capability = fields[3] if len(fields) > 3 and nvidia_table.parse(fields[3]) else ""
        gpus.append(
            Gpu(
                name=fields[0],
                vendor_id=NVIDIA,
                dedicated_memory=memory,
                driver="nvidia",
                driver_version=fields[1],
                source="nvidia-smi",
                compute_capability=capability,
                capability_source=nvidia_table.SMI_SOURCE if capability else "",
            )
        )
    return gpus


def nvidia_smi_gpus(timeout: float) -> tuple[list[Gpu], str]:
    """nvidia-smi's GPUs with their compute capability; without it from a driver too old to
    know the field (the model name then gives it)."""
    named, problem = _tool_gpus(NVIDIA_SMI_QUERY, parse_nvidia_smi, timeout)
    if problem and "compute_cap" in problem:
        named, problem = _tool_gpus(NVIDIA_SMI_OLD_QUERY, parse_nvidia_smi, timeout)
    return named, problem


def parse_rocm_smi(text: str) -> list[Gpu]:
    """rocm-smi --showproductname --json: {"card0": {"Card Series": ..., "GFX Version": ...}}."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    gpus = []
    for card, fields in sorted(data.items()):
        if not (card.startswith("card") and isinstance(fields, dict)):
            continue
        values = {key.lower(): str(value) for key, value in fields.items()}
        name = values.get("card series") or values.get("card model") or card
        gfx = values.get("gfx version", "")
        gpus.append(
            Gpu(
                name=f"{name} ({gfx})" if gfx else name,
                vendor_id=AMD,
                driver="amdgpu",
                source="rocm-smi",
            )
        )
    return gpus


def parse_rocminfo(text: str) -> list[Gpu]:
    """rocminfo's GPU agents: 'Name: gfx1031', 'Marketing Name: AMD Radeon RX 6700 XT',
    'Device Type: GPU', one block per agent. Raises ValueError when it lists no agent at all."""
    if "Agent" not in text:
        raise ValueError("no HSA agents listed")
    gpus = []
    for block in re.split(r"\*{5,}\s*\nAgent \d+\s*\n\*{5,}", text)[1:]:
        fields = {}
        for line in block.splitlines():
            key, _, value = line.strip().partition(":")
            if value and key.strip() not in fields:  # the agent's own fields come first
                fields[key.strip()] = value.strip()
        if fields.get("Device Type") != "GPU":
            continue
        gfx = fields.get("Name", "")
        gpus.append(
            Gpu(
                name=fields.get("Marketing Name") or gfx,
                vendor_id=AMD,
                driver="amdgpu",
                source="rocminfo",
                gfx_target=gfx if gfx.startswith("gfx") else "",
            )
        )
    return gpus


def _tool_gpus(args: list[str], parse, timeout: float) -> tuple[list[Gpu], str]:
    result = run_tool(args, timeout)
    if result.problem:
        return [], result.problem
    if result.returncode != 0:
        detail = " ".join((result.stderr or result.stdout).split())[:160] or "no output"
        return [], f"{args[0]} exited with {result.returncode}: {detail}"
    try:
        return parse(result.stdout), ""
    except ValueError as error:
        return [], f"unreadable output from {args[0]} ({error})"


def _named(cards: list[Gpu], named: list[Gpu]) -> list[Gpu]:
    """Give the DRM cards of one vendor the names a vendor tool reported, in order."""
    if len(cards) != len(named):
        return named or cards
    return [
        replace(
            tool,
            device_id=card.device_id,
            dedicated_memory=tool.dedicated_memory or card.dedicated_memory,
            gfx_target=tool.gfx_target or card.gfx_target,
        )
        for card, tool in zip(cards, named)
    ]


def with_gfx_targets(amd: list[Gpu], nodes: list[amd_linux.KfdNode]) -> list[Gpu]:
    """Give each AMD card the gfx target and render node of its KFD node: matched by PCI
    device id, else in order when the counts agree."""
    nodes = [node for node in nodes if node.vendor_id in (None, AMD)]
    by_id = {node.device_id: node for node in nodes if node.device_id is not None}
    matched = []
    for position, gpu in enumerate(amd):
        node = by_id.get(gpu.device_id)
        if node is None and len(nodes) == len(amd):
            node = nodes[position]
        if node is None:
            matched.append(gpu)
        else:
            matched.append(replace(gpu, gfx_target=node.gfx_target, render_node=node.render_node))
    return matched


def scan(root: Path = DRM_ROOT, timeout: float = TOOL_TIMEOUT, wsl: bool = False) -> GpuScan:
    """The GPUs under ``root`` (/sys/class/drm). A test's fake tree mirrors the real one:
    <tmp>/sys/class/drm, <tmp>/sys/class/kfd/kfd/topology/nodes and <tmp>/dev/kfd."""
    problems = []
    try:
        cards = drm_gpus(root)
    except OSError as error:
        cards = []
        problems.append(f"{root}: {describe_error(error)}")
    nvidia = [gpu for gpu in cards if gpu.vendor_id == NVIDIA]
    amd = [gpu for gpu in cards if gpu.vendor_id == AMD]
    others = [gpu for gpu in cards if gpu.vendor_id not in (NVIDIA, AMD)]
    source = str(root) if cards else ""
    if any(gpu.driver == "nvidia" for gpu in nvidia) or (wsl and not cards):
        named, problem = nvidia_smi_gpus(timeout)
        if problem and nvidia:  # in WSL2 without an NVIDIA GPU, no nvidia-smi is normal
            problems.append(f"nvidia-smi: {problem}")
        if named:
            nvidia = _named(nvidia, named)
            source = f"{source} + nvidia-smi" if source else "nvidia-smi"
    if any(gpu.driver == "amdgpu" for gpu in amd):
        # ROCm's tools are optional: rocminfo gives the marketing names, else rocm-smi.
        named, problem = _tool_gpus(ROCMINFO_QUERY, parse_rocminfo, timeout)
        if named:
            amd = _named(amd, named)
            source = f"{source} + rocminfo"
        else:
            named, problem = _tool_gpus(ROCM_SMI_QUERY, parse_rocm_smi, timeout)
            if problem and "not found" not in problem:
                problems.append(f"rocm-smi: {problem}")
            if named:
                amd = _named(amd, named)
                source = f"{source} + rocm-smi"
    denied = []
    if any(gpu.driver == "amdgpu" for gpu in amd):
        system_root = root.parents[2] if len(root.parents) > 2 else Path("/")
        kfd_root = root.parent / "kfd" / "kfd" / "topology" / "nodes"
        amd = with_gfx_targets(amd, amd_linux.kfd_nodes(kfd_root))  # the kernel's word wins
        nodes = ["/dev/kfd"] + [gpu.render_node for gpu in amd if gpu.render_node]
        denied = amd_linux.device_access(dict.fromkeys(nodes), system_root)
    return GpuScan(nvidia_table.with_capabilities(nvidia) + amd + others, source, problems, denied)
