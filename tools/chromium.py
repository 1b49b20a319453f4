"""Debian's Chromium and its WebDriver, for the template's browser test (tests/test_draw_page.py).

    python tools/chromium.py setup     install chromium and chromium-driver if missing
    python tools/chromium.py info      where they are

Installed with apt-get (as root or through `sudo -n`), once per machine. Selenium (from
requirements-dev.txt) then drives exactly these two programs: it is given both paths, so it
never downloads a browser or a driver of its own.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system_packages  # noqa: E402  (tools/ is not a package)

# Debian's names first; then Google Chrome, which hosted CI images (GitHub's) ship with a
# matching chromedriver in $CHROMEWEBDRIVER.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
WINDOWS_CHROME = Path("Google") / "Chrome" / "Application" / "chrome.exe"
DRIVERS = ("chromedriver",)


class ChromiumSetupError(RuntimeError):
    """Chromium or its driver is missing and could not be installed; the message says why."""


def _log(message: str) -> None:
    print(f"[chromium] {message}", file=sys.stderr, flush=True)


def _first(names: tuple[str, ...]) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def _browser() -> str | None:
    found = _first(BROWSERS)
    if found or os.name != "nt":
        return found
    for root in (os.environ.get("PROGRAMFILES"), os.environ.get("PROGRAMFILES(X86)")):
        if root and (Path(root) / WINDOWS_CHROME).is_file():
            return str(Path(root) / WINDOWS_CHROME)
    return None


def _driver() -> str | None:
    found = _first(DRIVERS)
    folder = os.environ.get("CHROMEWEBDRIVER")
    if found or not folder:
        return found
    return shutil.which("chromedriver", path=folder)


def find() -> tuple[Path, Path] | None:
    """(browser, driver) when both are installed, else None."""
    browser, driver = _browser(), _driver()
    return (Path(browser), Path(driver)) if browser and driver else None


def ensure() -> tuple[Path, Path]:
    """(browser, driver), installing Debian's packages first when they are missing."""
    found = find()
    if found:
        return found
    try:
        system_packages.ensure("chromium")
    except system_packages.SystemPackagesError as error:
        raise ChromiumSetupError(str(error)) from error
    found = find()
    if not found:
        raise ChromiumSetupError(
            "apt-get installed the packages but chromium or chromedriver is missing"
        )
    return found


def main(argv: list[str]) -> int:
    if argv[:1] == ["setup"]:
        try:
            browser, driver = ensure()
        except ChromiumSetupError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"browser: {browser}\ndriver : {driver}")
        return 0
    if argv[:1] == ["info"]:
        found = find()
        print(f"browser: {found[0]}\ndriver : {found[1]}" if found else "not installed")
        return 0 if found else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
