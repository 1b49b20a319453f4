"""Every invalid answer is refused before anything is written, with one clear sentence."""

from __future__ import annotations

import json

import pytest
from conftest import TEMPLATE_DIR

INVALID = {
    "empty name": (
        {"project_name": "   "},
        "The project name is empty",
    ),
    "name without any ASCII letter": (
        {"project_name": "!!!"},
        "The project name '!!!' has no letters or digits to make a folder name from",
    ),
    "slug with capitals": (
        {"project_slug": "My-Project"},
        "The folder name (project_slug) 'My-Project' is not usable",
    ),
    "package starting with a digit": (
        {"package_name": "1digits"},
        "The package name '1digits' is not a Python identifier",
    ),
    "package with a dash": (
        {"package_name": "my-digits"},
        "The package name 'my-digits' is not a Python identifier",
    ),
    "package that is a keyword": (
        {"package_name": "class"},
        "The package name 'class' is a keyword of Python, which `import` cannot take",
    ),
    "package with capitals": (
        {"package_name": "Digits"},
        "has capital letters: PEP 8 asks for lower case, for example 'digits'",
    ),
    "package name too long": (
        {"package_name": "a_very_long_name_for_a_handwritten_digit_recognition_workshop"},
        "is 61 characters long: keep it to 40 or fewer",
    ),
    "slug of 41 characters": (
        {"project_slug": "d" * 41},
        "The folder name (project_slug) is 41 characters long: keep it to 40 or fewer",
    ),
    "slug with a dot": (
        {"project_slug": "my.digits"},
        "The folder name (project_slug) 'my.digits' is not usable",
    ),
    "slug with an underscore": (
        {"project_slug": "my_digits"},
        "The folder name (project_slug) 'my_digits' is not usable",
    ),
    "package that is a dunder name": (
        {"package_name": "__main__"},
        "The package name '__main__' is a dunder name that Python reserves for itself",
    ),
    "package starting with an underscore": (
        {"package_name": "_digits"},
        "The package name '_digits' does not start with a letter",
    ),
    "package shadowing torch": (
        {"package_name": "torch"},
        "The package name 'torch' would shadow the module of the same name",
    ),
    "package shadowing the project's doctor": (
        {"package_name": "gpu_doctor"},
        "The package name 'gpu_doctor' would shadow the module of the same name",
    ),
    "package shadowing the instructor's tools": (
        {"package_name": "instructor"},
        "The package name 'instructor' would shadow the module of the same name",
    ),
    "package shadowing the test package": (
        {"package_name": "test"},
        "The package name 'test' would shadow the module of the same name",
    ),
    "package shadowing the standard library": (
        {"package_name": "json"},
        "The package name 'json' would shadow the module of the same name",
    ),
    "python 3.13 with directml": (
        {"accelerator": "directml", "python_version": "3.13"},
        "Python 3.13 is not supported with the directml accelerator: choose 3.8 to 3.12",
    ),
    "python 3.7 with directml": (
        {"accelerator": "directml", "python_version": "3.7"},
        "Python 3.7 is not supported with the directml accelerator: choose 3.8 to 3.12",
    ),
    "python 3.9 with cuda": (
        {"accelerator": "cuda", "python_version": "3.9"},
        "Python 3.9 is not supported with the cuda accelerator: choose 3.10 to 3.14",
    ),
    "python 3.9 with cuda-legacy": (
        {"accelerator": "cuda-legacy", "python_version": "3.9"},
        "Python 3.9 is not supported with the cuda-legacy accelerator: choose 3.10 to 3.14",
    ),
    "python 3.15 with cuda-legacy": (
        {"accelerator": "cuda-legacy", "python_version": "3.15"},
        "Python 3.15 is not supported with the cuda-legacy accelerator: choose 3.10 to 3.14",
    ),
    "python version not of the form 3.X": (
        {"python_version": "python3"},
        "The Python version 'python3' is not of the form 3.X",
    ),
    "python version with a patch level": (
        {"python_version": "3.11.4"},
        "The Python version '3.11.4' is not of the form 3.X",
    ),
    "python version with spaces around it": (
        {"python_version": " 3.11 "},
        "The Python version ' 3.11 ' has spaces around it: answer '3.11'",
    ),
    "python version with a leading zero": (
        {"python_version": "3.09"},
        "The Python version '3.09' is not written as Python writes it: answer '3.9'",
    ),
    "python version with leading zeros": (
        {"python_version": "3.010"},
        "The Python version '3.010' is not written as Python writes it: answer '3.10'",
    ),
    "description with a line break": (
        {"description": "Digits\nand more"},
        "The description answer contains control characters (U+000A)",
    ),
    "project name with a tab": (
        {"project_name": "Hand\twritten"},
        "The project_name answer contains control characters (U+0009)",
    ),
    "author name with a comma": (
        {"author_name": "Doe, Jane"},
        "The author name 'Doe, Jane' contains a comma",
    ),
    "e-mail without @": (
        {"author_email": "jane.example.com"},
        "The author e-mail 'jane.example.com' is not an address",
    ),
}

# Device names Windows reserves in every folder: it cannot create the project's folder or its
# package's (nor can Git for Windows check them out).
WINDOWS_DEVICES = {"project_slug": ["con", "prn", "lpt1"], "package_name": ["aux", "nul", "com9"]}
for question, names in WINDOWS_DEVICES.items():
    for name in names:
        INVALID[f"{question} that is the Windows device {name.upper()}"] = (
            {question: name},
            f"{name!r} is a device name that Windows reserves (CON, PRN, AUX, NUL, COM1 to COM9, "
            "LPT1 to LPT9), so Windows cannot create",
        )


# Top-level modules of the pinned stacks that a package of the same name would shadow (the
# complete list is checked against each installed stack in tests/test_reserved_modules.py).
SHADOWING = [
    "cycler", "sympy", "networkx", "jinja2", "filelock", "fsspec", "pluggy", "six", "dateutil",
    "yaml", "tomli", "ruff", "numpy", "pre_commit", "colorama", "torch_directml", "nvidia",
]  # fmt: skip
for module in SHADOWING:
    INVALID[f"package shadowing {module}"] = (
        {"package_name": module},
        f"The package name {module!r} would shadow the module of the same name",
    )


@pytest.mark.parametrize("answers,message", INVALID.values(), ids=INVALID.keys())
def test_invalid_answer_is_refused_with_a_clear_sentence(bake, answers, message):
    baked = bake(**answers)

    assert baked.exit_code != 0
    assert not baked.ok
    assert message in baked.output
    assert "Nothing was generated" in baked.output
    assert "Traceback" not in baked.output


def test_every_problem_is_reported_at_once(bake):
    baked = bake(package_name="torch", python_version="3.13", author_email="nope")

    assert baked.output.count("ERROR:") == 3


@pytest.mark.parametrize(
    "question,answer",
    [("accelerator", "opencl"), ("env_manager", "poetry"), ("ide", "vim"), ("license", "GPL")],
)
def test_an_answer_outside_a_choice_is_refused(bake, question, answer):
    baked = bake(**{question: answer})

    assert not baked.ok
    assert answer in str(baked.exception)


# A replay file (the refusal's own, or .cookiecutter.json) edited by hand reaches the hooks
# without cookiecutter checking its choices: the pre-generation hook checks each one.
HAND_EDITED = {
    "accelerator": ("tpu", "directml, cuda, cuda-legacy, xpu, rocm, rocm-windows or cpu"),
    "ide": ("emacs", "pycharm, vscode, both or none"),
    "env_manager": ("pipenv", "conda, venv or uv"),
    "license": ("GPL", "MIT, BSD-3-Clause, Apache-2.0 or none"),
    "github_actions": ("maybe", "true or false (in a replay file, without quotes)"),
}  # fmt: skip


def replay_edited(tmp_path, **edits):
    """cookiecutter --replay-file with a replay file whose answers were edited by hand."""
    from test_hooks import answers
    from test_questions import cookiecutter_cli

    given = {k: v for k, v in answers(**edits).items() if not k.startswith("_")}
    replay = tmp_path / "edited.json"
    replay.write_text(json.dumps({"cookiecutter": given}), encoding="utf-8")
    out = tmp_path / "projects"
    result = cookiecutter_cli("--replay-file", str(replay), "-o", str(out), str(TEMPLATE_DIR),
                              home=tmp_path)  # fmt: skip
    return result, out


@pytest.mark.parametrize("question", HAND_EDITED)
def test_a_hand_edited_replay_answer_outside_its_choices_is_refused(tmp_path, question):
    value, choices = HAND_EDITED[question]
    result, out = replay_edited(tmp_path, **{question: value})
    output = result.stdout + result.stderr

    assert result.returncode != 0
    sentence = f"The {question} answer {value!r} is not one of its answers: answer {choices}."
    assert f"ERROR: {sentence}" in output
    assert "KeyError" not in output and "could not be checked" not in output
    assert not [p for p in out.iterdir() if p.is_dir()]  # no broken project
    saved = json.loads((out / "lenet-template-answers.json").read_text("utf-8"))["cookiecutter"]
    assert question not in saved  # the rerun asks it again, with its choices


# Answers of another JSON type than the question's: the user's mistake, not the template's bug.
WRONG_TYPE = {
    "python version as a number": ("python_version", 3.11, 'is a number, not text', '"3.12"'),
    "python version null": ("python_version", None, "is empty (null), not text", '"3.12"'),
    "project name as a list": ("project_name", ["a"], "is a list, not text", '"Handwritten'),
    "author as an object": ("author_name", {"x": 1}, "is an object, not text", '"Jane Doe"'),
    "e-mail as a number": ("author_email", 7, "is a number, not text", '"jane@example.com"'),
    "package as true": ("package_name", True, "is true or false, not text", '"handwritten_'),
}  # fmt: skip


@pytest.mark.parametrize("question,value,kind,example", WRONG_TYPE.values(), ids=WRONG_TYPE)
def test_a_replay_answer_of_the_wrong_type_is_the_users_to_correct(tmp_path, question, value,
                                                                   kind, example):  # fmt: skip
    result, out = replay_edited(tmp_path, **{question: value})
    output = " ".join((result.stdout + result.stderr).split())

    assert result.returncode != 0
    assert f"ERROR: The {question} answer {json.dumps(value)} {kind}: write it in double " \
           f"quotes, for example {example}" in output  # fmt: skip
    assert output.count("ERROR: The") == 1
    assert "bug of the template" not in output and "AttributeError" not in output
    assert not [p for p in out.iterdir() if p.is_dir()]  # nothing baked, no LICENSE of {'x': 1}
    saved = json.loads((out / "lenet-template-answers.json").read_text("utf-8"))["cookiecutter"]
    assert question not in saved


def test_every_choice_answer_of_a_replay_is_checked_against_the_templates_lists(tmp_path):
    # A list as the accelerator answer is the user's answer, not the template's list of choices.
    result, out = replay_edited(tmp_path, accelerator=["tpu"], license="GPL", ide="vim",
                                env_manager="pipenv")  # fmt: skip
    output = result.stdout + result.stderr

    assert result.returncode != 0
    assert [line for line in output.splitlines() if line.startswith("ERROR: The")] == [
        'ERROR: The accelerator answer ["tpu"] is not one of its answers: answer directml, cuda, '
        "cuda-legacy, xpu, rocm, rocm-windows or cpu.",
        "ERROR: The env_manager answer 'pipenv' is not one of its answers: answer conda, venv "
        "or uv.",
        "ERROR: The ide answer 'vim' is not one of its answers: answer pycharm, vscode, both or "
        "none.",
        "ERROR: The license answer 'GPL' is not one of its answers: answer MIT, BSD-3-Clause, "
        "Apache-2.0 or none.",
    ]
    assert not [p for p in out.iterdir() if p.is_dir()]
