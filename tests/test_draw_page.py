"""The draw-a-digit page end to end, in a real browser: a baked project trains briefly on its
synthetic digits, `python -m <package>.draw` serves the page, and headless Chromium (Debian's
chromium and chromium-driver, installed by tools/chromium.py; driven by selenium) draws digits
with mouse strokes. The page must read them, show the ten bars and the 28x28 image, switch to
the unprepared answer and clear. A screenshot is kept in the test cache.

Like the Windows tier, the test installs what it needs whenever it runs (Chromium and its
driver with apt-get, once per machine) and fails when it cannot: a skip would hide it.
`python dev.py quick` leaves it out (marker `browser`).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import TEMPLATE_DIR

sys.path.insert(0, str(TEMPLATE_DIR / "tools"))
import chromium  # noqa: E402  (tools/ is not a package)

# Digits as a hand draws them: polylines in a unit box (x right, y down), the shapes the
# generated project's synthetic digits are made of.
STROKES = {
    7: [[(0.0, 0.0), (1.0, 0.0), (0.35, 1.0)]],
    4: [[(0.72, 0.0), (0.02, 0.66), (1.0, 0.66)], [(0.74, 0.28), (0.74, 1.0)]],
    0: [
        [
            (0.5 + 0.42 * math.cos(k * math.pi / 8), 0.5 + 0.5 * math.sin(k * math.pi / 8))
            for k in range(17)
        ]
    ],
}
STEP_PX = 12  # the pointer moves in steps like this, as a hand does


def cache_root() -> Path:
    default = Path.home() / ".cache" / "lenet-directml-template"
    return Path(os.environ.get("TEMPLATE_TEST_CACHE", default))


def chromium_or_fail(ensure=chromium.ensure) -> tuple[Path, Path]:
    """(chromium, chromedriver), installed with apt-get when missing; a failure fails the test."""
    try:
        return ensure()
    except chromium.ChromiumSetupError as error:
        pytest.fail(f"Chromium is needed for the browser test: {error}")


def test_a_missing_chromium_fails_the_browser_test():
    def cannot_install():
        raise chromium.ChromiumSetupError("no apt-get here")

    with pytest.raises(pytest.fail.Exception, match="needed for the browser test"):
        chromium_or_fail(cannot_install)


@pytest.fixture(scope="module")
def browser_programs():
    return chromium_or_fail()


@pytest.fixture(scope="module")
def trained(bake_once):
    baked = bake_once(accelerator="cpu", project_name="Draw check")
    result = baked.run(
        f"{baked.package}.train", "--dataset", "synthetic", "--epochs", "1", "--device", "cpu"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert list((baked.path / "runs").rglob("best.pt")), "training wrote no best.pt"
    return baked


def ctrl_c_as_from_a_terminal() -> None:
    """Run in the child before it starts: Ctrl+C's default action. A test runner started as a
    background job of a script ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def page(trained):
    """The running command: (url, its output so far, seconds from the command to the page)."""
    env = {**os.environ, "PYTHONPATH": str(trained.path / "src"), "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", f"{trained.package}.draw", "--no-browser", "--device", "cpu"],
        cwd=trained.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=None if sys.platform == "win32" else ctrl_c_as_from_a_terminal,
    )
    timer = threading.Timer(300, child.kill)
    timer.start()
    lines = []
    for line in child.stdout:
        lines.append(line)
        if line.startswith("The page:"):
            break
    assert lines and lines[-1].startswith("The page:"), "".join(lines)
    url = lines[-1].split()[2]
    with urllib.request.urlopen(url, timeout=30) as reply:
        assert reply.status == 200
    to_page = time.monotonic() - started
    print(f"\nfrom `python -m {trained.package}.draw` to the page served: {to_page:.1f} s")
    yield url, "".join(lines), child
    timer.cancel()
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@pytest.fixture(scope="module")
def driver(browser_programs):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, chromedriver = browser_programs
    options = webdriver.ChromeOptions()
    options.binary_location = str(binary)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--disable-gpu",
    ):
        options.add_argument(argument)
    # Both paths given: selenium starts exactly these and downloads nothing.
    browser = webdriver.Chrome(options=options, service=Service(executable_path=str(chromedriver)))
    yield browser
    browser.quit()


def wait_until(driver, condition, what: str, timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(
        lambda d: condition(d), message=what
    )


def answers(driver) -> int:
    return int(driver.execute_script("return document.body.dataset.answers || '0'"))


def settled(driver) -> bool:
    return driver.execute_script("return document.body.dataset.busy") == "no"


def draw_digit(driver, digit: int) -> None:
    """The digit's strokes with the mouse: large (half the canvas tall) and off-centre."""
    from selenium.webdriver.common.action_chains import ActionChains

    pad = driver.find_element("id", "pad")
    size = pad.size["width"]
    left, top, height, width = 0.08 * size, 0.4 * size, 0.5 * size, 0.36 * size

    def offset(point):  # selenium's offsets count from the element's centre
        return round(left + point[0] * width - size / 2), round(top + point[1] * height - size / 2)

    actions = ActionChains(driver, duration=15)
    for line in STROKES[digit]:
        actions.move_to_element_with_offset(pad, *offset(line[0])).click_and_hold()
        for a, b in itertools.pairwise(line):
            length = max(abs(b[0] - a[0]) * width, abs(b[1] - a[1]) * height)
            steps = max(1, int(length // STEP_PX))
            for i in range(1, steps + 1):
                t = i / steps
                point = (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)
                actions.move_to_element_with_offset(pad, *offset(point))
        actions.release()
    actions.perform()


def shown_bars(driver) -> list[tuple[float, float, bool]]:
    """Each bar as the page shows it: (probability, width in %, highlighted)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#bars .bar')].map(b => "
        "[parseFloat(b.dataset.probability), parseFloat(b.firstChild.style.width) || 0, "
        "b.classList.contains('top')]);"
    )


def preview_ink(driver) -> tuple[int, int]:
    """(pixels with ink, the larger side of their bounding box) in the 28x28 image shown."""
    return driver.execute_script(
        "const d = document.getElementById('input28').getContext('2d')"
        ".getImageData(0, 0, 28, 28).data; let n = 0, x0 = 28, x1 = -1, y0 = 28, y1 = -1;"
        "for (let i = 0; i < 784; i++) if (d[4 * i] > 40) {"
        " n++; const x = i % 28, y = (i / 28) | 0;"
        " x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }"
        "return [n, Math.max(x1 - x0 + 1, y1 - y0 + 1)];"
    )


@pytest.mark.slow
@pytest.mark.browser
def test_drawn_digits_are_read_as_they_are_drawn_in_chromium(page, driver):
    url, output, child = page
    assert "Device  : cpu" in output
    driver.get(url)
    wait_until(
        driver,
        lambda d: d.find_element("id", "device").text.startswith("Answered by"),
        "the page shows which device answers",
    )
    assert "cpu" in driver.find_element("id", "device").text
    round_trips = []

    for digit in STROKES:
        before = answers(driver)
        draw_digit(driver, digit)
        wait_until(driver, settled, f"the answer to the drawn {digit}")

        assert answers(driver) - before >= 3  # answers came while the digit was being drawn
        assert driver.find_element("id", "answer").text == str(digit)
        bars = shown_bars(driver)
        probabilities = [p for p, _, _ in bars]
        assert len(bars) == 10 and sum(probabilities) == pytest.approx(1.0, abs=0.01)
        assert max(range(10), key=probabilities.__getitem__) == digit
        assert [top for _, _, top in bars].index(True) == digit
        for p, width, _ in bars:
            assert width == pytest.approx(100 * p, abs=0.1)
        ink, side = preview_ink(driver)
        assert ink > 30 and 18 <= side <= 21  # the model's 28x28 image: the digit in 20x20
        round_trips.append(
            int(re.search(r"answered in (\d+) ms", driver.find_element("id", "latency").text)[1])
        )

        if digit == 0:
            shot = cache_root() / "draw-page" / "draw-a-digit.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(shot))
            print(f"\nscreenshot of the page: {shot}")
            assert shot.stat().st_size > 10_000

        driver.find_element("id", "prepare").click()  # the answer without MNIST's preparation
        assert driver.execute_script("return document.body.dataset.mode") == "as_drawn"
        assert "Without" in driver.find_element("id", "caption").text
        unprepared = [p for p, _, _ in shown_bars(driver)]
        assert unprepared != probabilities and sum(unprepared) == pytest.approx(1.0, abs=0.01)
        _, side = preview_ink(driver)
        assert side <= 17  # the whole canvas shrunk: the digit stays small
        driver.find_element("id", "prepare").click()

        driver.find_element("id", "clear").click()
        wait_until(
            driver, lambda d: d.find_element("id", "answer").text == "\u2013", "a cleared page"
        )
        assert all(p == 0 for p, _, _ in shown_bars(driver))

    print(f"answer round trips in Chromium (ms): {round_trips}")
    child.send_signal(signal.SIGINT)
    rest = child.stdout.read()
    assert child.wait(timeout=30) == 0 and "Stopped." in rest and "Traceback" not in rest
