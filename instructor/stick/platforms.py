"""The platforms a workshop stick can carry wheels for: pip's tags, and the marker values that
decide which requirements each platform needs (pip download evaluates markers for the machine it
runs on, never for --platform, so the bundle evaluates them itself)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str  # as the manifest, the requirement files and --platforms name it
    label: str  # for people
    tags: tuple[str, ...]  # pip download --platform values, best first
    markers: tuple[tuple[str, str], ...]  # the PEP 508 marker values of that platform

    def environment(self, python: str) -> dict[str, str]:
        """The marker environment of this platform for Python ``python`` ('3.11')."""
        return {
            **dict(self.markers),
            "python_version": python,
            "python_full_version": f"{python}.0",
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "implementation_version": f"{python}.0",
            "platform_release": "",
            "platform_version": "",
            "extra": "",
        }

    def pip_options(self, python: str) -> list[str]:
        abi = "cp" + python.replace(".", "")
        options = ["--only-binary=:all:", "--implementation", "cp", "--python-version", python]
        for tag in self.tags:
            options += ["--platform", tag]
        return options + ["--abi", abi, "--abi", "abi3", "--abi", "none"]


_MANYLINUX = tuple(f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1))

TARGETS = {
    target.name: target
    for target in (
        Target(
            "win_amd64",
            "Windows x64",
            ("win_amd64",),
            (
                ("sys_platform", "win32"),
                ("platform_system", "Windows"),
                ("platform_machine", "AMD64"),
                ("os_name", "nt"),
            ),
        ),
        Target(
            "win_arm64",
            "Windows on Arm (Snapdragon; the cpu stack, Python 3.11 to 3.13)",
            ("win_arm64",),
            (
                ("sys_platform", "win32"),
                ("platform_system", "Windows"),
                ("platform_machine", "ARM64"),
                ("os_name", "nt"),
            ),
        ),
        Target(
            "manylinux_x86_64",
            "Linux x86_64 (glibc 2.28 or newer: Ubuntu 20.04, Debian 10, Fedora 29 and later)",
            (*_MANYLINUX, "manylinux2014_x86_64", "manylinux1_x86_64", "linux_x86_64"),
            (
                ("sys_platform", "linux"),
                ("platform_system", "Linux"),
                ("platform_machine", "x86_64"),
                ("os_name", "posix"),
            ),
        ),
        Target(
            "macosx_arm64",
            "macOS on Apple silicon (macOS 14 or newer)",
            ("macosx_14_0_arm64", "macosx_14_0_universal2"),
            (
                ("sys_platform", "darwin"),
                ("platform_system", "Darwin"),
                ("platform_machine", "arm64"),
                ("os_name", "posix"),
            ),
        ),
    )
}

# What a stack named without platforms is made for: Windows on Arm only when asked for (only the
# cpu stack has wheels there, and few rooms have such laptops)
DEFAULT_TARGETS = ("win_amd64", "manylinux_x86_64", "macosx_arm64")


def stack_targets(stack: dict, wanted: list[str]) -> list[str]:
    """The platforms of ``wanted`` that ``stack`` runs on, from the support table's own words
    ('Windows 10/11, WSL2', 'Linux', 'Windows, Linux, macOS'); a stack that names none of them
    is tried on all."""
    words = stack.get("platforms", "").lower()
    fits = {
        "win_amd64": "windows" in words,
        "win_arm64": "windows" in words,
        "manylinux_x86_64": "linux" in words or "wsl" in words,
        "macosx_arm64": "macos" in words,
    }
    if not any(fits.values()):
        return list(wanted)
    return [name for name in wanted if fits.get(name, True)]
