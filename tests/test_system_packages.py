"""The suite's system packages: one table (tools/system_packages.py), one setup step before the
first test, and a fresh machine emulated by undoing exactly what that step installed."""

from __future__ import annotations

import re

import apt_install  # tools/, on the path through conftest
import fresh_machine
import system_packages
from conftest import TEMPLATE_DIR

OURS = " ".join(apt_install.INSTALL)  # the setup step's own command line
HISTORY = f"""\
Start-Date: 2025-06-24  14:42:05
Commandline: apt-get install -qqy gcc python3-pip
Install: gcc:amd64 (4:12.2.0-3), cpp:amd64 (4:12.2.0-3, automatic)
End-Date: 2025-06-24  14:42:17

Start-Date: 2025-06-24  14:45:00
Commandline: apt-get install -y nodejs
Install: nodejs:amd64 (20.20.2-1nodesource1)
End-Date: 2025-06-24  14:45:09

Start-Date: 2026-12-06  16:02:11
Commandline: {OURS} wine wine64 xvfb xauth locales
Install: wine:amd64 (8.0~repack-4), libwine:amd64 (8.0~repack-4, automatic), xvfb:amd64 (2:21.1.7-3)
End-Date: 2026-12-06  16:03:40

Start-Date: 2026-12-06  16:05:00
Commandline: {OURS} -t bookworm-backports mesa-vulkan-drivers
Install: mesa-vulkan-drivers:amd64 (25.0.7-2~bpo12+1), libllvm19:amd64 (1:19.1.7, automatic)
Upgrade: libdrm2:amd64 (2.4.114-1+b1, 2.4.124-2~bpo12+1)
End-Date: 2026-12-06  16:05:30

Start-Date: 2026-12-06  16:07:00
Commandline: apt-get install -y wine vim
Install: vim:amd64 (2:9.0.1378-2+deb12u2)
End-Date: 2026-12-06  16:07:10
"""


def test_a_fresh_machine_loses_what_the_setup_step_installed_and_nothing_the_machine_had():
    """The image's own nodejs (a package of the node group, installed by another command) stays."""
    removed = fresh_machine.installed_by_setup(HISTORY)

    assert removed == ["libllvm19", "libwine", "mesa-vulkan-drivers", "wine", "xvfb"]


def test_no_tool_or_test_installs_a_system_package_but_through_the_one_table():
    """A fixture asks system_packages.ensure(group) for what it needs; nothing else calls apt."""
    callers = []
    for path in [*TEMPLATE_DIR.glob("tools/*.py"), *TEMPLATE_DIR.glob("tests/*.py")]:
        if path.name in ("apt_install.py", "system_packages.py", "test_system_packages.py"):
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"apt_install\.install\(|\"apt-get\", \"install\"", text):
            callers.append(path.name)
    assert callers == []


def test_every_group_names_its_packages_and_who_needs_them():
    for group in system_packages.GROUPS:
        assert group.packages and group.needed_by and group.size, group.name
    assert list(system_packages.BY_NAME) == ["wine", "mingw", "mesa", "chromium", "node"]
