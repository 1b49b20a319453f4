"""--help answers before torch loads: each command's help, the same text as its parser's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import (
    benchmark,
    data,
    draw,
    evaluate,
    export,
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    predict_command,
    quick_help,
)

PACKAGE = train.__package__
SRC = Path(__file__).resolve().parents[1] / "src"
# A guard against a hang, not a speed goal (the benchmark times --help: docs/figures.json).
CHILD_LIMIT_S = 300 * float(os.environ.get("TEST_TIMEOUT_SCALE", "1"))
COMMANDS = {  # command: the main that parses its arguments once torch is loaded
    "train": train.main,
    "predict": predict_command.main,
    "evaluate": evaluate.main,
    "export": export.main,
    "draw": draw.main,
    "benchmark": benchmark.main,
    "data": data.main,
}
COLUMNS = "100"  # one width for the child's help and this process's

# The command run as `python -m` runs it; then: its exit code, and whether torch was loaded.
CHILD = """
import json, runpy, sys
sys.argv = ["-m", *sys.argv[1:]]
try:
    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as done:
    code = done.code
sys.stdout.flush()
sys.stderr.write(json.dumps({"code": code, "torch": "torch" in sys.modules}))
"""


def help_in_a_child(command: str, *args: str) -> tuple[str, dict]:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, f"{PACKAGE}.{command}", *args],
        env=dict(os.environ, PYTHONPATH=path, COLUMNS=COLUMNS),
        capture_output=True,
        text=True,
        timeout=CHILD_LIMIT_S,
    )
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_help_answers_without_importing_torch_and_says_what_the_command_says(
    command, capsys, monkeypatch
):
    out, child = help_in_a_child(command, "--help")
    assert child == {"code": 0, "torch": False}, f"{command} --help: {child}"
    monkeypatch.setenv("COLUMNS", COLUMNS)
    with pytest.raises(SystemExit) as caught:
        COMMANDS[command](["--help"])
    assert caught.value.code == 0
    assert out == capsys.readouterr().out  # the same text, word for word
    assert out.split()[:4] == ["usage:", "python", "-m", f"{PACKAGE}.{command}"]  # may wrap


@pytest.mark.slow
def test_a_command_without_help_still_loads_torch_and_runs():
    """The check above can fail: a command that runs does import torch."""
    _, child = help_in_a_child("evaluate", "--output-dir", "no-such-folder")
    assert child == {"code": 2, "torch": True}


def test_help_is_only_an_option_before_a_double_dash():
    assert quick_help.asks_for_help(["--epochs", "2", "-h"])
    assert not quick_help.asks_for_help(["--", "--help"])  # a picture named --help
    assert not quick_help.asks_for_help(["--epochs", "2"])


def test_train_settings_read_without_torch_are_train_pys():
    import dataclasses

    read = quick_help.train_settings()
    assert [(f.name, f.default) for f in dataclasses.fields(read)] == [
        (f.name, f.default) for f in dataclasses.fields(train.TrainConfig)
    ]
    assert read.DEFAULT_LR == train.TrainConfig.DEFAULT_LR


@pytest.mark.parametrize("program", ["lenet-train", "lenet-train.exe", "lenet-train-script.py"])
def test_a_console_script_answers_help_too(program, monkeypatch, capsys):
    """``pip install -e .`` puts the commands on the PATH: their --help is as quick."""
    from importlib.metadata import EntryPoint

    script = EntryPoint("lenet-train", f"{PACKAGE}.train:main", "console_scripts")
    monkeypatch.setattr(quick_help, "_console_scripts", lambda: [script])
    monkeypatch.setattr(sys, "argv", [str(Path("bin", program)), "--help"])
    with pytest.raises(SystemExit) as caught:
        quick_help.answer_console_script_help()
    assert caught.value.code == 0
    usage = capsys.readouterr().out.split()[:4]  # a long package name wraps the line
    assert usage == ["usage:", "python", "-m", f"{PACKAGE}.train"]


def test_another_program_named_like_a_command_is_left_alone(monkeypatch, capsys):
    from importlib.metadata import EntryPoint

    script = EntryPoint("other-train", "other.train:main", "console_scripts")
    monkeypatch.setattr(quick_help, "_console_scripts", lambda: [script])
    monkeypatch.setattr(sys, "argv", ["other-train", "--help"])
    quick_help.answer_console_script_help()  # returns: not one of this project's
    assert capsys.readouterr().out == ""
