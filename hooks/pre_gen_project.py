"""Validate the answers before any file is written: one clear sentence per problem, exit 1.

The answers arrive as JSON data rendered by cookiecutter (never pasted into Python source),
so quotes, backslashes or code in an answer cannot change what this script does.
"""

from __future__ import annotations

import json
import keyword
import re
import sys

# Names the generated project imports or that Python tooling owns: a package called like
# one of them would shadow it and break the project in confusing ways.
RESERVED_PACKAGE_NAMES = {
    "torch", "torchvision", "torch_directml", "numpy", "matplotlib", "tqdm", "PIL",
    "pytest", "setuptools", "pip", "pkg_resources", "test", "tests", "src", "conftest",
    "site", "typing_extensions",
}  # fmt: skip
NO_SLUG = "_"  # cookiecutter.json's project_slug when the name has nothing to slugify
MAX_PACKAGE_LENGTH = 40  # keeps every generated import line within the 100-column limit
SLUG_PATTERN = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")
EMAIL_PATTERN = re.compile(r"^[^@\s<>,\"]+@[^@\s<>,\"]+\.[^@\s<>,\"]+$")
PYTHON_VERSION_PATTERN = re.compile(r"^3\.(\d+)$")


# Python < 3.10 has no sys.stdlib_module_names: the names most likely to be chosen by accident.
COMMON_STDLIB_NAMES = {
    "abc", "array", "ast", "code", "collections", "copy", "csv", "email", "io", "json",
    "logging", "math", "os", "platform", "queue", "random", "select", "signal", "statistics",
    "string", "sys", "time", "token", "types", "typing", "unittest",
}  # fmt: skip


def stdlib_names() -> set:
    return set(getattr(sys, "stdlib_module_names", COMMON_STDLIB_NAMES))


def version_tuple(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


def check_names(answers: dict) -> list:
    problems = []
    name = answers["project_name"].strip()
    slug = answers["project_slug"]
    package = answers["package_name"]
    if not name:
        problems.append("The project name is empty: type a name, for example 'Handwritten digits'.")
        return problems
    if slug == NO_SLUG:
        problems.append(
            f"The project name {name!r} has no letters or digits to make a folder name from: "
            "answer project_slug yourself, for example 'handwritten-digits'."
        )
        return problems
    if not SLUG_PATTERN.match(slug):
        problems.append(
            f"The folder name (project_slug) {slug!r} is not usable: use lower-case ASCII "
            "letters and digits separated by single dashes, for example 'handwritten-digits'."
        )
    if not (package.isascii() and package.isidentifier()) or keyword.iskeyword(package):
        problems.append(
            f"The package name {package!r} is not a Python identifier: use lower-case ASCII "
            "letters, digits and underscores, starting with a letter, for example "
            "'handwritten_digits'."
        )
    elif package != package.lower():
        problems.append(
            f"The package name {package!r} has capital letters: PEP 8 asks for lower case, "
            f"for example {package.lower()!r}."
        )
    elif len(package) > MAX_PACKAGE_LENGTH:
        shorter = package[:MAX_PACKAGE_LENGTH].rstrip("_")
        problems.append(
            f"The package name {package!r} is {len(package)} characters long: keep it to "
            f"{MAX_PACKAGE_LENGTH} or fewer, for example {shorter!r}."
        )
    elif package in RESERVED_PACKAGE_NAMES or package in stdlib_names():
        problems.append(
            f"The package name {package!r} would shadow the module of the same name that "
            "the project or Python itself imports: choose another, for example "
            f"'{package}_lenet'."
        )
    return problems


def check_author(answers: dict) -> list:
    problems = []
    if "," in answers["author_name"]:
        problems.append(
            f"The author name {answers['author_name']!r} contains a comma, which package "
            "metadata cannot hold: write the name without commas."
        )
    email = answers["author_email"].strip()
    if email and not EMAIL_PATTERN.match(email):
        problems.append(
            f"The author e-mail {email!r} is not an address: use the form name@example.com, "
            "or leave it empty."
        )
    return problems


def check_python_version(answers: dict) -> list:
    accelerator = answers["accelerator"]
    stack = answers["_stacks"][accelerator]
    low, high = stack["python_min"], stack["python_max"]
    wanted = answers["python_version"].strip()
    if not PYTHON_VERSION_PATTERN.match(wanted):
        return [
            f"The Python version {wanted!r} is not of the form 3.X: answer, for example, "
            f"'3.11' (allowed for {accelerator}: {low} to {high})."
        ]
    if not version_tuple(low) <= version_tuple(wanted) <= version_tuple(high):
        return [
            f"Python {wanted} is not supported with the {accelerator} accelerator: choose "
            f"{low} to {high}. {stack['python_note']}"
        ]
    return []


def validate(answers: dict) -> list:
    return check_names(answers) + check_author(answers) + check_python_version(answers)


def main(answers: dict) -> int:
    problems = validate(answers)
    for problem in problems:
        print(f"ERROR: {problem}", file=sys.stderr)
    if problems:
        print(
            "Nothing was generated. Run cookiecutter again with corrected answers.", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(r"""{{ cookiecutter | tojson }}""")))
