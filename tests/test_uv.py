"""A uv project (env_manager "uv"): its pyproject.toml declares every stack of _stacks as a
dependency group with its own index, and uv itself resolves, exports and installs them.

The slow tests run uv (requirements-dev.txt pins it) on a baked project. PyTorch's own indexes
cannot be reached here: a copy of the project names a local index of stand-in wheels instead
(tests/standin_index.py: the real names, versions and local tags), served over HTTP from a
folder the test writes. PyPI serves the rest, so `uv sync --group directml` installs the real
directml stack (torch 2.4.1 and torch-directml, about 3 GB) into the project's .venv. uv's cache
lives in TEMPLATE_TEST_CACHE/uv: cold about 2 minutes, warm under one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import STACKS
from cpu_build_mirror import relabeled_wheels
from packaging.markers import Marker
from packaging.requirements import Requirement
from standin_index import serve, write_index
from vendor_shape import index_only_names, linux_build_standins, stack_standins

UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")


def cache_root() -> Path:
    default = Path.home() / ".cache" / "lenet-directml-template"
    return Path(os.environ.get("TEMPLATE_TEST_CACHE", default))


def indexed_stacks() -> dict:
    """The stacks whose torch comes from an index of their own (PyTorch's), not PyPI."""
    return {name: stack for name, stack in STACKS.items() if stack["index_url"]}


# -- the generated files ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def uv_project(bake_once):
    return bake_once(env_manager="uv", accelerator="directml", python_version="3.11")


def test_a_uv_project_declares_every_stack_as_a_group_of_its_own(uv_project):
    pyproject = uv_project.toml("pyproject.toml")
    groups = pyproject["dependency-groups"]
    uv = pyproject["tool"]["uv"]

    # A stack whose GPU kernels come as a pip extra has one more group per GPU target.
    per_target = [
        f"{name}-{gfx}"
        for name, stack in STACKS.items()
        if stack.get("device_extra")
        for gfx in stack["gfx_targets"]
    ]
    assert per_target, "rocm-windows has a group per GPU target"
    assert set(STACKS) | set(per_target) | {"dev"} == set(groups)
    # A plain `uv sync` (PyCharm's, when it sets up .venv) and `uv run` install no stack: a
    # laptop of a mixed room gets the one it names (`uv sync --group <stack>`).
    assert uv["default-groups"] == ["dev"]
    assert "optional-dependencies" not in pyproject["project"]  # dev is defined once, a group
    assert {group["group"] for group in uv["conflicts"][0]} == set(STACKS) | set(per_target)
    assert any(
        line.startswith("torchvision[device-gfx1151]==") for line in groups["rocm-windows-gfx1151"]
    )
    # torch only in the groups: a source applies only to what the project itself declares.
    assert not any(d.startswith("torch") for d in pyproject["project"]["dependencies"])
    linux = STACKS["directml"]["linux_build"]
    assert f"torch==2.4.1; {linux['other']}" in groups["directml"]  # astral-sh/uv#8253
    assert f"torch==2.4.1+cpu; {linux['marker']}" in groups["directml"]  # WSL2: the CPU build
    indexes = {index["name"]: index for index in uv["index"]}
    for name, stack in indexed_stacks().items():
        index = indexes[f"pytorch-{name}"]
        assert index["url"] == stack["index_url"] and index["explicit"] is True
        assert {"index": f"pytorch-{name}", "group": name} in uv["sources"]["torch"]
        assert f"torch=={stack['pins']['torch']}{stack['local_version']}" in "".join(groups[name])
    # directml's torch is PyPI's, but on Linux x86_64 (WSL2) the CPU index's CPU build
    directml = [s for s in uv["sources"]["torch"] if s["group"] == "directml"]
    assert directml == [{"index": "pytorch-cpu", "group": "directml", "marker": linux["marker"]}]


def test_each_group_keeps_its_stacks_python_range(uv_project):
    ranges = uv_project.toml("pyproject.toml")["tool"]["uv"]["dependency-groups"]

    assert ranges["directml"]["requires-python"] == ">=3.8,<3.13"
    assert ranges["cuda"]["requires-python"] == ">=3.10,<3.15"


def test_a_uv_project_has_no_pip_or_conda_file_and_pins_its_python(uv_project):
    files = uv_project.files()

    assert "requirements.txt" not in files and "environment.yml" not in files
    assert uv_project.read(".python-version").strip() == "3.11"
    assert "environments/cuda.txt" in files  # the pip files of every stack stay
    # dev is a dependency group, no extra: the pip files install the project alone, and say
    # how pip adds the group.
    pip_file = uv_project.read("environments/cuda.txt").splitlines()
    assert "-e ." in pip_file and "-e .[dev]" not in pip_file
    assert any("pip install --group dev" in line for line in pip_file)


@pytest.mark.parametrize("env_manager", ["conda", "venv"])
def test_only_a_uv_project_has_a_python_version_file(bake_once, env_manager):
    assert ".python-version" not in bake_once(env_manager=env_manager).files()


def test_a_stack_with_a_pip_extra_per_gpu_gets_a_group_per_gpu(bake_once):
    """A stack whose torch takes the GPU's extra (AMD's torch[device-gfx1151]) gets one group
    per GPU target beside its plain one, all from its index and all in the one conflict set."""
    stack = {
        **STACKS["rocm"],
        "index_url": "https://example.invalid/gpu-extras/",
        "device_extra": "device-{gfx}",
        "gfx_targets": ["gfx1151", "gfx1201"],
    }
    baked = bake_once(env_manager="uv", _stacks={"gpu-extras": stack})
    pyproject = baked.toml("pyproject.toml")
    groups = pyproject["dependency-groups"]

    pins, tag = stack["pins"], stack["local_version"]
    assert f"torch[device-gfx1151]=={pins['torch']}{tag}" in groups["gpu-extras-gfx1151"]
    assert f"torch[device-gfx1201]=={pins['torch']}{tag}" in groups["gpu-extras-gfx1201"]
    assert f"torch=={pins['torch']}{tag}" in groups["gpu-extras"]
    conflicts = pyproject["tool"]["uv"]["conflicts"][0]
    sources = pyproject["tool"]["uv"]["sources"]["torch"]
    for group in ("gpu-extras", "gpu-extras-gfx1151", "gpu-extras-gfx1201"):
        assert {"group": group} in conflicts
        assert {"index": "pytorch-gpu-extras", "group": group} in sources


def group_names(lines: list[str]) -> set[str]:
    """The package names of a dependency group's lines (extras, pins and markers aside)."""
    return {re.split(r"[\[=;<>~! ]", line, maxsplit=1)[0].strip() for line in lines}


def test_each_group_names_what_only_its_vendors_index_serves(uv_project):
    """A source applies only to a package the project names itself (uv #8253), so each group
    names every package of its stack's record (cookiecutter.json's index_only), and takes each
    from its stack's index: forgetting one sends uv to PyPI, where it is missing or a decoy."""
    pyproject = uv_project.toml("pyproject.toml")
    groups = pyproject["dependency-groups"]
    sources = pyproject["tool"]["uv"]["sources"]
    checked = 0
    for name, stack in indexed_stacks().items():
        gfx_groups = {"": name} | {g: f"{name}-{g}" for g in stack.get("gfx_targets", [])}
        for gfx, group in gfx_groups.items():
            if group not in groups:
                continue  # a stack without a GPU extra has its plain group only
            wanted = index_only_names(stack, gfx)
            assert wanted <= group_names(groups[group]), (
                group,
                wanted - group_names(groups[group]),
            )
            for package in wanted:
                assert {"index": f"pytorch-{name}", "group": group} in sources[package]
                checked += 1
    assert checked > 50  # rocm's device packages, rocm-windows' per-GPU packages, triton-xpu


def test_a_stack_for_one_platform_installs_nothing_elsewhere(uv_project):
    """AMD's Windows stack (uv_marker): every line of its groups carries the marker, so a
    universal lock never resolves AMD's torch for Linux or macOS, and `uv sync --group
    rocm-windows` there installs none of it."""
    groups = uv_project.toml("pyproject.toml")["dependency-groups"]
    only = Marker(STACKS["rocm-windows"]["uv_marker"])
    elsewhere = {"sys_platform": "linux", "platform_machine": "x86_64", "python_version": "3.12"}
    windows = {**elsewhere, "sys_platform": "win32", "platform_machine": "AMD64"}
    for group in ("rocm-windows", "rocm-windows-gfx1151"):
        lines = [Requirement(line) for line in groups[group]]
        assert all(str(only) in str(r.marker) for r in lines), group
        assert not any(r.marker.evaluate(elsewhere) for r in lines)
        assert {"torch", "torchvision", "rocm"} <= {
            r.name for r in lines if r.marker.evaluate(windows)
        }
    cuda = STACKS["cuda"]
    assert f"torch=={cuda['pins']['torch']}{cuda['local_version']}" in groups["cuda"]  # no marker


# -- uv itself, on a copy whose PyTorch indexes are stand-ins ----------------------------------


def run_uv(project: Path, *args: str, env: dict | None = None, timeout: float = 1800):
    full_env = {
        **os.environ,
        "UV_CACHE_DIR": str(cache_root() / "uv"),
        "UV_NO_PROGRESS": "1",
        **(env or {}),
    }
    # What the test runner's own launch set (an active venv; pyenv's `python` pins its
    # version for everything below it, which hides the project's .python-version).
    leaked = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "PYTEST_ADDOPTS")
    for name in (*leaked, "PYENV_VERSION", "PYENV_DIR"):
        full_env.pop(name, None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [UV, *args], cwd=project, env=full_env, capture_output=True, text=True, timeout=timeout
    )


@contextlib.contextmanager
def standin_copy(
    source: Path, tmp: Path, real_cpu_build: bool = False, other_wheels: bool = False
) -> Iterator[tuple[Path, dict]]:
    """A copy of the uv project ``source`` in ``tmp`` whose PyTorch indexes are stand-ins,
    served while the block runs: yields (the copy, {stack: its index URL}). With
    ``real_cpu_build``, the cpu index also serves PyPI's real torch 2.4.1 for this Python,
    relabeled +cpu, which the directml group takes on Linux x86_64 (tests/cpu_build_mirror.py).
    With ``other_wheels``, a stack's index also serves its torch for other platforms."""
    root = tmp / "standin-indexes"
    real = tuple(relabeled_wheels()) if real_cpu_build else ()
    borrowed = linux_build_standins(STACKS, real)
    for name, stack in indexed_stacks().items():
        standins = stack_standins(stack, other_wheels=other_wheels)
        write_index(root / name, [*standins, *borrowed.get(name, [])])
    project = tmp / source.name
    shutil.copytree(source, project)
    with serve(root) as url:
        text = (project / "pyproject.toml").read_text(encoding="utf-8")
        urls = {}
        for name, stack in indexed_stacks().items():
            urls[name] = f"{url}{name}/"
            text = text.replace(f'url = "{stack["index_url"]}"', f'url = "{urls[name]}"')
        (project / "pyproject.toml").write_text(text, encoding="utf-8")
        yield project, urls


@pytest.fixture(scope="module")
def served(uv_project, tmp_path_factory):
    """(project copy, {stack: its stand-in index URL}), locked, while the indexes are served."""
    if UV is None:
        pytest.fail("uv is not installed: pip install -r requirements-dev.txt")
    copy = standin_copy(uv_project.path, tmp_path_factory.mktemp("uv"), real_cpu_build=True)
    with copy as (project, urls):
        locked = run_uv(project, "lock")
        assert locked.returncode == 0, locked.stderr[-4000:]
        yield project, urls


def without_package(pyproject: str, group: str, package: str) -> str:
    """``pyproject`` as if its dependency group ``group`` had never named ``package``: its line
    and its source for that group taken out (the other groups keep theirs)."""

    def drop(text: str, block: str, unwanted) -> str:
        head, found, rest = text.partition(f"\n{block} = [\n")
        assert found, f"no {block} = [...] in pyproject.toml"
        body, _, tail = rest.partition("\n]\n")
        kept = [line for line in body.splitlines() if not unwanted(line)]
        assert len(kept) == len(body.splitlines()) - 1, f"{package}: no single line in {block}"
        if not kept:  # uv refuses an empty list of sources: the key goes
            return f"{head}\n{tail}"
        return f"{head}\n{block} = [\n" + "\n".join(kept) + f"\n]\n{tail}"

    text = drop(pyproject, group, lambda line: group_names([line.strip(" ',")]) == {package})
    before, _, sources = text.partition("[tool.uv.sources]")
    sources = drop(sources, package, lambda line: f'group = "{group}" ' in line)
    return before + "[tool.uv.sources]" + sources


@pytest.mark.slow
@pytest.mark.uv
@pytest.mark.parametrize(
    ("group", "package"),
    [
        ("rocm-windows", "rocm-sdk-core"),  # PyPI has a decoy 0.1.0
        ("rocm-windows-gfx1151", "amd-torch-device-gfx115x"),
        ("rocm-windows-gfx1151", "rocm-sdk-device-gfx1151"),  # AMD's device wheel requires it
        ("rocm", "rocm-sdk-device-gfx1250"),
        ("xpu", "triton-xpu"),
    ],
)
def test_the_lock_fails_when_a_group_forgets_one_vendor_only_package(served, group, package):
    """The stand-ins require what the real wheels require, so the lock breaks as the real one
    would: the other groups still name the package, this one sends uv to PyPI for it."""
    project, _ = served
    broken = project.parent / f"forgot-{package}"
    shutil.copytree(project, broken, ignore=shutil.ignore_patterns(".venv*", "uv.lock"))
    text = (broken / "pyproject.toml").read_text(encoding="utf-8")
    (broken / "pyproject.toml").write_text(without_package(text, group, package), encoding="utf-8")

    result = run_uv(broken, "lock")

    assert result.returncode != 0
    assert "no version of" in result.stderr or "not found" in result.stderr, result.stderr[-3000:]
    assert package in result.stderr, result.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.uv
def test_amds_linux_torch_beside_the_windows_one_still_locks(uv_project, tmp_path):
    """AMD's index also serves Linux wheels of the same torch, which require a triton that only
    AMD's index serves (the record's other_wheels); the rocm-windows groups are Windows-only."""
    with standin_copy(uv_project.path, tmp_path, other_wheels=True) as (project, _):
        result = run_uv(project, "lock")

    triton = STACKS["rocm-windows"]["other_wheels"][0]["requires"]
    if result.returncode != 0 and triton in result.stderr and sys.platform != "win32":
        # Seen with uv 0.13.9 on Linux: uv reads one wheel's metadata for every platform's
        # fork, here the Linux wheel's, so the Windows marker does not keep triton out.
        pytest.xfail(f"uv reads AMD's Linux torch for the Windows fork and wants {triton}")
    assert result.returncode == 0, result.stderr[-3000:]


def locked_packages(project: Path, name: str) -> list[dict]:
    lock = tomllib.loads((project / "uv.lock").read_text(encoding="utf-8"))
    return [package for package in lock["package"] if package["name"] == name]


@pytest.mark.slow
@pytest.mark.uv
def test_the_lock_takes_each_stacks_torch_from_its_own_index(served):
    project, urls = served
    torches = {p["version"]: p["source"]["registry"] for p in locked_packages(project, "torch")}

    for name, stack in indexed_stacks().items():
        assert torches[stack["pins"]["torch"] + stack["local_version"]] == urls[name]
    directml = STACKS["directml"]
    assert torches[directml["pins"]["torch"]] == "https://pypi.org/simple"  # Windows, macOS
    cpu_build = (
        directml["pins"]["torch"] + STACKS[directml["linux_build"]["stack"]]["local_version"]
    )
    assert torches[cpu_build] == urls[directml["linux_build"]["stack"]]  # Linux x86_64


def pinned(lines: list[str]) -> set[tuple[str, str]]:
    """(name, version) of every `name==version` line (markers aside), names normalized."""
    found = set()
    for line in lines:
        match = re.match(r"^\s*([A-Za-z0-9_.\-\[\]]+)==([^\s;\\]+)", line)
        if match:
            name = re.sub(r"\[.*\]", "", match.group(1))
            found.add((re.sub(r"[-_.]+", "-", name).lower(), match.group(2)))
    return found


def for_pythons(lines: list[str], stack: dict) -> list[str]:
    """The lines whose markers can hold on a Python the stack supports, on some platform: a
    pip file may name a pin for older Pythons that the stack's uv group never resolves."""
    low, high = (int(stack[key].split(".")[1]) for key in ("python_min", "python_max"))
    kept = []
    for line in lines:
        requirement, _, marker = line.partition(";")
        if not marker.strip() or line.lstrip().startswith("#"):
            kept.append(line)
            continue
        holds = Marker(marker.strip())
        if any(
            holds.evaluate({"python_version": f"3.{minor}", "sys_platform": platform})
            for minor in range(low, high + 1)
            for platform in ("win32", "linux", "darwin")
        ):
            kept.append(line)
    return kept


@pytest.mark.slow
@pytest.mark.uv
@pytest.mark.parametrize("stack", list(STACKS))
def test_uv_export_of_each_stack_installs_what_its_environment_file_pins(served, stack):
    project, _ = served
    exported = run_uv(
        project, "export", "--frozen", "--no-hashes", "--no-header", "--no-default-groups",
        "--group", "dev", "--group", stack, "--format", "requirements.txt",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-3000:]
    environment_file = (project / "environments" / f"{stack}.txt").read_text(encoding="utf-8")

    wanted = pinned(for_pythons(environment_file.splitlines(), STACKS[stack]))
    got = pinned(exported.stdout.splitlines())
    # A pin without a local tag (the cpu file's macOS line, torch==2.14.1) accepts any build
    # of that version, as pip does (PEP 440); the stand-in index has only the +cpu one.
    missing = {
        (name, version)
        for name, version in wanted
        if not any(n == name and (v == version or v.split("+")[0] == version) for n, v in got)
    }
    assert not missing, f"missing from uv export: {sorted(missing)}"
    # No other build of torch or torchvision than the file's, from any other stack.
    for package in ("torch", "torchvision"):
        assert {v for n, v in got if n == package} <= {v for n, v in wanted if n == package}
    # The project itself (the file's `-e .`) with the dev group's tools.
    assert "-e ." in exported.stdout
    assert {"pytest", "ruff", "pre-commit"} <= {n for n, _ in got}


@pytest.fixture(scope="module")
def synced(served):
    """The project's .venv after `uv sync --group directml`, the project's own stack."""
    project, _ = served
    result = run_uv(project, "sync", "--group", "directml")
    assert result.returncode == 0, result.stderr[-4000:]
    python = project / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    return project, python


def package_versions(python: Path, *names: str) -> dict:
    script = (
        "import json, sys\nfrom importlib import metadata\nout = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = metadata.version(n)\n"
        "    except metadata.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))"
    )
    result = subprocess.run(
        [str(python), "-c", script, *names], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


@pytest.mark.slow
@pytest.mark.uv
def test_a_plain_uv_sync_installs_the_dev_tools_and_no_stack(served):
    """What PyCharm runs when it sets up .venv: on any laptop of a mixed room, no PyTorch."""
    project, _ = served
    env = {"UV_PROJECT_ENVIRONMENT": str(project / ".venv-plain")}

    result = run_uv(project, "sync", env=env)

    assert result.returncode == 0, result.stderr[-4000:]
    python = project / ".venv-plain" / ("Scripts" if os.name == "nt" else "bin") / "python"
    versions = package_versions(python, "torch", "torch-directml", "pytest", "ruff")
    assert versions["torch"] is None and versions["torch-directml"] is None
    assert versions["pytest"] and versions["ruff"]


@pytest.mark.slow
@pytest.mark.uv
def test_uv_sync_of_the_projects_group_installs_directml_with_the_cpu_build_on_linux(synced):
    """torch-directml from PyPI; on Linux x86_64 (WSL2) torch and torchvision from the CPU
    index (here PyPI's files relabeled +cpu, tests/cpu_build_mirror.py), as the group says."""
    project, python = synced
    versions = package_versions(python, "torch", "torchvision", "torch-directml")

    assert versions == {
        "torch": "2.4.1+cpu" if sys.platform == "linux" else "2.4.1",
        "torchvision": "0.19.1+cpu" if sys.platform == "linux" else "0.19.1",
        "torch-directml": "0.2.5.dev240914",
    }
    assert "uv = " in (project / ".venv" / "pyvenv.cfg").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.uv
def test_verify_install_in_the_uv_venv_explains_the_directml_failure(uv_project, synced):
    project, python = synced
    result = subprocess.run(
        [str(python), "-m", f"{uv_project.package}.verify_install", "--json"],
        cwd=project, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    report = json.loads(result.stdout)

    assert "Traceback" not in result.stderr
    assert report["environment"] == "uv"
    assert report["packages"]["torch-directml"]["installed"] == "0.2.5.dev240914"
    if sys.platform == "linux" and not Path("/dev/dxg").exists():
        directml = next(u for u in report["unavailable"] if u["kind"] == "directml")
        assert "libd3d12.so" in directml["reason"]
        assert result.returncode == 3  # trains on the CPU instead
        # This machine has no GPU: the fix is the one command that makes .venv the cpu one.
        fixes = " ".join(f.get("fix") or "" for f in report["findings"])
        assert "uv sync --python 3.11 --no-default-groups --group dev --group cpu" in fixes


@pytest.mark.slow
@pytest.mark.uv
def test_uv_run_pytest_runs_the_projects_own_tests(synced):
    """A plain `uv run` syncs the default group (dev) and removes nothing: the stack stays."""
    project, python = synced
    result = run_uv(
        project, "run", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
        "tests/test_model.py", "tests/test_verify_install.py", timeout=900,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
    assert package_versions(python, "torch-directml")["torch-directml"] == "0.2.5.dev240914"


@pytest.mark.slow
@pytest.mark.uv
def test_two_stacks_never_install_together(synced):
    project, _ = synced
    result = run_uv(project, "sync", "--group", "directml", "--group", "cuda")

    assert result.returncode != 0
    assert "conflict" in result.stderr.lower()


@pytest.mark.slow
@pytest.mark.uv
@pytest.mark.parametrize("stack", list(indexed_stacks()))
def test_the_doctors_command_switches_the_venv_to_a_stack_from_its_own_index(served, stack):
    """The command verify_install prints (Recommendation.uv_sync) run as it is, into an
    environment of its own (UV_PROJECT_ENVIRONMENT) so the directml .venv stays."""
    project, _ = served
    sys.path.insert(0, str(project / "doctor.pyz"))  # a zip on the path is importable
    try:
        from gpu_doctor.recommend import Recommendation
    finally:
        sys.path.remove(str(project / "doctor.pyz"))
    command = Recommendation(stack, "").uv_sync("3.11").split()
    assert command[:2] == ["uv", "sync"]
    env = {"UV_PROJECT_ENVIRONMENT": str(project / f".venv-test-{stack}")}

    result = run_uv(project, *command[1:], env=env)

    assert result.returncode == 0, result.stderr[-4000:]
    python = project / f".venv-test-{stack}" / ("Scripts" if os.name == "nt" else "bin") / "python"
    versions = package_versions(python, "torch", "torchvision", "torch-directml")
    if not Marker(STACKS[stack].get("uv_marker") or "python_version > '0'").evaluate():
        assert versions["torch"] is None  # a group for another platform installs nothing here
        return
    pins, tag = STACKS[stack]["pins"], STACKS[stack]["local_version"]
    assert versions["torch"] == pins["torch"] + tag
    assert versions["torchvision"] == pins["torchvision"] + tag
    assert versions["torch-directml"] is None
    standin = subprocess.run(
        [str(python), "-c", "import torch; print(torch.STANDIN)"], capture_output=True, text=True
    )
    assert standin.stdout.strip() == "True"  # the stand-in index's, never PyPI's torch


@pytest.mark.slow
@pytest.mark.uv
def test_a_cuda_project_on_python_3_13_syncs_cuda_torch_and_leaves_directml_out(
    bake_once, tmp_path
):
    """`uv sync --group cuda` in a cuda project installs its group's torch, from its own index,
    on a Python (3.13) that the directml group's range (at most 3.12) leaves out."""
    baked = bake_once(env_manager="uv", accelerator="cuda", python_version="3.13")
    with standin_copy(baked.path, tmp_path) as (project, _):
        # uv would download a Python 3.13 it cannot find (from GitHub: not reachable from CI
        # machines), so the test takes one of this machine's, found the way uv finds it.
        offline = {"UV_PYTHON_DOWNLOADS": "never"}
        found = run_uv(project, "python", "find", "3.13", env=offline)
        if found.returncode != 0:
            pytest.skip(f"no Python 3.13 on this machine for uv: {found.stderr.strip()[-300:]}")
        result = run_uv(
            project, "sync", "--group", "cuda", env={**offline, "UV_PYTHON": found.stdout.strip()}
        )
        assert result.returncode == 0, result.stderr[-4000:]
    python = project / ".venv" / ("Scripts" if os.name == "nt" else "bin") / "python"
    versions = package_versions(python, "torch", "torch-directml")

    assert versions == {"torch": "2.14.1+cu130", "torch-directml": None}
    assert "version_info = 3.13" in (project / ".venv" / "pyvenv.cfg").read_text("utf-8")
