"""The documentation tells the truth about this project.

The READMEs are the student's: short, the first run within the first screen, every other page
in docs/ one link away. Every ``python -m`` command and every project file the READMEs and docs
name exists; the links between documents (and their #anchors) resolve; the run configurations
in the README are the ones in ``.run/`` and ``.vscode/``; the messages quoted in
docs/troubleshooting.md are the program's own; the English and Chinese READMEs say the same
things; the figures they quote are docs/figures.json's; and the checks that docs/directml.md
quotes still agree with it on this machine.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

import {{ cookiecutter.package_name }} as package

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = package.__name__
SOURCES = Path(package.__file__).resolve().parent
DOCTOR_FILE = ROOT / "doctor.pyz"  # the doctor: its package, gpu_doctor, in one zip file
READMES = ["README.md", "README.zh-CN.md"]
PAGES = [
    "docs/commands.md",
    "docs/development.md",
    "docs/directml.md",
    "docs/distributed.md",
    "docs/onnx.md",
    "docs/own-images.md",
    "docs/report.md",
    "docs/stacks.md",
    "docs/troubleshooting.md",
    "docs/workshop.md",
]
DOCUMENTS = READMES + PAGES
README_LINES = 200  # at most, in either language
FIRST_RUN_LINES = 60  # the first-run steps all lie within them
# Folders and files that the commands create: named in the docs, absent from a fresh project.
OUTPUTS = ("data", "runs", "reports", "wheelhouse", ".venv", "build")
PROJECT_FOLDERS = ("docs", "src", "tests", "tools", ".run", ".vscode", ".github")
PROJECT_FILES = {
    "README.md",
    "README.zh-CN.md",
    "pyproject.toml",
    "environment.yml",
    "requirements.txt",
    ".gitignore",
    "LICENSE",
}
OTHER_MODULES = {"pip", "venv", "pytest", "torch.distributed.run"}  # python -m ...: not ours
COMMANDS = {"python", "pip", "pytest", "conda", "py", "set", "source", ".venv\\Scripts\\activate"}
ELLIPSIS = "..."


def read(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def code_spans(text: str, commands_only: bool = False) -> list:
    """Inline code and the lines of fenced code blocks (with ``commands_only``, only the lines
    that are commands, not the program output that some blocks quote)."""
    fenced = re.findall(r"(?ms)^```[^\n]*\n(.*?)^```", text)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"(?ms)^```.*?^```", "", text))
    lines = [line for block in fenced for line in block.splitlines()]
    if commands_only:
        lines = [line for line in lines if line.split(" ")[0] in COMMANDS]
    return inline + lines


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]{2,}|`", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set:
    found, seen = set(), {}
    for heading in re.findall(r"(?m)^#{1,6} (.+)$", re.sub(r"(?ms)^```.*?^```", "", text)):
        anchor = github_anchor(heading)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(text: str) -> list:
    return re.findall(r"\]\(([^)\s]+)\)", re.sub(r"(?ms)^```.*?^```", "", text))


# ---------------------------------------------------------------------- files and commands


def test_every_document_exists_and_every_page_in_docs_is_checked_here():
    assert [document for document in DOCUMENTS if not (ROOT / document).is_file()] == []
    assert sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")) == PAGES


def module_problems(document: str) -> list:
    """What is wrong with the ``python -m`` commands that ``document`` names."""
    modules = set(re.findall(r"python -m ([\w.]+)", read(document)))
    if not modules:
        return [f"{document} names no command"]
    problems = []
    for module in sorted(modules - OTHER_MODULES):
        top, _, rest = module.partition(".")
        if top != PACKAGE or not rest:
            problems.append(f"{document}: python -m {module}")
            continue
        path = SOURCES / (rest.replace(".", "/") + ".py")
        if not path.is_file():  # a package run with python -m: its __main__.py
            path = path.with_suffix("") / "__main__.py"
        if not path.is_file():
            problems.append(f"{document}: python -m {module}: no {path.relative_to(ROOT)}")
        elif "__main__" not in path.read_text(encoding="utf-8"):
            problems.append(f"{document}: {module} cannot run with python -m")
    return problems


def test_every_python_m_command_names_a_module_of_this_project():
    assert [problem for document in DOCUMENTS for problem in module_problems(document)] == []


def test_every_project_file_named_exists():
    missing = []
    for document in DOCUMENTS:
        for span in code_spans(read(document), commands_only=True):
            for word in re.findall(r"[\w.\-/]+", span):
                word = word.rstrip(".,:;")
                first = word.split("/")[0]
                if first in OUTPUTS:
                    continue
                if ("/" in word and first in PROJECT_FOLDERS or word in PROJECT_FILES) and not (
                    ROOT / word
                ).exists():
                    missing.append(f"{document} names {word}, which does not exist")
    assert missing == []


def test_the_console_scripts_named_are_installed():
    pyproject = read("pyproject.toml")
    section = pyproject.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    scripts = set(re.findall(r"(?m)^([\w.\-]+)\s*=", section))
    for document in READMES:
        named = {
            span
            for span in code_spans(read(document))
            if re.fullmatch(r"[\w.-]+-(verify|train|evaluate|benchmark)", span)
        }

        assert named, f"{document} names no console script"
        assert named <= scripts, document


# --------------------------------------------------------------------------------- links


def broken_links(document: str) -> list:
    here = (ROOT / document).parent
    broken = []
    for link in links(read(document)):
        if re.match(r"^[a-z]+:", link):
            continue  # https:, mailto:
        target, _, anchor = link.partition("#")
        path = (here / target).resolve() if target else ROOT / document
        if not path.exists():
            broken.append(f"{document}: link to {link} does not resolve")
        elif anchor and path.suffix != ".md":
            broken.append(f"{document}: anchor into a non-Markdown file: {link}")
        elif anchor and anchor not in anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{document}: no #{anchor} in {target or document}")
    return broken


def test_links_between_documents_resolve():
    assert [broken for document in DOCUMENTS for broken in broken_links(document)] == []


def test_the_readmes_link_each_other_and_every_page_of_the_docs():
    english, chinese = read("README.md"), read("README.zh-CN.md")

    assert "](README.zh-CN.md)" in english
    assert "](README.md)" in chinese
    for text in (english, chinese):
        linked = {link.partition("#")[0] for link in links(text)}
        assert set(PAGES) <= linked, sorted(set(PAGES) - linked)
    for page in PAGES:
        assert "](../README.md)" in read(page), f"{page} has no way back to the README"


# ------------------------------------------------------------- the student's README


def test_the_readmes_are_short_and_show_the_template_version():
    for document in READMES:
        lines = read(document).splitlines()

        assert len(lines) <= README_LINES, f"{document}: {len(lines)} lines"
        assert re.search(r"\d+\.\d+\.\d+", read(document).split("\n## ")[0]), document


def first_run_steps() -> list:
    """The first run's five steps: for each, the run configurations that take it (by name)
    and the terminal command."""
    steps = [
        f"python -m {PACKAGE}.verify_install",
        f"python -m {PACKAGE}.train --dataset synthetic --epochs 1",
        f"python -m {PACKAGE}.train",
        f"python -m {PACKAGE}.evaluate",
        f"python -m {PACKAGE}.draw",
    ]
    configurations = {}
    if (ROOT / ".run").is_dir():
        configurations.update(pycharm_configurations())
    if (ROOT / ".vscode").is_dir():
        configurations.update(vscode_configurations())
    found = []
    for command in steps:
        names = {
            name
            for name, runs in configurations.items()
            if runs.replace(" --cpu-fallback-ok", "") == command
        }
        assert names or not configurations, f"no run configuration runs {command}"
        found.append((command, names))
    return found


def test_the_first_run_is_on_the_first_screen():
    """What the project is, then the first run: each of its steps (training among them) by its
    run configuration's name or by its command, within the README's first lines."""
    steps = first_run_steps()
    for document, heading in [("README.md", "First run"), ("README.zh-CN.md", "第一次运行")]:
        text = read(document)
        first = "\n".join(text.splitlines()[:FIRST_RUN_LINES])

        assert re.findall(r"(?m)^## (.+)$", text)[0] == heading, document
        assert re.search(r"\btrain\b", first), document
        for command, names in steps:
            assert command in first or any(name in first for name in names), (
                f"{document}: the step {command} is not in the first {FIRST_RUN_LINES} lines"
            )


TERMINAL_HEADINGS = [("README.md", "### In a terminal"), ("README.zh-CN.md", "### 在终端中")]


def terminal_steps(document: str, heading: str) -> str:
    """The README's "In a terminal" steps up to the first run: how the environment is made."""
    section = read(document).split(f"\n{heading}\n", 1)[1]
    return section.split(f"python -m {PACKAGE}.verify_install", 1)[0]


def test_the_terminal_steps_run_the_doctor_before_making_an_environment():
    """The doctor names the environment that fits the machine; the default file's commands
    follow it, as what it prints where the default stack fits."""
    for document, heading in TERMINAL_HEADINGS:
        steps = terminal_steps(document, heading)
        commands = ("conda env create", "-m venv", "uv sync")
        makes = [steps.index(command) for command in commands if command in steps]

        assert makes, steps
        assert "python doctor.pyz" in steps and steps.index("python doctor.pyz") < min(makes)


def test_the_terminal_steps_name_only_the_systems_the_default_stack_runs_on():
    """A Windows-only stack (rocm-windows) gets no Linux or macOS activation, a Linux-only one
    (rocm) no Windows steps: the stack table's platforms decide."""
    project = json.loads(read("environments/project.json"))
    platforms = project["stacks"][project["accelerator"]]["platforms"]
    for document, heading in TERMINAL_HEADINGS:
        steps = terminal_steps(document, heading)
        if "Windows" not in platforms:
            assert "Windows" not in steps and ".venv\\Scripts" not in steps, steps
        if "Linux" not in platforms and "WSL2" not in platforms:
            assert "source .venv/bin/activate" not in steps, steps
        for system in ("Linux", "macOS"):
            if system not in platforms:
                assert system not in steps, steps


# ---------------------------------------------------------------- run configurations


def readme_table(text: str, first_header: str) -> dict:
    """First column -> the command in the second column, of the table headed ``first_header``."""
    rows = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"| {first_header} |"):
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [cell.strip() for cell in row.strip("|").split("|")]
                rows[cells[0]] = cells[1].strip("`")
            break
    return rows


def pycharm_configurations() -> dict:
    configurations = {}
    for path in sorted((ROOT / ".run").glob("*.run.xml")):
        configuration = ET.parse(path).getroot().find("configuration")
        options = {o.get("name"): o.get("value") for o in configuration.iter("option")}
        if configuration.get("type") == "tests":
            target = json.loads(options["_new_target"]).replace("$PROJECT_DIR$/", "")
            envs = {e.get("name"): e.get("value") for e in configuration.iter("env")}
            command = f"pytest {target} {envs.get('PYTEST_ADDOPTS', '')}".strip()
        else:
            assert options["MODULE_MODE"] == "true"
            command = f"python -m {options['SCRIPT_NAME']} {options['PARAMETERS']}".strip()
        configurations[configuration.get("name")] = command
    return configurations


def vscode_configurations() -> dict:
    launch = json.loads(read(".vscode/launch.json"))

    def command(configuration: dict) -> str:  # an argument with a space quoted, as in a shell
        args = [f'"{a}"' if " " in a else a for a in configuration.get("args", [])]
        return " ".join(["python -m", configuration["module"], *args])

    return {c["name"]: command(c) for c in launch["configurations"]}


RUN_CONFIGURATION_HEADERS = [
    ("README.md", "Run configuration", "Launch configuration"),
    ("README.zh-CN.md", "运行配置", "启动配置"),
]


def test_the_run_configurations_in_the_readme_are_the_real_ones():
    for document, pycharm_header, vscode_header in RUN_CONFIGURATION_HEADERS:
        text = read(document)
        if (ROOT / ".run").is_dir():
            assert readme_table(text, pycharm_header) == pycharm_configurations(), document
        else:
            assert not readme_table(text, pycharm_header), document
            assert ".run/" not in text and "PyCharm" not in text, document
        if (ROOT / ".vscode").is_dir():
            assert readme_table(text, vscode_header) == vscode_configurations(), document
        else:
            assert not readme_table(text, vscode_header), document
            assert ".vscode" not in text and "VS Code" not in text, document


def test_the_readmes_name_only_the_environment_file_that_exists():
    for document in READMES:
        text = read(document)
        for name in ("environment.yml", "requirements.txt"):
            assert (name in text) == (ROOT / name).exists(), f"{document}: {name}"


# ----------------------------------------------------------------------- troubleshooting


def program_strings() -> list:
    """Every string the package can print, as literal pieces: the constant parts of f-strings
    (with a NUL where a value goes, so a quote cannot span one), and plain string constants."""
    pieces = []
    sources = [path.read_text(encoding="utf-8") for path in SOURCES.rglob("*.py")]
    with zipfile.ZipFile(DOCTOR_FILE) as doctor:
        names = [name for name in doctor.namelist() if name.endswith(".py")]
        sources += [doctor.read(name).decode("utf-8") for name in names]
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.JoinedStr):
                parts = [v.value if isinstance(v, ast.Constant) else "\0" for v in node.values]
                pieces.append("".join(str(p) for p in parts))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                pieces.append(node.value)
    return pieces


# What another program printed on a real machine, as a verify_install report recorded it:
# torch-directml's import on a Linux laptop without WSL2's DirectX.
RECORDED_ON_MACHINES = [
    "torch_directml failed to load: OSError: libd3d12.so: cannot open shared object file",
]


def recorded_outputs() -> list:
    """What the programs printed: on real machines, and the outputs docs/directml.md quotes."""
    return [*RECORDED_ON_MACHINES, "\n".join(code_spans(read("docs/directml.md")))]


def troubleshooting_messages(text: str) -> list:
    """The messages quoted as the headings of the troubleshooting section."""
    return re.findall(r"(?m)^#### `([^`]+)`", text)


def test_troubleshooting_quotes_the_programs_own_messages():
    document = "docs/troubleshooting.md"
    corpus = program_strings() + recorded_outputs()
    messages = troubleshooting_messages(read(document))

    assert len(messages) >= 10
    for message in messages:
        fragments = [f.strip() for f in message.split(ELLIPSIS) if len(f.strip()) >= 4]
        assert fragments, message
        for fragment in fragments:
            assert any(fragment in text for text in corpus), (
                f"{document}: {fragment!r} is not printed by the project"
            )


def test_both_readmes_say_the_same_things():
    english, chinese = read("README.md"), read("README.zh-CN.md")

    pages = [
        {link.partition("#")[0] for link in links(text)} - set(READMES)
        for text in (english, chinese)
    ]
    assert pages[0] == pages[1]
    for pattern in (r"python -m [\w.]+", r"--[a-z][\w-]+", r"https?://[\w./%:?=&~+-]+"):
        assert sorted(set(re.findall(pattern, english))) == sorted(
            set(re.findall(pattern, chinese))
        ), pattern
    assert english.count("\n## ") == chinese.count("\n## ")
    assert english.count("\n### ") == chinese.count("\n### ")


# ------------------------------------------------------------------------- figures
# The figures the documents quote are the ones in docs/figures.json, measured by one command
# (python benchmarks/figures.py) on one named machine: a document that says another number
# fails here, naming each sentence to update.

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
        f"src/{PACKAGE}/model.py": [f"{accuracy} measured"],
    }


def test_the_documents_quote_the_figures_file():
    missing = []
    for document, phrases in quoted().items():
        text = " ".join((ROOT / document).read_text(encoding="utf-8").split())
        missing += [f"{document} should say {p!r}" for p in phrases if p not in text]
    assert missing == [], "docs/figures.json was measured again: update these"


def test_the_figures_file_names_its_machine_and_its_command():
    assert re.fullmatch(r"\d+-core \S+ \S+ CPU, torch \S+", FIGURES["machine"])
    assert FIGURES["command"].startswith("python benchmarks/figures.py")
    assert (ROOT / "benchmarks" / "figures.py").is_file()
    epoch = FIGURES["synthetic_epoch"]
    assert 0 < epoch["epoch_s"] <= epoch["command_s"]
    assert 10 < epoch["test_accuracy_percent"] <= 100


# ------------------------------------------------------------------------ workshop


def test_the_workshop_checklist_makes_the_stick_and_installs_from_it():
    """docs/workshop.md's day-before steps: the commands it names exist with these options
    (a stick's own check is `python instructor.pyz stick check`)."""
    workshop = read("docs/workshop.md")
    from gpu_doctor import checkup

    assert "python instructor.pyz stick make E:\\" in workshop
    assert "install.py" in workshop and "--bundle E:\\" in workshop
    assert checkup.parse_args(["--bundle", "E:\\"]).bundle
    usage = subprocess.run(  # in the project folder, as the checklist says
        [sys.executable, "instructor.pyz", "stick", "make", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert usage.returncode == 0 and "--stacks" in usage.stdout, usage.stdout + usage.stderr


# ---------------------------------------------------------------- the checks of directml.md

OFFLINE_CHECKS = ["device_names.py", "optimizer_after_to.py", "optimizer_ops.py"]


def run_check(name: str, child_limit: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, str(ROOT / "docs" / "checks" / name)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
        timeout=child_limit,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", OFFLINE_CHECKS)
def test_the_checks_quoted_in_directml_md_still_agree(name, child_limit):
    done = run_check(name, child_limit)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("Agrees with docs/directml.md: yes")
    assert f"python docs/checks/{name}" in read("docs/directml.md")


def test_the_api_check_reads_the_installed_torch_directml(child_limit):
    if importlib.util.find_spec("torch_directml") is None:
        pytest.skip("torch-directml is not installed in this environment")
    done = run_check("directml_api.py", child_limit)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "torch_directml.synchronize            does not exist" in done.stdout


def test_every_check_script_is_described_in_directml_md():
    text = read("docs/directml.md")
    for path in (ROOT / "docs" / "checks").glob("*.py"):
        assert f"python docs/checks/{path.name}" in text, path.name
