"""Finish the generated project: prune unchosen options, record the answers, check the machine.

Never stops generation with a traceback: the project is already written, so anything
unexpected becomes a warning and a hint, and the next steps are always printed.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

# One table: (question, answer) -> paths that answer removes from the generated project.
OPTIONAL_PATHS = {
    ("env_manager", "conda"): ["requirements.txt"],
    ("env_manager", "venv"): ["environment.yml"],
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


def prune(project_dir: Path, answers: dict) -> None:
    """Remove what this bake wrote for the options not chosen; a re-bake with cookiecutter -f
    gets back, as they were, the files that were there before it (a user's own workflows,
    editor settings, requirements.txt)."""
    kept = project_dir / KEPT_FOLDER
    for relative in paths_to_remove(answers):
        remove(project_dir / relative)
        if os.path.lexists(kept / relative):
            os.replace(kept / relative, project_dir / relative)
    if os.path.lexists(kept):
        shutil.rmtree(kept)


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


def environment_report(project_dir: Path, package: str) -> str:
    """Run the generated package's own standard-library checks, as verify_install does."""
    sys.dont_write_bytecode = True  # leave no __pycache__ behind in the new project
    sys.path.insert(0, str(project_dir / "src"))
    try:
        envcheck = importlib.import_module(f"{package}.doctor.envcheck")
        findings = envcheck.run_checks(context="hook")
        return envcheck.format_findings(findings)
    except Exception as error:  # this machine is unknown to the checks: warn, never stop
        return (
            f"[warn] The environment checks could not run here ({error!r}); "
            "run verify_install once the environment exists."
        )
    finally:
        sys.path.remove(str(project_dir / "src"))


def quoted(path: Path) -> str:
    text = str(path)
    return f'"{text}"' if any(c in text for c in " &()'^;$`") else text


def environment_steps(answers: dict, project_dir: Path) -> list:
    """The README's "In a terminal" steps for this environment manager, as printed lines."""
    slug = answers["project_slug"]
    cd = f"cd {quoted(project_dir)}"
    if answers["env_manager"] == "conda":
        return [
            f"  {cd}",
            "  conda env create -f environment.yml",
            f"  conda activate {slug}",
            "If the terminal does not know `conda`: on Windows use the Miniforge Prompt (or",
            "Anaconda Prompt) from the Start menu, or run `conda init powershell` there once",
            "and open a new terminal; on Linux and macOS run `conda init` once (for Miniforge:",
            "~/miniforge3/bin/conda init) and open a new terminal.",
        ]
    version = answers["python_version"]
    return [
        "On Windows:",
        f"  {cd}",
        f"  py -{version} -m venv .venv",
        "  .venv\\Scripts\\activate",
        "  pip install -r requirements.txt",
        "On Linux and macOS:",
        f"  {cd}",
        f"  python{version} -m venv .venv",
        "  source .venv/bin/activate",
        "  pip install -r requirements.txt",
    ]


def next_steps(answers: dict, project_dir: Path) -> str:
    package = answers["package_name"]
    steps = ["Next steps in a terminal:"] + environment_steps(answers, project_dir)
    steps += [
        "Then, in the project folder:",
        f"  python -m {package}.verify_install",
        f"  python -m {package}.train --dataset synthetic --epochs 1   (no download needed)",
        f"  python -m {package}.train",
        "Put it under version control. pre-commit's first run downloads its checks (it needs",
        "the network once; offline, leave out the two pre-commit lines until you are online);",
        "after that it checks every commit, offline too:",
        "  git init",
        "  git add .",
        "  pre-commit run --all-files",
        "  pre-commit install",
    ]
    if answers["ide"] in ("pycharm", "both"):
        env_file = "environment.yml" if answers["env_manager"] == "conda" else "requirements.txt"
        steps += [
            "In PyCharm: File > Open the folder, accept the interpreter it offers from "
            f"{env_file} (or add one), then run 'Verify install' and 'Train' from the "
            "run configurations at the top right.",
        ]
    if answers["ide"] in ("vscode", "both"):
        steps += [
            "In VS Code: open the folder, select the environment's interpreter, then run "
            "'Verify install' from Run and Debug.",
        ]
    return "\n".join(steps)


def main(answers: dict, project_dir: Path) -> int:
    # A Windows console may not encode every character of a name: never fail on printing.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        prune(project_dir, answers)
        write_answers(project_dir, answers)
        used_replay_files = remove_used_replay_files(answers)
    except OSError as error:
        used_replay_files = []
        kept = project_dir / KEPT_FOLDER
        where = f"; the files it had before this bake are in {kept}" if kept.exists() else ""
        print(f"[warn] Could not finish tidying the project: {error}{where}", file=sys.stderr)
    stack = f"{answers['accelerator']}, Python {answers['python_version']}"
    print(f"\nCreated {project_dir.resolve()} ({stack}).")
    for path in used_replay_files:
        print(f"Removed {path}: its answers are now in the project's {ANSWERS_FILE}.")
    print("\nThis machine:")
    print(environment_report(project_dir, answers["package_name"]))
    print()
    print(next_steps(answers, project_dir.resolve()))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(json.loads(r"""{{ cookiecutter | tojson }}"""), Path.cwd()))
    except Exception as error:  # the project exists; a hook crash would make cookiecutter delete it
        print(
            f"[warn] The post-generation step hit an unexpected problem: {error!r}", file=sys.stderr
        )
        sys.exit(0)
