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
- A Wine prefix of its own with that dxcore.dll in system32, so the plain Windows tier keeps
  its DXCore-less prefix (and its real "DLL load failed" import error) untouched.

In a test:

    py = wine_python.setup()
    dml = wine_directml.setup(py)       # a DirectMLWine; dml.run(...) like py.run(...)
    wine_directml.probe(dml)            # raises DirectMLUnavailable unless ones*2 == 2

A CPU emulating a GPU: this shows what DirectML's kernels compute, never how fast.

Known walls (Wine 8.0, vkd3d 1.6, Mesa 25.0.7; `caps` prints what D3D12 reports): DirectML
hands some kernels to D3D12 as DXIL (shader model 6) only, which vkd3d 1.6 cannot compile
("Skipping DXIL shader model 6+ code chunk"; CreateComputePipelineState returns E_INVALIDARG).
torch then raises `RuntimeError: Invalid parameter.` for a single operator, or
`device1->CompileGraph(...)` for a fused graph (cross_entropy, nll_loss, mse_loss). Seen:
add/mul/div/maximum of two float tensors whose element count is a multiple of 4, int64 and
float64 arithmetic, casts, bool reductions, log_softmax/softmax backward. Such a C++ error can
also end in an access violation while Wine unwinds it: always give a run a timeout.
"""

from __future__ import annotations

import argparse
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
import wine_python  # noqa: E402
from wine_python import WineSetupError, WineTimeout  # noqa: E402,F401  (re-exported)

DXCORE_SOURCES = (HERE / "dxcore" / "dxcore.c", HERE / "dxcore" / "dxcore.def")
CAPS_SOURCE = HERE / "dxcore" / "d3d12caps.c"
MINGW_GCC = "x86_64-w64-mingw32-gcc"
MINGW_PACKAGE = "gcc-mingw-w64-x86-64"
# -s: no symbols; --no-insert-timestamp: the same source and compiler give the same bytes.
MINGW_FLAGS = ["-O2", "-Wall", "-shared", "-s", "-static-libgcc", "-Wl,--no-insert-timestamp"]
MINGW_LIBS = ["-ldxgi", "-luuid"]

MESA_PACKAGE = "mesa-vulkan-drivers"
MESA_MIN_MAJOR = 25
BACKPORTS_SUITE = "bookworm-backports"  # Debian 12's suite that holds Mesa 25
BACKPORTS_SOURCES = Path("/etc/apt/sources.list.d/bookworm-backports.sources")
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
VULKAN_ICD_DIRS = (Path("/usr/share/vulkan/icd.d"), Path("/etc/vulkan/icd.d"))

APT_TIMEOUT = 1200
BUILD_TIMEOUT = 300
PROBE_TIMEOUT = 600  # Wine start-up, a cold `import torch` (25-45 s), DirectML's first shaders
EXPECTED = [[2.0, 2.0], [2.0, 2.0]]
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
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, **kwargs
        )
    except subprocess.TimeoutExpired as error:
        raise WineSetupError(
            f"{' '.join(command[:4])} did not finish within {timeout:.0f} s"
        ) from error
    except OSError as error:
        raise WineSetupError(f"could not start {command[0]}: {error}") from error
    if completed.returncode != 0:
        tail = (completed.stdout[-1500:] + completed.stderr[-1500:]).strip()
        raise WineSetupError(f"{' '.join(command[:5])} ... exited {completed.returncode}: {tail}")
    return completed


def cache_root() -> Path:
    return wine_python.cache_root() / "directml"


# ------------------------------------------------------------------------ system packages


def mesa_version() -> str | None:
    """The installed mesa-vulkan-drivers version (Debian's), or None."""
    if shutil.which("dpkg-query") is None:
        return None
    completed = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Status} ${Version}", MESA_PACKAGE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.match(r"install ok installed (\S+)", completed.stdout.strip())
    return match.group(1) if completed.returncode == 0 and match else None


def _major(version: str | None) -> int:
    match = re.match(r"(?:\d+:)?(\d+)\.", version or "")
    return int(match.group(1)) if match else 0


def lavapipe_icd() -> Path | None:
    """The Vulkan loader's manifest of lavapipe (Mesa's CPU Vulkan driver), if installed."""
    for directory in VULKAN_ICD_DIRS:
        for manifest in sorted(directory.glob("lvp_icd*.json")):
            return manifest
    return None


def missing_system_packages() -> list[str]:
    missing = []
    if shutil.which(MINGW_GCC) is None:
        missing.append(MINGW_PACKAGE)
    if _major(mesa_version()) < MESA_MIN_MAJOR or lavapipe_icd() is None:
        missing.append(f"{MESA_PACKAGE} {MESA_MIN_MAJOR}")
    return missing


def _privileged_prefix(missing: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") is None:
        raise WineSetupError(
            f"missing {', '.join(missing)}; install as root: apt-get install -y {MINGW_PACKAGE} "
            f"and apt-get install -t {BACKPORTS_SUITE} {MESA_PACKAGE}"
        )
    return ["sudo", "-n"]


def _debian_mirror() -> tuple[str, str | None]:
    """The URI (and keyring) apt already uses for Debian's main archive."""
    texts = [
        p.read_text(errors="replace") for p in Path("/etc/apt/sources.list.d").glob("*.sources")
    ]
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
            if re.search(r"\bbookworm\b", fields.get("Suites", "")) and fields.get("URIs"):
                return fields["URIs"].split()[0], fields.get("Signed-By")
    for legacy in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*.list")]:
        if legacy.exists():
            match = re.search(
                r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+bookworm\s", legacy.read_text(), re.M
            )
            if match:
                return match.group(1), None
    return "http://deb.debian.org/debian", str(DEBIAN_KEYRING) if DEBIAN_KEYRING.exists() else None


def _os_codename() -> str:
    release = Path("/etc/os-release")
    text = release.read_text(errors="replace") if release.exists() else ""
    match = re.search(r"^VERSION_CODENAME=\"?([^\"\n]*)", text, re.M)
    return match.group(1) if match else ""


def _has_backports(env: dict) -> bool:
    policy = _run(["apt-cache", "policy"], 120, env=env).stdout
    return BACKPORTS_SUITE in policy


def ensure_system_packages() -> None:
    """The MinGW-w64 compiler and Mesa 25's lavapipe, installed with apt-get when missing."""
    wine_python.ensure_system_packages()
    missing = missing_system_packages()
    if not missing:
        return
    if not sys.platform.startswith("linux") or shutil.which("apt-get") is None:
        raise WineSetupError(
            f"missing {', '.join(missing)}: the DirectML tier needs Debian's {MINGW_PACKAGE} and "
            f"{MESA_PACKAGE} {MESA_MIN_MAJOR} or later (apt-get), which this machine does not have"
        )
    sudo = _privileged_prefix(missing)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends"]
    if MINGW_PACKAGE in missing:
        _log(f"installing {MINGW_PACKAGE} with apt-get (about 400 MB, once) ...")
        _run([*sudo, "apt-get", "update", "-qq"], APT_TIMEOUT, env=env)
        _run([*sudo, *install, MINGW_PACKAGE], APT_TIMEOUT, env=env)
    if _major(mesa_version()) < MESA_MIN_MAJOR or lavapipe_icd() is None:
        if _os_codename() != "bookworm":
            raise WineSetupError(
                f"{MESA_PACKAGE} {mesa_version() or '(not installed)'} is here, the DirectML "
                f"tier needs {MESA_MIN_MAJOR} or later, and this is not Debian 12 (whose "
                f"{BACKPORTS_SUITE} has it): install Mesa {MESA_MIN_MAJOR}'s lavapipe yourself"
            )
        if not _has_backports(env):
            uri, keyring = _debian_mirror()
            stanza = f"Types: deb\nURIs: {uri}\nSuites: {BACKPORTS_SUITE}\nComponents: main\n"
            stanza += f"Signed-By: {keyring}\n" if keyring else ""
            _log(f"adding {BACKPORTS_SUITE} ({uri}) to apt's sources in {BACKPORTS_SOURCES} ...")
            _run([*sudo, "tee", str(BACKPORTS_SOURCES)], 60, input=stanza)
        _log(f"installing {MESA_PACKAGE} from {BACKPORTS_SUITE} with apt-get (once) ...")
        _run([*sudo, "apt-get", "update", "-qq"], APT_TIMEOUT, env=env)
        _run([*sudo, *install, "-t", BACKPORTS_SUITE, MESA_PACKAGE], APT_TIMEOUT, env=env)
    still = missing_system_packages()
    if still:
        raise WineSetupError(
            f"apt-get ran but {', '.join(still)} is still missing (mesa-vulkan-drivers is "
            f"{mesa_version() or 'not installed'}, lavapipe's manifest "
            f"{lavapipe_icd() or 'not found'})"
        )


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


def install_dxcore(prefix: Path, dll: Path) -> None:
    """Put dxcore.dll in the prefix's system32 (64-bit), unless the same bytes are there."""
    target = prefix / "drive_c" / "windows" / "system32" / "dxcore.dll"
    if not target.parent.is_dir():
        raise WineSetupError(f"the Wine prefix {prefix} has no drive_c/windows/system32")
    if target.exists() and target.read_bytes() == dll.read_bytes():
        return
    shutil.copyfile(dll, target.with_name("dxcore.dll.partial"))
    target.with_name("dxcore.dll.partial").replace(target)


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


# ------------------------------------------------------------------------ the DirectML runner


def directml_environment(icd: Path, dll_overrides: str = "") -> dict[str, str]:
    """What a DirectML run adds to wine_python's environment (whose DLL overrides it extends)."""
    return {
        # Only lavapipe: Wine's D3D12 must not pick (or fail on) another Vulkan driver.
        "VK_ICD_FILENAMES": str(icd),
        "VK_DRIVER_FILES": str(icd),
        # The prefix's dxcore.dll even when a later Wine ships a built-in stub of its own.
        "WINEDLLOVERRIDES": ";".join(filter(None, [dll_overrides, "dxcore=n"])),
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
    install_dxcore(prefix, dll)
    icd = lavapipe_icd()
    if icd is None:  # checked by ensure_system_packages; a race with apt is all that is left
        raise WineSetupError("lavapipe's Vulkan manifest (lvp_icd*.json) is missing")
    runner = dataclasses.replace(python, prefix=prefix)
    overrides = python.environment().get("WINEDLLOVERRIDES", "")
    return DirectMLWine(python=runner, env=directml_environment(icd, overrides), dxcore=dll)


@dataclass
class ProbeResult:
    adapter: str
    result: list
    import_s: float
    compute_s: float
    seconds: float  # the whole Wine call


def probe(dml: DirectMLWine, timeout: float = PROBE_TIMEOUT) -> ProbeResult:
    """Run ``torch.ones(2, 2, device=dml) * 2`` under Wine and trust the device only when
    the result is exactly [[2.0, 2.0], [2.0, 2.0]]: without a working D3D12 the read-back
    returns stale memory, which looks like a result. Raises DirectMLUnavailable."""
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
    return ProbeResult(
        adapter=report.get("name", ""),
        result=report["result"],
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
            f"DirectML computes under Wine on {found.adapter!r}: ones*2 = {found.result} "
            f"(import {found.import_s} s, first kernels {found.compute_s} s, call "
            f"{found.seconds:.1f} s; {time.monotonic() - started:.1f} s with setup)"
        )
        return 0
    print(f"ready: {dml.python.exe} in {dml.prefix} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
