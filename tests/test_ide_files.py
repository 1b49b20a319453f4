"""Run configurations work the moment the folder is opened: every one points at a module or
path that exists in the baked project, through the project's interpreter, with no absolute path."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

# The first-run steps, numbered so that they sort first and in order (PyCharm sorts by name).
RUN_CONFIGURATIONS = {
    "1. Verify install": ("verify_install", "--cpu-fallback-ok"),  # a CPU fallback is no failure
    "2. Train (synthetic digits)": ("train", "--dataset synthetic --epochs 1"),
    "3. Train": ("train", ""),
    "4. Evaluate": ("evaluate", ""),
    "5. Draw a digit": ("draw", ""),
    "Extra: export to ONNX": ("export", ""),
    "Extra: benchmark": ("benchmark", ""),
}
# Training with two processes on the CPU: torchrun, as PyCharm and VS Code run a module. The
# package's name is filled in; USE_LIBUV=0 lets torchrun start with PyTorch's Windows wheels.
TORCHRUN = {
    "Extra: train on 2 processes (torchrun)": "--standalone --nproc-per-node=2 -m {package}.train "
    "--dataset synthetic --device cpu",
}
# pytest: the fast set (no test marked slow), and every test.
TESTS = {"6. Tests (fast)": '-m "not slow"', "Extra: all tests": None}
ABSOLUTE_PATH = re.compile(r"(^|[\s\"'=])(/[A-Za-z]|[A-Za-z]:[\\/])")


@pytest.fixture(scope="module")
def baked(bake_once):
    return bake_once(ide="both", project_name="Run config check")


def options(configuration) -> dict:
    return {o.get("name"): o.get("value") for o in configuration.iter("option")}


def pycharm_configurations(baked) -> dict:
    found = {}
    for relative in sorted(f for f in baked.files() if f.startswith(".run/")):
        configuration = baked.xml(relative).find("configuration")
        found[configuration.get("name")] = configuration
    return found


def test_pycharm_has_the_documented_configurations(baked):
    configurations = pycharm_configurations(baked)
    assert set(configurations) == {*RUN_CONFIGURATIONS, *TORCHRUN, *TESTS}
    # What a student skips lies in PyCharm's "Extras" folder; the first-run steps sort first.
    extras = {name for name, c in configurations.items() if c.get("folderName") == "Extras"}
    assert extras == {name for name in configurations if name.startswith("Extra: ")}
    first = sorted(set(configurations) - extras)
    assert [name.split(". ", 1)[1] for name in first] == [
        "Verify install", "Train (synthetic digits)", "Train", "Evaluate", "Draw a digit",
        "Tests (fast)",
    ]  # fmt: skip


@pytest.mark.parametrize("name", RUN_CONFIGURATIONS)
def test_pycharm_configuration_runs_an_existing_module_with_the_project_interpreter(baked, name):
    configuration = pycharm_configurations(baked)[name]
    values = options(configuration)
    module, parameters = RUN_CONFIGURATIONS[name]

    assert values["MODULE_MODE"] == "true"
    assert values["SCRIPT_NAME"] == f"{baked.package}.{module}"
    assert (baked.path / "src" / baked.package / f"{module}.py").is_file()
    assert values["PARAMETERS"] == parameters
    assert values["IS_MODULE_SDK"] == "true" and values["SDK_HOME"] == ""
    assert values["WORKING_DIRECTORY"] == "$PROJECT_DIR$"
    assert values["EMULATE_TERMINAL"] == "true"  # tqdm progress bars redraw in place
    envs = {e.get("name"): e.get("value") for e in configuration.iter("env")}
    assert envs["PYTHONPATH"] == "$PROJECT_DIR$/src"
    # No module name: PyCharm then uses the project's only module, whatever the folder is called.
    assert configuration.find("module") is None


@pytest.mark.parametrize("name", TORCHRUN)
def test_the_torchrun_configurations_run_the_train_module_in_two_processes(baked, name):
    parameters = TORCHRUN[name].format(package=baked.package)
    configuration = pycharm_configurations(baked)[name]
    values = options(configuration)
    assert values["MODULE_MODE"] == "true" and values["SCRIPT_NAME"] == "torch.distributed.run"
    assert values["PARAMETERS"] == parameters
    assert values["IS_MODULE_SDK"] == "true" and values["WORKING_DIRECTORY"] == "$PROJECT_DIR$"
    envs = {e.get("name"): e.get("value") for e in configuration.iter("env")}
    assert envs["PYTHONPATH"] == "$PROJECT_DIR$/src" and envs["USE_LIBUV"] == "0"
    launch = {c["name"]: c for c in baked.json(".vscode/launch.json")["configurations"]}
    assert launch[name]["module"] == "torch.distributed.run"
    assert " ".join(launch[name]["args"]) == parameters
    assert launch[name]["env"]["USE_LIBUV"] == "0"
    assert (baked.path / "src" / baked.package / "train.py").is_file()


@pytest.mark.parametrize("name", TESTS)
def test_pycharm_tests_configurations_run_the_tests_folder_fast_or_whole(baked, name):
    configuration = pycharm_configurations(baked)[name]
    values = options(configuration)
    envs = {e.get("name"): e.get("value") for e in configuration.iter("env")}

    assert values["_new_target"] == '"$PROJECT_DIR$/tests"'
    assert (baked.path / "tests").is_dir()
    assert envs.get("PYTEST_ADDOPTS") == TESTS[name]
    launch = {c["name"]: c for c in baked.json(".vscode/launch.json")["configurations"]}
    assert launch[name]["module"] == "pytest"
    assert launch[name]["args"] == (["-m", "not slow"] if TESTS[name] else [])


def test_the_fast_tests_leave_out_only_the_marked_slow_ones(baked):
    """pytest with no marker (CI) runs everything; the IDEs' test runs pass -m "not slow"."""
    pytest_options = baked.toml("pyproject.toml")["tool"]["pytest"]["ini_options"]
    assert any(marker.startswith("slow:") for marker in pytest_options["markers"])
    assert "-m" not in pytest_options.get("addopts", "")
    settings = baked.json(".vscode/settings.json")
    assert settings["python.testing.pytestArgs"] == ["tests", "-m", "not slow"]


def test_no_configuration_holds_an_absolute_path(baked):
    for relative in baked.files():
        if relative.startswith((".run/", ".vscode/")):
            assert not ABSOLUTE_PATH.search(baked.read(relative)), relative


def test_no_idea_folder_is_shipped(baked):
    assert not (baked.path / ".idea").exists()


def test_vscode_launch_configurations_mirror_pycharm(baked):
    launch = baked.json(".vscode/launch.json")["configurations"]

    assert {c["name"] for c in launch} == {*RUN_CONFIGURATIONS, *TORCHRUN, *TESTS}
    # Run and Debug lists them by group, then order: the first-run steps, then the extras.
    shown = sorted(launch, key=lambda c: (c["presentation"]["group"], c["presentation"]["order"]))
    assert [c["name"] for c in shown] == [c["name"] for c in launch]
    assert [c["name"][:2] for c in launch[:6]] == ["1.", "2.", "3.", "4.", "5.", "6."]
    assert all(c["name"].startswith("Extra: ") for c in launch[6:])
    for configuration in launch:
        if configuration["name"] in {*TORCHRUN, *TESTS}:
            continue  # the torchrun and the tests configurations' own tests
        module, parameters = RUN_CONFIGURATIONS[configuration["name"]]
        assert configuration["type"] == "debugpy"
        assert configuration["module"] == f"{baked.package}.{module}"
        assert " ".join(configuration["args"]) == parameters
        assert (baked.path / "src" / baked.package / f"{module}.py").is_file()
    settings = baked.json(".vscode/settings.json")
    assert settings["python.testing.pytestEnabled"] is True


@pytest.fixture(scope="module")
def renamed(baked, tmp_path_factory):
    """The baked project as GitHub's "Download ZIP" unpacks it: in a folder named <slug>-main."""
    folder = tmp_path_factory.mktemp("renamed") / f"{baked.path.name}-main"
    shutil.copytree(baked.path, folder)
    return folder


def test_pycharm_configurations_name_no_module_so_any_folder_name_works(baked, renamed):
    """PyCharm names the project's module after the folder. A run configuration's constructor
    picks the project's first module (RunConfigurationModule.init) and reading the file keeps it
    when <module> is absent or empty; a <module name> that no longer matches the folder leaves
    the configuration without a module, hence without an interpreter ("Please select a valid
    Python interpreter"). So the files name no module and take the module's interpreter."""
    files = sorted((renamed / ".run").glob("*.run.xml"))
    assert len(files) == len(RUN_CONFIGURATIONS) + len(TORCHRUN) + len(TESTS)
    for path in files:
        text = path.read_text(encoding="utf-8")
        configuration = ET.fromstring(text).find("configuration")
        values = options(configuration)

        assert configuration.find("module") is None, path.name
        assert baked.path.name not in text and renamed.name not in text, path.name
        assert values["IS_MODULE_SDK"] == "true" and values["SDK_HOME"] == "", path.name
        for value in re.findall(r"\$PROJECT_DIR\$([^\"&;]*)", text):
            assert (renamed / value.lstrip("/")).exists(), (path.name, value)
        if values.get("MODULE_MODE") == "true" and values["SCRIPT_NAME"] != "torch.distributed.run":
            module = values["SCRIPT_NAME"].replace(".", "/")
            assert (renamed / "src" / f"{module}.py").is_file(), path.name


def test_vscode_recommends_the_extensions_its_files_need_and_the_readme_names_them(baked):
    recommended = baked.json(".vscode/extensions.json")["recommendations"]
    launch = baked.json(".vscode/launch.json")["configurations"]
    settings = baked.json(".vscode/settings.json")
    readme = baked.read("README.md")
    vscode_steps = readme[readme.index("### In VS Code") : readme.index("### In a terminal")]

    assert "ms-python.python" in recommended  # interpreters, the Testing view (pytest)
    assert {c["type"] for c in launch} == {"debugpy"} and "ms-python.debugpy" in recommended
    assert settings["[python]"]["editor.defaultFormatter"] in recommended
    assert sorted(recommended) == ["charliermarsh.ruff", "ms-python.debugpy", "ms-python.python"]
    for extension in recommended:
        assert f"`{extension}`" in vscode_steps, extension
