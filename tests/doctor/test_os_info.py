"""Which OS this is (Windows build, WSL 1/2 and its GPU files) and the time-bounded helpers."""

from __future__ import annotations

import sys
import time

import pytest

from gpu_doctor import (
    os_info,
)
from gpu_doctor.bounded import (
    call_with_timeout,
    run_command,
)


def no_windows():
    raise AssertionError("the Windows build was asked although nothing needed explaining")


def wsl_files(root, dxg=True, d3d12=True):
    if dxg:
        (root / "dev").mkdir()
        (root / "dev" / "dxg").write_text("")
    if d3d12:
        (root / "usr" / "lib" / "wsl" / "lib").mkdir(parents=True)
        (root / "usr" / "lib" / "wsl" / "lib" / "libd3d12.so").write_text("")


def test_windows_build_and_name_come_from_the_version():
    info = os_info.detect("Windows", "10", "10.0.22631", "AMD64")
    assert info.windows_build == 22631 and info.wsl == 0
    assert info.describe() == "Windows 11 build 22631 (AMD64)"
    old = os_info.detect("Windows", "10", "10.0.19045", "AMD64")
    assert old.describe() == "Windows 10 build 19045 (AMD64)"


def test_wsl2_with_its_gpu_files(tmp_path):
    wsl_files(tmp_path)
    info = os_info.detect(
        "Linux", "5.15.153.1-microsoft-standard-WSL2", "#1 SMP", "x86_64",
        root=tmp_path, environ={}, ask_windows_build=no_windows,
    )  # fmt: skip
    assert (info.wsl, info.dxg, info.d3d12) == (2, True, True)
    assert info.describe().startswith("WSL2 (Linux 5.15.153.1")


def test_wsl2_without_dxg_asks_windows_for_its_build(tmp_path):
    info = os_info.detect(
        "Linux", "5.10.16.3-microsoft-standard-WSL2", "#1 SMP", "x86_64",
        root=tmp_path, environ={"WSL_DISTRO_NAME": "Ubuntu"}, ask_windows_build=lambda: 19045,
    )  # fmt: skip
    assert (info.wsl, info.dxg, info.windows_build) == (2, False, 19045)


def test_wsl1_reads_the_build_from_its_kernel_string(tmp_path):
    info = os_info.detect(
        "Linux", "4.4.0-19041-Microsoft", "#1237-Microsoft", "x86_64",
        root=tmp_path, environ={}, ask_windows_build=no_windows,
    )  # fmt: skip
    assert (info.wsl, info.windows_build) == (1, 19041)


def test_plain_linux_is_not_wsl_even_with_stray_files(tmp_path):
    wsl_files(tmp_path, dxg=False)
    info = os_info.detect("Linux", "6.8.0-45-generic", "#45", "x86_64", root=tmp_path, environ={})
    assert (info.wsl, info.dxg, info.d3d12) == (0, False, False)


def test_build_from_cmd_ver_output():
    text = "\r\nMicrosoft Windows [Version 10.0.22631.4037]\r\n"
    assert os_info.build_from_version(text) == 22631
    assert os_info.build_from_version("garbage") is None


def test_this_machine_is_detected_without_errors():
    info = os_info.detect()
    assert info.system and info.describe()


# ---------------------------------------------------------------------------------- bounded


def test_a_command_that_answers_is_captured(child_limit):
    result = run_command([sys.executable, "-c", "print('hello')"], timeout=child_limit)
    assert result.ok and result.stdout.strip() == "hello"


def test_a_command_that_hangs_is_stopped_at_its_timeout():
    started = time.perf_counter()
    result = run_command([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert time.perf_counter() - started < 10
    assert not result.ok and result.problem.endswith("did not answer within 0.5 s")


def test_a_missing_command_is_a_problem_not_an_exception():
    result = run_command(["surely-not-installed-gpu-tool"], timeout=5)
    assert result.problem == "surely-not-installed-gpu-tool was not found"


@pytest.mark.parametrize(
    ("function", "value", "problem"),
    [
        (lambda: 42, 42, ""),
        (lambda: int("x"), None, "ValueError: invalid literal"),
        (lambda: time.sleep(5), None, "did not finish within 0.2 s"),
    ],
)
def test_call_with_timeout(function, value, problem):
    started = time.perf_counter()
    got, why = call_with_timeout(function, 0.2)
    assert time.perf_counter() - started < 3
    assert got == value and why.startswith(problem)


def test_strings_from_the_system_lose_their_nuls():
    info = os_info.detect("Windows", "10\x00", "10.0.22631\x00", "AMD64\x00")
    assert info.describe() == "Windows 11 build 22631 (AMD64)"
    assert "\x00" not in str(info.to_dict())
