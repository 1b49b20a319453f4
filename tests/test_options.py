"""Every option value is baked at least once, and each bake holds exactly the expected files."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from conftest import STACKS, TEMPLATE_DIR, TEXT_SUFFIXES

# Files every generated project has, whatever the answers ({pkg} is the package name).
ALWAYS = {
    ".cookiecutter.json",
    ".editorconfig",
    ".gitattributes",
    ".gitignore",
    ".pre-commit-config.yaml",
    "README.md",
    "README.zh-CN.md",
    "benchmarks/figures.py",
    "benchmarks/loop_speed.py",
    "benchmarks/processes.py",
    "docs/checks/device_names.py",
    "docs/checks/directml_api.py",
    "docs/checks/directml_wheels.py",
    "docs/checks/optimizer_after_to.py",
    "docs/checks/optimizer_ops.py",
    "docs/commands.md",
    "docs/development.md",
    "docs/directml.md",
    "docs/distributed.md",
    "docs/figures.json",
    "docs/onnx.md",
    "docs/own-images.md",
    "docs/report.md",
    "docs/stacks.md",
    "docs/troubleshooting.md",
    "docs/workshop.md",
    *(f"environments/{stack}.{suffix}" for stack in STACKS for suffix in ("yml", "txt")),
    "instructor.pyz",
    "pyproject.toml",
    "src/{pkg}/__init__.py",
    "src/{pkg}/benchmark.py",
    "src/{pkg}/data.py",
    "src/{pkg}/draw.html",
    "src/{pkg}/draw.py",
    "src/{pkg}/evaluate.py",
    "src/{pkg}/export.py",
    "src/{pkg}/model.py",
    "src/{pkg}/predict.py",
    "src/{pkg}/train.py",
    "src/{pkg}/datasets/__init__.py",
    "src/{pkg}/datasets/folder.py",
    "src/{pkg}/datasets/folder_scan.py",
    "src/{pkg}/datasets/folder_split.py",
    "src/{pkg}/datasets/handwriting.py",
    "src/{pkg}/datasets/mnist.py",
    "src/{pkg}/datasets/synthetic.py",
    "doctor.pyz",
    "environments/project.json",
    "src/{pkg}/machinery/__init__.py",
    "src/{pkg}/machinery/checkpoints.py",
    "src/{pkg}/machinery/cli.py",
    "src/{pkg}/machinery/command_entry.py",
    "src/{pkg}/machinery/console.py",
    "src/{pkg}/machinery/discovery.py",
    "src/{pkg}/machinery/devices.py",
    "src/{pkg}/machinery/directml_probe.py",
    "src/{pkg}/machinery/distributed.py",
    "src/{pkg}/machinery/npu.py",
    "src/{pkg}/machinery/onnx_runtime.py",
    "src/{pkg}/machinery/directml_ops.txt",
    "src/{pkg}/machinery/optim.py",
    "src/{pkg}/machinery/parsers.py",
    "src/{pkg}/machinery/output_lock.py",
    "src/{pkg}/machinery/page_server.py",
    "src/{pkg}/machinery/within_epoch.py",
    "src/{pkg}/machinery/ranks.py",
    "src/{pkg}/machinery/script.py",
    "src/{pkg}/machinery/metrics.py",
    "src/{pkg}/machinery/plots.py",
    "src/{pkg}/machinery/predict_command.py",
    "src/{pkg}/machinery/quick_help.py",
    "src/{pkg}/machinery/startup.py",
    "src/{pkg}/machinery/run_folders.py",
    "src/{pkg}/machinery/stopping.py",
    "src/{pkg}/machinery/terminal_text.py",
    "src/{pkg}/machinery/this_project.json",
    "src/{pkg}/machinery/this_project.py",
    "src/{pkg}/machinery/train_command.py",
    "src/{pkg}/verify_install.py",
    "tests/conftest.py",
    "tests/test_verify_install.py",
    "tests/test_checkpoints.py",
    "tests/test_cli.py",
    "tests/test_closed_console.py",
    "tests/small_train.py",
    "tests/test_data.py",
    "tests/test_distributed.py",
    "tests/test_devices.py",
    "tests/test_directml_device.py",
    "tests/test_directml_ops.py",
    "tests/test_docs.py",
    "tests/test_draw.py",
    "tests/test_evaluate.py",
    "tests/test_folder.py",
    "tests/test_interrupt_at_start.py",
    "tests/test_model.py",
    "tests/test_moved_folder.py",
    "tests/test_onnx.py",
    "tests/test_onnx_metadata.py",
    "tests/test_onnx_npu.py",
    "tests/test_loop_faults.py",
    "tests/test_loop_on_screen.py",
    "tests/test_output_lock.py",
    "tests/test_package_stands_alone.py",
    "tests/test_predict_command.py",
    "tests/test_runs.py",
    "tests/test_torchrun_edges.py",
    "tests/test_train.py",
    "tests/test_train_faults.py",
}
PYCHARM = {
    ".run/verify_install.run.xml",
    ".run/train.run.xml",
    ".run/train_synthetic.run.xml",
    ".run/train_2_processes.run.xml",
    ".run/evaluate.run.xml",
    ".run/export.run.xml",
    ".run/benchmark.run.xml",
    ".run/draw.run.xml",
    ".run/tests.run.xml",
    ".run/tests_all.run.xml",
}
VSCODE = {".vscode/extensions.json", ".vscode/launch.json", ".vscode/settings.json"}
GITHUB = {".github/workflows/tests.yml"}
ENV_FILES = {
    "conda": {"environment.yml"},
    "venv": {"requirements.txt"},
    "uv": {".python-version"},  # pyproject.toml's groups are the environment
}
IDE_FILES = {"pycharm": PYCHARM, "vscode": VSCODE, "both": PYCHARM | VSCODE, "none": set()}
# Jinja that was not rendered; GitHub's own `${{ }}` expressions are meant to stay.
LEFTOVER_TEMPLATE_SYNTAX = re.compile(r"(?<!\$)\{\{|\{%|\{#|cookiecutter\.(?!json)")
PYTHONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]


def python_supported(accelerator: str, version: str) -> bool:
    """The validity rule: the same support table the hooks read."""
    low, high = (STACKS[accelerator][k] for k in ("python_min", "python_max"))

    def as_tuple(v):
        return tuple(map(int, v.split(".")))

    return as_tuple(low) <= as_tuple(version) <= as_tuple(high)


def option_cases() -> dict:
    """Every accelerator with every supported Python, plus every other option value once."""
    cases = {
        f"{acc}-py{ver}": {"accelerator": acc, "python_version": ver}
        for acc, ver in itertools.product(STACKS, PYTHONS)
        if python_supported(acc, ver)
    }
    for question, values in {
        "env_manager": ["conda", "venv", "uv"],
        "ide": ["pycharm", "vscode", "both", "none"],
        "license": ["MIT", "BSD-3-Clause", "Apache-2.0", "none"],
        "github_actions": [True, False],
    }.items():
        for value in values:
            cases[f"{question}={value}"] = {question: value}
    return cases


CASES = option_cases()


def expected_files(answers: dict, package: str) -> set:
    files = {path.format(pkg=package) for path in ALWAYS}
    files |= ENV_FILES[answers.get("env_manager", "conda")]
    files |= IDE_FILES[answers.get("ide", "pycharm")]
    if answers.get("license", "MIT") != "none":
        files.add("LICENSE")
    if answers.get("github_actions", True):
        files |= GITHUB
    return files


@pytest.mark.parametrize("answers", CASES.values(), ids=CASES.keys())
def test_bake_has_exactly_the_expected_files(bake, answers):
    baked = bake(**answers)

    assert baked.ok, baked.output
    assert baked.files() == expected_files(answers, baked.package)


@pytest.mark.parametrize("answers", CASES.values(), ids=CASES.keys())
def test_no_template_syntax_is_left_behind(bake, answers):
    baked = bake(**answers)

    for relative in baked.files():
        if (baked.path / relative).suffix in TEXT_SUFFIXES:
            text = baked.read(relative)
            assert not LEFTOVER_TEMPLATE_SYNTAX.search(text), relative


@pytest.mark.parametrize("accelerator", list(STACKS))
@pytest.mark.parametrize("env_manager", ["conda", "venv"])
def test_environment_file_pins_the_exact_stack(bake, accelerator, env_manager):
    baked = bake(accelerator=accelerator, env_manager=env_manager)

    if env_manager == "conda":
        env = baked.yaml("environment.yml")
        assert f"python={baked.answers['python_version']}" in env["dependencies"]
        pip_lines = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    else:
        pip_lines = baked.read("requirements.txt").splitlines()
    assert "-e .[dev]" in pip_lines
    assert_pinned_build(pip_lines, accelerator)


def assert_pinned_build(lines, name):
    """torch and torchvision name their build ('2.14.1+xpu') and come from the stack's own
    index (--index-url, PyPI for the rest): no other index can supply that version."""
    stack = STACKS[name]
    tag = stack.get("local_version", "")
    linux = stack.get("linux_build")  # directml: PyTorch's CPU build on Linux x86_64 (WSL2)
    for package, version in stack["pins"].items():
        built = tag if package in ("torch", "torchvision") else ""
        if linux and package in ("torch", "torchvision"):
            cpu = STACKS[linux["stack"]]
            assert f"{package}=={version}{cpu['local_version']}; {linux['marker']}" in lines
            assert f"{package}=={version}; {linux['other']}" in lines
        elif name == "cpu" and built:  # macOS wheels have no +cpu
            assert f'{package}=={version}{built}; sys_platform != "darwin"' in lines
            assert f'{package}=={version}; sys_platform == "darwin"' in lines
        elif package in stack.get("markers", {}):  # only where it has wheels
            assert f"{package}=={version}; {stack['markers'][package]}" in lines
        else:
            assert f"{package}=={version}{built}" in lines
    index = [line for line in lines if line.startswith("--")]
    if linux:
        assert index == [f"--extra-index-url {STACKS[linux['stack']]['index_url']}"]
        return
    assert index == (
        [f"--index-url {stack['index_url']}", "--extra-index-url https://pypi.org/simple"]
        if stack["index_url"]
        else []
    )


@pytest.mark.parametrize("accelerator", list(STACKS))
def test_every_bake_carries_an_environment_file_per_stack(bake, accelerator):
    """One project for a whole room: each stack's conda and pip file, whatever the default."""
    baked = bake(
        accelerator=accelerator, python_version="3.11" if accelerator == "directml" else "3.13"
    )
    slug, wanted = baked.path.name, baked.answers["python_version"]

    for name, stack in STACKS.items():
        env = baked.yaml(f"environments/{name}.yml")
        assert env["name"] == f"{slug}-{name}"
        supported = python_supported(name, wanted)
        assert f"python={wanted if supported else stack['python_default']}" in env["dependencies"]
        conda_pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        # conda runs pip in the environment file's folder: the project is one level up.
        assert "-e ..[dev]" in conda_pip
        pip_lines = [
            line
            for line in baked.read(f"environments/{name}.txt").splitlines()
            if line and not line.startswith("#")
        ]
        assert "-e .[dev]" in pip_lines
        for lines in (conda_pip, pip_lines):
            assert_pinned_build(lines, name)
        other_pins = {p for s in STACKS.values() for p in s["pins"]} - set(stack["pins"])
        assert not [line for line in pip_lines if line.split("==")[0] in other_pins]


@pytest.mark.parametrize("accelerator", list(STACKS))
def test_default_environment_file_is_the_chosen_stacks_file(bake, accelerator):
    """environment.yml (where PyCharm looks) is environments/<accelerator>.yml but for its name
    and the project path."""
    version = "3.11" if accelerator == "directml" else "3.12"
    baked = bake(accelerator=accelerator, python_version=version)
    default, copy = baked.yaml("environment.yml"), baked.yaml(f"environments/{accelerator}.yml")

    assert default["name"] == baked.path.name
    assert default["dependencies"][:2] == copy["dependencies"][:2]
    pip_default = next(d["pip"] for d in default["dependencies"] if isinstance(d, dict))
    pip_copy = next(d["pip"] for d in copy["dependencies"] if isinstance(d, dict))
    assert [line.replace("..[", ".[") for line in pip_copy] == pip_default


@pytest.mark.parametrize(
    "license_name,first_words",
    [("MIT", "MIT License"), ("BSD-3-Clause", "BSD 3-Clause License"), ("Apache-2.0", "Copyright")],
)
def test_license_text_matches_the_choice(bake, license_name, first_words):
    baked = bake(license=license_name, author_name="Ada Lovelace")
    text = baked.read("LICENSE")

    assert text.startswith(first_words)
    assert "Ada Lovelace" in text
    if license_name == "Apache-2.0":
        assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_default_project_needs_no_answers(bake, monkeypatch):
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    baked = bake()

    assert baked.ok
    assert not list(baked.path.rglob("__pycache__"))  # the hook's checks leave no bytecode
    assert baked.path.name == "lenet-mnist"
    assert baked.json("environments/project.json")["accelerator"] == "directml"


def test_recorded_answers_regenerate_the_same_project(bake_once, tmp_path):
    from cookiecutter.main import cookiecutter

    original = bake_once(project_name="Réplay digits", accelerator="cpu", ide="vscode")
    answers = tmp_path / "answers.json"
    answers.write_text(original.read(".cookiecutter.json"), encoding="utf-8")

    again = Path(cookiecutter(str(TEMPLATE_DIR), replay=str(answers), output_dir=str(tmp_path)))

    for relative in original.files():
        assert (again / relative).read_bytes() == (original.path / relative).read_bytes(), relative
    assert {p.relative_to(again).as_posix() for p in again.rglob("*") if p.is_file()} == (
        original.files()
    )


def test_the_readme_tree_names_only_what_a_default_bake_has(bake_once):
    """The template README's "What you get" tree documents the default project (with both
    editors' files, which it marks as depending on the ide answer)."""
    readme = (TEMPLATE_DIR / "README.md").read_text(encoding="utf-8")
    tree = readme.split("## What you get", 1)[1].split("```")[1]
    baked = bake_once(ide="both")
    folders, named = [], []
    for line in tree.splitlines()[2:]:  # after the fence's language line and the root folder
        match = re.match(r"^([│ ]*)[├└]── (\S+)", line)
        if not match:
            continue
        depth = len(match.group(1)) // 4
        folders[depth:] = [match.group(2).rstrip(",/")]
        named.append("/".join(folders))
    assert "src/lenet_mnist/train.py" in named and "doctor.pyz" in named
    for path in named:
        assert (baked.path / path).exists(), f"the README's tree names {path}, which is not baked"


@pytest.mark.parametrize("env_manager", ["conda", "venv", "uv"])
def test_a_rocm_windows_readme_gives_windows_steps_only(bake_once, env_manager):
    """AMD's ROCm build for Windows runs on Windows alone: the README's terminal steps run the
    doctor first, then the default file's Windows commands, and name no Linux or macOS."""
    baked = bake_once(accelerator="rocm-windows", env_manager=env_manager)
    for name, heading in (("README.md", "### In a terminal"), ("README.zh-CN.md", "### 在终端中")):
        steps = baked.read(name).split(heading, 1)[1].split("python -m lenet_mnist.verify", 1)[0]

        assert "python doctor.pyz" in steps, name
        assert "source .venv/bin/activate" not in steps and "Linux" not in steps, name
        assert "macOS" not in steps, name
        assert env_manager == "conda" or ".venv\\Scripts\\activate" in steps, name
