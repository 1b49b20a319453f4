"""Finish the generated project: prune unchosen options, record the answers, check the machine.

Never stops generation with a traceback: the project is already written, so anything
unexpected becomes a warning and a hint, and the next steps are always printed.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

# One table: (question, answer) -> paths that answer removes from the generated project.
OPTIONAL_PATHS = {
    ("env_manager", "conda"): ["requirements.txt", ".python-version"],
    ("env_manager", "venv"): ["environment.yml", ".python-version"],
    ("env_manager", "uv"): ["environment.yml", "requirements.txt"],
    ("ide", "pycharm"): [".vscode"],
    ("ide", "vscode"): [".run"],
    ("ide", "none"): [".run", ".vscode"],
    ("license", "none"): ["LICENSE"],
    ("github_actions", False): [".github"],
}
ANSWERS_FILE = ".cookiecutter.json"
# Where the pre-generation hook set aside the prunable paths that existed before this bake.
KEPT_FOLDER = ".lenet-template-kept"
# The replay file the pre-generation hook writes when it refuses answers.
REPLAY_FILE = "lenet-template-answers.json"
# Yes/no questions, and the words cookiecutter takes for yes and no (its YesNoPrompt): a replay
# file may hold "no" or "off" where the question's answer is false.
YES_NO_QUESTIONS = ("github_actions",)
YES_WORDS = ("1", "true", "t", "yes", "y", "on")


def as_booleans(answers: dict) -> dict:
    """The answers with each yes/no answer a bool, as the pre-generation hook accepted it."""
    fixed = dict(answers)
    for question in YES_NO_QUESTIONS:
        if isinstance(fixed.get(question), str):
            fixed[question] = fixed[question].strip().lower() in YES_WORDS
    return fixed


def paths_to_remove(answers: dict) -> list:
    paths = []
    for (question, answer), removed in OPTIONAL_PATHS.items():
        if answers.get(question) == answer:
            paths.extend(removed)
    return list(dict.fromkeys(paths))


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def prune(project_dir: Path, answers: dict) -> list:
    """Remove what this bake wrote for the options not chosen; a re-bake with cookiecutter -f
    gets back, as they were, the files that were there before it (a user's own workflows,
    editor settings, requirements.txt). Returns those: the answers leave them out, and an
    earlier bake may have written them, so the user is told."""
    kept = project_dir / KEPT_FOLDER
    left = []
    for relative in paths_to_remove(answers):
        remove(project_dir / relative)
        if os.path.lexists(kept / relative):
            os.replace(kept / relative, project_dir / relative)
            left.append(relative)
    if os.path.lexists(kept):
        shutil.rmtree(kept)
    return left


def remove_used_replay_files(answers: dict) -> list:
    """Delete the refusal's replay file once a bake has used its answers; returns the paths.

    It holds the author's name and e-mail; the project's .cookiecutter.json now holds them.
    A replay file with any other answer belongs to another project and stays.
    """
    folders = [answers.get("_output_dir"), tempfile.gettempdir()]
    removed = []
    for folder in filter(None, folders):
        path = Path(folder) / REPLAY_FILE
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))["cookiecutter"]
            used = all(answers.get(key) == value for key, value in saved.items())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if used and path not in removed:
            path.unlink()
            removed.append(path)
    return removed


def public_answers(answers: dict) -> dict:
    """The answers a user gave, in cookiecutter's replay format (private keys left out)."""
    kept = {k: v for k, v in answers.items() if not k.startswith("_")}
    kept["_template"] = answers.get("_template", "")
    return {"cookiecutter": kept}


def write_answers(project_dir: Path, answers: dict) -> None:
    text = json.dumps(public_answers(answers), indent=2, ensure_ascii=False) + "\n"
    # newline="\n": LF on Windows too, like every other file of the project (.editorconfig).
    with open(project_dir / ANSWERS_FILE, "w", encoding="utf-8", newline="\n") as file:
        file.write(text)


DOCTOR = "gpu_doctor"  # the generated project's doctor: its package, inside DOCTOR_FILE
DOCTOR_FILE = "doctor.pyz"  # one zip application in the project's root folder
NO_CONDA_HERE = "ENV-ARM64-NO-CONDA"  # its finding: conda does not run on this machine


def forget_doctor() -> None:
    """Drop the doctor's modules imported for an earlier project in this process (a test run
    generates many): each project's doctor reads its own environments/project.json."""
    for name in [name for name in sys.modules if name.split(".")[0] == DOCTOR]:
        del sys.modules[name]


def environment_report(project_dir: Path) -> tuple:
    """Run the generated project's doctor: its standard-library checks, as verify_install does.

    Returns the printed report and the environment they found best for this machine (a dict
    with its stack and commands), or None when they could not tell.
    """
    sys.dont_write_bytecode = True  # leave no __pycache__ behind in the new project
    doctor_file = str(project_dir / DOCTOR_FILE)
    sys.path.insert(0, doctor_file)  # a zip on the path is importable (zipimport)
    forget_doctor()
    try:
        envcheck = importlib.import_module(f"{DOCTOR}.envcheck")
        details: dict = {}
        findings = envcheck.run_checks(context="hook", details=details)
        best = details.get("recommendation")
        if isinstance(best, dict) and any(f.code == NO_CONDA_HERE for f in findings):
            best = {**best, "no_conda": True}  # the report above says why
        return envcheck.format_findings(findings), best
    except Exception as error:  # this machine is unknown to the checks: warn, never stop
        return (
            f"[warn] The environment checks could not run here ({error!r}); "
            "run verify_install once the environment exists."
        ), None
    finally:
        sys.path.remove(doctor_file)
        forget_doctor()


def another_environment(answers: dict, best) -> dict | None:
    """The environment the checks found best, when it is not the default file's stack (or
    when conda cannot make it on this machine: then its venv commands)."""
    if not isinstance(best, dict) or best.get("stack") is None:
        return None
    if best.get("stack") == answers["accelerator"] and not no_conda_here(answers, best):
        return None
    return best


def no_conda_here(answers: dict, best) -> bool:
    """A conda project on a machine that conda does not run on (Windows on ARM): the steps
    make a venv instead."""
    return answers["env_manager"] == "conda" and isinstance(best, dict) and best.get("no_conda")


def quoted(path: Path, windows: bool = os.name == "nt") -> str:
    """``path`` as one word for the shell the steps are typed into here. POSIX shells: single
    quotes, in which nothing is special ($HOME, backticks and " stay as they are). Windows:
    double quotes, which PowerShell and cmd both take, unless $ or a backtick would make
    PowerShell expand them: then PowerShell's single quotes (a ' in them doubled)."""
    text = str(path)
    if re.fullmatch(r"[\w.:/\\-]+", text):
        return text
    if not windows:
        return shlex.quote(text)
    if "$" in text or "`" in text:
        return "'" + text.replace("'", "''") + "'"
    return f'"{text}"'


# The widest line of prose the steps print (commands keep their own lines, whatever their width).
WIDTH = 80
CONDA_NOT_FOUND = textwrap.wrap(
    "If the terminal does not know `conda`: on Windows use the Miniforge Prompt or the "
    "Anaconda Prompt from the Start menu, or run `conda init powershell` there once and open "
    "a new terminal; on Linux and macOS run `conda init` once (for Miniforge: "
    "`~/miniforge3/bin/conda init`) and open a new terminal.",
    WIDTH,
    break_long_words=False,
    break_on_hyphens=False,
)


VERIFY = "'1. Verify install'"  # a run configuration's name: one word to wrap


def wrap(text: str) -> list:
    """A sentence or two as lines of at most WIDTH characters; a name is never split."""
    # A menu path breaks after its ">", never before: no line starts with ">".
    text = text.replace(VERIFY, VERIFY.replace(" ", "\0")).replace(" >", "\0>")
    lines = textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)
    return [line.replace("\0", " ") for line in lines]


def default_file(answers: dict) -> str:
    if answers["env_manager"] == "uv":
        return f"the {answers['accelerator']} group of pyproject.toml"
    return "environment.yml" if answers["env_manager"] == "conda" else "requirements.txt"


UV_NOT_FOUND = [
    "If the terminal does not know `uv`: install it once (docs.astral.sh/uv: on Windows",
    "`winget install astral-sh.uv`, elsewhere `curl -LsSf https://astral.sh/uv/install.sh | sh`)",
    "and open a new terminal. `uv sync` makes .venv, with the Python in .python-version.",
]


def default_platforms(answers: dict) -> tuple:
    """Where the default stack runs, from the stack table's platforms: whether Windows, and the
    name of its other systems ("Linux and macOS", "Linux", "WSL2"; "" for none)."""
    stack = answers.get("_stacks", {}).get(answers["accelerator"], {})
    platforms = stack.get("platforms", "Windows, Linux, macOS")
    posix = " and ".join(name for name in ("Linux", "macOS") if name in platforms)
    return "Windows" in platforms, posix or ("WSL2" if "WSL2" in platforms else "")


def environment_steps(answers: dict, best=None) -> list:
    """The README's "In a terminal" steps for this environment manager, as printed lines:
    the default file's (on the systems its stack runs on), or ``best``'s (another
    environment, for this machine only)."""
    manager = answers["env_manager"]
    if best is not None:
        commands = best["commands"][manager if manager in ("conda", "uv") else "venv"]
        found = {"conda": CONDA_NOT_FOUND, "uv": UV_NOT_FOUND}.get(manager, [])
        return [*(f"  {command}" for command in commands), *found]
    if manager == "conda":
        slug = answers["project_slug"]
        return ["  conda env create -f environment.yml", f"  conda activate {slug}",
                *CONDA_NOT_FOUND]  # fmt: skip
    version = answers["python_version"]
    if manager == "uv":
        sync = f"  uv sync --group {answers['accelerator']}"  # the default group is dev alone
        windows = [sync, "  .venv\\Scripts\\activate"]
        posix = [sync, "  source .venv/bin/activate"]
    else:
        install = "  pip install -r requirements.txt"
        windows = [f"  py -{version} -m venv .venv", "  .venv\\Scripts\\activate", install]
        posix = [f"  python{version} -m venv .venv", "  source .venv/bin/activate", install]
    on_windows, others = default_platforms(answers)
    steps = ["On Windows:", *windows] if on_windows else []
    steps += [f"On {others}:", *posix] if others else []
    return steps + (UV_NOT_FOUND if manager == "uv" else [])


def environment_choice(answers: dict, best, found) -> list:
    """Which environment the steps below create, and why."""
    default, file = answers["accelerator"], default_file(answers)
    if best is None:
        fits = isinstance(found, dict) and found.get("stack") == default
        why = "the one the check above found best for this machine"
        if not fits:
            why = "or, where it does not fit, the one `python doctor.pyz` names"
        return wrap(f"Create the {default} environment ({file}), {why}:")
    stack = best["stack"]
    if best.get("no_conda"):
        return wrap(f"Create the {stack} environment with venv: conda has no Windows on ARM "
                    "build (the check above says why):")  # fmt: skip
    return wrap(
        f"Create the {stack} environment, the one the check above found best for this machine "
        f"({file} is the {default} environment, for the machines it fits):"
    )


def editor_steps(answers: dict, best) -> list:
    """How to get the interpreter and run the configurations in the chosen editors."""
    conda = answers["env_manager"] == "conda"
    if answers["env_manager"] == "uv":
        return uv_editor_steps(answers, best)
    if best is None:
        interpreter = f"accept the interpreter it offers from {default_file(answers)} (or add one)"
        vscode_interpreter = "select the environment's interpreter"
    else:
        stack = best["stack"]
        name = f"{answers['project_slug']}-{stack}" if conda else f".venv-{stack}"
        kind = "Conda" if conda else "Virtualenv"
        file = default_file(answers)
        offered = f" (not the {answers['accelerator']} one PyCharm offers from {file})"
        interpreter = (
            f"create the {stack} environment in its Terminal with the commands above"
            f"{offered if conda else ''}, and select it: Settings > Python Interpreter > Add "
            f"Interpreter > Add Local Interpreter > {kind} > {name}"
        )
        vscode_interpreter = f"create the {stack} environment as above and select {name}"
    vscode = f"open the folder, {vscode_interpreter} as its interpreter"
    return ide_lines(answers, interpreter, vscode)


def ide_lines(answers: dict, pycharm: str, vscode: str) -> list:
    """A paragraph for each chosen editor: ``pycharm`` and ``vscode`` say how to get the
    interpreter; both end at the first run configuration."""
    steps = []
    if answers["ide"] in ("pycharm", "both"):
        steps += wrap(
            f"In PyCharm: File > Open the folder, {pycharm}. Then run {VERIFY} and "
            "the numbered run configurations after it (top right)."
        )
    if answers["ide"] in ("vscode", "both"):
        steps += wrap(f"In VS Code: {vscode}, then run {VERIFY} from Run and Debug.")
    return steps


def device_steps(answers: dict, best) -> list:
    """AMD's ROCm build for Windows as the default file, on a GPU it runs: the default file
    installs torch without GPU kernels, so the one command with this GPU's kernels follows."""
    if not best or best.get("stack") != answers["accelerator"]:
        return []
    manager = answers["env_manager"]
    commands = best.get("commands", {}).get(manager if manager in ("conda", "uv") else "venv")
    # pip's command names the extra; uv's names the group of this GPU's target.
    device = [command for command in commands or [] if "[device-" in command or "-gfx" in command]
    if not device:
        return []
    return ["Then add this GPU's kernels to the activated environment (about 1 GB):",
            *(f"  {command}" for command in device)]  # fmt: skip


def uv_editor_steps(answers: dict, best) -> list:
    """The editors with a uv project: both use the project's .venv that `uv sync` makes."""
    select = "Settings > Python Interpreter > Add Interpreter > Add Local Interpreter > uv > "
    if best is None:
        pycharm = (
            "accept the uv environment it offers (a plain `uv sync`: the dev tools, no stack), "
            f"then run `uv sync --group {answers['accelerator']}` in its Terminal (or select "
            f".venv yourself: {select}Select existing)"
        )
    else:
        pycharm = (
            f"run the commands above in its Terminal, and select .venv: {select}Select existing "
            f"(a plain `uv sync` installs no stack and removes {best['stack']}: sync with "
            f"`--group {best['stack']}`)"
        )
    vscode = "open the folder after `uv sync`, select .venv's interpreter"
    return ide_lines(answers, pycharm, vscode)


def next_steps(answers: dict, project_dir: Path, best=None) -> str:
    """What to do now; ``best`` is the environment the checks found best for this machine."""
    found = best
    best = another_environment(answers, best)
    if no_conda_here(answers, best):
        answers = {**answers, "env_manager": "venv"}
    package = answers["package_name"]
    steps = [
        "Next steps in a terminal:",
        f"  cd {quoted(project_dir)}",
        *environment_choice(answers, best, found),
        *environment_steps(answers, best),
    ]
    if best is None:
        steps += device_steps(answers, found)
    steps += [
        *wrap("Then, in that environment, check the install and train (synthetic digits: no "
              "download):"),
        f"  python -m {package}.verify_install",
        f"  python -m {package}.train --dataset synthetic --epochs 1",
        f"  python -m {package}.train",
        # The check above is the doctor's: every other laptop in a room runs it first.
        *wrap("On another laptop, run `python doctor.pyz` in the project folder first: it "
              "checks that laptop and prints the commands for the environment that fits it."),
        *wrap("Put it under version control. pre-commit's first run downloads its checks: it "
              "needs the network once (offline, leave out the two pre-commit lines until you are "
              "online); after that it checks every commit, offline too:"),
        "  git init",
        "  git add .",
        "  pre-commit run --all-files",
        "  pre-commit install",
    ]  # fmt: skip
    return "\n".join(steps + editor_steps(answers, best))


def inside_cruft_update(answers: dict, project_dir: Path) -> bool:
    """Whether this bake is one of the two that `cruft update` makes to compare the template's
    old and new versions: cruft (which records the template's _commit, and no _output_dir)
    bakes them into fresh temporary folders of its own, gone when it ends, so the next steps
    for that folder would only mislead."""
    if "_commit" not in answers or "_output_dir" in answers:
        return False
    output = project_dir.resolve().parent
    temporary = Path(tempfile.gettempdir()).resolve()
    return output.parent == temporary and output.name.startswith("tmp")


def main(answers: dict, project_dir: Path) -> int:
    # A Windows console may not encode every character of a name: never fail on printing.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    left = []
    try:
        left = prune(project_dir, as_booleans(answers))
        write_answers(project_dir, as_booleans(answers))
        used_replay_files = remove_used_replay_files(answers)
    except OSError as error:
        used_replay_files = []
        kept = project_dir / KEPT_FOLDER
        where = f"; the files it had before this bake are in {kept}" if kept.exists() else ""
        print(f"[warn] Could not finish tidying the project: {error}{where}", file=sys.stderr)
    if inside_cruft_update(answers, project_dir):
        return 0  # cruft reports the update; the project's own steps were printed at its start
    stack = f"{answers['accelerator']}, Python {answers['python_version']}"
    print(f"\nCreated {project_dir.resolve()} ({stack}).")
    for path in used_replay_files:
        print(f"Removed {path}: its answers are now in the project's {ANSWERS_FILE}.")
    if left:
        print(
            f"Left as they were before this bake: {', '.join(left)}; your answers leave them "
            "out, so delete them if an earlier bake wrote them and you do not use them."
        )
    print("\nThis machine:")
    report, best = environment_report(project_dir)
    print(report)
    print()
    print(next_steps(answers, project_dir.resolve(), best))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(json.loads(r"""{{ cookiecutter | tojson }}"""), Path.cwd()))
    except Exception as error:  # the project exists; a hook crash would make cookiecutter delete it
        print(
            f"[warn] The post-generation step hit an unexpected problem: {error!r}", file=sys.stderr
        )
        sys.exit(0)
