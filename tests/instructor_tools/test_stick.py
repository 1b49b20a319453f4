"""The workshop stick (instructor/stick), with no network: which wheels each platform needs
(pip resolves against a folder of wheels the test writes), the checks install.py makes before it
installs anything, and the refusal when the stick is too small."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpu_doctor.stick_check import ask_stick
from instructor.stick import install, make
from instructor.stick.platforms import DEFAULT_TARGETS, TARGETS
from instructor.stick.resolve import (
    ResolveError,
    Wheel,
    pip_failure,
    project_requirements,
    read_environment_file,
    resolve,
    with_extras,
)

from .project_under_test import IMPORT_PATH, PROJECT_DIR

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def has_pip() -> bool:
    """Whether pip is installed, asked of its metadata: importlib.util.find_spec("pip") would
    make setuptools' distutils shim step aside for the rest of the session."""
    try:
        importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


# The bundle asks pip where each wheel is; an embeddable Python may come without pip.
needs_pip = pytest.mark.skipif(not has_pip(), reason="this Python has no pip, which resolve runs")


def fake_wheel(folder: Path, name: str, version: str, tag: str, requires=()) -> Path:
    """A wheel holding only its metadata, named as a real index names it."""
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-{tag}.whl"
    members = {
        f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {line}\n" for line in requires),
        f"{stem}.dist-info/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
            record.append(f"{member},sha256={digest.rstrip(b'=').decode()},{len(text)}")
        archive.writestr(f"{stem}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


@pytest.mark.slow
@needs_pip
def test_each_platform_gets_the_dependencies_its_own_markers_ask_for(tmp_path):
    """pip evaluates markers for the machine it runs on; the bundle evaluates them per platform:
    here torch needs one package on Windows only and another on Linux only."""
    abi = "cp" + PYTHON.replace(".", "")
    for tag in ("win_amd64", "manylinux_2_28_x86_64", "macosx_14_0_arm64"):
        fake_wheel(
            tmp_path, "torch", "2.14.1", f"{abi}-{abi}-{tag}",
            ['winonly; platform_system == "Windows"', 'linuxonly; sys_platform == "linux"',
             "common>=1", 'extraonly; extra == "extra"'],
        )  # fmt: skip
    for name in ("winonly", "linuxonly", "common", "extraonly"):
        fake_wheel(tmp_path, name, "1.0", "py3-none-any")
    index = ["--no-index", "--find-links", str(tmp_path)]

    found = {
        target: [wheel.name for wheel in resolve(["torch==2.14.1"], TARGETS[target], PYTHON, index)]
        for target in DEFAULT_TARGETS
    }

    assert found == {
        "win_amd64": ["common", "torch", "winonly"],
        "manylinux_x86_64": ["common", "linuxonly", "torch"],
        "macosx_arm64": ["common", "torch"],
    }


@pytest.mark.slow
@needs_pip
def test_a_gpu_extra_brings_that_gpus_kernels_only(tmp_path):
    """AMD's Windows torch names each GPU's kernels as an extra (torch[device-gfx1151]): the
    stick carries the kernels of the GPUs named with --gfx, not every GPU's."""
    abi = "cp" + PYTHON.replace(".", "")
    fake_wheel(
        tmp_path, "torch", "2.10.0", f"{abi}-{abi}-win_amd64",
        ['kernels-gfx1151; extra == "device-gfx1151"',
         'kernels-gfx1100; extra == "device-gfx1100"'],
    )  # fmt: skip
    for name in ("kernels-gfx1151", "kernels-gfx1100"):
        fake_wheel(tmp_path, name, "1.0", "py3-none-any")
    wanted = [with_extras("torch==2.10.0", {"torch": ["device-gfx1151"]})]

    found = resolve(
        wanted, TARGETS["win_amd64"], PYTHON, ["--no-index", "--find-links", str(tmp_path)]
    )

    assert [wheel.name for wheel in found] == ["kernels-gfx1151", "torch"]


@pytest.mark.slow
@needs_pip
def test_an_index_out_of_reach_is_named_not_taken_for_a_conflict(monkeypatch):
    """Offline, pip says the pins have "conflicting dependencies"; the instructor is told which
    index could not be reached."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no find-links of this machine's pip
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    unreachable = ["--index-url", "http://127.0.0.1:9/simple", "--retries", "0", "--timeout", "5"]

    with pytest.raises(ResolveError) as raised:
        resolve(["torch==2.14.1"], TARGETS["win_amd64"], PYTHON, unreachable)

    assert str(raised.value).startswith("Could not reach 127.0.0.1:9: ")
    assert "conflicting" not in str(raised.value)


def test_pips_telling_line_is_chosen_over_its_note_on_yanked_versions():
    stderr = (
        "ERROR: Ignored the following yanked versions: 0.1.6, 0.1.7\n"
        "ERROR: Could not find a version that satisfies the requirement alpha==9 (from versions:"
        " 0.1.6)\nERROR: No matching distribution found for alpha==9\n"
    )

    assert pip_failure(stderr) == "No matching distribution found for alpha==9"
    assert pip_failure("ERROR: Something else\n") == "Something else"


def test_the_environment_file_gives_its_pins_and_index_and_leaves_the_project_out():
    cpu = read_environment_file(PROJECT_DIR / "environments" / "cpu.txt")

    assert any(line.startswith("torch==") for line in cpu.requirements)
    assert not any(line.startswith("-") for line in cpu.requirements)
    assert cpu.index_options[:2] == ["--index-url", "https://download.pytorch.org/whl/cpu"]
    needs = project_requirements(PROJECT_DIR / "pyproject.toml")
    assert {"tqdm>=4.60", "pytest>=7", "setuptools>=64"} <= set(needs)


def small_stick(folder: Path, stack: str = "cpu") -> Path:
    """A stick with two wheels for this machine and its installer, as `make` writes one."""
    target = install.this_platform() or "manylinux_x86_64"
    wheels = folder / "wheels"
    wheels.mkdir(parents=True)
    files, lines = {}, []
    for name in ("alpha", "beta"):
        path = fake_wheel(wheels, name, "1.0", "py3-none-any")
        digest = install.sha256_of(path)
        files[f"wheels/{path.name}"] = {"size": path.stat().st_size, "sha256": digest}
        lines.append(f"{name}==1.0 --hash=sha256:{digest}  # {path.name}")
    name = install.part_name(stack, target, PYTHON)
    (folder / "requirements").mkdir()
    (folder / "requirements" / f"{name}.txt").write_text("\n".join(lines) + "\n")
    part = {
        "stack": stack, "platform": target, "python": PYTHON, "bytes": 0,
        "requirements": f"requirements/{name}.txt", "wheels": sorted(Path(k).name for k in files),
    }  # fmt: skip
    manifest = {"format": 1, "project": "p", "files": files, "parts": {name: part}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    shutil.copyfile(install.__file__, folder / "install.py")
    return folder


def test_a_whole_stick_passes_its_check(tmp_path):
    stick = small_stick(tmp_path)
    part = install.check_part(stick, "cpu", install.this_platform(), PYTHON)
    assert len(part["wheels"]) == 2


def _remove(stick):
    path = next((stick / "wheels").glob("alpha-*"))
    path.unlink()
    return f"{path} is missing"


def _truncate(stick):
    path = next((stick / "wheels").glob("beta-*"))
    path.write_bytes(path.read_bytes()[:100])
    return f"{path} is damaged"


def _flip_a_byte(stick):  # same size, other content: only the SHA-256 tells
    path = next((stick / "wheels").glob("beta-*"))
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    return f"{path} is damaged"


def _edit_manifest(stick):
    manifest = json.loads((stick / "manifest.json").read_text())
    next(iter(manifest["files"].values()))["sha256"] = "0" * 64
    (stick / "manifest.json").write_text(json.dumps(manifest))
    return "manifest.json does not match"


def _no_manifest(stick):
    (stick / "manifest.json").unlink()
    return "is no workshop stick"


@pytest.mark.parametrize("damage", [_remove, _truncate, _flip_a_byte, _edit_manifest, _no_manifest])
def test_a_damaged_stick_is_one_sentence_and_pip_never_runs(tmp_path, monkeypatch, capsys, damage):
    stick = small_stick(tmp_path / "stick")
    expected = damage(stick)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.setattr(install, "__file__", str(stick / "install.py"))
    monkeypatch.setattr(install, "in_an_environment", lambda: True)  # a CI's own Python too
    ran = []
    monkeypatch.setattr(install.subprocess, "run", lambda *a, **k: ran.append(a))

    code = install.main(["cpu"])

    error = capsys.readouterr().err
    assert code == 1 and ran == []
    assert expected in error
    assert len(error.strip().splitlines()) == 1


def test_a_stick_that_is_not_there_asks_for_the_drive(tmp_path):
    verdict = install.stick_verdict(tmp_path / "E", "cpu")

    assert f"There is no folder {tmp_path / 'E'}: is the stick plugged in" in verdict


def test_a_stick_without_the_stack_names_what_it_holds(tmp_path):
    stick = small_stick(tmp_path)
    with pytest.raises(install.StickProblem, match="holds no directml environment.*it holds: cpu"):
        install.check_part(stick, "directml", install.this_platform(), PYTHON)


def test_a_stick_too_small_is_refused_before_any_download(tmp_path):
    wheel = Wheel("huge", "1.0", (tmp_path / "huge-1.0-py3-none-any.whl").as_uri(), "")
    plan = make.Plan(parts=[], sizes={wheel.filename: 10**18}, missing=[wheel])

    with pytest.raises(make.BundleError, match="GB free but the bundle needs"):
        make.make(PROJECT_DIR, tmp_path / "stick", plan)
    assert not (tmp_path / "stick" / "wheels").exists()


def test_verify_install_asks_the_sticks_own_installer_what_it_holds(tmp_path):
    """The student's doctor carries none of the stick's code: install.py on the stick answers."""
    stick = small_stick(tmp_path / "stick", stack="cpu")
    assert ask_stick(stick, "cpu").startswith(f"Workshop stick: {stick} holds the cpu")
    _remove(stick)
    assert "alpha-1.0-py3-none-any.whl is missing" in ask_stick(stick, "cpu")
    assert "holds no cuda environment" in ask_stick(stick, "cuda")


def test_a_folder_without_the_installer_is_no_workshop_stick(tmp_path):
    stick = small_stick(tmp_path / "stick", stack="cpu")
    (stick / "install.py").unlink()

    assert "install.py is missing, so" in ask_stick(stick, "cpu")
    assert "is the stick plugged in" in ask_stick(tmp_path / "E", "cpu")


@pytest.mark.slow
def test_verify_install_takes_a_stick(tmp_path):
    stick = small_stick(tmp_path / "stick", stack="directml")
    result = subprocess.run(
        [sys.executable, "-m", "gpu_doctor.checkup", "--bundle", str(stick)],
        cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([*IMPORT_PATH, *sys.path])),
    )  # fmt: skip
    assert "Traceback" not in result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("Workshop stick: ")


def test_mnist_goes_onto_the_stick_in_the_folder_train_reads(tmp_path):
    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in make.MNIST_FILES:
        (raw / f"{name}.gz").write_bytes(name.encode())

    files = make.copy_mnist(tmp_path / "data", tmp_path / "stick", say=lambda text: None)

    assert sorted(files) == sorted(f"data/MNIST/raw/{name}.gz" for name in make.MNIST_FILES)
    copied = tmp_path / "stick" / "data" / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz"
    assert copied.read_bytes() == b"t10k-labels-idx1-ubyte"
    assert files["data/MNIST/raw/t10k-labels-idx1-ubyte.gz"]["size"] == len(
        b"t10k-labels-idx1-ubyte"
    )


def test_make_writes_over_a_damaged_manifest_and_a_second_make_downloads_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(make, "copy_mnist", lambda *args: {})  # MNIST has its own test
    source = fake_wheel(tmp_path, "alpha", "1.0", "py3-none-any")
    wheel = Wheel("alpha", "1.0", source.as_uri(), install.sha256_of(source))
    part = make.Part("cpu", "win_amd64", PYTHON, [wheel])
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / "manifest.json").write_text("{not json")
    plan = make.Plan([part], {wheel.filename: source.stat().st_size}, [wheel])
    quiet = {"say": lambda text: None}

    manifest = make.make(PROJECT_DIR, stick, plan, "my_package", **quiet)

    name = install.part_name("cpu", "win_amd64", PYTHON)
    assert manifest["parts"][name]["wheels"] == [wheel.filename]
    assert (stick / "wheels" / wheel.filename).read_bytes() == source.read_bytes()
    assert "python -m my_package.train --data-dir" in (stick / "README.txt").read_text()
    assert json.loads((stick / "manifest.json").read_text())["files"] == manifest["files"]
    source.unlink()  # a second run must not need the source again
    again = make.make(PROJECT_DIR, stick, make.Plan([part], plan.sizes, []), "my_package", **quiet)
    assert again["files"] == manifest["files"]
