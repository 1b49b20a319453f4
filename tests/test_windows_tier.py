"""The template and the generated project on a real Windows CPython (3.11, under Wine).

`tools/wine_python.py` installs Debian's wine and xvfb, the official embeddable CPython for
Windows and the Windows wheels of the DirectML stack, all cached between runs. Everything here
runs on that interpreter: cookiecutter and the hooks, the GPU scan through DXGI (Wine shows one
adapter under Xvfb), PowerShell (a stub under Wine that prints nothing), torch 2.4.1 for
Windows and the real torch_directml import failure (Wine has no DXCore), and consoles whose code
page is not UTF-8. DirectML itself runs in the DirectML tier (`test_directml_tier.py`), with a
DXCore of the template's own; here the prefix has none, as a machine without DirectX 12.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import STACKS, TEMPLATE_DIR

sys.path.insert(0, str(TEMPLATE_DIR / "tools"))
import wine_python  # noqa: E402

pytestmark = [pytest.mark.windows, pytest.mark.slow]

REPLAY = ".cookiecutter.json"
HOSTILE_NAME = '手写数字 "Quoted" & <b> O\'Brien'
VARIANTS = {
    "default": {},
    "venv-vscode": {"env_manager": "venv", "ide": "vscode"},
    "hostile-name": {"project_name": HOSTILE_NAME},
}
CONSOLES = {"cp1252": "en_US.UTF-8", "cp936": "zh_CN.UTF-8"}
# Each limit catches a hang, never slowness: a busy 2-core machine runs Wine several times slower.
BAKE_TIMEOUT = 900
TORCH_TIMEOUT = 1200  # a cold `import torch` takes 25-45 s under Wine on a quiet machine
SUITE_TIMEOUT = 2400
SUITE_CHILD_SCALE = "2"  # the generated tests' TEST_TIMEOUT_SCALE: 600 s per child Python
# The generated suite's tests that cannot pass under Wine, each with the Wine limit behind it.
CPP_EXCEPTION_CRASH = (
    "torch 2.4.1 raises a C++ exception here (an invalid device string, .item() on a meta "
    "tensor); under Wine 8 its unwinding sometimes ends in an access violation (seen: 'Unhandled "
    "page fault ... at address 0000000170028930'), while the same call in a short script raises "
    "the RuntimeError that Windows and Linux raise"
)
CORRUPT_FILE_CRASH = (
    "torch.load of a corrupt or truncated file raises a C++ exception (PytorchStreamReader); "
    "under Wine 8 its unwinding can end in an access violation (seen in "
    "test_garbage_is_a_clear_error), where Windows and Linux raise RuntimeError"
)
WINE_LIMITS: dict[str, str] = {
    "tests/test_checkpoints.py::test_a_truncated_checkpoint_is_a_clear_error": CORRUPT_FILE_CRASH,
    "tests/test_checkpoints.py::test_garbage_is_a_clear_error": CORRUPT_FILE_CRASH,
    "tests/test_cli.py::test_resume_from_a_corrupt_checkpoint_is_a_clear_error": (
        CORRUPT_FILE_CRASH
    ),
    "tests/test_cli.py::test_evaluate_a_corrupt_checkpoint": CORRUPT_FILE_CRASH,
    "tests/test_docs.py::test_the_checks_quoted_in_directml_md_still_agree[device_names.py]": (
        CPP_EXCEPTION_CRASH
    ),
    "tests/test_cli.py::test_benchmark_reports_a_failing_device_and_goes_on": CPP_EXCEPTION_CRASH,
    "tests/test_output_lock.py::test_an_unreadable_lock_nobody_holds_does_not_block": (
        "Wine ended the whole pytest process (exit 0, a wineserver dump of a socket's pending "
        "I/O) in this test's cut-off case, in both runs of the whole suite; it passes alone "
        "and after either half of the files before it, so the crash is Wine's; the Linux "
        "lanes run it"
    ),
    "tests/test_folder.py::test_training_on_your_own_images_learns_them": (
        "Wine itself crashed ('Unhandled page fault') in this test in both runs of one CI run "
        "of the whole suite; it passes alone (twice, 11 s) and after every test file before "
        "it (902 passed in one process), so the crash is Wine's and not reproducible at will"
    ),
}
ACCESS_VIOLATION = "Windows fatal exception: access violation"
# The same kind of crash when it takes the whole pytest process with it (no summary line).
WINE_CRASHES = (ACCESS_VIOLATION, "wine: Unhandled page fault")


class SuiteEndedEarly(Exception):
    """pytest under Wine stopped before its summary line."""

    def __init__(self, message: str, output: str):
        super().__init__(message)
        self.output = output


def bake_on_windows(
    winpy, out: Path, answers: dict, template: str = ".", cwd: Path = TEMPLATE_DIR, **run_options
) -> wine_python.WineResult:
    """`cookiecutter . --no-input -o <out>` in the template folder, as a workshop starts it."""
    out.mkdir(parents=True, exist_ok=True)
    args = ["-m", "cookiecutter", template, "--no-input", "-o", wine_python.winpath(out)]
    args += [f"{key}={value}" for key, value in answers.items()]
    return winpy.run(args, cwd=cwd, timeout=BAKE_TIMEOUT, **run_options)


@pytest.fixture(scope="session")
def windows_bakes(winpy, tmp_path_factory) -> dict:
    """name -> (cookiecutter's result, the project folder) for every variant, baked once."""
    bakes = {}
    for name, answers in VARIANTS.items():
        out = tmp_path_factory.mktemp(f"windows-{name}")
        result = bake_on_windows(winpy, out, answers)
        folders = [p for p in out.iterdir() if p.is_dir()]
        bakes[name] = (result, folders[0] if len(folders) == 1 else None)
    return bakes


def project_env(project: Path, **extra) -> dict:
    # No __pycache__ from the tier's own runs: the bakes are compared byte for byte with Linux.
    # The package's src/ and the doctor file (a zip on the path is importable), as Windows
    # separates them.
    path = ";".join(wine_python.winpath(project / name) for name in ("src", "doctor.pyz"))
    return {"PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", **extra}


def run_in(winpy, project: Path, *args, timeout=TORCH_TIMEOUT, **options):
    env = project_env(project, **options.pop("env", {}))
    return winpy.run(list(args), cwd=project, env=env, timeout=timeout, **options)


def created_line(project: Path) -> str:
    """The start of the post-gen hook's first line: the new project's full Windows path."""
    return f"Created {wine_python.winpath(project)} ("


def package_of(project: Path) -> str:
    return json.loads((project / REPLAY).read_text("utf-8"))["cookiecutter"]["package_name"]


# What tools leave in a project that other tests run them in; never part of a bake.
TOOL_CACHES = {".ruff_cache", ".pytest_cache", "__pycache__"}


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not TOOL_CACHES & set(p.relative_to(root).parts)
    }


def assert_clean(result: wine_python.WineResult) -> None:
    for problem in ("Traceback", "UnicodeEncodeError", "UnicodeDecodeError"):
        assert problem not in result.output, result.output[-3000:]


# ---------------------------------------------------------------- baking on Windows


@pytest.mark.parametrize("variant", VARIANTS)
def test_cookiecutter_bakes_on_windows_and_the_hook_reports_this_machine(
    winpy, windows_bakes, variant
):
    result, project = windows_bakes[variant]

    assert result.returncode == 0, result.output[-3000:]
    assert_clean(result)
    assert project is not None and (project / "pyproject.toml").is_file()
    assert created_line(project) in result.stdout
    os_line = re.search(r"^\s+\[(?:v|\u2713)\]\s+OS\s+(.*)$", result.stdout, re.MULTILINE)
    assert os_line and os_line.group(1).startswith("Windows 10 build 18362 (AMD64)")
    # The GPU line names the adapter that DXGI itself returns on this Windows.
    adapters = run_in(
        winpy,
        project,
        "-c",
        "from gpu_doctor import dxgi as g; print('\\n'.join(a.name for a in g.dxgi_adapters()))",
        timeout=BAKE_TIMEOUT,
    )
    names = adapters.stdout.split("\n")
    assert adapters.returncode == 0 and names[0], adapters.output
    gpu_line = re.search(r"^\s+\[(?:v|\u2713)\]\s+GPU\s+(.*)$", result.stdout, re.MULTILINE)
    assert gpu_line and gpu_line.group(1).startswith(f"{names[0]} ("), result.stdout


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_windows_bake_is_byte_identical_to_a_linux_bake(windows_bakes, bake_once, variant):
    _, project = windows_bakes[variant]
    linux = bake_once(**VARIANTS[variant])
    on_windows, on_linux = tree(project), tree(linux.path)

    assert sorted(on_windows) == sorted(on_linux)
    different = [name for name in on_linux if on_windows[name] != on_linux[name]]
    # The replay file differs in one value only: the template's path as each OS writes it.
    assert different == [REPLAY]
    assert b"\r\n" not in on_windows[REPLAY]  # LF like every other file (.editorconfig)
    windows_replay = json.loads(on_windows[REPLAY])["cookiecutter"]
    linux_replay = json.loads(on_linux[REPLAY])["cookiecutter"]
    assert windows_replay.pop("_template") == "."
    linux_replay.pop("_template")
    assert windows_replay == linux_replay


@pytest.mark.parametrize(
    ("template", "cwd"),
    [
        (r"..\..", TEMPLATE_DIR / "tools" / "dxcore"),  # cmd and PowerShell write backslashes
        (TEMPLATE_DIR.name, TEMPLATE_DIR.parent),
    ],
    ids=["backslashes-up", "from-the-parent-folder"],
)
def test_a_relative_template_path_on_windows_bakes_what_cookiecutter_dot_bakes(
    winpy, windows_bakes, tmp_path, template, cwd
):
    _, reference = windows_bakes["default"]

    result = bake_on_windows(winpy, tmp_path, {}, template=template, cwd=cwd)

    assert result.returncode == 0, result.output[-3000:]
    assert_clean(result)
    project = tmp_path / reference.name
    baked, expected = tree(project), tree(reference)
    assert sorted(baked) == sorted(expected)
    assert [name for name in expected if baked[name] != expected[name]] == [REPLAY]
    assert json.loads(baked[REPLAY])["cookiecutter"]["_template"] == template


@pytest.mark.parametrize(
    ("answer", "sentence"),
    [
        ("package_name=class", "ERROR: The package name 'class' is a keyword of Python"),
        ("python_version=3.13", "ERROR: Python 3.13 is not supported with the directml"),
    ],
)
def test_the_pre_gen_hook_refuses_an_invalid_answer_with_its_sentence(
    winpy, tmp_path, answer, sentence
):
    key, value = answer.split("=", 1)
    result = bake_on_windows(winpy, tmp_path, {key: value})

    assert result.returncode != 0
    assert sentence in result.stderr
    assert "Nothing was generated: 1 answer needs correcting." in result.stderr
    assert "Traceback" not in result.stderr
    # No project folder: only the other answers, saved for the rerun the refusal prints.
    assert [p.name for p in tmp_path.iterdir()] == ["lenet-template-answers.json"]
    assert "--replay-file" in result.stderr


# ---------------------------------------------------------------- GPU scan without answers


def test_powershell_that_prints_nothing_is_no_information_and_returns_at_once(winpy, windows_bakes):
    _, project = windows_bakes["default"]
    result = run_in(
        winpy,
        project,
        "-c",
        "import time; from gpu_doctor import dxgi as g; "
        "t = time.monotonic(); gpus, problem = g.powershell_adapters(); "
        "print(len(gpus), round(time.monotonic() - t, 1), g.POWERSHELL_TIMEOUT); print(problem)",
        timeout=BAKE_TIMEOUT,
    )
    counts, problem = result.stdout.strip().split("\n")
    found, seconds, limit = counts.split()

    assert result.returncode == 0, result.output
    assert found == "0"  # nothing claimed, in either direction
    assert float(seconds) < float(limit)
    assert problem == "unreadable output from Get-CimInstance: 'empty'"


@pytest.mark.parametrize(
    ("situation", "display", "dxgi_error"),
    [("no display (no Xvfb)", False, "CreateDXGIFactory1 returned 0x887A0004")],
)
def test_without_dxgi_the_gpu_line_says_it_could_not_list_never_no_gpu(
    winpy, tmp_path, situation, display, dxgi_error
):
    result = bake_on_windows(winpy, tmp_path, {}, display=display)

    assert result.returncode == 0, result.output[-3000:]
    assert_clean(result)
    gpu_line = re.search(r"^\s+(\S+)\s+GPU\s+(.*(?:\n {16}.*)*)", result.stdout, re.MULTILINE)
    status, text = gpu_line.group(1), " ".join(gpu_line.group(2).split())
    assert status == "[!]"
    assert text.startswith("The GPUs could not be listed: DXGI: OSError: ")
    assert dxgi_error in text
    assert "PowerShell: unreadable output from Get-CimInstance: 'empty'" in text
    assert "No display adapter" not in result.stdout


def test_the_doctor_reads_the_machine_and_the_python_apart_through_iswow64process2(
    winpy, bake_once
):
    """Wine's x64 prefix: IsWow64Process2 answers for the machine, sysconfig for the Python,
    and an x64 Python on an x64 machine is not called emulated."""
    project = bake_once().path
    code = (
        "from gpu_doctor import os_info; info = os_info.detect(); "
        "print(info.native_machine, info.interpreter_platform, info.emulated)"
    )
    result = run_in(winpy, project, "-c", code, timeout=BAKE_TIMEOUT)

    assert result.returncode == 0, result.output
    assert result.stdout.split() == ["AMD64", "win-amd64", "False"]


# ---------------------------------------------------------------- the Windows PyTorch stack


def test_the_windows_wheels_of_the_pinned_stack_are_installed(winpy):
    result = winpy.run(
        [
            "-c",
            "import importlib.metadata as m, sys; print(sys.platform); "
            "print(*(m.version(n) for n in ('torch', 'torchvision', 'torch-directml')))",
        ],
        timeout=BAKE_TIMEOUT,
    )

    assert result.returncode == 0, result.output
    pins = STACKS["directml"]["pins"]
    wanted = [pins[name] for name in ("torch", "torchvision", "torch-directml")]
    assert result.stdout.split() == ["win32", *wanted]


def test_verify_install_reports_the_real_directml_failure_with_its_exit_code(winpy, windows_bakes):
    _, project = windows_bakes["default"]
    result = run_in(winpy, project, "-m", f"{package_of(project)}.verify_install", "--json")
    report = json.loads(result.stdout)
    directml = next(u for u in report["unavailable"] if u["kind"] == "directml")

    assert "Traceback" not in result.stderr
    assert result.returncode == 3, result.output[-3000:]
    assert report["verdict"]["status"] == "cpu-fallback"
    assert report["chosen"]["kind"] == "cpu"
    assert "DLL load failed while importing torch_directml_native" in directml["reason"]
    assert report["packages"]["torch-directml"]["installed"] == "0.2.5.dev240914"
    print(f"\nverify_install under Wine: exit {result.returncode} in {result.seconds:.1f} s")


def test_training_one_synthetic_epoch_on_the_cpu_writes_its_outputs(winpy, windows_bakes, tmp_path):
    _, project = windows_bakes["default"]
    out = tmp_path / "run"
    result = run_in(
        winpy,
        project,
        "-m",
        f"{package_of(project)}.train",
        "--dataset",
        "synthetic",
        "--epochs",
        "1",
        "--output-dir",
        wine_python.winpath(out),
    )

    assert result.returncode == 0, result.output[-3000:]
    assert_clean(result)
    assert "device  : cpu" in result.stdout
    assert "directml not used: torch_directml failed to load" in result.stdout
    epoch = re.search(r"^epoch 1/1 .*\| ([\d.]+) s, ", result.stdout, re.MULTILINE)
    assert epoch, result.stdout
    for name in ("last.pt", "best.pt", "metrics.csv", "metrics.json", "curves.png"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "curves.png").read_bytes().startswith(b"\x89PNG")
    metrics = json.loads((out / "metrics.json").read_text("utf-8"))
    assert "epoch 1/1" in result.stdout and metrics
    seconds = f"{epoch.group(1)} s (the whole command {result.seconds:.1f} s)"
    print(f"\none synthetic epoch under Wine: {seconds}")


# ---------------------------------------------------------------- the project's own tests


# pytest's last line: "=== 417 passed, 3 skipped, 8 deselected in 231.62s (0:03:51) ===" (-v)
SUMMARY_LINE = re.compile(
    r"^=* ?(?P<counts>\d+ (?:passed|failed|skipped|deselected|errors?)\b.*) in [\d.]+s\b"
)
TEST_LINE = re.compile(r"^(tests/\S+::\S+.*?) (?:PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b")


def last_test_reported(output: str) -> str:
    """The last test whose result pytest -v printed, or a note that none was."""
    names = [m.group(1) for m in map(TEST_LINE.match, output.splitlines()) if m]
    return names[-1] if names else "no test (none reported)"


def run_generated_suite(winpy, project: Path, junit: Path) -> tuple[wine_python.WineResult, str]:
    """pytest -v in the baked project on Windows CPython: the result and its summary line.
    A run that ends without pytest's summary line fails here, saying where it stopped."""
    deselect = [arg for test in WINE_LIMITS for arg in ("--deselect", test)]
    command = wine_python.pytest_args("-v", "-p", "no:cacheprovider", *deselect)
    command += ["--junitxml", wine_python.winpath(junit)]
    # Every child Python a test starts gets SUITE_CHILD_SCALE times its limit (torch imports
    # slowly under Wine); the suite as a whole still has SUITE_TIMEOUT.
    scale = {"TEST_TIMEOUT_SCALE": SUITE_CHILD_SCALE}
    result = run_in(winpy, project, *command, timeout=SUITE_TIMEOUT, env=scale)
    lines = result.stdout.strip().splitlines()
    summary = SUMMARY_LINE.match(lines[-1]) if lines else None
    if summary is None:
        raise SuiteEndedEarly(
            f"pytest's output ended early after {last_test_reported(result.stdout)} "
            f"(exit {result.returncode} after {result.seconds:.0f} s, "
            f"junit report {'written' if junit.exists() else 'not written'}); "
            f"the end of its output:\n{result.output[-4000:]}",
            result.output,
        )
    return result, summary.group("counts")


def run_generated_suite_once_more_after_a_wine_crash(winpy, project: Path, junit: Path):
    """run_generated_suite, run a second time when Wine crashed in the first (its unwinder,
    CPP_EXCEPTION_CRASH): with or without pytest's summary. A real defect fails both runs."""
    try:
        result, counts = run_generated_suite(winpy, project, junit)
        crashed = any(crash in result.output for crash in WINE_CRASHES)
        where = last_test_reported(result.stdout)
    except SuiteEndedEarly as early:
        if not any(crash in early.output for crash in WINE_CRASHES):
            pytest.fail(str(early))
        crashed, where = True, str(early).split(" (exit")[0]
    if crashed:
        print(f"\nWine crashed ({where}); rerunning the suite once")
        try:
            return run_generated_suite(winpy, project, junit.with_name("junit-rerun.xml"))
        except SuiteEndedEarly as early:
            pytest.fail(str(early))
    return result, counts


def test_the_generated_test_suite_passes_on_windows_cpython(winpy, windows_bakes, tmp_path):
    """The project's own suite on Windows CPython: every test but the WINE_LIMITS ones, which
    are deselected by name (pytest counts them in its summary)."""
    _, project = windows_bakes["default"]
    # A test in which torch raised may crash Wine's unwinder (CPP_EXCEPTION_CRASH): one more
    # run; a real defect fails both. Name the test in WINE_LIMITS if it repeats.
    result, counts = run_generated_suite_once_more_after_a_wine_crash(
        winpy, project, tmp_path / "junit.xml"
    )

    assert result.returncode == 0, result.output[-6000:]
    assert " passed" in counts and "failed" not in counts and "error" not in counts, counts
    deselected = re.search(r"(\d+) deselected", counts)  # a parametrized test counts its cases
    assert deselected and int(deselected.group(1)) >= len(WINE_LIMITS), counts
    print(f"\nthe generated suite under Wine: {counts} in {result.seconds:.0f} s")


# ---------------------------------------------------------------- consoles that are not UTF-8


@pytest.mark.parametrize("code_page", CONSOLES)
def test_hook_verify_install_and_train_survive_a_non_utf8_console(winpy, tmp_path, code_page):
    locale = CONSOLES[code_page]
    bake = bake_on_windows(winpy, tmp_path / "out", {"project_name": HOSTILE_NAME}, locale=locale)
    assert bake.returncode == 0, bake.output[-3000:]
    assert_clean(bake)
    (project,) = (tmp_path / "out").iterdir()
    package = package_of(project)
    verify = run_in(winpy, project, "-m", f"{package}.verify_install", locale=locale)
    train = run_in(
        winpy,
        project,
        "-m",
        f"{package}.train",
        "--dataset",
        "synthetic",
        "--dry-run",
        "--output-dir",
        wine_python.winpath(tmp_path / "run"),
        locale=locale,
    )

    for result in (bake, verify, train):
        assert_clean(result)
    assert verify.returncode == 3, verify.output[-3000:]
    assert train.returncode == 0, train.output[-3000:]
    # Readable: what the code page can show is shown, the rest is replaced, never mojibake.
    shown = HOSTILE_NAME if code_page == "cp936" else HOSTILE_NAME.replace("手写数字", "????")
    assert f"verify_install: {shown} (accelerator: directml)" in verify.stdout
    assert "Ready to train on the CPU only (slower)" in verify.stdout  # the default report
    # One line per area, its mark in what the code page can show ([v] where ✓ is not there).
    assert re.search(r"^\[(\u2713|v)\] Python: ", verify.stdout, re.MULTILINE), verify.stdout
    assert f"{created_line(project)}directml, Python 3.11)." in bake.stdout
    assert "epoch 1/1" in train.stdout
