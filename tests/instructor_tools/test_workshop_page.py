"""docs/workshop.md and the stick's help in a cpu project: the stacks a stick holds by default
(the project's and cpu) are named once each (G28: "for cpu and cpu")."""

from __future__ import annotations

import json
import re

import pytest

from instructor.project import project_file
from instructor.stick import __main__ as stick_command

from .project_under_test import PROJECT_DIR

STACKS = json.loads(project_file(PROJECT_DIR).read_text(encoding="utf-8"))["stacks"]
REPEATED = re.compile(rf"\b({'|'.join(map(re.escape, STACKS))}) and \1\b")


@pytest.mark.parametrize("accelerator", ["cpu", "directml"])
def test_the_workshop_page_names_each_default_stack_once(bake_once, accelerator):
    page = bake_once(accelerator=accelerator).read("docs/workshop.md")
    resolves = " ".join(page.split("It resolves, for ", 1)[1].split()[:4])

    assert not REPEATED.search(page), REPEATED.search(page).group(0)
    expected = "cpu and for" if accelerator == "cpu" else f"{accelerator} and cpu and"
    assert resolves.startswith(expected), resolves


def test_the_sticks_help_names_each_default_stack_once(tmp_path, monkeypatch, capsys):
    data = json.loads(project_file(PROJECT_DIR).read_text(encoding="utf-8"))
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "project.json").write_text(
        json.dumps(dict(data, accelerator="cpu")), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)

    with pytest.raises(SystemExit):
        stick_command.main(["make", "--help"])

    text = " ".join(capsys.readouterr().out.split())
    assert "(default: cpu)" in text and not REPEATED.search(text)
