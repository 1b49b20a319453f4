"""Validate the answers before any file is written: one clear sentence per problem, exit 1.

The answers arrive as JSON data rendered by cookiecutter (never pasted into Python source),
so quotes, backslashes or code in an answer cannot change what this script does.

When answers are refused, the good ones are saved as a cookiecutter replay file without the
refused ones, so that `cookiecutter --replay-file` asks only those questions again.

When the answers are accepted and the project folder already holds files the post-generation
hook may prune (a re-bake with `cookiecutter -f`), copies of them are set aside first, so that
the pruning removes only what this bake wrote.
"""

from __future__ import annotations

import json
import keyword
import os
import re
import shlex
import shutil
import sys
import tempfile
import unicodedata
from pathlib import Path

# Names the generated project or Python tooling imports beyond what the pinned stacks install
# (those are in cookiecutter.json's _reserved_modules, written by tests/stack_modules.py);
# gpu_doctor is the project's doctor (its package, in doctor.pyz), imported beside the one named
# here, and instructor the package of the instructor's tools (python instructor.pyz).
RESERVED_PACKAGE_NAMES = {
    "test", "tests", "src", "conftest", "site", "sitecustomize", "gpu_doctor", "instructor"
}  # fmt: skip
NO_SLUG = "unnamed-project"  # cookiecutter.json's project_slug when the name gives no slug
MAX_PACKAGE_LENGTH = 40  # keeps every generated import line within the 100-column limit
MAX_SLUG_LENGTH = 40  # the same limit for the folder, distribution and environment name
SLUG_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
PACKAGE_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
EMAIL_PATTERN = re.compile(r"^[^@\s<>,\"]+@[^@\s<>,\"]+\.[^@\s<>,\"]+$")
PYTHON_VERSION_PATTERN = re.compile(r"^3\.(0|[1-9][0-9]*)$")
TEXT_QUESTIONS = ("project_name", "description", "author_name", "author_email")
# Every question whose answer is typed text (a replay file may hold any JSON value instead),
# with an example of a good answer for the sentence that refuses another type.
TYPED_QUESTIONS = {
    "project_name": "Handwritten digits",
    "project_slug": "handwritten-digits",
    "package_name": "handwritten_digits",
    "description": "Handwritten digits with LeNet-5",
    "author_name": "Jane Doe",
    "author_email": "jane@example.com",
    "python_version": "3.12",
}
# The words cookiecutter takes for yes and no (its YesNoPrompt), in a replay file too.
YES_WORDS = ("1", "true", "t", "yes", "y", "on")
NO_WORDS = ("0", "false", "f", "no", "n", "off")
# Device names Windows reserves in every folder, with or without an extension, in any case:
# Windows cannot create a file or folder of such a name (nor Git for Windows check one out).
WINDOWS_DEVICE_NAMES = {
    "con", "prn", "aux", "nul",
    *(f"{port}{digit}" for port in ("com", "lpt") for digit in "123456789\u00b9\u00b2\u00b3"),
}  # fmt: skip
# Questions whose default is derived from an earlier answer (see cookiecutter.json): when one
# of them is asked again, the answers it is derived from are asked again too.
DERIVED_FROM = {"project_slug": "project_name", "package_name": "project_slug"}
ANSWERS_FILE = "lenet-template-answers.json"
# Every path post_gen_project.OPTIONAL_PATHS may remove (tests/test_hooks.py keeps them equal),
# and the folder where this hook sets aside the ones that exist before cookiecutter writes.
PRUNABLE_PATHS = (
    ".github",
    ".run",
    ".vscode",
    "LICENSE",
    "environment.yml",
    "requirements.txt",
    ".python-version",
)
KEPT_FOLDER = ".lenet-template-kept"

# Python < 3.10 has no sys.stdlib_module_names: the names most likely to be chosen by accident.
COMMON_STDLIB_NAMES = {
    "abc", "array", "ast", "code", "collections", "copy", "csv", "email", "io", "json",
    "logging", "math", "os", "platform", "queue", "random", "select", "signal", "statistics",
    "string", "sys", "time", "token", "types", "typing", "unittest",
}  # fmt: skip


class Problem:
    """One refused answer: the question it concerns and the sentence that explains it."""

    def __init__(self, question: str, sentence: str) -> None:
        self.question = question
        self.sentence = sentence

    def __repr__(self) -> str:
        return f"Problem({self.question!r}, {self.sentence!r})"


def stdlib_names() -> set:
    return set(getattr(sys, "stdlib_module_names", COMMON_STDLIB_NAMES))


def version_tuple(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


def windows_device_name(name: str) -> bool:
    """Whether Windows reserves ``name`` for a device (CON, NUL, COM1, lpt2.txt, ...)."""
    return name.split(".")[0].rstrip(" ").lower() in WINDOWS_DEVICE_NAMES


def shown(value) -> str:
    """An answer as the user wrote it: quoted text, or the JSON a replay file holds."""
    return repr(value) if isinstance(value, str) else json.dumps(value)


def json_kind(value) -> str:
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def check_types(answers: dict) -> list:
    """Answers that are not text where text is asked (a hand-edited replay file's numbers,
    nulls, lists or objects): each is the user's answer to correct, never a crash."""
    problems = []
    for question, example in TYPED_QUESTIONS.items():
        value = answers.get(question)
        if question in answers and not isinstance(value, str):
            problems.append(
                Problem(
                    question,
                    f"The {question} answer {shown(value)} is {json_kind(value)}, not text: "
                    f'write it in double quotes, for example "{example}".',
                )
            )
    return problems


def control_characters(text: str) -> list:
    """Characters no file format here can hold as typed (tabs, newlines, other controls)."""
    return sorted({c for c in text if unicodedata.category(c) in ("Cc", "Cs")})


def check_text(answers: dict) -> list:
    problems = []
    for question in TEXT_QUESTIONS:
        if not isinstance(answers[question], str):
            continue  # check_types refuses it
        found = control_characters(answers[question])
        if found:
            names = ", ".join(f"U+{ord(c):04X}" for c in found)
            problems.append(
                Problem(
                    question,
                    f"The {question} answer contains control characters ({names}): type it "
                    "on one line, without tabs or line breaks.",
                )
            )
    return problems


def check_slug(slug: str) -> list:
    if len(slug) > MAX_SLUG_LENGTH:
        shorter = slug[:MAX_SLUG_LENGTH].rstrip("-._")
        return [
            Problem(
                "project_slug",
                f"The folder name (project_slug) is {len(slug)} characters long: keep it to "
                f"{MAX_SLUG_LENGTH} or fewer, for example {shorter!r}.",
            )
        ]
    if not SLUG_PATTERN.match(slug):
        return [
            Problem(
                "project_slug",
                f"The folder name (project_slug) {slug!r} is not usable: use lower-case ASCII "
                "letters and digits separated by single dashes, for example "
                "'handwritten-digits'.",
            )
        ]
    if windows_device_name(slug):
        return [
            Problem(
                "project_slug",
                f"The folder name (project_slug) {slug!r} is a device name that Windows "
                "reserves (CON, PRN, AUX, NUL, COM1 to COM9, LPT1 to LPT9), so Windows cannot "
                f"create that folder: choose another, for example '{slug}-digits'.",
            )
        ]
    return []


def check_package(package: str, reserved: set) -> list:
    def problem(sentence: str) -> list:
        return [Problem("package_name", sentence)]

    if package.startswith("__") and package.endswith("__") and len(package) > 4:
        return problem(
            f"The package name {package!r} is a dunder name that Python reserves for itself: "
            f"choose a plain name, for example {package.strip('_') + '_digits'!r}."
        )
    if keyword.iskeyword(package):
        return problem(
            f"The package name {package!r} is a keyword of Python, which `import` cannot take: "
            f"choose another name, for example {package + '_digits'!r}."
        )
    if not (package.isascii() and package.isidentifier()):
        return problem(
            f"The package name {package!r} is not a Python identifier: use lower-case ASCII "
            "letters, digits and underscores, starting with a letter, for example "
            "'handwritten_digits'."
        )
    if package != package.lower():
        return problem(
            f"The package name {package!r} has capital letters: PEP 8 asks for lower case, "
            f"for example {package.lower()!r}."
        )
    if not PACKAGE_PATTERN.match(package):
        return problem(
            f"The package name {package!r} does not start with a letter: start it with one, "
            f"for example {'digits' + package!r}."
        )
    if len(package) > MAX_PACKAGE_LENGTH:
        shorter = package[:MAX_PACKAGE_LENGTH].rstrip("_")
        return problem(
            f"The package name {package!r} is {len(package)} characters long: keep it to "
            f"{MAX_PACKAGE_LENGTH} or fewer, for example {shorter!r}."
        )
    if package in reserved or package in RESERVED_PACKAGE_NAMES or package in stdlib_names():
        return problem(
            f"The package name {package!r} would shadow the module of the same name that "
            "the project, its pinned packages or Python itself imports: choose another, for "
            f"example '{package}_lenet'."
        )
    if windows_device_name(package):
        return problem(
            f"The package name {package!r} is a device name that Windows reserves (CON, PRN, "
            "AUX, NUL, COM1 to COM9, LPT1 to LPT9), so Windows cannot create its folder: "
            f"choose another, for example '{package}_digits'."
        )
    return []


def check_names(answers: dict) -> list:
    if not all(isinstance(answers[q], str) for q in ("project_name", "project_slug")):
        # check_types refuses the name or slug, and asks again for those derived from them.
        return []
    name = answers["project_name"].strip()
    slug = answers["project_slug"]
    if not name:
        return [
            Problem(
                "project_name",
                "The project name is empty: type a name, for example 'Handwritten digits'.",
            )
        ]
    if slug == NO_SLUG and not any(c.isalnum() for c in name):
        return [
            Problem(
                "project_slug",
                f"The project name {name!r} has no letters or digits to make a folder name "
                "from: answer project_slug yourself, for example 'handwritten-digits'.",
            )
        ]
    reserved = set(answers.get("_reserved_modules", []))
    package = answers["package_name"]
    if not isinstance(package, str):
        return check_slug(slug)  # check_types refuses the package name
    return check_slug(slug) + check_package(package, reserved)


def check_author(answers: dict) -> list:
    problems = []
    if isinstance(answers["author_name"], str) and "," in answers["author_name"]:
        problems.append(
            Problem(
                "author_name",
                f"The author name {answers['author_name']!r} contains a comma, which package "
                "metadata cannot hold: write the name without commas.",
            )
        )
    email = answers["author_email"]
    email = email.strip() if isinstance(email, str) else ""  # check_types refuses another type
    if email and not EMAIL_PATTERN.match(email):
        problems.append(
            Problem(
                "author_email",
                f"The author e-mail {email!r} is not an address: use the form "
                "name@example.com, or leave it empty.",
            )
        )
    return problems


def template_choices(answers: dict, questions: dict) -> dict:
    """Each choice question's allowed answers, as the template's cookiecutter.json lists them.

    cookiecutter checks the choices it asks and those typed on its command line, but takes a
    replay file's answers as they are: a hand-edited one reaches this hook unchecked.
    ``questions`` is cookiecutter's own copy of cookiecutter.json's questions, which holds the
    lists whenever cookiecutter asked (or could have asked) them; under a replay it holds the
    replay's answers instead, so a list there that is the answer itself (``["tpu"]``) is the
    user's answer, not the template's list. The lists are then read from the template folder,
    where cookiecutter names it by a path that reads from here (a zip, a git clone, an
    absolute path: a relative one is relative to where cookiecutter was started, unknown to a
    hook, which runs in the new project's folder). Failing both, the answers' own data still
    lists the accelerators (the stack table) and says which answers are yes or no.
    """
    lists = {
        key: value
        for key, value in questions.items()
        if isinstance(value, bool) or (isinstance(value, list) and value != answers.get(key))
    }
    if not any(isinstance(value, list) for value in lists.values()):
        lists = questions_in_template_folder(answers.get("_repo_dir")) or {
            "accelerator": list(answers.get("_stacks", {})),
            **{key: value for key, value in answers.items() if isinstance(value, bool)},
        }
    return {
        question: [True, False] if isinstance(default, bool) else default
        for question, default in lists.items()
        if not question.startswith("_")
    }


def questions_in_template_folder(repo_dir) -> dict:
    """cookiecutter.json's questions from the template folder, when its path reads from here."""
    if not repo_dir or not Path(repo_dir).is_absolute():
        return {}
    context_file = Path(repo_dir) / "cookiecutter.json"
    if not context_file.is_file():
        return {}
    context = json.loads(context_file.read_text(encoding="utf-8"))
    return {key: value for key, value in context.items() if isinstance(value, (list, bool))}


def spoken(value) -> str:
    """An allowed answer as the user types it (JSON's true and false for yes/no questions)."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def yes_no_word(text: str):
    """True or False for a word cookiecutter takes as yes or no ('y', 'off', ...), else None."""
    word = text.strip().lower()
    return True if word in YES_WORDS else False if word in NO_WORDS else None


def check_choices(answers: dict, questions: dict) -> list:
    problems = []
    for question, allowed in template_choices(answers, questions).items():
        value = answers.get(question)
        if any(type(value) is type(choice) and value == choice for choice in allowed):
            continue
        yes_or_no = all(isinstance(choice, bool) for choice in allowed)
        if yes_or_no and isinstance(value, str) and yes_no_word(value) is not None:
            continue  # a word cookiecutter itself takes for yes or no
        listed = ", ".join(spoken(choice) for choice in allowed[:-1])
        listed = f"{listed} or {spoken(allowed[-1])}" if listed else spoken(allowed[-1])
        if yes_or_no:
            listed += " (in a replay file, without quotes)"
        problems.append(
            Problem(
                question,
                f"The {question} answer {shown(value)} is not one of its answers: answer {listed}.",
            )
        )
    return problems


def check_python_version(answers: dict) -> list:
    accelerator = answers["accelerator"]
    stack = answers["_stacks"][accelerator]
    low, high = stack["python_min"], stack["python_max"]
    typed = answers["python_version"]
    wanted = typed.strip()

    def problem(sentence: str) -> list:
        return [Problem("python_version", sentence)]

    allowed = f"allowed for {accelerator}: {low} to {high}"
    if wanted != typed:
        return problem(
            f"The Python version {typed!r} has spaces around it: answer {wanted!r} ({allowed})."
        )
    if not PYTHON_VERSION_PATTERN.match(wanted):
        loose = re.match(r"^3\.0*([0-9]+)$", wanted)
        if loose:
            return problem(
                f"The Python version {wanted!r} is not written as Python writes it: answer "
                f"'3.{int(loose.group(1))}' ({allowed})."
            )
        return problem(
            f"The Python version {wanted!r} is not of the form 3.X: answer, for example, "
            f"'3.11' ({allowed})."
        )
    if not version_tuple(low) <= version_tuple(wanted) <= version_tuple(high):
        return problem(
            f"Python {wanted} is not supported with the {accelerator} accelerator: choose "
            f"{low} to {high}. {stack['python_note']}"
        )
    return []


def validate(answers: dict, questions: dict | None = None) -> list:
    """Every problem with the answers, as Problem objects (empty when all are fine).

    ``questions``: cookiecutter's copy of cookiecutter.json's questions (see template_choices).
    """
    types = check_types(answers)
    choices = check_choices(answers, questions or {})
    refused = {problem.question for problem in types + choices}
    # The Python range depends on the accelerator: it can be checked only against a known one.
    known = not {"accelerator", "python_version"} & refused
    python = check_python_version(answers) if known else []
    checks = check_text(answers) + check_names(answers) + check_author(answers)
    return types + checks + choices + python


def questions_to_ask_again(problems: list) -> set:
    """The refused questions, with those they are derived from and those derived from them."""
    again = {p.question for p in problems}
    changed = True
    while changed:
        changed = False
        for derived, source in DERIVED_FROM.items():
            if derived in again and source not in again:
                again.add(source)
                changed = True
            if source in again and derived not in again:
                again.add(derived)
                changed = True
    return again


def replay_answers(answers: dict, ask_again: set) -> dict:
    """A cookiecutter replay file: the public answers except those to be asked again."""
    kept = {
        key: value
        for key, value in answers.items()
        if not key.startswith("_") and key not in ask_again
    }
    return {"cookiecutter": kept}


def answers_locations(answers: dict, project_dir: Path) -> list:
    """Where to save the answers: the output folder, unless cookiecutter is about to delete it."""
    locations = []
    output_dir = answers.get("_output_dir") or str(project_dir.parent)
    output = Path(output_dir)
    if output.resolve() != project_dir.resolve():
        locations.append(output)
    locations.append(Path(tempfile.gettempdir()))
    return locations


def save_answers(answers: dict, ask_again: set, project_dir: Path):
    """Write the replay file; returns its path, or None when no folder could take it."""
    text = json.dumps(replay_answers(answers, ask_again), indent=2, ensure_ascii=False) + "\n"
    for folder in answers_locations(answers, project_dir):
        path = folder / ANSWERS_FILE
        try:
            path.write_text(text, encoding="utf-8")
        except OSError:
            continue
        return path
    return None


def quoted(text: str, windows: bool = os.name == "nt") -> str:
    """``text`` as one word for this machine's shell, as the post-generation hook's cd line
    quotes it: single quotes for POSIX shells; on Windows double quotes, or PowerShell's single
    quotes where $ or a backtick would be expanded."""
    if re.fullmatch(r"[\w.:/\\-]+", text):
        return text
    if not windows:
        return shlex.quote(text)
    if "$" in text or "`" in text:
        return "'" + text.replace("'", "''") + "'"
    return f'"{text}"'


def rerun_command(answers: dict, replay_file: Path) -> str:
    template = answers.get("_template") or "<template>"
    command = ["cookiecutter", "--replay-file", quoted(str(replay_file))]
    if answers.get("_output_dir"):
        command += ["-o", quoted(answers["_output_dir"])]
    return " ".join([*command, quoted(template)])


def use_colour(stream) -> bool:
    """Colour on a terminal that shows it: never with NO_COLOR set, or on TERM=dumb (Emacs's
    shell, some CI logs), which prints the escape sequences as text."""
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def refusal_report(problems: list, answers: dict, replay_file, colour: bool = False) -> str:
    """The block printed when answers are refused: framed, so no log line can hide it."""
    red, bold, reset = ("\033[1;31m", "\033[1m", "\033[0m") if colour else ("", "", "")
    rule = "=" * 78
    count = len(problems)
    title = "1 answer needs" if count == 1 else f"{count} answers need"
    lines = ["", f"{red}{rule}", f"Nothing was generated: {title} correcting.{reset}", ""]
    lines += [f"{bold}ERROR: {p.sentence}{reset}" for p in problems]
    lines.append("")
    again = questions_to_ask_again(problems)
    ask_again = [question for question in answers if question in again]  # in question order
    if replay_file is not None:
        lines += [
            f"Your other answers are saved in {replay_file}.",
            f"Run this to answer only {', '.join(ask_again)} again:",
            "",
            f"    {rerun_command(answers, replay_file)}",
        ]
    else:
        lines.append("Run cookiecutter again with corrected answers.")
    lines += [
        "",
        "(cookiecutter's own 'Hook script failed' message and traceback below only repeat "
        "that the answers above were refused.)",
        f"{red}{rule}{reset}",
        "",
    ]
    return "\n".join(lines)


def set_aside(project_dir: Path) -> list:
    """Copy the prunable paths that exist before this bake into KEPT_FOLDER; returns them.

    cookiecutter -f then overwrites them; the post-generation hook puts the copies back where
    its pruning would otherwise delete a user's own files (workflows, editor settings).
    """
    present = [name for name in PRUNABLE_PATHS if os.path.lexists(project_dir / name)]
    if not present:
        return []
    kept = project_dir / KEPT_FOLDER
    kept.mkdir()
    for name in present:
        source, copy = project_dir / name, kept / name
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, copy, symlinks=True)
        else:
            shutil.copy2(source, copy, follow_symlinks=False)
    return present


def keep_existing_files(project_dir: Path) -> int:
    """Set aside the files a re-bake could prune; exit code 1 with a sentence when it cannot."""
    kept = project_dir / KEPT_FOLDER
    if os.path.lexists(kept):
        print(
            f"ERROR: {kept} holds files set aside by an earlier bake that did not finish: move "
            "them back into the project folder (or delete that folder), then run cookiecutter "
            "again. Nothing was generated.",
            file=sys.stderr,
        )
        return 1
    try:
        set_aside(project_dir)
    except OSError as error:
        shutil.rmtree(kept, ignore_errors=True)
        print(
            f"ERROR: The files already in {project_dir} could not be set aside before "
            f"cookiecutter overwrites them ({error}): free some disk space or fix the folder's "
            "permissions, then run cookiecutter again. Nothing was generated.",
            file=sys.stderr,
        )
        return 1
    return 0


class Steps:
    """What the hook is doing now, so that a failure of its own can say where it happened."""

    current = "reading the answers cookiecutter passed to it"


def main(answers: dict, project_dir: Path, questions: dict | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    Steps.current = "checking the answers against cookiecutter.json"
    problems = validate(answers, questions)
    if not problems:
        Steps.current = f"setting aside the files already in {project_dir}"
        return keep_existing_files(project_dir)
    Steps.current = "saving the accepted answers for a rerun"
    replay_file = save_answers(answers, questions_to_ask_again(problems), project_dir)
    print(refusal_report(problems, answers, replay_file, use_colour(sys.stderr)), file=sys.stderr)
    return 1


def template_bug_report(error: BaseException, template: str) -> str:
    """The last resort: a failure of this hook itself is the template's bug, never the user's."""
    where = f" ({template})" if template else ""
    return (
        f"ERROR: The template's pre-generation hook failed while {Steps.current}: "
        f"{type(error).__name__}: {error}. This is a bug of the template{where}, not a problem "
        "with your answers: please report this message to the template's maintainers (its "
        "repository's issues). Nothing was generated."
    )


if __name__ == "__main__":
    template = ""
    try:
        context = json.loads(r"""{{ cookiecutter | tojson }}""")
        template = str(context.get("_template") or "")
        # cookiecutter's copy of cookiecutter.json's questions (absent under cruft)
        questions = json.loads(r"""{{ _cookiecutter | default({}) | tojson }}""")
        sys.exit(main(context, Path.cwd(), questions))
    except Exception as error:  # a bug here must still read as one sentence, not a traceback
        print(template_bug_report(error, template), file=sys.stderr)
        sys.exit(1)
