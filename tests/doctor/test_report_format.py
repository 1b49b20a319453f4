"""verify_install's report for programs and for people: the JSON schema that docs/report.md
describes (kept equal to the code here), the stable finding codes, --markdown, nothing
personal in either, and a title underline as wide as the title on a terminal."""

from __future__ import annotations

import ast
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_doctor import (
    checkup,
    codes,
    project,
    render,
)
from gpu_doctor import (
    verdict as doctor_report,
)
from gpu_doctor.findings import (
    FAIL,
    OK,
    WARN,
    Finding,
)

DOCTOR = Path(checkup.__file__).resolve().parent
DOCS = project.PROJECT_ROOT / "docs" / "report.md"  # the default project (conftest.py)
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+$")  # GPU-NO-DRIVER: two words at least


def a_report(name="LeNet on DirectML", home="/home/ann"):
    """A report as a Linux laptop without DirectML writes it (its exit code: CPU fallback)."""
    report = doctor_report.Report(
        project={"name": name, "package": "lenet", "accelerator": "directml",
                 "default_accelerator": "directml", "pins": {"torch": "2.4.1"},
                 "template_version": "0.1.0"},
    )  # fmt: skip
    report.add("Python", OK, "Python 3.11.9 (64-bit) is supported.", code="PY-OK")
    report.add(
        "torch",
        FAIL,
        f"torch cannot be imported in this Python ({home}/lenet/.venv/bin/python): No module "
        "named 'torch'.",
        "Run this with the project's environment.",
        code="TORCH-NOT-IN-THIS-PYTHON",
    )
    report.add("Device", WARN, "directml unavailable: libd3d12.so is missing.", "Use Windows.",
               code="DEVICE-UNAVAILABLE-DIRECTML")  # fmt: skip
    report.exit_code = checkup.EXIT_CPU_FALLBACK
    report.verdict = "Ready to train on the CPU only (slower): directml is not usable here."
    return report


@pytest.fixture
def ann(monkeypatch):
    """The user Ann, whose home folder and interpreter paths carry her name."""
    monkeypatch.setattr(doctor_report, "_home", lambda: "/home/ann")
    monkeypatch.setattr(sys, "executable", "/home/ann/lenet/.venv-xpu/bin/python")


def test_json_has_the_schema_version_the_template_version_and_the_time_it_was_made(ann):
    before = datetime.datetime.now().astimezone().replace(microsecond=0)
    document = a_report().to_dict()

    assert document["schema_version"] == 2 and isinstance(document["schema_version"], int)
    assert document["template_version"] == "0.1.0"
    created = datetime.datetime.fromisoformat(document["created"])
    assert created.tzinfo is not None and abs(created - before) < datetime.timedelta(minutes=1)
    assert [f["code"] for f in document["findings"]] == [
        "PY-OK", "TORCH-NOT-IN-THIS-PYTHON", "DEVICE-UNAVAILABLE-DIRECTML"
    ]  # fmt: skip


def test_json_writes_the_home_folder_as_a_tilde_and_keeps_no_user_name(ann):
    text = json.dumps(a_report().to_dict())

    assert "/home/ann" not in text
    document = json.loads(text)
    assert document["executable"] == "~/lenet/.venv-xpu/bin/python"
    assert "(~/lenet/.venv/bin/python)" in document["findings"][1]["found"]


@pytest.mark.parametrize(
    "text,home,private",
    [
        ("/home/ann/lenet/.venv/bin/python", "/home/ann", "~/lenet/.venv/bin/python"),
        ("/home/anna/lenet", "/home/ann", "/home/anna/lenet"),  # another user's folder
        ("in (/home/ann)", "/home/ann/", "in (~)"),
        ("/usr/bin/python3", "/home/ann", "/usr/bin/python3"),
        ("/home/ann/x", "/", "/home/ann/x"),  # no home to hide
    ],
)
def test_only_the_home_folder_itself_becomes_a_tilde(text, home, private):
    assert doctor_report.private_path(text, home) == private


def test_the_json_verdict_does_not_point_at_lines_above_but_the_text_does(ann):
    report = a_report()
    assert "above" not in report.to_dict()["verdict"]["message"]
    text = render.render_text(report)
    assert "; the [!] lines above say why." in text


def test_markdown_has_the_findings_codes_verdict_and_fixes_and_nothing_personal(ann):
    text = render.render_markdown(a_report())

    assert text.startswith("### verify_install: LeNet on DirectML (accelerator: directml)")
    assert "| status | check | code | found |" in text
    assert "| [\u2717] | torch | `TORCH-NOT-IN-THIS-PYTHON` |" in text
    assert "**Verdict (exit 3):** Ready to train on the CPU only (slower)" in text
    assert "1. [PyTorch] Run this with the project's environment." in text
    assert "2. [Device] Use Windows." in text
    assert "/home/ann" not in text and ".venv-xpu" not in text  # no interpreter path at all
    assert "(~/lenet/.venv/bin/python)" in text


def test_markdown_and_json_cannot_be_asked_for_together(capsys):
    with pytest.raises(SystemExit) as stop:
        checkup.main(["--json", "--markdown"])
    assert stop.value.code == 2 and "not allowed with" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["手写数字识别", "LeNet 日本語テスト", "LeNet on DirectML"])
def test_the_title_underline_is_as_wide_as_the_title_on_a_terminal(ann, name):
    title, underline = render.render_text(a_report(name)).splitlines()[:2]
    wide = sum(1 for char in title if "\u3040" <= char <= "\u9fff")  # kana and CJK ideographs
    assert set(underline) == {"="} and len(underline) == len(title) + wide


# --------------------------------------------------------- the codes: one list, in docs too


def codes_in_the_doctor() -> set[str]:
    """Every code the doctor's modules can give a finding (string constants in code= places
    and DEVICE-UNAVAILABLE-<kind> for the kinds devices reports)."""
    found = set()
    for path in DOCTOR.rglob("*.py"):
        if path.name in ("codes.py", "reports.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and CODE.match(text):
                found.add(text)
    kinds = ("directml", "cuda", "xpu", "mps")
    return found | {f"DEVICE-UNAVAILABLE-{kind.upper()}" for kind in kinds}


def test_every_code_the_doctor_gives_is_registered_and_every_registered_code_is_given():
    assert codes_in_the_doctor() == set(codes.CODES)


def test_a_finding_without_a_code_is_no_finding_of_the_doctor():
    assert Finding("GPU", OK, "x").code == ""  # so the tests above catch a missing one
    assert all(CODE.match(code) for code in codes.CODES)


def docs_table(heading: str) -> list[list[str]]:
    """The rows of the first table after ``heading`` in docs/report.md."""
    section = DOCS.read_text(encoding="utf-8").split(heading, 1)[1].split("\n\n|", 1)[1]
    section = "|" + section.split("\n\n", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]  # no header
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_the_docs_list_exactly_the_codes_of_the_code_with_their_meaning():
    table = docs_table("## Finding codes")
    assert [(code.strip("`"), meaning) for code, meaning in table] == list(codes.CODES.items())


def test_the_docs_list_exactly_the_keys_of_the_json_document(ann):
    table = docs_table("## The JSON document")
    documented = []
    for row in table:
        if row[0].startswith("`"):
            documented += [key.strip("` ") for key in row[0].split(",")]
    assert documented == list(a_report().to_dict())
    assert f"schema_version {codes.SCHEMA_VERSION}" in DOCS.read_text(encoding="utf-8")


def test_the_docs_list_the_keys_of_a_finding():
    keys = [row[0].strip("`") for row in docs_table("Each finding:")]
    assert keys == list(Finding("GPU", OK, "x").to_dict())


@pytest.mark.parametrize(
    "files,installer,made",
    [
        ({"pyvenv.cfg": "home = /usr/bin\nuv = 0.13.9\nversion_info = 3.12.7\n"}, "uv", "uv"),
        ({"pyvenv.cfg": "home = /usr/bin\nversion = 3.12.7\n"}, "uv", "uv pip"),
        ({"pyvenv.cfg": "home = /usr/bin\nversion = 3.12.7\n"}, "pip", "venv"),
        ({"conda-meta/history": ""}, "", "conda"),
        ({}, "pip", ""),
    ],
    ids=["uv-venv", "uv-pip-in-a-venv", "venv", "conda", "system-python"],
)
def test_the_report_names_what_made_the_environment(tmp_path, files, installer, made):
    """A uv project's .venv (pyvenv.cfg's `uv =`, as PyCharm reads it) and a venv that
    `uv pip` filled are told apart from pip's venv and conda."""
    from gpu_doctor.active_environment import made_by

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")

    assert made_by(str(tmp_path), installer_of=lambda name: installer) == made


@pytest.mark.parametrize(
    "args",
    [["doctor.pyz"], ["-m", "{package}.verify_install"], ["-m", "{package}.verify_install", "-v"]],
    ids=["first-look", "summary", "verbose"],
)  # fmt: skip
def test_piped_output_has_no_line_over_80_columns(args, child_limit):
    """A pipe, a file or an IDE's run window has no terminal width: 80 columns it is."""
    root = DOCS.parents[1]
    package = json.loads((root / "environments" / "project.json").read_text())["package_name"]
    environ = {name: value for name, value in os.environ.items() if name != "COLUMNS"}
    paths = [str(root / "src")] + [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    done = subprocess.run(
        [sys.executable, *(arg.format(package=package) for arg in args)],
        cwd=root,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(environ, PYTHONPATH=os.pathsep.join(paths), PYTHONUTF8="1"),
        timeout=child_limit,
    )
    assert "Fixes:" in done.stdout or "[" in done.stdout, done.stdout + done.stderr
    wide = [line for line in done.stdout.splitlines() if render.display_width(line) > 80]
    assert wide == []
