"""The workshop stick for real: `python instructor.pyz stick make` writes the directml stack's
wheels for Windows x64 and Linux x86_64 and the cpu stack's for macOS arm64 (PyPI), a fresh
environment installs the Linux part from it with no index and trains, and the Windows part
installs under Windows CPython (Wine). Stacks whose index this machine cannot reach are checked
against a stand-in index of fake wheels with the same names, versions and local tags.

The stick (3.46 GB: directml Linux 2.98 GB, directml Windows 0.31 GB, cpu macOS 0.22 GB) is kept
in TEMPLATE_TEST_CACHE, keyed by the environment files and pyproject.toml, so that a warm run
only resolves, checks and downloads nothing. Measured on a busy 2-core machine: making it cold
about 55 s (the 3.3 GB download itself 23 s), a run with nothing to download 45-65 s (pip reads
each wheel's metadata again); installing the Linux part and training one synthetic epoch 2.5
min; installing the Windows part under Wine 2 min; the whole file 7 min 13 s warm.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import wine_python
from cpu_build_mirror import relabeled_wheels
from standin_index import serve, write_index
from test_dml_stack import cache_root, venv_python

pytestmark = [pytest.mark.slow, pytest.mark.dml_stack]

MAKE_TIMEOUT = 1800
# PyPI's Linux torch relabeled +cpu (tests/cpu_build_mirror.py): the directml file's pin there
LINUX_TORCH = "torch-2.4.1+cpu-cp311-cp311-manylinux1_x86_64.whl"


@pytest.fixture(scope="module")
def stacks(tmp_path_factory) -> Iterator[list[str]]:
    """make's stack options. PyTorch's CPU index (download.pytorch.org) is not reachable here:
    the cpu stack's macOS wheels are PyPI's, and the directml stack's Linux torch 2.4.1+cpu
    comes from a local stand-in of that index, served while the tests run."""
    root = write_index(tmp_path_factory.mktemp("cpu-index"), relabeled_wheels())
    with serve(root) as url:
        yield [
            "--stacks", "directml", "cpu:macosx_arm64",
            "--index", "cpu=https://pypi.org/simple", "--index", f"directml={url}",
        ]  # fmt: skip


def clean_env(project: Path) -> dict:
    """No host pip settings (this machine's find-links and extra indexes), the project's src/."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    return {**env, "PYTHONPATH": str(project / "src"), "PIP_CONFIG_FILE": os.devnull}


def make(project: Path, stick: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "instructor.pyz", "stick", "make", str(stick), "--yes", *args],
        cwd=project,
        env=clean_env(project),
        capture_output=True,
        text=True,
        timeout=MAKE_TIMEOUT,
    )


@pytest.fixture(scope="module")
def project(bake_once) -> Path:
    return bake_once(env_manager="venv").path


NOTHING_TO_DOWNLOAD = "0 to download (0.0 MB)"


def wheel_times(stick: Path) -> dict:
    folder = stick / "wheels"
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} if folder.is_dir() else {}


@pytest.fixture(scope="module")
def made(project, stacks) -> tuple:
    """The stick, and what a run of make on the whole stick did: (stick, that run, its wheels'
    times before and after it). With the stick cached whole, the first run is that run; else
    make runs a second time, which is what a warm cache saves."""
    inputs = [project / "pyproject.toml", *sorted((project / "environments").glob("*.txt"))]
    key = hashlib.sha256(b"".join(p.read_bytes() for p in inputs)).hexdigest()[:12]
    folder = cache_root() / f"workshop-stick-{key}"
    for old in cache_root().glob("workshop-stick-*"):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    before = wheel_times(folder)
    result = make(project, folder, *stacks)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if NOTHING_TO_DOWNLOAD not in result.stdout:
        before = wheel_times(folder)
        result = make(project, folder, *stacks)
    return folder, result, before, wheel_times(folder)


@pytest.fixture(scope="module")
def stick(made) -> Path:
    return made[0]


def installed(python: Path) -> list[str]:
    listing = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json", "--isolated"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(item["name"].lower() for item in json.loads(listing.stdout))


def test_the_stick_holds_each_environment_with_its_pins_and_hashes(stick):
    manifest = json.loads((stick / "manifest.json").read_text(encoding="utf-8"))

    assert sorted(manifest["parts"]) == [
        "cpu-macosx_arm64-py3.11",
        "directml-manylinux_x86_64-py3.11",
        "directml-win_amd64-py3.11",
    ]
    windows = manifest["parts"]["directml-win_amd64-py3.11"]["wheels"]
    linux = manifest["parts"]["directml-manylinux_x86_64-py3.11"]["wheels"]
    mac = manifest["parts"]["cpu-macosx_arm64-py3.11"]["wheels"]
    assert "torch-2.4.1-cp311-cp311-win_amd64.whl" in windows
    assert any(w.startswith("torch_directml-0.2.5.dev240914-cp311") for w in windows + linux)
    # markers for each platform, not for this machine: the +cpu pin on Linux only (its
    # stand-in here is PyPI's build relabeled, which still brings CUDA), colorama on Windows
    assert LINUX_TORCH in linux
    assert any(w.startswith("nvidia_cudnn") for w in linux)
    assert not any(w.startswith(("nvidia", "triton")) for w in windows + mac)
    assert any(w.startswith("colorama") for w in windows)
    assert any(w.startswith("onnxruntime_directml-1.24.4") for w in windows)
    assert any(w.startswith("onnxruntime-1.32.0") for w in linux)
    assert any(w.startswith("torch-2.14.1-cp311-cp311-macosx") for w in mac)
    for name, entry in manifest["files"].items():
        path = stick / name
        assert path.stat().st_size == entry["size"], name
    hashed = (stick / "requirements" / "directml-win_amd64-py3.11.txt").read_text()
    assert "torch==2.4.1 --hash=sha256:" in hashed
    assert "directml-win_amd64-py3.11" in (stick / "README.txt").read_text()


def test_a_second_run_downloads_nothing(made):
    _, result, before, after = made

    assert result.returncode == 0, result.stderr
    assert NOTHING_TO_DOWNLOAD in result.stdout
    assert before and after == before


def test_a_fresh_environment_installs_the_linux_part_offline_and_trains(project, stick, tmp_path):
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = venv_python(environment)

    install = subprocess.run(
        [str(python), str(stick / "install.py"), "directml"],
        cwd=project,
        env=clean_env(project),
        capture_output=True,
        text=True,
        timeout=1800,
    )

    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    assert "with no network" in install.stdout
    assert {"torch", "torch-directml", "onnx", "pytest"} <= set(installed(python))
    train = subprocess.run(
        [str(python), "-m", f"{project.name.replace('-', '_')}.train", "--dataset", "synthetic",
         "--epochs", "1", "--output-dir", str(tmp_path / "runs")],
        cwd=project, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    assert (tmp_path / "runs" / "best.pt").is_file()


def linked_copy(stick: Path, copy: Path) -> Path:
    """The stick's tree with its wheels as links: a stick to damage without copying 3 GB."""
    for path in stick.rglob("*"):
        target = copy / path.relative_to(stick)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.parent.name == "wheels":
            target.symlink_to(path)
        else:
            shutil.copyfile(path, target)
    return copy


def damage_truncated(copy: Path) -> str:
    wheel = next((copy / "wheels").glob("tqdm-*.whl"))
    data = wheel.read_bytes()
    wheel.unlink()
    wheel.write_bytes(data[: len(data) // 2])
    return f"{wheel} is damaged"


def damage_removed(copy: Path) -> str:
    wheel = copy / "wheels" / LINUX_TORCH
    wheel.unlink()
    return f"{wheel} is missing"


def damage_manifest(copy: Path) -> str:
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["wheels/" + LINUX_TORCH]["sha256"] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return "manifest.json does not match"


@pytest.mark.parametrize("damage", [damage_truncated, damage_removed, damage_manifest])
def test_a_damaged_stick_says_which_file_in_one_sentence_and_installs_nothing(
    project, stick, tmp_path, damage
):
    copy = linked_copy(stick, tmp_path / "stick")
    expected = damage(copy)
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = venv_python(environment)
    before = installed(python)

    result = subprocess.run(
        [str(python), str(copy / "install.py"), "directml"],
        cwd=project, env=clean_env(project), capture_output=True, text=True, timeout=600,
    )  # fmt: skip

    assert result.returncode == 1
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert installed(python) == before


# ------------------------------------------------------------------ stacks behind other indexes


def fake_wheel(folder: Path, name: str, version: str, tag: str, requires: list[str]) -> Path:
    """A wheel that installs nothing but its metadata, named as the real index names it."""
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-{tag}.whl"
    files = {
        f"{stem}.dist-info/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{stem}.dist-info/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            data = text.encode()
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{member},sha256={digest.decode()},{len(data)}")
        archive.writestr(f"{stem}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def stand_in_index(root: Path, wheels: list[Path]) -> str:
    """A PEP 503 index in a folder, as pip reads one through file:// URLs."""
    for wheel in wheels:
        project = wheel.name.split("-")[0].replace("_", "-").lower()
        page = root / "simple" / project
        page.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        link = f'<a href="../../{wheel.name}#sha256={digest}">{wheel.name}</a><br>\n'
        with open(page / "index.html", "a", encoding="utf-8") as html:
            html.write(link)
    return (root / "simple").as_uri()


def test_a_stack_from_its_own_index_gets_its_local_tags_and_markers_per_platform(project, tmp_path):
    """cuda's wheels come from download.pytorch.org (not reachable here): a stand-in index with
    torch 2.14.1+cu130 and torchvision 0.29.1+cu130 for Windows and Linux, torch depending on a
    package for Windows only, as the real one depends on CUDA packages for Linux only."""
    served = tmp_path / "index"
    served.mkdir()
    wheels = [
        fake_wheel(served, "torch", "2.14.1+cu130", f"cp311-cp311-{tag}",
                   ["filelock", 'wcwidth; platform_system == "Windows"'])
        for tag in ("win_amd64", "manylinux_2_28_x86_64")
    ] + [
        fake_wheel(served, "torchvision", "0.29.1+cu130", f"cp311-cp311-{tag}", ["torch==2.14.1"])
        for tag in ("win_amd64", "manylinux_2_28_x86_64")
    ]  # fmt: skip
    index = stand_in_index(served, wheels)
    small = tmp_path / "stick"

    result = make(project, small, "--stacks", "cuda", "--index", f"cuda={index}")

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    parts = json.loads((small / "manifest.json").read_text(encoding="utf-8"))["parts"]
    assert sorted(parts) == ["cuda-manylinux_x86_64-py3.11", "cuda-win_amd64-py3.11"]
    windows = parts["cuda-win_amd64-py3.11"]["wheels"]
    linux = parts["cuda-manylinux_x86_64-py3.11"]["wheels"]
    assert "torch-2.14.1+cu130-cp311-cp311-win_amd64.whl" in windows
    assert "torchvision-0.29.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl" in linux
    assert any(w.startswith("wcwidth") for w in windows)
    assert not any(w.startswith("wcwidth") for w in linux)
    hashed = (small / "requirements" / "cuda-manylinux_x86_64-py3.11.txt").read_text()
    assert "torch==2.14.1+cu130 --hash=sha256:" in hashed


# ------------------------------------------------------------------ Windows CPython (Wine)


@pytest.mark.windows
def test_windows_cpython_installs_the_windows_part_offline(winpy, project, stick, tmp_path):
    """The embeddable CPython 3.11 without any package, pip run from its wheel (the host's
    ensurepip copy), install.py from the stick: everything of directml for win_amd64 with
    --no-index --require-hashes, then the project. That Python is no environment, but one
    meant for the workshop alone, so install.py is told to install into it."""
    import dataclasses
    import ensurepip

    home = tmp_path / "python"
    shutil.copytree(winpy.home.parent / "base", home)
    fresh = dataclasses.replace(winpy, home=home)
    pip_wheel = next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    folder = shutil.copytree(project, tmp_path / "project")
    env = {"PYTHONPATH": wine_python.winpath(pip_wheel), "PYTHONDONTWRITEBYTECODE": "1"}

    install = fresh.run(
        [wine_python.winpath(stick / "install.py"), "directml", "--into-this-python"],
        cwd=folder, env=env, timeout=1800, display=False,
    )  # fmt: skip

    assert install.returncode == 0, install.output[-4000:]
    assert "Installed the directml environment" in install.stdout
    # What pip installed, from its records: importing torch needs numpy 2.0 under Wine 8
    # (numpy 2.1 and later call ucrtbase's crealf, which Wine 8 lacks; the Windows tier pins
    # numpy for that reason), while the stick rightly carries the numpy that Windows gets.
    names = ("torch", "torch-directml", "onnxruntime-directml", project.name)
    script = f"import importlib.metadata as m, sys; print(sys.platform, *map(m.version, {names}))"
    check = fresh.run(
        ["-c", script],
        cwd=folder, env={"PYTHONDONTWRITEBYTECODE": "1"}, timeout=600, display=False,
    )  # fmt: skip
    assert check.returncode == 0, check.output[-3000:]
    assert check.stdout.split() == ["win32", "2.4.1", "0.2.5.dev240914", "1.24.4", "0.1.0"]
