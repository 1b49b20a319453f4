"""The questions and what follows them: prompts that state the ranges, a refusal that cannot be
missed and that keeps the other answers, and next steps that match the README.

cookiecutter 2.7.1 renders neither prompt texts nor choice lists that still accept answers from
the command line, and its pre_prompt hook runs before any answer exists (and copies the whole
template folder first), so the Python range of every accelerator is stated in the prompts, and
the pre-generation hook saves the good answers as a replay file that asks only the rest again.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONTEXT, STACKS, TEMPLATE_DIR
from test_hooks import answers, load_hook

ANSWERS_FILE = "lenet-template-answers.json"


def cookiecutter_cli(*args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess:
    """`cookiecutter ...` as a user runs it, with its replay folder and config in ``home``."""
    env = {**os.environ, "HOME": str(home), "USERPROFILE": str(home), "NO_COLOR": "1"}
    env.pop("COOKIECUTTER_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "cookiecutter", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )


def python_range(accelerator: str) -> str:
    return f"{STACKS[accelerator]['python_min']} to {STACKS[accelerator]['python_max']}"


def test_the_python_question_states_the_range_of_every_accelerator():
    prompt = CONTEXT["__prompts__"]["python_version"]

    for accelerator in STACKS:
        assert re.search(rf"{python_range(accelerator)} for [a-z, -]*\b{accelerator}\b", prompt)


def test_each_accelerator_choice_states_its_python_range():
    labels = CONTEXT["__prompts__"]["accelerator"]

    for accelerator in STACKS:
        assert labels[accelerator].endswith(f"Python {python_range(accelerator)}")


def test_the_folder_question_speaks_a_students_words():
    prompt = CONTEXT["__prompts__"]["project_slug"]

    assert prompt.startswith("Folder name")
    assert not {"distribution", "slug", "ASCII"} & set(re.findall(r"\w+", prompt))


def test_derived_questions_are_known_to_the_hook(tmp_path):
    """A question whose default uses an earlier answer is asked again together with it."""
    hook = load_hook("pre_gen_project", answers(), tmp_path)
    derived = {
        key: re.findall(r"cookiecutter\.(\w+)", value)
        for key, value in CONTEXT.items()
        if isinstance(value, str) and not key.startswith("_") and "cookiecutter." in value
    }

    assert {key: sources[0] for key, sources in derived.items()} == hook.DERIVED_FROM


@pytest.mark.parametrize(
    "bad,asked_again",
    [
        ({"python_version": "3.13"}, {"python_version"}),
        ({"author_email": "nope"}, {"author_email"}),
        ({"package_name": "cycler"}, {"project_name", "project_slug", "package_name"}),
    ],
)
def test_the_replay_file_leaves_out_what_must_be_asked_again(tmp_path, bad, asked_again):
    given = answers(**bad)
    hook = load_hook("pre_gen_project", given, tmp_path)
    problems = hook.validate(given)

    kept = hook.replay_answers(given, hook.questions_to_ask_again(problems))["cookiecutter"]

    public = {k for k in given if not k.startswith("_")}
    assert set(kept) == public - asked_again


def test_a_refused_answer_is_framed_and_the_rerun_asks_only_for_it(tmp_path):
    out = tmp_path / "projects"
    refused = cookiecutter_cli(
        "--no-input",
        str(TEMPLATE_DIR),
        "-o",
        str(out),
        "project_name=Ivan's digits",
        "accelerator=directml",
        "python_version=3.13",
        home=tmp_path,
    )
    output = refused.stdout + refused.stderr
    replay_file = out / ANSWERS_FILE

    assert refused.returncode != 0
    block = output[output.index("=" * 78) :]
    assert block.splitlines()[1] == "Nothing was generated: 1 answer needs correcting."
    assert "ERROR: Python 3.13 is not supported with the directml accelerator" in block
    assert f"Your other answers are saved in {replay_file}." in block
    command = f"cookiecutter --replay-file {replay_file} -o {out} {TEMPLATE_DIR}"
    assert command in block
    saved = json.loads(replay_file.read_text("utf-8"))["cookiecutter"]
    assert "python_version" not in saved
    assert saved["project_name"] == "Ivan's digits"
    assert not (out / "ivan-s-digits").exists()

    again = cookiecutter_cli(*command.split()[1:], home=tmp_path, stdin="3.12\n")

    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "3.8 to 3.12 for directml" in again.stdout  # the only question asked
    assert again.stdout.count("[1/1]") == 1
    project = out / "ivan-s-digits"
    recorded = json.loads((project / ".cookiecutter.json").read_text("utf-8"))["cookiecutter"]
    assert (recorded["project_name"], recorded["python_version"]) == ("Ivan's digits", "3.12")
    assert not replay_file.exists()  # the name and e-mail it held are in the project now
    assert f"Removed {replay_file}" in again.stdout


def test_the_answers_file_goes_to_the_temporary_folder_when_the_output_folder_is_removed(
    tmp_path, monkeypatch
):
    given = answers(python_version="3.13")
    given["_output_dir"] = str(tmp_path / "out")
    (tmp_path / "out").mkdir()
    hook = load_hook("pre_gen_project", given, tmp_path)
    monkeypatch.setattr(hook.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    saved = hook.save_answers(given, {"python_version"}, project_dir=tmp_path / "out")

    assert saved == tmp_path / "tmp" / ANSWERS_FILE


def test_the_refusal_is_coloured_only_on_a_terminal(tmp_path):
    given = answers(python_version="3.13")
    hook = load_hook("pre_gen_project", given, tmp_path)
    problems = hook.validate(given)

    plain = hook.refusal_report(problems, given, None, colour=False)
    coloured = hook.refusal_report(problems, given, None, colour=True)

    assert "\033[" not in plain
    assert "\033[1;31m" in coloured
    assert "Run cookiecutter again with corrected answers." in plain


def readme_terminal_lines(baked) -> set:
    """Every line of the code blocks in the README's "First run" section (the doctor first,
    then "In a terminal") and in docs/development.md (git and pre-commit), and the commands of
    docs/stacks.md's table of environments (the steps for an environment that fits this
    machine better)."""
    readme = baked.read("README.md")
    section = readme.split("## First run", 1)[1].split("\n## ", 1)[0]
    section += baked.read("docs/development.md")
    blocks = re.findall(r"```\n(.*?)```", section, re.S)
    lines = {line.strip() for block in blocks for line in block.splitlines() if line.strip()}
    stacks = baked.read("docs/stacks.md")
    table = stacks.split("## Which environment", 1)[1].split("\n## ", 1)[0]
    rows = [row for row in table.splitlines() if row.startswith("| ")]
    return lines | {command for row in rows for command in re.findall(r"`([^`]+)`", row)}


@pytest.mark.parametrize("env_manager", ["conda", "venv"])
def test_the_next_steps_are_the_readme_steps(bake, env_manager):
    baked = bake(env_manager=env_manager)
    assert baked.ok, baked.output
    steps = baked.output.split("Next steps in a terminal:", 1)[1].splitlines()
    commands = [line.strip().split("   (")[0] for line in steps if line.startswith("  ")]

    assert f"Created {baked.path.resolve()} (" in baked.output
    assert commands[0] == f"cd {baked.path.resolve()}"
    readme = readme_terminal_lines(baked)
    missing = [c for c in commands if not c.startswith("cd ") and c not in readme]
    assert missing == []
    assert {"git init", "pre-commit install", "pre-commit run --all-files"} <= set(commands)
    text = baked.read("docs/development.md")  # offline, a commit must not be stuck
    assert text.index("\npre-commit run --all-files") < text.index("\npre-commit install")
    assert "git commit --no-verify" in text and "pre-commit uninstall" in text
    for name in ("README.md", "README.zh-CN.md"):  # where a student finds those steps
        assert "](docs/development.md)" in baked.read(name)
