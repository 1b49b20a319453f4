"""Installing from a workshop stick on a participant's laptop, with no network: what install.py,
the instructor's ``check`` and ``verify_install --bundle`` refuse, and that each refusal is one
sentence naming the fix that works in the room. The sticks here are small: two wheels that hold
only their metadata, a hashed requirements file and a manifest, as ``make`` writes them."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpu_doctor import checkup, stick_check
from gpu_doctor.gpus import AMD, Gpu
from gpu_doctor.recommend import Recommendation
from gpu_doctor.stick_check import ask_stick
from gpu_doctor.verdict import Report
from instructor.stick import __main__ as stick_command
from instructor.stick import install

from .project_under_test import PROJECT_DIR

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
OTHER_PYTHON = "3.12" if PYTHON != "3.12" else "3.13"
TARGET = install.this_platform() or "manylinux_x86_64"
PROJECT, PACKAGE = "lenet-on-directml", "lenet_on_directml"


def wheel_file(folder: Path, name: str, version: str = "1.0") -> Path:
    """A wheel holding only its metadata, named as a real index names it."""
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    members = {
        f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{stem}.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
            record.append(f"{member},sha256={digest.rstrip(b'=').decode()},{len(text)}")
        archive.writestr(f"{stem}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def add_part(stick: Path, stack: str, python: str = PYTHON, target: str = TARGET, **more) -> str:
    """One environment on ``stick`` (two wheels of its own), written into its manifest."""
    manifest = json.loads((stick / "manifest.json").read_text(encoding="utf-8"))
    name = install.part_name(stack, target, python)
    lines, wheels = [], []
    for package in (f"{stack}-alpha", f"{stack}-beta"):
        path = wheel_file(stick / "wheels", package)
        digest = install.sha256_of(path)
        manifest["files"][f"wheels/{path.name}"] = {"size": path.stat().st_size, "sha256": digest}
        lines.append(f"{package}==1.0 --hash=sha256:{digest}  # {path.name}")
        wheels.append(path.name)
    (stick / "requirements" / f"{name}.txt").write_text(
        f"# {stack}\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    manifest["parts"][name] = {
        "stack": stack, "platform": target, "python": python, "bytes": 0,
        "requirements": f"requirements/{name}.txt", "wheels": sorted(wheels), **more,
    }  # fmt: skip
    (stick / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return name


def a_stick(folder: Path, stacks=("cpu",)) -> Path:
    """A stick for this project with one environment per stack, and its installer."""
    (folder / "wheels").mkdir(parents=True)
    (folder / "requirements").mkdir()
    manifest = {"format": 1, "project": PROJECT, "package": PACKAGE, "files": {}, "parts": {}}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for stack in stacks:
        add_part(folder, stack)
    (folder / "install.py").write_bytes(Path(install.__file__).read_bytes())
    return folder


def a_project(folder: Path, name: str = PROJECT, package: str = PACKAGE) -> Path:
    (folder / "src" / package).mkdir(parents=True)
    (folder / "src" / package / "__init__.py").write_text("", encoding="utf-8")
    (folder / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["setuptools>=64"]\n\n[project]\nname = "{name}"\n',
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def room(tmp_path, monkeypatch):
    """A stick and the project folder, install.py run from the stick in that folder, in an
    environment with pip, pip never really run."""
    stick = a_stick(tmp_path / "stick")
    project = a_project(tmp_path / PROJECT)
    monkeypatch.chdir(project)
    monkeypatch.setattr(install, "__file__", str(stick / "install.py"))
    ran = []
    monkeypatch.setattr(
        install.subprocess,
        "run",
        lambda command, **kw: ran.append(command) or subprocess.CompletedProcess(command, 0),
    )
    monkeypatch.setattr(install, "has_pip", lambda: True, raising=False)
    # an active conda environment: so whatever Python runs the tests (a CI's own, too)
    monkeypatch.setenv("CONDA_PREFIX", sys.prefix)
    monkeypatch.setenv("CONDA_DEFAULT_ENV", "workshop")
    monkeypatch.setattr(install, "laptop_gpu_targets", lambda project: [], raising=False)
    return stick, project, ran


def refusal(capsys, code: int) -> str:
    """install.py's refusal: exit status 1 and one line on stderr, no traceback."""
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return err.strip()


# 1. An environment, never the machine's own Python.


def the_machines_own_python(monkeypatch) -> None:
    """This Python as a machine's own: no virtual environment, no conda environment."""
    monkeypatch.setattr(install.sys, "prefix", install.sys.base_prefix)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)


def test_install_refuses_the_machines_own_python_and_says_how_to_make_the_venv(
    room, monkeypatch, capsys
):
    _, _, ran = room
    the_machines_own_python(monkeypatch)

    error = refusal(capsys, install.main(["cpu"]))

    assert "not in an environment" in error
    assert f"{PYTHON} -m venv .venv-cpu" in error and "activate" in error
    assert "--into-this-python" in error
    assert ran == []


def test_the_override_installs_into_the_machines_own_python(room, monkeypatch):
    _, _, ran = room
    the_machines_own_python(monkeypatch)

    assert install.main(["cpu"]) == 1
    assert install.main(["cpu", "--into-this-python"]) == 0
    assert len(ran) == 2


def test_an_active_conda_environment_counts_but_conda_base_does_not(monkeypatch):
    monkeypatch.setattr(install.sys, "prefix", install.sys.base_prefix)
    monkeypatch.setenv("CONDA_PREFIX", install.sys.base_prefix)
    monkeypatch.setenv("CONDA_DEFAULT_ENV", "workshop")
    assert install.in_an_environment()
    monkeypatch.setenv("CONDA_DEFAULT_ENV", "base")
    assert not install.in_an_environment()


# 2. The stick's project, not whatever project the folder holds.


def test_install_refuses_another_project_and_names_both(room, monkeypatch, tmp_path, capsys):
    stick, _, ran = room
    monkeypatch.chdir(a_project(tmp_path / "other", "pets-classifier", "pets_classifier"))

    error = refusal(capsys, install.main(["cpu"]))

    assert "lenet-on-directml" in error and "pets-classifier" in error
    assert ran == []


def test_a_renamed_project_folder_is_still_the_project(room, monkeypatch, tmp_path):
    _, project, ran = room
    monkeypatch.chdir(tmp_path)  # Windows renames no folder that is a current directory
    monkeypatch.chdir(project.rename(tmp_path / "lenet-on-directml-main"))

    assert install.main(["cpu"]) == 0


# 3. An environment without pip (uv makes them so).


def test_an_environment_without_pip_is_told_the_offline_fix(tmp_path):
    stick = a_stick(tmp_path / "stick")
    project = a_project(tmp_path / PROJECT)
    venv = tmp_path / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True
    )
    if made.returncode != 0:  # an embedded Python (the Windows tier's) has no venv to make
        pytest.skip(f"this Python makes no virtual environment: {made.stderr.strip()[-200:]}")
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")

    result = subprocess.run(
        [str(python), str(stick / "install.py"), "cpu"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert "has no pip" in error
    assert "python -m ensurepip" in error
    requirements = stick / "requirements" / f"{install.part_name('cpu', TARGET, PYTHON)}.txt"
    assert f"--find-links {stick / 'wheels'}" in error and f"-r {requirements}" in error
    assert "uv pip install" in error and "--no-index" in error


# 4. The fix in the room first: the right Python; the stick's stacks by name.


def test_the_wrong_python_is_told_to_use_the_sticks_python(room, capsys):
    stick, _, ran = room
    add_part(stick, "directml", python=OTHER_PYTHON)

    error = refusal(capsys, install.main(["directml"]))

    assert f"use Python {OTHER_PYTHON}" in error
    assert f"{OTHER_PYTHON} -m venv .venv-directml" in error  # py -3.12 or python3.12
    assert error.index(f"use Python {OTHER_PYTHON}") < error.index("at home")
    assert ran == []


def test_a_python_outside_the_stacks_range_is_not_told_to_remake_the_stick_for_it(room, capsys):
    """H18: make refuses --python outside a stack's range (cpu starts at 3.10): the refusal
    advises the stick's Python, never a remake that make would refuse in turn."""
    stick, _, ran = room
    low, high = OTHER_PYTHON, "3.14"  # a range that leaves out this Python
    add_part(stick, "directml", python=OTHER_PYTHON, python_range=[low, high])

    error = refusal(capsys, install.main(["directml"]))

    assert f"use Python {OTHER_PYTHON}" in error
    assert "--python" not in error
    assert f"the directml stack runs on Python {low} to {high}" in error
    assert ran == []


def test_a_python_inside_the_stacks_range_is_told_the_remake_that_adds_it(room, capsys):
    stick, _, _ = room
    add_part(stick, "directml", python=OTHER_PYTHON, python_range=["3.8", "3.14"])

    error = refusal(capsys, install.main(["directml"]))

    assert f"python instructor.pyz stick make --python {PYTHON}" in error


def test_make_records_each_stacks_python_range_in_the_manifest(tmp_path, monkeypatch):
    from instructor.stick import make

    monkeypatch.setattr(make, "copy_mnist", lambda *args: {})
    stick = tmp_path / "stick"
    stick.mkdir()
    part = make.Part("cpu", TARGET, PYTHON, [])
    plan = make.Plan([part], {}, [])

    ranges = {"cpu": ["3.10", "3.14"]}
    manifest = make.make(tmp_path, stick, plan, "p", say=print, python_ranges=ranges)

    assert manifest["parts"][part.name]["python_range"] == ["3.10", "3.14"]


def test_a_stack_for_another_platform_names_the_sticks_environments_for_this_one(room, capsys):
    stick, _, ran = room
    elsewhere = "macosx_arm64" if TARGET != "macosx_arm64" else "win_amd64"
    add_part(stick, "directml", target=elsewhere)

    error = refusal(capsys, install.main(["directml"]))

    label = {"win_amd64": "Windows x64", "manylinux_x86_64": "Linux x86_64"}.get(TARGET, "macOS")
    assert f"install one of its environments for {label}" in error
    assert "(cpu)" in error and error.index("(cpu)") < error.index("at home")
    assert ran == []


@pytest.mark.parametrize("name", ["", "cdua", "\x1b[31mred\x1b[0m\r\n"])
def test_an_unknown_stack_is_told_the_sticks_stacks_and_echoed_safely(room, capsys, name):
    error = refusal(capsys, install.main([name]))

    assert "it holds: cpu" in error
    assert "\x1b" not in error and "\r" not in error
    assert "install.py cpu" in error


# 5. A manifest of the wrong shape: one sentence from each command that reads it.

DEEP = "[" * 200_000 + "]" * 200_000


def _entry(manifest):
    return next(iter(manifest["parts"].values()))


BAD_MANIFESTS = {
    "a list": lambda manifest: [manifest],
    "files a list": lambda manifest: {**manifest, "files": list(manifest["files"])},
    "a part a string": lambda manifest: {**manifest, "parts": {"cpu": "cpu"}},
    "a file entry a string": lambda manifest: {
        **manifest,
        "files": {name: "0" * 64 for name in manifest["files"]},
    },
    "a file without its size": lambda manifest: {
        **manifest,
        "files": {name: {"sha256": entry["sha256"]} for name, entry in manifest["files"].items()},
    },
    "a part without its wheels": lambda manifest: (_entry(manifest).pop("wheels"), manifest)[1],
    "wheels a string": lambda manifest: (
        _entry(manifest).update(wheels="alpha.whl"),
        manifest,
    )[1],
    "a wheel outside the stick": lambda manifest: (
        _entry(manifest)["wheels"].append("../../elsewhere.whl"),
        manifest,
    )[1],
}


def write_bad_manifest(stick: Path, bad: str) -> None:
    path = stick / "manifest.json"
    if bad == "nested 200,000 deep":
        path.write_text(DEEP, encoding="utf-8")
        return
    manifest = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(BAD_MANIFESTS[bad](manifest)), encoding="utf-8")


@pytest.mark.parametrize("bad", [*BAD_MANIFESTS, "nested 200,000 deep"])
def test_a_manifest_of_the_wrong_shape_is_one_sentence_everywhere(room, capsys, bad):
    stick, _, ran = room
    write_bad_manifest(stick, bad)

    with pytest.raises(install.StickProblem, match="manifest.json is damaged"):
        install.read_manifest(stick)  # make.py counts such a stick as empty
    assert "manifest.json is damaged" in refusal(capsys, install.main(["cpu"]))
    assert ran == []
    assert stick_command.check(stick, "cpu") == 1
    said = capsys.readouterr().out.strip()
    assert len(said.splitlines()) == 1 and "manifest.json is damaged" in said
    verdict = ask_stick(stick, "cpu")
    assert verdict.startswith("Workshop stick: ") and "manifest.json is damaged" in verdict


# 6. Every requirements line is a wheel of the manifest, with its hash.


def test_a_requirements_line_the_manifest_does_not_list_is_refused(room, capsys):
    stick, _, ran = room
    stranger = wheel_file(stick / "wheels", "stranger")
    name = install.part_name("cpu", TARGET, PYTHON)
    with open(stick / "requirements" / f"{name}.txt", "a", encoding="utf-8") as requirements:
        requirements.write(f"stranger==1.0 --hash=sha256:{install.sha256_of(stranger)}\n")

    error = refusal(capsys, install.main(["cpu"]))

    assert "stranger==1.0" in error and "manifest.json" in error
    assert ran == []


@pytest.mark.parametrize(
    "line", ["--index-url https://example.org/simple", "-e ../elsewhere", "stranger==1.0"]
)
def test_a_requirements_option_or_unhashed_line_is_refused(room, line):
    stick, _, _ = room
    name = install.part_name("cpu", TARGET, PYTHON)
    with open(stick / "requirements" / f"{name}.txt", "a", encoding="utf-8") as requirements:
        requirements.write(line + "\n")

    with pytest.raises(install.StickProblem, match="does not match"):
        install.check_part(stick, "cpu", TARGET, PYTHON)


# 7. --bundle names a file.


def test_bundle_given_a_file_says_it_takes_the_sticks_folder(tmp_path):
    stick = a_stick(tmp_path / "stick")

    verdict = ask_stick(stick / "manifest.json", "cpu")

    assert "is a file" in verdict and "There is no folder" not in verdict
    assert f"--bundle takes the stick's folder ({stick})" in verdict
    with pytest.raises(install.StickProblem, match="is a file"):
        install.read_manifest(stick / "install.py")


# 8. Refusals name the fix that works in the room, before the instructor's at home.


def _damaged_wheel(stick):
    path = next((stick / "wheels").glob("cpu_beta-*"))
    path.write_bytes(path.read_bytes()[:-1] + b"!")


def _missing_wheel(stick):
    next((stick / "wheels").glob("cpu_alpha-*")).unlink()


def _missing_requirements(stick):
    next((stick / "requirements").glob("cpu-*")).unlink()


def _damaged_manifest(stick):
    (stick / "manifest.json").write_text("{not json", encoding="utf-8")


@pytest.mark.parametrize(
    "damage", [_damaged_wheel, _missing_wheel, _missing_requirements, _damaged_manifest]
)
def test_a_refusal_names_the_rooms_fix_first(room, capsys, damage):
    stick, _, _ = room
    damage(stick)

    error = refusal(capsys, install.main(["cpu"]))

    assert "copy" in error and "from the instructor's stick" in error
    assert "network" not in error or error.index("instructor's stick") < error.index("network")


def test_the_doctor_without_the_installer_names_the_rooms_fix(tmp_path):
    stick = a_stick(tmp_path / "stick")
    (stick / "install.py").unlink()

    verdict = ask_stick(stick, "cpu")

    assert "copy install.py again from the instructor's stick" in verdict


# 9. The stick's GPU kernels against the laptop's GPU.


def amd_gpu(target: str) -> Gpu:
    """A Strix Halo laptop's GPU as the doctor reads it on Windows (DXGI, then the HIP runtime)."""
    return Gpu(
        "AMD Radeon(TM) 8060S Graphics", vendor_id=AMD, device_id=0x1586, source="DXGI",
        driver_version="32.0.21025.1024", gfx_target=target, target_source="HIP runtime",
    )  # fmt: skip


@pytest.fixture
def amd_room(room):
    stick, project, ran = room
    add_part(stick, "rocm-windows", gpu_targets=["gfx1100"])
    add_part(stick, "directml")
    return stick, project, ran


def test_install_refuses_kernels_for_another_gpu_and_names_the_sticks_other_parts(
    amd_room, monkeypatch, capsys
):
    stick, _, ran = amd_room
    monkeypatch.setattr(install, "laptop_gpu_targets", lambda project: ["gfx1151"])

    error = refusal(capsys, install.main(["rocm-windows"]))

    assert "gfx1151" in error and "gfx1100" in error
    assert "install.py directml" in error and "cpu" in error
    assert ran == []
    assert install.main(["rocm-windows", "--gfx", "gfx1100"]) == 0


def test_install_takes_kernels_that_fit_the_laptops_gpu(amd_room, monkeypatch):
    _, _, ran = amd_room
    monkeypatch.setattr(install, "laptop_gpu_targets", lambda project: ["gfx1103", "gfx1100"])

    assert install.main(["rocm-windows"]) == 0
    assert len(ran) == 2


def test_install_reads_the_laptops_gpu_with_the_projects_doctor(monkeypatch):
    from gpu_doctor import facts
    from gpu_doctor.gpus import GpuScan

    scan = GpuScan([amd_gpu("gfx1151"), Gpu("Microsoft Basic Render Driver", software=True)])
    monkeypatch.setattr(facts, "scan_gpus", lambda info: scan)

    assert install.laptop_gpu_targets(PROJECT_DIR) == ["gfx1151"]


def test_verify_install_bundle_compares_the_kernels_with_the_laptops_gpu(
    amd_room, monkeypatch, capsys
):
    stick, _, _ = amd_room
    recommendation = Recommendation("rocm-windows", "AMD on Windows", amd_gpu("gfx1151"))
    report = Report(project={"accelerator": "rocm-windows"})
    report.recommendation = recommendation.to_dict()
    monkeypatch.setattr(checkup, "run", lambda device: report)

    checkup.main(["--bundle", str(stick)])

    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("Workshop stick: ")
    assert "gfx1151" in line and "gfx1100" in line and "directml" in line
    assert "holds the rocm-windows environment" in ask_stick(stick, "rocm-windows", "gfx1100")
    assert stick_check.gfx_target_of(report.recommendation) == "gfx1151"


# Ctrl+C: one sentence, and what was done stays.


def test_ctrl_c_while_checking_installs_nothing_and_says_so(room, monkeypatch, capsys):
    _, _, ran = room

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(install, "sha256_of", interrupted)

    assert install.main(["cpu"]) == 130
    error = capsys.readouterr().err.strip()
    assert error == "Stopped while checking the stick: nothing was installed."
    assert ran == []
