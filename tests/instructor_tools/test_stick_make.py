"""Making a workshop stick (python -m instructor.stick make), with no network: a stand-in project
whose environment file names a local index of small wheels (file://), made into a folder of the
test's. make writes only inside that folder, never over a file it did not write, never through a
link; bad options and bad folders are one sentence; a run stopped halfway goes on where it
stopped; two runs at once do not both write."""

from __future__ import annotations

import builtins
import errno
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_doctor.project import load_project
from instructor.project import project_file
from instructor.stick import __main__ as cli
from instructor.stick import fetch, install, make
from instructor.stick.lock import LOCK_FILE
from instructor.stick.platforms import DEFAULT_TARGETS, TARGETS
from instructor.stick.readme import room_readme
from instructor.stick.resolve import ResolveError, mirror_options, resolve, unreachable_indexes

from .project_under_test import IMPORT_PATH, PROJECT_DIR
from .test_stick import PYTHON, fake_wheel, needs_pip, small_stick

ABI = "cp" + PYTHON.replace(".", "")


def local_index(folder: Path, wheels: list[Path]) -> str:
    """A PEP 503 index in ``folder`` (as pip reads one through file://): its URL."""
    for wheel in wheels:
        name = wheel.name.split("-")[0].replace("_", "-").lower()
        page = folder / "simple" / name
        page.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        with open(page / "index.html", "a", encoding="utf-8") as html:
            html.write(f'<a href="../../{wheel.name}#sha256={digest}">{wheel.name}</a><br>\n')
    return (folder / "simple").as_uri()


@pytest.fixture
def standin(tmp_path, monkeypatch) -> Path:
    """A project folder whose cpu stack needs four small wheels from a local index, with MNIST in
    its data folder; the test runs in it, with none of this machine's pip settings."""
    served = tmp_path / "index"
    served.mkdir()
    wheels = [fake_wheel(served, "alpha", "1.0", "py3-none-any", ["beta", "gamma", "delta"])]
    for name in ("beta", "gamma", "delta"):
        wheels.append(fake_wheel(served, name, "1.0", "py3-none-any"))
    project = tmp_path / "project"
    (project / "environments").mkdir(parents=True)
    (project / "environments" / "cpu.txt").write_text(
        f"--index-url {local_index(served, wheels)}\nalpha==1.0\n-e .[dev]\n"
    )
    (project / "pyproject.toml").write_text("[project]\nname = 'standin'\n")
    shutil.copyfile(project_file(PROJECT_DIR), project / "environments" / "project.json")
    raw = project / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in make.MNIST_FILES:
        (raw / f"{name}.gz").write_bytes(name.encode() * 50)
    monkeypatch.chdir(project)
    monkeypatch.setattr(fetch, "tqdm", None)  # its bars write to stderr, where refusals go
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    return project


def make_cpu(stick: Path, *more: str) -> int:
    return cli.main(
        ["make", str(stick), "--stacks", "cpu:manylinux_x86_64", "--python", PYTHON, "--yes", *more]
    )


@pytest.fixture
def downloads(monkeypatch) -> list[str]:
    """The wheels make downloads, in order."""
    done: list[str] = []
    real = make.download

    def counted(wheel, destination, size):
        real(wheel, destination, size)
        done.append(wheel.filename)

    monkeypatch.setattr(make, "download", counted)
    return done


def one_sentence(capsys) -> str:
    error = capsys.readouterr().err.strip()
    assert "Traceback" not in error
    assert len(error.splitlines()) == 1, error
    return error


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


# ------------------------------------------------------------------ 1. the stick folder's own files


@pytest.mark.slow
@needs_pip
@pytest.mark.parametrize(
    ("own", "text"),
    [
        ("README.txt", "the instructor's own notes\n"),
        ("install.py", "print('the instructor's own installer')\n"),
        ("manifest.json", '{"name": "a web app", "version": "1.0"}'),
    ],
)
def test_the_folders_own_files_are_never_written_over(standin, tmp_path, capsys, own, text):
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / own).write_text(text)

    code = make_cpu(stick)

    error = one_sentence(capsys)
    assert code == 1
    assert f"{stick / own} is already there and make did not write it" in error
    assert (stick / own).read_text() == text
    assert not (stick / "wheels").exists()


@pytest.mark.slow
@needs_pip
@pytest.mark.parametrize("linked", ["README.txt", "requirements", "wheels"])
def test_a_second_make_never_writes_through_a_link(standin, tmp_path, capsys, linked, downloads):
    stick, outside = tmp_path / "stick", tmp_path / "outside"
    assert make_cpu(stick) == 0
    if linked == "wheels":  # a wheel to fetch again, in a folder that now leads elsewhere
        shutil.copytree(stick / "wheels", outside)
        (outside / next(iter(sorted(os.listdir(outside))))).unlink()
    elif (stick / linked).is_dir():
        shutil.copytree(stick / linked, outside)
    else:
        outside.write_text("a file of this machine's\n")
    before = tree(outside) if outside.is_dir() else outside.read_bytes()
    shutil.rmtree(stick / linked) if (stick / linked).is_dir() else (stick / linked).unlink()
    try:
        (stick / linked).symlink_to(outside, target_is_directory=outside.is_dir())
    except OSError:  # Windows without the right to make links: nobody else made one either
        pytest.skip("this account cannot make symbolic links")
    capsys.readouterr()

    code = make_cpu(stick)

    error = one_sentence(capsys)
    assert code == 1
    assert f"{stick / linked} is a link: make writes only into {stick} itself" in error
    assert (tree(outside) if outside.is_dir() else outside.read_bytes()) == before


# ------------------------------------------------------------------ 2. folders make cannot write


def refuse_writes_under(folder: Path, monkeypatch) -> None:
    """A read-only stick, as the system answers one (EROFS), also for root, whom chmod does not
    stop."""
    folder.chmod(0o555)

    def under(path) -> bool:
        return isinstance(path, (str, os.PathLike)) and str(Path(path)).startswith(str(folder))

    def read_only(real, writes):
        def call(path, *args, **kwargs):
            if under(path) and writes(*args, **kwargs):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real(path, *args, **kwargs)

        return call

    writing = ("w", "a", "x", "+")
    monkeypatch.setattr(os, "mkdir", read_only(os.mkdir, lambda *a, **k: True))
    monkeypatch.setattr(
        os, "open", read_only(os.open, lambda flags, *a, **k: flags & (os.O_WRONLY | os.O_RDWR))
    )
    opener = read_only(builtins.open, lambda mode="r", *a, **k: any(c in mode for c in writing))
    monkeypatch.setattr(builtins, "open", opener)
    monkeypatch.setattr(io, "open", opener)


@pytest.mark.slow
@needs_pip
@pytest.mark.parametrize("kind", ["read-only", "a file"])
def test_a_stick_make_cannot_write_is_one_sentence(standin, tmp_path, capsys, monkeypatch, kind):
    stick = tmp_path / "stick"
    if kind == "a file":
        stick.write_text("not a folder")
        expected = f"{stick} is a file, not a folder"
    else:
        stick.mkdir()
        refuse_writes_under(stick, monkeypatch)
        expected = f"Could not write to {stick}"

    code = make_cpu(stick)

    monkeypatch.undo()
    assert code == 1
    assert expected in one_sentence(capsys)
    assert not stick.is_dir() or os.listdir(stick) == []


@pytest.mark.slow
@needs_pip
def test_mnist_counts_toward_the_room_the_stick_needs(standin, tmp_path, capsys, monkeypatch):
    stick = tmp_path / "stick"
    wheels = sum(p.stat().st_size for p in (tmp_path / "index").glob("*.whl"))
    monkeypatch.setattr(make, "free_bytes", lambda folder: wheels + 100)  # MNIST is 2 kB more

    code = make_cpu(stick)

    assert code == 1
    assert "free but the bundle needs" in one_sentence(capsys)
    assert not (stick / "wheels").exists() and not (stick / "data").exists()


@pytest.mark.slow
@needs_pip
def test_a_stick_that_fills_up_during_mnist_keeps_no_half_file(
    standin, tmp_path, capsys, monkeypatch
):
    stick = tmp_path / "stick"

    def fills_up(source, destination):
        Path(destination).write_bytes(Path(source).read_bytes()[:10])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(destination))

    monkeypatch.setattr(make.shutil, "copyfile", fills_up)

    code = make_cpu(stick)

    assert code == 1
    assert f"Could not write to {stick}" in one_sentence(capsys)
    assert not list((stick / "data").rglob("*.gz*"))


# ------------------------------------------------------------------ 3. Ctrl+C, then run again


@pytest.mark.slow
@needs_pip
def test_a_make_stopped_with_ctrl_c_goes_on_where_it_stopped(
    standin, tmp_path, capsys, downloads, monkeypatch
):
    stick = tmp_path / "stick"
    counted = make.download

    def stopped_at_the_third(wheel, destination, size):
        if len(downloads) == 2:
            raise KeyboardInterrupt
        counted(wheel, destination, size)

    monkeypatch.setattr(make, "download", stopped_at_the_third)
    assert make_cpu(stick) == 130
    assert "run the same command again" in capsys.readouterr().err
    first = list(downloads)
    assert len(first) == 2
    assert not list(stick.rglob("*.part"))
    assert not (stick / LOCK_FILE).exists()

    monkeypatch.setattr(make, "download", counted)
    assert make_cpu(stick) == 0

    second = downloads[2:]
    assert len(second) == 2, second
    assert sorted(first + second) == sorted(p.name for p in (stick / "wheels").iterdir())
    part = install.check_part(stick, "cpu", "manylinux_x86_64", PYTHON)
    assert len(part["wheels"]) == 4


# ------------------------------------------------------------------ 4. two makes at once


HOLD = """
import sys
from pathlib import Path
from instructor.stick.lock import stick_lock
with stick_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.mark.slow
@needs_pip
def test_a_second_make_at_once_is_refused_and_a_killed_makes_lock_is_not(standin, tmp_path, capsys):
    stick = tmp_path / "stick"
    stick.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(stick)], cwd=PROJECT_DIR, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(IMPORT_PATH)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"

        code = make_cpu(stick)

        error = one_sentence(capsys)
        assert code == 1
        assert f"{stick} is being written by process {holder.pid} on " in error
        assert "wait until it ends" in error
        assert not (stick / "wheels").exists()
    finally:
        holder.kill()  # as a make killed halfway: its lock file stays behind
        holder.wait()
    assert (stick / LOCK_FILE).exists()

    assert make_cpu(stick) == 0
    assert not (stick / LOCK_FILE).exists()


def test_an_index_that_gives_a_size_no_file_has_counts_as_unknown(monkeypatch):
    """G13's other way in: an index (or a mirror) answering Content-Length: 10**400."""

    class Answer:
        headers = {"Content-Length": str(10**400)}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(fetch.urllib.request, "urlopen", lambda *args, **kwargs: Answer())

    assert fetch.size_of("https://mirror.example/simple/alpha-1.0-py3-none-any.whl") == 0


# ------------------------------------------------------------------ 5. a manifest of another shape


@pytest.mark.slow
@needs_pip
@pytest.mark.parametrize("field", ["bytes", "size"])
def test_a_manifests_size_no_stick_holds_counts_as_no_manifest(standin, tmp_path, capsys, field):
    """G13: a part of 10**400 bytes (another make's, or a damaged manifest) was an OverflowError
    when make wrote the README: such a manifest is damaged, and make writes a new one."""
    stick = tmp_path / "stick"
    assert make_cpu(stick) == 0
    manifest = json.loads((stick / "manifest.json").read_text(encoding="utf-8"))
    other = dict(next(iter(manifest["parts"].values())), platform="win_amd64", bytes=10**400)
    manifest["parts"]["cpu-win_amd64-py" + PYTHON] = other
    if field == "size":
        other["bytes"] = 1
        next(iter(manifest["files"].values()))["size"] = 10**400
    (stick / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    capsys.readouterr()

    assert make_cpu(stick) == 0

    assert "The stick is ready" in capsys.readouterr().out
    assert "cpu-win_amd64" not in (stick / "README.txt").read_text(encoding="utf-8")
    assert install.check_part(stick, "cpu", "manylinux_x86_64", PYTHON)


@pytest.mark.slow
@needs_pip
@pytest.mark.parametrize(
    "manifest",
    [
        "[]",
        '{"files": [], "parts": {}}',
        '{"files": {"wheels/x.whl": 3}, "parts": []}',
        '{"files": {}, "parts": {"cpu": {"wheels": 7}}}',
        "[" * 200_000 + "]" * 200_000,
    ],
    ids=["a list", "files a list", "entries numbers", "a part of numbers", "200000 levels"],
)
def test_a_manifest_of_another_shape_counts_as_none_and_the_wheels_are_rechecked(
    standin, tmp_path, downloads, manifest
):
    stick = tmp_path / "stick"
    assert make_cpu(stick) == 0
    assert len(downloads) == 4
    (stick / "manifest.json").write_text(manifest)

    assert make_cpu(stick) == 0

    assert len(downloads) == 4  # the wheels there are the index's: none downloaded again
    assert install.check_part(stick, "cpu", "manylinux_x86_64", PYTHON)


# ------------------------------------------------------------------ 6, 7. options, checked first


STACKS = load_project().stacks
GFX = STACKS["rocm-windows"]["gfx_targets"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--stacks", "rocm-windows", "--gfx", "gfx 1100"], f"--gfx 'gfx 1100' is no GPU target of the rocm-windows stack: name one or more of {', '.join(GFX)}."),  # noqa: E501
        (["--stacks", "rocm-windows", "--gfx", "gfx9999"], "--gfx 'gfx9999' is no GPU target"),
        (["--stacks", "cpu", "--gfx", "gfx1100"], "--gfx only applies to the rocm-windows stack"),
        (["--stacks", "cpu", "--index", "cpu:https://mirror.example/simple"], "is not STACK=URL"),
        (["--stacks", "cpu", "--index", "cuda=https://mirror.example/simple"], "--index names the cuda stack, which this make does not write"),  # noqa: E501
        (["--stacks", "cpu", "--index", "cpu=file:///no/such/mirror"], "there is no folder"),
        (["--stacks", "cpu", "--python", "2.7"], "The cpu stack runs on Python 3.10 to 3.14, not 2.7"),  # noqa: E501
        (["--stacks", "cpu", "--python", "three"], "--python takes the laptops' Python as MAJOR.MINOR"),  # noqa: E501
    ],
)  # fmt: skip
def test_options_that_cannot_work_are_one_sentence_before_anything_runs(
    tmp_path, capsys, monkeypatch, options, expected
):
    monkeypatch.chdir(PROJECT_DIR)
    monkeypatch.setattr(make, "resolve", lambda *a: pytest.fail("resolved anyway"))

    code = cli.main(["make", str(tmp_path / "stick"), "--yes", *options])

    assert code == 1
    assert expected in one_sentence(capsys)
    assert not (tmp_path / "stick").exists()


def test_gfx_targets_are_taken_in_any_case_and_spacing():
    wanted = [("rocm-windows", ["win_amd64"])]
    assert cli.gpu_choices([" GFX1151", "gfx1100"], wanted, STACKS) == {
        "rocm-windows": ["gfx1100", "gfx1151"]
    }


@pytest.mark.slow
@needs_pip
def test_a_file_mirror_is_read_and_its_failures_are_not_taken_for_no_network(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    url = local_index(tmp_path, [fake_wheel(tmp_path, "alpha", "1.0", "py3-none-any")])
    options = ["--index-url", url]

    assert unreachable_indexes(options) == []
    found = resolve(["alpha==1.0"], TARGETS["win_amd64"], PYTHON, options)
    assert [wheel.filename for wheel in found] == ["alpha-1.0-py3-none-any.whl"]
    with pytest.raises(ResolveError) as raised:
        resolve(["alpha==2.0"], TARGETS["win_amd64"], PYTHON, options)
    assert "Could not reach" not in str(raised.value)
    assert "alpha==2.0" in str(raised.value)
    assert mirror_options(tmp_path.as_uri()) == ["--find-links", str(tmp_path)]  # flat folder


# ------------------------------------------------------------------ 8. sizes


def test_sizes_in_a_refusal_read_differently(tmp_path, monkeypatch, capsys):
    wheel = make.Wheel("huge", "1.0", (tmp_path / "huge-1.0-py3-none-any.whl").as_uri(), "")
    plan = make.Plan(parts=[], sizes={wheel.filename: 100_000_000}, missing=[wheel])
    monkeypatch.setattr(make, "free_bytes", lambda folder: 99_000_000)  # "0.1 GB" both, once

    with pytest.raises(make.BundleError) as raised:
        make.make(tmp_path / "project", tmp_path / "stick", plan)

    found = re.search(r"has (.+) free but the bundle needs (.+) more", str(raised.value))
    assert found and found.group(1) != found.group(2), str(raised.value)
    assert found.group(1) == "99.0 MB"
    assert fetch.two_sizes(10**9, 10**9 + 1) == ("1.000000000 GB", "1.000000001 GB")


# ------------------------------------------------------------------ 9. GPU targets per part


@pytest.mark.slow
@needs_pip
def test_a_rocm_windows_part_records_its_gpu_targets(standin, tmp_path):
    served = tmp_path / "amd"
    served.mkdir()
    torch = fake_wheel(
        served, "torch", "2.14.0+rocm10.1.0", "cp312-cp312-win_amd64",
        ['rocm-sdk-device-gfx1100; extra == "device-gfx1100"',
         'rocm-sdk-device-gfx1151; extra == "device-gfx1151"'],
    )  # fmt: skip
    kernels = [
        fake_wheel(served, f"rocm-sdk-device-{gfx}", "10.1.0", "py3-none-any")
        for gfx in ("gfx1100", "gfx1151")
    ]
    (standin / "environments" / "rocm-windows.txt").write_text(
        f"--index-url {local_index(served, [torch, *kernels])}\ntorch==2.14.0+rocm10.1.0\n"
    )
    stick = tmp_path / "stick"

    code = cli.main(["make", str(stick), "--stacks", "rocm-windows", "cpu:win_amd64",
                     "--gfx", "gfx1100", "--python", "3.12", "--yes"])  # fmt: skip

    assert code == 0
    parts = json.loads((stick / "manifest.json").read_text())["parts"]
    rocm = parts["rocm-windows-win_amd64-py3.12"]
    assert rocm["gpu_targets"] == ["gfx1100"]
    assert "rocm_sdk_device_gfx1100-10.1.0-py3-none-any.whl" in rocm["wheels"]
    assert not any("gfx1151" in wheel for wheel in rocm["wheels"])
    assert parts["cpu-win_amd64-py3.12"]["gpu_targets"] == []
    assert "kernels for gfx1100" in (stick / "README.txt").read_text()


# ------------------------------------------------------------------ 10. the README's uv route


def uv() -> str | None:
    beside = Path(sys.executable).with_name("uv.exe" if os.name == "nt" else "uv")
    return str(beside) if beside.is_file() else shutil.which("uv")


def test_the_readme_tells_the_uv_route_and_it_installs_offline(tmp_path):
    stick = small_stick(tmp_path / "stick", stack="cpu")
    manifest = json.loads((stick / "manifest.json").read_text())
    text = room_readme(manifest)
    route = [line.strip() for line in text.splitlines() if line.strip().startswith("uv ")]
    assert route[0].startswith("uv venv --offline --python ")
    assert route[1] == ("uv pip install --offline --no-index --find-links E:\\wheels "
                        "--require-hashes -r E:\\requirements\\PART.txt")  # fmt: skip
    assert route[2].endswith('--no-deps --no-build-isolation -e ".[dev]"')
    if uv() is None:
        pytest.skip("no uv here to run the route with")
    environment = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_", "VIRTUAL"))}
    subprocess.run([uv(), "venv", "--offline", "--python", sys.executable, str(environment)],
                   check=True, capture_output=True, env=env)  # fmt: skip
    (part,) = manifest["parts"]
    on_this_stick = {
        "E:\\wheels": str(stick / "wheels"),
        "E:\\requirements\\PART.txt": str(stick / "requirements" / f"{part}.txt"),
    }
    command = [on_this_stick.get(word, word) for word in route[1].split()[1:]]
    installed = subprocess.run(
        [uv(), *command, "--python", str(environment)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert "alpha==1.0" in installed.stderr and "beta==1.0" in installed.stderr


# ------------------------------------------------------------------ 11. Windows on Arm


@pytest.mark.slow
@needs_pip
def test_the_cpu_stack_can_be_made_for_windows_on_arm(tmp_path):
    """PyTorch's CPU index has torch for win_arm64 (CPython 3.11-3.13): pip is asked with that
    platform's tag and its markers pick its dependencies."""
    for tag in ("win_arm64", "win_amd64"):
        requires = ['armonly; platform_machine == "ARM64"', 'x64only; platform_machine == "AMD64"']
        fake_wheel(tmp_path, "torch", "2.14.1+cpu", f"cp312-cp312-{tag}", requires)
    for name in ("armonly", "x64only"):
        fake_wheel(tmp_path, name, "1.0", "py3-none-any")

    (wanted,) = cli.parse_stacks(["cpu:win_arm64"], STACKS, list(DEFAULT_TARGETS))
    found = resolve(["torch==2.14.1+cpu"], TARGETS[wanted[1][0]], "3.12",
                    ["--no-index", "--find-links", str(tmp_path)])  # fmt: skip

    assert wanted == ("cpu", ["win_arm64"])
    assert [wheel.filename for wheel in found] == [
        "armonly-1.0-py3-none-any.whl",
        "torch-2.14.1+cpu-cp312-cp312-win_arm64.whl",
    ]
    assert "win_arm64" not in DEFAULT_TARGETS
    assert cli.parse_stacks(["cpu"], STACKS, list(DEFAULT_TARGETS))[0][1] == list(DEFAULT_TARGETS)


def test_install_py_knows_a_windows_on_arm_laptop(monkeypatch):
    monkeypatch.setattr(install.sys, "platform", "win32")
    monkeypatch.setattr(install.platform, "machine", lambda: "ARM64")

    assert install.this_platform() == "win_arm64"
