"""Real DirectML kernels under Wine, for a DirectML test tier (Linux hosts only).

    python tools/wine_directml.py setup            install or update everything (idempotent)
    python tools/wine_directml.py probe            setup, then check that DirectML computes
    python tools/wine_directml.py run [ARGS...]    run the Windows python.exe with DirectML
    python tools/wine_directml.py caps             what D3D12 and DirectML report here
    python tools/wine_directml.py info             where the pieces are

Built on tools/wine_python.py (Windows CPython 3.11 and the Windows wheels under Wine 8) and
adds, each cached under $TEMPLATE_TEST_CACHE/windows/directml and keyed by its inputs:
- Debian's MinGW-w64 C compiler (gcc-mingw-w64-x86-64) and Mesa 25's lavapipe, the CPU Vulkan
  driver (mesa-vulkan-drivers 25.x; on Debian 12 from bookworm-backports, which this adds to
  apt's sources when missing). Wine 8's D3D12 (vkd3d) computes on lavapipe; with Mesa 22's
  lavapipe every compute result was stale memory.
- dxcore.dll, built from tools/dxcore/dxcore.c: Wine 8 has no DXCore, which torch-directml
  needs to find an adapter. Keyed by the source and the compiler's version.
- d3d12.dll: vkd3d with its DXIL compiler. Wine 8's own D3D12 is vkd3d 1.6, which cannot
  compile DXIL (shader model 6), and DirectML ships some kernels only as DXIL (cross-entropy,
  softmax backward, int64 and float64 arithmetic, float add/mul of tensors whose element count
  is a multiple of 4): there torch raised `RuntimeError: Invalid parameter.` or
  `device1->CompileGraph(...)`. This builds the vkd3d of Debian's wine 10 source package
  (libs/vkd3d, vkd3d 1.14, with VKD3D_SHADER_UNSUPPORTED_DXIL) behind the entry points of
  tools/vkd3d/d3d12_main.c, with the patch in tools/vkd3d. The source comes through
  `apt-get source` from a deb-src index of Debian 13 kept in this cache (the machine's apt
  sources stay as they are); headers from wine's IDL files with MinGW-w64's widl, the HLSL
  parsers with bison and flex. Keyed by the source's version and the recipe.
- A Wine prefix of its own with those DLLs in system32 (loaded as native: dxcore=n, d3d12=n),
  so the plain Windows tier keeps its DXCore-less prefix (and its real "DLL load failed"
  import error) untouched.

In a test:

    py = wine_python.setup()
    dml = wine_directml.setup(py)       # a DirectMLWine; dml.run(...) like py.run(...)
    wine_directml.probe(dml)            # raises DirectMLUnavailable unless ones*2 == 2 and a
                                        # cross-entropy (a DXIL kernel) is the CPU's

A CPU emulating a GPU: this shows what DirectML's kernels compute, never how fast. A DirectML
C++ error can end in an access violation while Wine unwinds it: always give a run a timeout.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import apt_install  # noqa: E402
import system_packages  # noqa: E402
import wine_python  # noqa: E402
from system_packages import VULKAN_HEADER, lavapipe_icd, mesa_version  # noqa: E402,F401
from wine_python import WineSetupError, WineTimeout  # noqa: E402,F401  (re-exported)

DXCORE_SOURCES = (HERE / "dxcore" / "dxcore.c", HERE / "dxcore" / "dxcore.def")
CAPS_SOURCE = HERE / "dxcore" / "d3d12caps.c"
MINGW_GCC = system_packages.MINGW_GCC
# -s: no symbols; --no-insert-timestamp: the same source and compiler give the same bytes.
MINGW_FLAGS = ["-O2", "-Wall", "-shared", "-s", "-static-libgcc", "-Wl,--no-insert-timestamp"]
MINGW_LIBS = ["-ldxgi", "-luuid"]


# d3d12.dll: vkd3d with its DXIL compiler, from the vkd3d inside Debian's wine 10 source
# (libs/vkd3d, vkd3d 1.14). Debian's own vkd3d source package is not reachable from every
# mirror this runs behind; wine's is, and it is the vkd3d Wine 10 itself ships.
VKD3D_DIR = HERE / "vkd3d"
D3D12_SOURCES = (VKD3D_DIR / "d3d12_main.c", VKD3D_DIR / "d3d12.def")
VKD3D_PATCHES = (VKD3D_DIR / "enumerate-meta-commands.patch",)
WINE_SOURCE_SUITE = "trixie"  # Debian 13: wine 10.0
WINE_SOURCE_PREFIX = "10.0"  # the wine source versions whose libs/vkd3d this recipe builds
SOURCE_LISTS_MAX_AGE = 7 * 24 * 3600  # refresh the deb-src index weekly, not on every run
# Headers generated from wine's IDL files with MinGW-w64's widl: vkd3d 1.14 needs newer D3D12
# declarations (ID3D12Device9...) than MinGW-w64 10's headers have.
VKD3D_IDL = ("d3d12", "d3d12sdklayers", "d3d12shader", "d3dcommon", "dxgicommon", "dxgiformat")
VKD3D_DEFINES = [
    "-DNONAMELESSUNION",  # vkd3d names the unions of D3D12 structures `u`
    "-DWIN32_LEAN_AND_MEAN",
    "-DLIBVKD3D_SOURCE",
    "-DLIBVKD3D_SHADER_SOURCE",
    "-DLIBVKD3D_UTILS_SOURCE",
    "-DVKD3D_SHADER_UNSUPPORTED_DXIL",  # the DXIL compiler: the point of this build
]
VKD3D_CFLAGS = ["-O2", "-w", *VKD3D_DEFINES]
D3D12_LINK_FLAGS = ["-shared", "-s", "-static-libgcc", "-Wl,--no-insert-timestamp"]
WIDL = "x86_64-w64-mingw32-widl"
CROSS_ENTROPY_CHECK = (
    "torch.nn.functional.cross_entropy(torch.tensor([[2.0, 1.0, 0.1, -1.0], [0.5, 2.5, 0.3, "
    "0.0], [1.0, 1.0, 1.0, 1.0]], device={device}), torch.tensor([0, 1, 3], device={device}))"
)

BUILD_TIMEOUT = 300
PROBE_TIMEOUT = 600  # Wine start-up, a cold `import torch` (25-45 s), DirectML's first shaders
EXPECTED = [[2.0, 2.0], [2.0, 2.0]]
CROSS_ENTROPY_TOLERANCE = 1e-6  # seen equal to the last bit; rounding may differ elsewhere
PROBE_MARK = "DIRECTML-PROBE "
# device() waits forever when D3D12 refuses the adapter: ask device_count() first.
PROBE_SCRIPT = f"""
import json, time
started = time.monotonic()
import torch, torch_directml
report = {{"import_s": round(time.monotonic() - started, 1)}}
report["count"] = torch_directml.device_count()
if report["count"]:
    report["name"] = torch_directml.device_name(0)
    device = torch_directml.device()
    started = time.monotonic()
    report["result"] = (torch.ones(2, 2, device=device) * 2).cpu().tolist()
    # One DXIL-only kernel (cross-entropy), on a known input, against the CPU.
    report["cross_entropy_cpu"] = {CROSS_ENTROPY_CHECK.format(device="'cpu'")}.item()
    try:
        report["cross_entropy"] = {CROSS_ENTROPY_CHECK.format(device="device")}.item()
    except RuntimeError as error:
        report["cross_entropy_error"] = str(error)
    report["compute_s"] = round(time.monotonic() - started, 1)
print({PROBE_MARK!r} + json.dumps(report), flush=True)
"""


class DirectMLUnavailable(RuntimeError):
    """Everything is installed, but DirectML under Wine did not compute what it must."""


def _log(message: str) -> None:
    print(f"[wine_directml] {message}", file=sys.stderr, flush=True)


def _sha(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def _run(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """A host command that must succeed; its failure becomes a WineSetupError sentence."""
    try:
        return apt_install.run(command, timeout, **kwargs)
    except apt_install.AptError as error:
        raise WineSetupError(str(error)) from error


def cache_root() -> Path:
    return wine_python.cache_root() / "directml"


# ------------------------------------------------------------------------ system packages


def ensure_system_packages() -> None:
    """Wine, MinGW-w64 and its build tools, and Mesa 25's lavapipe (tools/system_packages.py)."""
    try:
        system_packages.ensure("wine", "mingw", "mesa")
    except system_packages.SystemPackagesError as error:
        raise WineSetupError(str(error)) from error


# ------------------------------------------------------------------------ dxcore.dll


def compiler_version() -> str:
    return _run([MINGW_GCC, "--version"], 60).stdout.splitlines()[0].strip()


def build_dxcore(root: Path) -> Path:
    """dxcore.dll built from tools/dxcore, keyed by its sources, flags and compiler."""
    sources = [path.read_bytes() for path in DXCORE_SOURCES]
    key = _sha(*sources, compiler_version(), *MINGW_FLAGS, *MINGW_LIBS)
    dll = root / f"dxcore-{key}" / "dxcore.dll"
    if dll.exists():
        return dll
    for old in root.glob("dxcore-*"):
        shutil.rmtree(old, ignore_errors=True)
    dll.parent.mkdir(parents=True)
    partial = dll.with_name("dxcore.dll.partial")
    _log(f"building dxcore.dll with {MINGW_GCC} ...")
    command = [MINGW_GCC, *MINGW_FLAGS, "-o", str(partial), *map(str, DXCORE_SOURCES)]
    _run([*command, *MINGW_LIBS], BUILD_TIMEOUT)
    partial.rename(dll)
    return dll


def build_caps(root: Path) -> Path:
    """d3d12caps.exe (tools/dxcore/d3d12caps.c), a diagnostic, keyed like dxcore.dll."""
    key = _sha(CAPS_SOURCE.read_bytes(), compiler_version(), *MINGW_FLAGS)
    exe = root / f"caps-{key}" / "d3d12caps.exe"
    if not exe.exists():
        for old in root.glob("caps-*"):
            shutil.rmtree(old, ignore_errors=True)
        exe.parent.mkdir(parents=True)
        flags = [flag for flag in MINGW_FLAGS if flag != "-shared"]
        _run([MINGW_GCC, *flags, "-o", str(exe), str(CAPS_SOURCE)], BUILD_TIMEOUT)
    return exe


# ------------------------------------------------------------------------ d3d12.dll (vkd3d)


def _apt_options(apt_dir: Path) -> list[str]:
    """apt settings for a private deb-src index in the cache: the machine's apt sources and
    state stay as they are, and no root is needed to read sources."""
    options = [
        "-o", f"Dir::Etc::SourceList={apt_dir / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={apt_dir / 'lists'}",
        "-o", f"Dir::Cache={apt_dir / 'cache'}",
    ]  # fmt: skip
    if os.geteuid() == 0:  # apt's _apt user cannot write into root's cache: no sandbox
        options += ["-o", "APT::Sandbox::User=root"]
    return options


def wine_source_version(root: Path) -> str:
    """The version of Debian's wine 10 source package, from a deb-src index of Debian 13 kept
    in the cache (refreshed weekly)."""
    if shutil.which("apt-get") is None:
        raise WineSetupError("building d3d12.dll needs apt-get to fetch Debian's wine source")
    apt_dir = root / "apt"
    (apt_dir / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    uri, keyring = system_packages.debian_mirror()
    signed = f"[signed-by={keyring}] " if keyring else ""
    line = f"deb-src {signed}{uri} {WINE_SOURCE_SUITE} main\n"
    sources = apt_dir / "sources.list"
    index = [p for p in (apt_dir / "lists").glob("*_Sources*") if p.is_file()]
    stale = not index or time.time() - min(p.stat().st_mtime for p in index) > SOURCE_LISTS_MAX_AGE
    if stale or not sources.exists() or sources.read_text() != line:
        sources.write_text(line)
        _log(f"reading Debian's source index ({uri} {WINE_SOURCE_SUITE}, deb-src) ...")
        _run(["apt-get", *_apt_options(apt_dir), "update", "-qq"], apt_install.TIMEOUT)
    shown = _run(["apt-cache", *_apt_options(apt_dir), "showsrc", "wine"], 120).stdout
    versions = re.findall(r"^Version: (\S+)", shown, re.M)
    wanted = [v for v in versions if v.startswith(WINE_SOURCE_PREFIX)]
    if not wanted:
        raise WineSetupError(
            f"Debian's {WINE_SOURCE_SUITE} has no wine {WINE_SOURCE_PREFIX} source package "
            f"(found {versions or 'none'}): the d3d12.dll recipe builds its libs/vkd3d"
        )
    return wanted[0]


def fetch_vkd3d_source(root: Path, version: str) -> Path:
    """libs/vkd3d, the IDL files and the two headers vkd3d takes from Wine, out of the
    upstream tarball of Debian's wine source package (apt-get source), cached by version."""
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", version)
    tree = root / f"wine-source-{safe}"
    if (tree / "complete").exists():
        return tree
    for old in root.glob("wine-source-*"):
        shutil.rmtree(old, ignore_errors=True)
    download = root / "wine-download"
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    _log(f"fetching Debian's wine {version} source with apt-get source (about 30 MB, once) ...")
    fetch = ["apt-get", *_apt_options(root / "apt"), "source", "--download-only"]
    _run([*fetch, f"wine={version}"], apt_install.TIMEOUT, cwd=download)
    tarballs = sorted(download.glob("wine_*.orig.tar.*"))
    if not tarballs:
        raise WineSetupError(f"apt-get source wine={version} left no .orig tarball in {download}")
    tree.mkdir()
    members = [
        "*/libs/vkd3d/*",
        "*/include/*.idl",
        "*/include/wine/list.h",
        "*/include/wine/rbtree.h",
    ]
    _run(["tar", "-xf", str(tarballs[0]), "-C", str(tree), "--strip-components=1", "--wildcards",
          *members], BUILD_TIMEOUT)  # fmt: skip
    shutil.rmtree(download, ignore_errors=True)
    (tree / "complete").write_text(version)
    return tree


def _package_version(package: str) -> str:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True
    )
    return done.stdout.strip()


def _vkd3d_sources(vkd3d: Path) -> list[str]:
    """The source files of libs/vkd3d, as its own Makefile.in lists them."""
    text = (vkd3d / "Makefile.in").read_text()
    listed = text.split("SOURCES", 1)[1] if "SOURCES" in text else ""
    return re.findall(r"(libs/\S+\.[cly])\b", listed)


def build_d3d12(root: Path) -> tuple[Path, str]:
    """d3d12.dll: vkd3d (Wine 10's libs/vkd3d, with its DXIL compiler) behind the D3D12 entry
    points of tools/vkd3d, built with MinGW-w64. Keyed by the source's version and the recipe
    (its files, flags, compiler, widl and Vulkan headers). Returns the DLL and the version."""
    version = wine_source_version(root)
    recipe = [p.read_bytes() for p in (*D3D12_SOURCES, *VKD3D_PATCHES)]
    tools = [compiler_version(), _package_version("mingw-w64-tools")]
    tools += [
        _package_version("libvulkan-dev"),
        _package_version("bison"),
        _package_version("flex"),
    ]
    key = _sha(version, *recipe, *tools, *VKD3D_CFLAGS, *D3D12_LINK_FLAGS, *VKD3D_IDL)
    dll = root / f"d3d12-{key}" / "d3d12.dll"
    if dll.exists():
        return dll, version
    source = fetch_vkd3d_source(root, version)
    for old in root.glob("d3d12-*"):
        shutil.rmtree(old, ignore_errors=True)
    work = dll.parent / "build"
    shutil.copytree(source / "libs" / "vkd3d", work / "libs" / "vkd3d")
    started = time.monotonic()
    _log(f"building d3d12.dll (vkd3d with DXIL, from wine {version}) ...")
    for patch in VKD3D_PATCHES:
        _run(["patch", "-p1", "-s", "-i", str(patch)], 120, cwd=work)
    vkd3d = work / "libs" / "vkd3d"
    include = work / "include"
    (include / "wine").mkdir(parents=True)
    for name in ("list.h", "rbtree.h"):
        shutil.copyfile(source / "include" / "wine" / name, include / "wine" / name)
    # vkd3d includes <wine/vulkan.h>; Debian's Vulkan headers declare the same API (copied:
    # the cross compiler must not see the rest of /usr/include).
    for folder in ("vulkan", "vk_video"):
        if (VULKAN_HEADER.parent.parent / folder).is_dir():
            shutil.copytree(VULKAN_HEADER.parent.parent / folder, include / folder)
    (include / "wine" / "vulkan.h").write_text(
        "#define VK_NO_PROTOTYPES\n#include <vulkan/vulkan.h>\n"
    )
    for name in VKD3D_IDL:
        header = include / f"{name}.h"
        idl = source / "include" / f"{name}.idl"
        _run([WIDL, "-h", "-I", str(source / "include"), "-o", str(header), str(idl)], 120)
        # widl leaves these unions nameless; vkd3d reads them as `.u` (NONAMELESSUNION).
        text = header.read_text()
        header.write_text(re.sub(r"\b__C89_NAMELESSUNIONNAME(\d*)\b", r"DUMMYUNIONNAME\1", text))
    units = []
    for relative in _vkd3d_sources(vkd3d):
        path = vkd3d / relative
        if path.suffix == ".y":
            out = include / f"{path.stem}.tab.c"
            _run(["bison", "-o", str(out), f"--defines={out.with_suffix('.h')}", str(path)], 120)
        elif path.suffix == ".l":
            out = include / f"{path.stem}.yy.c"
            _run(["flex", "-o", str(out), str(path)], 120)
        else:
            out = path
        units.append(out)
    units.append(D3D12_SOURCES[0])
    private = ["include/private", "include", "libs/vkd3d", "libs/vkd3d-shader", "."]
    includes = [f"-I{include}", *(f"-I{vkd3d / sub}" for sub in private)]
    objects = work / "obj"
    objects.mkdir()

    def compile_one(index_and_unit: tuple[int, Path]) -> Path:
        index, unit = index_and_unit
        obj = objects / f"{index:02d}-{unit.stem}.o"
        _run([MINGW_GCC, *VKD3D_CFLAGS, *includes, "-c", str(unit), "-o", str(obj)], BUILD_TIMEOUT)
        return obj

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = list(pool.map(compile_one, enumerate(units)))
    partial = dll.with_name("d3d12.dll.partial")
    _run([MINGW_GCC, *D3D12_LINK_FLAGS, "-o", str(partial), *map(str, built),
          str(D3D12_SOURCES[1])], BUILD_TIMEOUT)  # fmt: skip
    partial.rename(dll)
    shutil.rmtree(work, ignore_errors=True)
    _log(f"built d3d12.dll in {time.monotonic() - started:.0f} s")
    return dll, version


def install_dll(prefix: Path, dll: Path) -> None:
    """Put a native DLL in the prefix's system32 (64-bit), unless the same bytes are there."""
    target = prefix / "drive_c" / "windows" / "system32" / dll.name
    if not target.parent.is_dir():
        raise WineSetupError(f"the Wine prefix {prefix} has no drive_c/windows/system32")
    if target.exists() and target.read_bytes() == dll.read_bytes():
        return
    partial = target.with_name(dll.name + ".partial")
    shutil.copyfile(dll, partial)
    partial.replace(target)


# ------------------------------------------------------------------------ the DirectML runner


def directml_environment(icd: Path, dll_overrides: str = "") -> dict[str, str]:
    """What a DirectML run adds to wine_python's environment (whose DLL overrides it extends)."""
    return {
        # Only lavapipe: Wine's D3D12 must not pick (or fail on) another Vulkan driver.
        "VK_ICD_FILENAMES": str(icd),
        "VK_DRIVER_FILES": str(icd),
        # The prefix's dxcore.dll even when a later Wine ships a built-in stub of its own, and
        # the prefix's d3d12.dll (vkd3d with DXIL) instead of Wine's (vkd3d 1.6, no DXIL).
        "WINEDLLOVERRIDES": ";".join(filter(None, [dll_overrides, "dxcore=n", "d3d12=n"])),
        # vkd3d's own fixme lines ("Ignoring flags 0x1") would otherwise fill stderr.
        "VKD3D_DEBUG": "none",
        "VKD3D_SHADER_DEBUG": "none",
    }


@dataclass
class DirectMLWine:
    """The Windows CPython of wine_python, in a prefix where torch-directml finds an adapter."""

    python: wine_python.WindowsPython  # the same interpreter, with the DirectML prefix
    env: dict[str, str]
    dxcore: Path
    d3d12: Path
    vkd3d_source: str  # the version of Debian's wine source whose vkd3d d3d12.dll is

    @property
    def prefix(self) -> Path:
        return self.python.prefix

    def environment(self, extra: dict | None = None) -> dict[str, str]:
        """The full environment of a run (for starting Wine yourself)."""
        return self.python.environment(extra={**self.env, **(extra or {})})

    def run(self, args: list[str], *, env: dict | None = None, **options) -> wine_python.WineResult:
        """``python.exe ARGS`` as ``WindowsPython.run`` runs it, with DirectML's environment;
        ``env`` adds to (and overrides) that environment."""
        return self.python.run(args, env={**self.env, **(env or {})}, **options)


def setup(python: wine_python.WindowsPython | None = None) -> DirectMLWine:
    """Everything a DirectML run needs, installed or taken from the cache. Raises
    WineSetupError with a sentence saying what is missing."""
    if not sys.platform.startswith("linux"):
        raise WineSetupError("the Wine DirectML tier runs on Linux hosts")
    if python is None:
        python = wine_python.setup()
    ensure_system_packages()
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    dll = build_dxcore(root)
    # A prefix of its own, made as wine_python makes the tier's (same Wine, same settings).
    prefix = wine_python.ensure_prefix(root, python.locales)
    install_dll(prefix, dll)
    d3d12, version = build_d3d12(root)
    install_dll(prefix, d3d12)
    icd = lavapipe_icd()
    if icd is None:  # checked by ensure_system_packages; a race with apt is all that is left
        raise WineSetupError("lavapipe's Vulkan manifest (lvp_icd*.json) is missing")
    runner = dataclasses.replace(python, prefix=prefix)
    overrides = python.environment().get("WINEDLLOVERRIDES", "")
    env = directml_environment(icd, overrides)
    return DirectMLWine(runner, env, dxcore=dll, d3d12=d3d12, vkd3d_source=version)


@dataclass
class ProbeResult:
    adapter: str
    result: list
    cross_entropy: float  # equal to the CPU's (CROSS_ENTROPY_TOLERANCE)
    import_s: float
    compute_s: float
    seconds: float  # the whole Wine call


def probe(dml: DirectMLWine, timeout: float = PROBE_TIMEOUT) -> ProbeResult:
    """Run ``torch.ones(2, 2, device=dml) * 2`` and a cross-entropy under Wine and trust the
    device only when the first is exactly [[2.0, 2.0], [2.0, 2.0]] (without a working D3D12
    the read-back returns stale memory, which looks like a result) and the second, a kernel
    DirectML ships only as DXIL, is the CPU's. Raises DirectMLUnavailable."""
    try:
        result = dml.run(["-c", PROBE_SCRIPT], timeout=timeout)
    except WineTimeout as error:
        raise DirectMLUnavailable(
            f"the DirectML probe under Wine did not finish within {timeout:.0f} s: {error}"
        ) from None
    lines = [line for line in result.stdout.splitlines() if line.startswith(PROBE_MARK)]
    if result.returncode != 0 or not lines:
        raise DirectMLUnavailable(
            f"the DirectML probe under Wine exited {result.returncode} without a result; "
            f"its output ends: {result.output.strip()[-1500:]}"
        )
    report = json.loads(lines[-1][len(PROBE_MARK) :])
    if not report.get("count"):
        raise DirectMLUnavailable(
            "torch_directml under Wine found no adapter (device_count() is 0): D3D12 refused "
            "the DXCore adapter; run with DXCORE_WINE_DEBUG=1 and WINEDEBUG=+d3d12 to see why"
        )
    if report.get("result") != EXPECTED:
        raise DirectMLUnavailable(
            f"DirectML under Wine computed torch.ones(2, 2) * 2 as {report.get('result')!r}, "
            f"not {EXPECTED!r}: the device is not computing (stale memory is read back), so "
            "no DirectML result from it can be trusted"
        )
    if "cross_entropy_error" in report:
        raise DirectMLUnavailable(
            f"DirectML under Wine cannot run cross-entropy, a kernel it ships only as DXIL "
            f"(shader model 6): {report['cross_entropy_error']}; the d3d12.dll in the prefix "
            f"({dml.d3d12}) is not compiling DXIL"
        )
    expected = report["cross_entropy_cpu"]
    if abs(report["cross_entropy"] - expected) > CROSS_ENTROPY_TOLERANCE:
        raise DirectMLUnavailable(
            f"DirectML under Wine computed a known cross-entropy as {report['cross_entropy']!r}, "
            f"the CPU as {expected!r}: its DXIL kernels cannot be trusted"
        )
    return ProbeResult(
        adapter=report.get("name", ""),
        result=report["result"],
        cross_entropy=report["cross_entropy"],
        import_s=report.get("import_s", 0.0),
        compute_s=report.get("compute_s", 0.0),
        seconds=result.seconds,
    )


CAPS_SCRIPT = """
import os, subprocess, sys, torch_directml
dll = os.path.join(os.path.dirname(torch_directml.__file__), "DirectML.dll")
done = subprocess.run([sys.argv[1], dll], capture_output=True, text=True, timeout=300)
print(done.stdout + done.stderr, end="")
sys.exit(done.returncode)
"""


def caps(dml: DirectMLWine, timeout: float = PROBE_TIMEOUT) -> str:
    """What D3D12 (Wine's vkd3d on lavapipe) and DirectML report: feature level, shader model,
    Int64ShaderOps..., DirectML's feature level and tensor types, one fact a line."""
    exe = build_caps(cache_root())
    result = dml.run(["-c", CAPS_SCRIPT, wine_python.winpath(exe)], timeout=timeout)
    if result.returncode != 0:
        raise DirectMLUnavailable(f"d3d12caps exited {result.returncode}: {result.output[-1500:]}")
    return result.stdout


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["setup", "probe", "run", "info", "caps"])
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    started = time.monotonic()
    try:
        dml = setup()
    except WineSetupError as error:
        print(f"DirectML tier setup failed: {error}", file=sys.stderr)
        return 1
    if options.action == "info":
        print(f"python.exe  {dml.python.exe}")
        print(f"WINEPREFIX  {dml.prefix}")
        print(f"dxcore.dll  {dml.dxcore}")
        print(f"d3d12.dll   {dml.d3d12} (vkd3d of Debian's wine {dml.vkd3d_source})")
        print(f"Mesa        {mesa_version()}")
        for key, value in dml.env.items():
            print(f"{key}={value}")
        return 0
    if options.action == "run":
        result = dml.run(options.args, cwd=Path.cwd(), timeout=wine_python.DEFAULT_TIMEOUT)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode
    if options.action == "caps":
        try:
            sys.stdout.write(caps(dml))
        except (DirectMLUnavailable, WineTimeout) as error:
            print(f"d3d12caps failed: {error}", file=sys.stderr)
            return 2
        return 0
    if options.action == "probe":
        try:
            found = probe(dml)
        except DirectMLUnavailable as error:
            print(f"DirectML probe failed: {error}", file=sys.stderr)
            return 2
        print(
            f"DirectML computes under Wine on {found.adapter!r}: ones*2 = {found.result}, "
            f"cross-entropy {found.cross_entropy!r} as on the CPU "
            f"(import {found.import_s} s, first kernels {found.compute_s} s, call "
            f"{found.seconds:.1f} s; {time.monotonic() - started:.1f} s with setup)"
        )
        return 0
    print(f"ready: {dml.python.exe} in {dml.prefix} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
