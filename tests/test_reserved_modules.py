"""Package names that would shadow a module of the pinned stacks are refused, and the list of
those modules (cookiecutter.json's _reserved_modules) is complete for the current stack.

The DirectML stack's list is checked in tests/test_dml_stack.py, where that stack is installed.
"""

from __future__ import annotations

import stack_modules
from conftest import CONTEXT, STACKS
from test_hooks import answers, load_hook


def test_the_project_requirements_are_read_from_the_generated_pyproject():
    names = set(stack_modules.project_requirements())

    assert {"torch", "torchvision", "tqdm", "matplotlib", "pytest", "ruff", "pre-commit"} <= names
    assert "torch-directml" in names  # the directml extra


def test_every_module_of_the_current_stack_is_reserved():
    found = stack_modules.stack_modules()
    pins = STACKS["cpu"]["pins"]

    assert found["missing"] == [], "the template's .venv lacks part of the current stack"
    assert found["unknown"] == [], "add these requirements to OTHER_ENVIRONMENT_MODULES"
    assert f"torch=={pins['torch']}" in found["distributions"]
    assert f"torchvision=={pins['torchvision']}" in found["distributions"]
    unreserved = sorted(set(found["modules"]) - set(CONTEXT["_reserved_modules"]))
    assert unreserved == [], "run `python tests/stack_modules.py --update` to reserve them"


def test_the_modules_named_in_the_bug_report_are_reserved():
    reported = {"cycler", "sympy", "networkx", "jinja2", "filelock", "fsspec", "pluggy"}
    reported |= {"six", "dateutil", "yaml", "tomli", "ruff"}

    assert reported <= set(CONTEXT["_reserved_modules"])


def test_the_hook_refuses_every_reserved_module_name(tmp_path):
    hook = load_hook("pre_gen_project", answers(), tmp_path)

    for module in CONTEXT["_reserved_modules"]:
        problems = hook.check_package(module, set(CONTEXT["_reserved_modules"]))
        assert len(problems) == 1, module
        assert problems[0].question == "package_name"


def test_a_name_that_is_no_module_of_the_stacks_is_accepted(tmp_path):
    hook = load_hook("pre_gen_project", answers(), tmp_path)

    assert hook.check_package("handwritten_digits", set(CONTEXT["_reserved_modules"])) == []
