"""The hooks' decisions, tested directly: hooks are rendered as cookiecutter renders them,
then imported, and their system calls are replaced by fakes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
import zipfile

import pytest
from conftest import TEMPLATE_DIR, default_answers
from jinja2 import Environment


def load_hook(name: str, answers: dict, tmp_path):
    """Render hooks/<name>.py with ``answers`` as the cookiecutter context and import it."""
    source = (TEMPLATE_DIR / "hooks" / f"{name}.py").read_text(encoding="utf-8")
    rendered = Environment().from_string(source).render(cookiecutter=answers)
    path = tmp_path / f"{name}.py"
    path.write_text(rendered, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"hook_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answers(**overrides) -> dict:
    data = default_answers(**overrides)
    data["project_slug"] = overrides.get("project_slug", "lenet-on-directml")
    data["package_name"] = overrides.get("package_name", "lenet_on_directml")
    context = json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text("utf-8"))
    data["_stacks"] = context["_stacks"]
    data["_reserved_modules"] = context["_reserved_modules"]
    data["_repo_dir"] = str(TEMPLATE_DIR)  # set by cookiecutter; the hook reads the choices there
    return data


def flat(text: str) -> str:
    """Printed prose as one line: the hook wraps it."""
    return " ".join(text.split())


@pytest.fixture
def pre_gen(tmp_path):
    return load_hook("pre_gen_project", answers(), tmp_path)


@pytest.fixture
def post_gen(tmp_path):
    return load_hook("post_gen_project", answers(), tmp_path)


def test_rendered_hook_reads_answers_as_data(tmp_path):
    tricky = answers(project_name="a\"b'c\\d'''e\"\"\"f")
    hook = load_hook("pre_gen_project", tricky, tmp_path)
    rendered = (tmp_path / "pre_gen_project.py").read_text("utf-8")

    assert "a\"b'c" not in rendered  # the answer only appears JSON-escaped
    assert hook.validate(tricky) == []


@pytest.mark.parametrize(
    "accelerator,version,accepted",
    [
        ("directml", "3.8", True),
        ("directml", "3.12", True),
        ("directml", "3.13", False),
        ("cuda", "3.10", True),
        ("cuda", "3.14", True),
        ("cuda", "3.9", False),
        ("cpu", "3.15", False),
    ],
)
def test_python_version_follows_the_support_table(pre_gen, accelerator, version, accepted):
    problems = pre_gen.check_python_version(
        answers(accelerator=accelerator, python_version=version)
    )

    assert (problems == []) is accepted


def test_stdlib_names_are_reserved_on_the_running_python(pre_gen, monkeypatch):
    monkeypatch.setattr(sys, "stdlib_module_names", frozenset({"digits"}), raising=False)

    assert "would shadow" in pre_gen.check_names(answers(package_name="digits"))[0].sentence


@pytest.mark.parametrize(
    "overrides,removed",
    [
        ({}, {"requirements.txt", ".python-version", ".vscode"}),
        ({"env_manager": "venv"}, {"environment.yml", ".python-version", ".vscode"}),
        ({"env_manager": "uv"}, {"environment.yml", "requirements.txt", ".vscode"}),
        ({"ide": "vscode"}, {"requirements.txt", ".python-version", ".run"}),
        ({"ide": "both"}, {"requirements.txt", ".python-version"}),
        (
            {"ide": "none", "license": "none"},
            {"requirements.txt", ".python-version", ".run", ".vscode", "LICENSE"},
        ),
        ({"github_actions": False}, {"requirements.txt", ".python-version", ".vscode", ".github"}),
    ],
)
def test_one_table_decides_which_paths_an_answer_removes(post_gen, overrides, removed):
    assert set(post_gen.paths_to_remove(answers(**overrides))) == removed


def test_the_pre_generation_hook_sets_aside_every_path_the_pruning_may_remove(pre_gen, post_gen):
    prunable = {path for paths in post_gen.OPTIONAL_PATHS.values() for path in paths}

    assert set(pre_gen.PRUNABLE_PATHS) == prunable
    assert pre_gen.KEPT_FOLDER == post_gen.KEPT_FOLDER


def test_files_left_set_aside_by_an_unfinished_bake_are_never_overwritten(
    pre_gen, tmp_path, capsys
):
    kept = tmp_path / pre_gen.KEPT_FOLDER / ".vscode"
    kept.mkdir(parents=True)
    (kept / "settings.json").write_text("{}\n")
    (tmp_path / ".vscode").mkdir()

    assert pre_gen.keep_existing_files(tmp_path) == 1
    assert "an earlier bake that did not finish" in capsys.readouterr().err
    assert (kept / "settings.json").read_text() == "{}\n"


def test_answers_file_is_a_replay_file_without_private_keys(post_gen, tmp_path):
    post_gen.write_answers(tmp_path, answers(project_name="手写数字识别"))
    recorded = json.loads((tmp_path / ".cookiecutter.json").read_text("utf-8"))["cookiecutter"]

    assert recorded["project_name"] == "手写数字识别"
    assert "_stacks" not in recorded
    assert "__prompts__" not in recorded


def test_environment_report_never_raises_when_the_doctor_is_broken(post_gen, tmp_path):
    with zipfile.ZipFile(tmp_path / "doctor.pyz", "w") as doctor:
        doctor.writestr("gpu_doctor/__init__.py", "raise RuntimeError('boom')\n")

    report, best = post_gen.environment_report(tmp_path)

    assert best is None
    assert report.startswith("[warn] The environment checks could not run here")
    assert "boom" in report


def test_next_steps_match_the_environment_manager_and_ide(post_gen, tmp_path):
    conda = post_gen.next_steps(answers(), tmp_path)
    venv = post_gen.next_steps(answers(env_manager="venv", ide="vscode"), tmp_path)

    assert "conda env create -f environment.yml" in conda
    assert "PyCharm" in conda and "VS Code" not in conda
    assert "pip install -r requirements.txt" in venv
    assert "VS Code" in venv and "PyCharm" not in venv
    assert "python -m lenet_on_directml.verify_install" in venv


def test_next_steps_of_a_uv_project_sync_and_activate_the_venv(post_gen, tmp_path):
    steps = post_gen.next_steps(answers(env_manager="uv", ide="both"), tmp_path).splitlines()

    # The project's stack by name: a plain `uv sync` installs the dev group alone.
    assert steps.count("  uv sync --group directml") == 2  # Windows, then WSL2
    assert "  .venv\\Scripts\\activate" in steps and "  source .venv/bin/activate" in steps
    assert not any("pip install" in line or "conda" in line for line in steps)
    pycharm = flat("\n".join(steps).partition("In PyCharm")[2])
    assert "`uv sync --group directml`" in pycharm and "uv > Select existing" in pycharm


def test_a_uv_projects_steps_for_another_stack_are_the_doctors_one_command(post_gen, tmp_path):
    best = {
        "stack": "cpu",
        "commands": {
            "conda": ["conda env create -f environments/cpu.yml"],
            "venv": ["python3.11 -m venv .venv-cpu"],
            "uv": ["uv sync --python 3.11 --no-default-groups --group dev --group cpu",
                   "source .venv/bin/activate"],
        },
    }  # fmt: skip
    steps = post_gen.next_steps(answers(env_manager="uv"), tmp_path, best)

    assert "a plain `uv sync` installs no stack and removes cpu" in flat(steps)
    assert "\n  uv sync --python 3.11 --no-default-groups --group dev --group cpu\n" in steps
    assert "conda" not in steps and ".venv-cpu" not in steps


def test_a_conda_project_on_windows_on_arm_gets_venv_steps_for_the_doctors_stack(
    post_gen, tmp_path
):
    best = {
        "stack": "cpu",
        "no_conda": True,  # the doctor's ENV-ARM64-NO-CONDA finding fired
        "commands": {
            "conda": ["conda env create -f environments/cpu.yml"],
            "venv": ["py -V:3.12-arm64 -m venv .venv-cpu", ".venv-cpu\\Scripts\\activate",
                     "pip install -r environments/cpu.txt"],
            "uv": ["uv sync --group cpu"],
        },
    }  # fmt: skip
    for default in ("directml", "cpu"):  # another stack, or the default file's own
        steps = post_gen.next_steps(answers(accelerator=default), tmp_path, best)

        assert "\n  py -V:3.12-arm64 -m venv .venv-cpu\n" in steps, steps
        assert "conda env create" not in steps and "Miniforge" not in steps
        assert "with venv: conda has no Windows on ARM" in flat(steps)
        assert "Virtualenv > .venv-cpu" in flat(steps)


def test_the_hook_marks_the_doctors_no_conda_finding_on_its_recommendation(post_gen, monkeypatch):
    finding = types.SimpleNamespace(code="ENV-ARM64-NO-CONDA")

    def run_checks(context, details):
        details["recommendation"] = {"stack": "cpu", "commands": {}}
        return [finding]

    envcheck = types.SimpleNamespace(run_checks=run_checks, format_findings=lambda f: "report")
    monkeypatch.setattr(post_gen.importlib, "import_module", lambda name: envcheck)
    _, best = post_gen.environment_report(TEMPLATE_DIR)
    assert best == {"stack": "cpu", "commands": {}, "no_conda": True}
    finding.code = "GPU-ADRENO"
    assert "no_conda" not in post_gen.environment_report(TEMPLATE_DIR)[1]


def test_next_steps_name_the_full_path_of_the_project(post_gen, tmp_path):
    project = tmp_path / "elsewhere" / "my projects" / "lenet-on-directml"

    steps = post_gen.next_steps(answers(), project)

    assert f"cd {post_gen.quoted(project)}" in steps.splitlines()[1]
    assert str(project) in steps.splitlines()[1]
    assert "cd lenet-on-directml" not in steps


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell's rules")
def test_the_cd_line_takes_a_posix_shell_into_a_folder_with_shell_characters(post_gen, tmp_path):
    """A folder named with $HOME, a backtick, quotes and a space: the printed cd line, pasted
    into bash, goes into that very folder (nothing is expanded or run)."""
    project = tmp_path / 'my $HOME `id` "q" it\'s'
    project.mkdir()
    line = post_gen.next_steps(answers(), project).splitlines()[1].strip()

    done = subprocess.run(["bash", "-c", f"{line} && pwd -P"], capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(project.resolve())


def test_the_cd_line_on_windows_keeps_powershell_from_expanding_dollars(post_gen):
    """PowerShell expands $name and backticks inside double quotes, not inside single ones."""
    assert post_gen.quoted(r"C:\Users\Ann\lenet", windows=True) == r"C:\Users\Ann\lenet"
    assert post_gen.quoted(r"C:\my projects\x", windows=True) == r'"C:\my projects\x"'
    assert post_gen.quoted(r"C:\a $HOME `b", windows=True) == r"'C:\a $HOME `b'"
    assert post_gen.quoted(r"C:\$it's", windows=True) == r"'C:\$it''s'"


def test_next_steps_say_what_to_do_when_conda_is_not_on_path(post_gen, tmp_path):
    steps = post_gen.next_steps(answers(), tmp_path)

    assert "If the terminal does not know `conda`" in steps
    assert "Miniforge Prompt" in steps and "conda init" in steps


def test_next_steps_start_git_and_pre_commit(post_gen, tmp_path):
    lines = [line.strip() for line in post_gen.next_steps(answers(), tmp_path).splitlines()]

    start = lines.index("git init")
    # The checks are downloaded before commits depend on them, and the network need is said.
    assert lines[start : start + 4] == [
        "git init",
        "git add .",
        "pre-commit run --all-files",
        "pre-commit install",
    ]
    assert "the network once" in " ".join(lines[:start])


def test_post_gen_main_survives_a_failing_step(post_gen, tmp_path, monkeypatch, capsys):
    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(post_gen, "write_answers", full_disk)

    assert post_gen.main(answers(), tmp_path) == 0
    assert "No space left on device" in capsys.readouterr().err


def test_a_failure_of_the_hook_itself_is_reported_as_the_templates_bug(tmp_path):
    # A stack table without the chosen stack's Python range: the template's data is broken.
    broken = answers(_template="gh:someone/dml-template")
    broken["_stacks"] = {name: {} for name in broken["_stacks"]}
    source = (TEMPLATE_DIR / "hooks" / "pre_gen_project.py").read_text(encoding="utf-8")
    hook = tmp_path / "pre_gen_project.py"
    hook.write_text(Environment().from_string(source).render(cookiecutter=broken), "utf-8")
    project = tmp_path / "lenet-on-directml"
    project.mkdir()

    result = subprocess.run([sys.executable, str(hook)], cwd=project, capture_output=True,
                            text=True, encoding="utf-8", timeout=60)  # fmt: skip

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert "failed while checking the answers against cookiecutter.json: KeyError" in message
    assert "This is a bug of the template (gh:someone/dml-template), not a problem with your " \
           "answers" in message  # fmt: skip
    assert "report this message to the template's maintainers" in message


@pytest.mark.parametrize(
    "name,reserved",
    [("con", True), ("CON", True), ("Nul.txt", True), ("aux.tar.gz", True), ("com1", True),
     ("LPT9", True), ("com\u00b9", True), ("LPT\u00b3.py", True), ("com10", False),
     ("console", False), ("con-digits", False), ("nul_digits", False), ("lpt", False)],
)  # fmt: skip
def test_windows_device_names_are_recognised_in_any_case_and_with_an_extension(
    pre_gen, name, reserved
):
    assert pre_gen.windows_device_name(name) is reserved


@pytest.mark.parametrize("word,kept", [("no", False), ("Off", False), (" f ", False),
                                        ("yes", True), ("1", True), ("ON", True)])  # fmt: skip
def test_github_actions_takes_the_yes_and_no_words_cookiecutter_takes(pre_gen, post_gen, tmp_path,
                                                                      word, kept):  # fmt: skip
    # A replay file holds strings as written; cookiecutter's own prompt takes these words.
    given = answers(github_actions=word)

    assert pre_gen.validate(given) == []
    (tmp_path / ".github").mkdir()
    post_gen.prune(tmp_path, post_gen.as_booleans(given))
    assert (tmp_path / ".github").exists() is kept
    post_gen.write_answers(tmp_path, post_gen.as_booleans(given))
    recorded = json.loads((tmp_path / ".cookiecutter.json").read_text("utf-8"))["cookiecutter"]
    assert recorded["github_actions"] is kept


class Terminal:
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("environment", "colour"),
    [({"TERM": "xterm-256color"}, True), ({"TERM": "dumb"}, False), ({"NO_COLOR": "1"}, False)],
)
def test_the_refusal_is_coloured_only_where_the_terminal_shows_colour(
    pre_gen, monkeypatch, environment, colour
):
    """TERM=dumb (Emacs's shell, some CI logs) prints escape sequences as text; NO_COLOR asks
    for none."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert pre_gen.use_colour(Terminal()) is colour


def test_a_re_bake_says_which_files_left_out_by_its_answers_it_kept(tmp_path, capsys):
    """cookiecutter -f with ide=pycharm over a project baked with VS Code's settings: the
    earlier .vscode stays (it may be the user's own), and the hook says so and why."""
    hook = load_hook("post_gen_project", answers(ide="pycharm"), tmp_path)
    project = tmp_path / "project"
    (project / ".vscode").mkdir(parents=True)  # what this bake wrote, for the pruning
    earlier = project / hook.KEPT_FOLDER / ".vscode"
    earlier.mkdir(parents=True)
    (earlier / "settings.json").write_text("{}\n")

    assert hook.main(answers(ide="pycharm"), project) == 0

    assert (project / ".vscode" / "settings.json").read_text() == "{}\n"
    out = capsys.readouterr().out
    assert "Left as they were before this bake: .vscode; your answers leave them out" in out


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell's rules")
def test_the_refusals_command_keeps_a_dollar_in_the_output_folder(pre_gen, tmp_path):
    """The command a refusal prints, pasted into bash: $HOME in the folder's name stays."""
    out = tmp_path / "out $HOME `id`"
    command = pre_gen.rerun_command(
        {"_template": "gh:someone/dml-template", "_output_dir": str(out)}, out / "answers.json"
    )
    done = subprocess.run(
        ["bash", "-c", 'printf "%s\\n" ' + command], capture_output=True, text=True
    )
    assert done.stdout.splitlines() == [
        "cookiecutter", "--replay-file", str(out / "answers.json"), "-o", str(out),
        "gh:someone/dml-template",
    ]  # fmt: skip


@pytest.mark.parametrize("env_manager", ["conda", "venv", "uv"])
@pytest.mark.parametrize("accelerator", ["directml", "rocm-windows", "cpu"])
def test_next_steps_fit_100_columns_and_go_into_the_folder_once(
    post_gen, tmp_path, env_manager, accelerator
):
    """The default file's steps (the check agreed, or could not tell), in either editor."""
    chosen = answers(env_manager=env_manager, accelerator=accelerator, ide="both")
    for best in (None, {"stack": accelerator, "commands": {}}):
        lines = post_gen.next_steps(chosen, tmp_path, best).splitlines()

        assert [line for line in lines if len(line) > 100] == []
        assert [line.strip() for line in lines if "cd " in line] == [f"cd {tmp_path}"]


def test_a_windows_only_stack_gets_no_linux_or_macos_steps(post_gen, tmp_path):
    for env_manager in ("venv", "uv"):
        chosen = answers(env_manager=env_manager, accelerator="rocm-windows")
        steps = post_gen.next_steps(chosen, tmp_path)

        assert "On Windows:" in steps and "  .venv\\Scripts\\activate" in steps
        assert "Linux" not in steps.split("Then,")[0] and "source .venv" not in steps
