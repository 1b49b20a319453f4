"""The pins say which release they follow and where each build comes from, in the support table
and in the README alike (the README is documentation of `_stacks`; it must not drift)."""

from __future__ import annotations

import re

from conftest import STACKS, TEMPLATE_DIR

README = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")


def stack_row(accelerator: str) -> str:
    return next(line for line in README.splitlines() if line.startswith(f"| {accelerator} |"))


def test_every_stack_says_when_and_at_which_release_its_pins_were_chosen():
    for stack in STACKS.values():
        assert re.search(r"\b20\d\d-\d\d(-\d\d)?\b", stack["chosen"]), stack["chosen"]
    release = STACKS["cuda"]["chosen"]  # "PyTorch 2.14.1, chosen 2026-12-01 (...)"
    version, date = re.search(r"PyTorch ([\d.]+), chosen (\d{4}-\d\d-\d\d)", release).groups()
    assert f"**PyTorch {version}, on {date}**" in README
    current = ("cuda", "cuda-legacy", "xpu", "rocm", "cpu")
    assert all(STACKS[name]["pins"]["torch"] == version for name in current)


def test_the_readme_rows_name_each_stacks_index_and_build_tag():
    for accelerator, stack in STACKS.items():
        row = stack_row(accelerator)
        index = stack["index_url"]
        if index.startswith("https://download.pytorch.org/whl/"):
            assert f"`whl/{index.rsplit('/', 1)[1]}`" in row, row
        elif index:  # another publisher's index (AMD's): named in full
            assert f"`{index}`" in row, row
        if stack["local_version"]:
            assert f"`{stack['local_version']}" in row, row


def test_rocm_follows_the_release_notes_and_says_what_is_unconfirmed():
    rocm = STACKS["rocm"]
    assert rocm["index_url"].endswith("/whl/rocm7.14") and rocm["local_version"] == "+rocm7.14"
    assert "NOT confirmed" in rocm["source"] and "not confirmed" in stack_row("rocm")
    assert "**Not confirmed:**" in README
    assert {"gfx1030", "gfx1100"} <= set(rocm["gfx_targets"])
    assert not {"gfx1031", "gfx1032", "gfx1103"} & set(rocm["gfx_targets"])  # override only


def test_rocm_windows_follows_amds_published_versions_and_says_what_is_unconfirmed():
    """AMD's ROCm 10.1.0 pip-install page: the index, the pins, the device extra, the Windows
    targets; Python 3.11 to 3.14 as AMD's docs list; Windows 11 only; index not confirmed."""
    amd = STACKS["rocm-windows"]
    assert amd["index_url"] == "https://stable.repo.amd.com/rocm/whl-next/"
    assert amd["local_version"] == "+rocm10.1.0"
    assert amd["pins"] == {"torch": "2.14.0", "torchvision": "0.29.0a0"}
    assert amd["device_extra"].format(gfx="gfx1151") == "device-gfx1151"
    assert amd["gfx_targets"] == [
        "gfx1100", "gfx1101", "gfx1102", "gfx1103",
        "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx1200", "gfx1201",
    ]  # fmt: skip
    assert not any(target.startswith(("gfx101", "gfx103")) for target in amd["gfx_targets"])
    assert (amd["python_min"], amd["python_max"]) == ("3.11", "3.14")
    assert amd["platforms"] == "Windows 11"
    assert "NOT confirmed" in amd["source"] and "not confirmed" in stack_row("rocm-windows")
    assert "rocm10.1.0-pip-install.rst" in amd["source"] and "TheRock" in amd["source"]
    assert STACKS["rocm"]["platforms"] == "Linux"  # rocm stays the Linux stack


def test_the_cuda_stacks_follow_pytorchs_cuda_support_matrix():
    """PyTorch 2.14's RELEASE.md matrix: CUDA 13.0 builds Turing (7.5) to Blackwell; the legacy
    CUDA 12.6 build Maxwell (5.0), Pascal (6.0), Volta (7.0) to Hopper (9.0); 2.15 has no CUDA
    12.x build, so cuda-legacy is final and says so, and its index listing is unconfirmed."""
    cuda, legacy = STACKS["cuda"], STACKS["cuda-legacy"]
    assert cuda["index_url"].endswith("/whl/cu130") and cuda["local_version"] == "+cu130"
    assert legacy["index_url"].endswith("/whl/cu126") and legacy["local_version"] == "+cu126"
    assert cuda["cuda_archs"] == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"]
    assert legacy["cuda_archs"] == ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]
    assert legacy["pins"] == cuda["pins"] == {"torch": "2.14.1", "torchvision": "0.29.1"}
    assert legacy["final"] is True and "2.15" in legacy["chosen"]
    assert "NOT confirmed" in legacy["source"] and "not confirmed" in stack_row("cuda-legacy")
    assert "final" in stack_row("cuda-legacy")
    for name, branch in (("cuda", 580), ("cuda-legacy", 525)):
        minimums = STACKS[name]["driver_min"]
        assert set(minimums) == {"Windows", "Linux"}
        assert int(minimums["Linux"].split(".")[0]) == branch  # the branch NVIDIA names
        assert all(int(version.split(".")[0]) >= branch for version in minimums.values())
        assert "Compatibility" in STACKS[name]["source"]
