"""The figures the documents quote are the ones in docs/figures.json, measured by one command
(``python benchmarks/figures.py``) on one named machine: a document that says another number
fails here. Measured again, the figures file changes, and this test names each sentence to
update."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import {{ cookiecutter.package_name }} as package

ROOT = Path(__file__).resolve().parents[1]
FIGURES = json.loads((ROOT / "docs" / "figures.json").read_text(encoding="utf-8"))


def quoted() -> dict[str, list[str]]:
    """Each document, and the phrases in it that quote the figures file."""
    epoch = FIGURES["synthetic_epoch"]
    accuracy = f"{epoch['test_accuracy_percent']:.2f} %"
    command = epoch["command_s"]
    return {
        "README.md": [f"{command} s on a busy 2-core CPU", f"{accuracy} test accuracy"],
        "README.zh-CN.md": [f"{command} 秒", f"测试准确率 {accuracy}"],
        "docs/workshop.md": [
            FIGURES["machine"],
            f"took {command} s from the command to the test accuracy",
            f"the epoch itself {epoch['epoch_s']} s at {epoch['images_per_s']:,} images/s",
            f"LeNet reaches {accuracy} on them after one epoch",
            f"answers in {max(FIGURES['help_s'].values()):.1f} s or less",
            f"`import torch` alone takes {FIGURES['import_torch_s']} s",
            FIGURES["command"],
        ],
        f"src/{package.__name__}/model.py": [f"{accuracy} measured"],
    }


@pytest.mark.parametrize("document", quoted())
def test_the_documents_quote_the_figures_file(document):
    text = " ".join((ROOT / document).read_text(encoding="utf-8").split())
    for phrase in quoted()[document]:
        assert phrase in text, f"{document} should say {phrase!r} (docs/figures.json)"


def test_the_figures_file_names_its_machine_and_its_command():
    assert re.fullmatch(r"\d+-core \S+ \S+ CPU, torch \S+", FIGURES["machine"])
    assert FIGURES["command"].startswith("python benchmarks/figures.py")
    assert (ROOT / "benchmarks" / "figures.py").is_file()
    epoch = FIGURES["synthetic_epoch"]
    assert 0 < epoch["epoch_s"] <= epoch["command_s"]
    assert 10 < epoch["test_accuracy_percent"] <= 100
