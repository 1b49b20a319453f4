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
    assert all(STACKS[name]["pins"]["torch"] == version for name in ("cuda", "xpu", "rocm", "cpu"))


def test_the_readme_rows_name_each_stacks_index_and_build_tag():
    for accelerator, stack in STACKS.items():
        row = stack_row(accelerator)
        if stack["index_url"]:
            assert f"`whl/{stack['index_url'].rsplit('/', 1)[1]}`" in row, row
        if stack["local_version"]:
            assert f"`{stack['local_version']}" in row, row


def test_rocm_follows_the_release_notes_and_says_what_is_unconfirmed():
    rocm = STACKS["rocm"]
    assert rocm["index_url"].endswith("/whl/rocm7.14") and rocm["local_version"] == "+rocm7.14"
    assert "NOT confirmed" in rocm["source"] and "not confirmed" in stack_row("rocm")
    assert "**Not confirmed:**" in README
    assert {"gfx1030", "gfx1100"} <= set(rocm["gfx_targets"])
    assert not {"gfx1031", "gfx1032", "gfx1103"} & set(rocm["gfx_targets"])  # override only
