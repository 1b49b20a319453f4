"""The report summary for instructors: verify_install --json reports in, tables out.

``tests/instructor/reports/`` holds reports as participants send them: some written by
verify_install on real machines (Linux without DirectX, a Python without torch, a newer torch
than the pins), some typical of Windows machines (a Radeon with an integrated GPU beside it,
an Iris Xe laptop, WSL2 with a GeForce, a torch whose DLLs do not load), and one that is the
text table instead of ``--json``.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import locale
import os
import re
import subprocess
import sys
import unicodedata

import pytest

from gpu_doctor.safe_text import printable
from instructor.room.machines import (
    common_problems,
    device_summary,
    load_folder,
    load_report,
)
from instructor.room.summary import (
    ReportError,
    decode,
    main,
    parse,
    summarise,
)

from .project_under_test import IMPORT_PATH, PROJECT_DIR, SAMPLES

EXPECTED_STATUS = {
    "ana-linux-laptop.json": "cpu-fallback",
    "ben-wrong-interpreter.json": "broken",
    "chen-newer-torch.json": "cpu-fallback",
    "dara-radeon.json": "works",
    "eli-iris-xe.json": "works",
    "farid-wsl-geforce.json": "works",
    "gao-missing-dll.json": "broken",
}
NOT_JSON = "ivan-text-output.json"


@pytest.fixture(scope="module")
def samples():
    found = load_folder(SAMPLES)
    return found.machines, found.unreadable


def by_source(machines):
    return {machine.source: machine for machine in machines}


def test_every_sample_report_is_read_with_its_verdict(samples):
    machines, unreadable = samples

    assert {m.source: m.status for m in machines} == EXPECTED_STATUS
    assert [source for source, _ in unreadable] == [NOT_JSON]
    assert "--json" in unreadable[0][1]


def test_a_report_saved_by_windows_powershell_5_is_read(tmp_path):
    """Windows PowerShell 5's ``>`` writes UTF-16 with a byte order mark and CRLF line ends."""
    text = (SAMPLES / "dara-radeon.json").read_text(encoding="utf-8").replace("\n", "\r\n")
    path = tmp_path / "dara.json"
    path.write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))

    machine = load_report(path)
    assert machine.device == "directml:1"
    assert "Radeon RX 7600" in machine.device_name


def test_the_system_is_named_as_the_os_check_saw_it(samples):
    machines = by_source(samples[0])

    # Python 3.11 calls Windows 11 "Windows 10"; the OS check reads the build number.
    assert machines["dara-radeon.json"].platform == "Windows 11 build 22631 (AMD64)"
    assert machines["farid-wsl-geforce.json"].platform.startswith("WSL2 (Linux ")


def test_the_chosen_devices_are_counted_by_kind(samples):
    rows = {kind: (count, adapters) for kind, count, adapters in device_summary(samples[0])}

    assert rows["directml"][0] == 2
    assert rows["cuda"][0] == 1
    assert rows["cpu"][0] == 2
    assert rows["none"][0] == 2
    assert "Radeon RX 7600" in rows["directml"][1] and "Iris" in rows["directml"][1]


def test_the_problem_that_explains_a_verdict_comes_first(samples):
    machines = by_source(samples[0])

    ana = machines["ana-linux-laptop.json"].main_problem
    assert (ana.status, ana.check) == ("warn", "Device")
    assert "libd3d12.so" in ana.found
    ben = machines["ben-wrong-interpreter.json"].main_problem
    assert (ben.status, ben.check) == ("fail", "torch")
    gao = machines["gao-missing-dll.json"].main_problem
    assert gao.status == "fail" and "do not load" in gao.found
    assert machines["dara-radeon.json"].main_problem is None


def test_shared_problems_are_grouped_failures_first(samples):
    problems = common_problems(samples[0])

    statuses = [p.status for p in problems]
    assert statuses == sorted(statuses, key=("fail", "warn").index)
    assert all(len(set(p.sources)) == len(p.sources) for p in problems)
    # Both Linux machines without DirectX say so in the same words, with the same fix.
    linux = [
        p for p in problems if p.check == "OS" and "only on Windows 10/11 and in WSL2" in p.example
    ]
    assert len(linux) == 1 and len(linux[0].sources) >= 2
    # Old Intel drivers on two machines: one problem, one fix, two texts.
    intel = [p for p in problems if p.check == "Driver" and "Intel" in p.fix]
    assert len(intel) == 1 and intel[0].variants == 2
    assert "(and 1 similar)" in summarise(samples[0])


def test_the_text_summary_has_every_section(samples):
    text = summarise(*samples, folder="reports")

    assert text.startswith(
        "verify_install reports in reports: 7 machines (1 more files unreadable)"
    )
    for heading in (
        "Verdicts",
        "Devices training will use",
        "Machines (the ones that need help first)",
        "Problems, failures first, then the most common",
        "Unreadable files",
    ):
        assert f"\n{heading}\n" in text
    machines_table = text.split("Machines (the ones that need help first)")[1]
    # Broken machines first, working ones last.
    assert machines_table.index("ben-wrong-interpreter.json") < machines_table.index(
        "ana-linux-laptop.json"
    )
    assert machines_table.index("ana-linux-laptop.json") < machines_table.index("dara-radeon.json")


def test_the_markdown_summary_is_made_of_tables(samples):
    text = summarise(*samples, markdown=True)

    assert "| verdict | machines | share |" in text
    assert "| works | 3 | 43% |" in text
    assert "| report | verdict | device | python | system | train step | first problem |" in text
    for heading in (
        "Verdicts",
        "Devices training will use",
        "Problems, failures first, then the most common",
    ):
        assert f"\n## {heading}\n" in text


def test_the_command_summarises_the_sample_folder(child_limit):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(IMPORT_PATH)}
    done = subprocess.run(  # as docs/workshop.md runs it: in the project folder
        [sys.executable, "-m", "instructor.room", str(SAMPLES)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=child_limit,
    )

    assert done.returncode == 0, done.stderr
    assert "7 machines" in done.stdout
    assert "cpu-fallback" in done.stdout


def test_a_missing_or_empty_folder_is_an_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 2
    assert "no *.json reports" in capsys.readouterr().err


def test_only_unreadable_files_give_exit_code_1(tmp_path, capsys):
    (tmp_path / "a.json").write_text("verify_install: nothing here", encoding="utf-8")

    assert main([str(tmp_path)]) == 1
    assert "Unreadable files" in capsys.readouterr().out


# ------------------------------------------------------------------------- reading files

REPORT = {"verdict": {"exit_code": 0, "status": "works", "message": "WORKS"}, "findings": []}


@pytest.mark.parametrize(
    "encoding,prefix",
    [
        ("utf-8", b""),
        ("utf-8", codecs.BOM_UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("cp936", b""),  # cmd.exe on a Chinese Windows writes its code page
    ],
)
def test_reports_from_any_windows_console_are_decoded(monkeypatch, encoding, prefix):
    monkeypatch.setattr(locale, "getpreferredencoding", lambda do_setlocale=True: "cp936")
    data = dict(REPORT, project={"name": "手写数字识别", "accelerator": "directml"})
    text = json.dumps(data, ensure_ascii=False)

    assert json.loads(decode(prefix + text.encode(encoding))) == data


def test_lines_printed_before_the_json_are_skipped():
    text = "UserWarning: something\n" + json.dumps(REPORT)

    assert parse(text) == REPORT


@pytest.mark.parametrize(
    "content,reason",
    [
        ("", "empty file"),
        ("verify_install: LeNet", "no JSON in it"),
        ('{"verdict": {"status": "works"', "not valid JSON"),
        ('{"name": "something else"}', "not a verify_install --json report"),
    ],
)
def test_a_file_that_is_not_a_report_says_why(tmp_path, content, reason):
    path = tmp_path / "report.json"
    path.write_text(content, encoding="utf-8")

    with pytest.raises(ReportError, match=reason):
        load_report(path)


def test_a_report_with_missing_parts_still_counts(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(
        json.dumps({"verdict": {"status": "??"}, "findings": [None, {"status": "fail"}]})
    )

    machine = load_report(path)
    assert (machine.status, machine.device, machine.python) == ("unknown", "-", "-")
    assert machine.main_problem.check == "?"
    assert "unknown" in summarise([machine])


def test_a_deeply_nested_file_is_listed_as_unreadable_and_the_summary_stays(tmp_path, capsys):
    (tmp_path / "nested.json").write_text('{"a":' * 2000 + "1" + "}" * 2000, encoding="utf-8")
    (tmp_path / "ana.json").write_bytes((SAMPLES / "ana-linux-laptop.json").read_bytes())

    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 machines" in out and "Unreadable files" in out
    assert "nested.json" in out and "nested too deeply" in out


def test_a_reader_that_stops_early_ends_the_output_quietly(tmp_path, child_limit):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(IMPORT_PATH)}
    child = subprocess.Popen(
        [sys.executable, "-m", "instructor.room", str(SAMPLES)],
        cwd=PROJECT_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    child.stdout.close()  # like `| head -c 10` that has read all it wanted
    child.stdout = None  # so that communicate() reads stderr only (Windows reads both)
    _out, err = child.communicate(timeout=child_limit)
    assert "Traceback" not in err.decode("utf-8", "replace")
    assert "BrokenPipeError" not in err.decode("utf-8", "replace")


def room_report(folder, name, recommended, active, status="works"):
    report = {
        "project": {"name": "Digits", "accelerator": "directml"},
        "verdict": {"exit_code": 0, "status": status, "message": "ok"},
        "findings": [],
        "recommendation": {"stack": recommended, "active": active, "why": "-"},
        "seconds": len(name) + sum(map(ord, name)) / 1000,  # each machine's report differs
    }
    (folder / f"{name}.json").write_text(json.dumps(report), encoding="utf-8")


def recommended_rows(machines) -> list:
    """The summary's "Recommended environments" table, each row split into words."""
    section = summarise(machines).split("Recommended environments")[1].split("Machines (")[0]
    return [line.split() for line in section.splitlines() if line.strip()[:1].isalpha()]


def test_machines_are_counted_per_recommended_stack_with_who_is_on_another(tmp_path):
    room_report(tmp_path, "ana-arc", "xpu", "xpu")
    room_report(tmp_path, "ben-arc", "xpu", "directml")
    room_report(tmp_path, "chen-geforce", "cuda", "cuda")
    room_report(tmp_path, "dara-radeon", "directml", "directml")
    room_report(tmp_path, "eli-radeon", "directml", "directml")

    rows = recommended_rows(load_folder(tmp_path).machines)

    assert ["xpu", "2", "ben-arc.json", "(on", "directml)"] in rows
    assert ["directml", "2", "-"] in rows
    assert ["cuda", "1", "-"] in rows


def test_the_legacy_cuda_stack_is_counted_like_the_others(tmp_path):
    room_report(tmp_path, "fay-gtx-1060", "cuda-legacy", "cuda")  # made in the wrong one
    room_report(tmp_path, "gus-p100", "cuda-legacy", "cuda-legacy")
    room_report(tmp_path, "hana-rtx-3060", "cuda", "cuda")

    rows = recommended_rows(load_folder(tmp_path).machines)

    assert ["cuda-legacy", "2", "fay-gtx-1060.json", "(on", "cuda)"] in rows
    assert ["cuda", "1", "-"] in rows


def test_amds_windows_stack_is_counted_apart_from_directml_and_linux_rocm(tmp_path):
    room_report(tmp_path, "ida-rx-7800", "rocm-windows", "directml")  # made the old way
    room_report(tmp_path, "jon-8060s", "rocm-windows", "rocm-windows")
    room_report(tmp_path, "kai-rx-6700", "directml", "directml")
    room_report(tmp_path, "lea-linux-7900", "rocm", "rocm")

    rows = recommended_rows(load_folder(tmp_path).machines)

    assert ["rocm-windows", "2", "ida-rx-7800.json", "(on", "directml)"] in rows
    assert ["directml", "1", "-"] in rows and ["rocm", "1", "-"] in rows


def test_reports_without_a_recommendation_leave_the_section_out(samples):
    machines, _ = samples

    assert "Recommended environments" not in summarise(machines)


def test_a_device_name_with_a_nul_groups_with_the_same_name_without_it(tmp_path):
    """Reports written before names were cleaned carry 'GTX 470\\u0000': one adapter, not two."""
    for person, name in (("ana", "NVIDIA GeForce GTX 470\x00"), ("ben", "NVIDIA GeForce GTX 470")):
        report = {
            "verdict": {"status": "works", "exit_code": 0, "message": "WORKS"},
            "findings": [],
            "chosen": {"label": "directml:0", "kind": "directml", "name": name},
        }
        (tmp_path / f"{person}.json").write_text(json.dumps(report), encoding="utf-8")
    machines = load_folder(tmp_path).machines
    assert device_summary(machines) == [("directml", 2, "NVIDIA GeForce GTX 470 (2)")]
    assert "\x00" not in summarise(machines)


def test_the_step_each_gpu_fails_is_summarised_per_adapter(tmp_path):
    """verify_install's failed_step: the instructor sees which step fails on which GPU."""
    compile_graph = "RuntimeError: device1->CompileGraph(&graphDesc, flags, IID_PPV_ARGS(&g))"
    fix = "This device runs LeNet's layers but not the cross-entropy loss (log_softmax and ..."
    for person in ("ana", "ben"):
        report = {
            "verdict": {"status": "broken", "exit_code": 4, "message": "BROKEN"},
            "findings": [
                {"check": "Smoke test", "status": "fail", "fix": fix,
                 "found": f"LeNet forward+backward on privateuseone:0 failed in the loss "
                          f"(cross-entropy): {compile_graph}."},
            ],
            "chosen": {"label": "directml:0", "kind": "directml", "name": "NVIDIA GeForce GTX 470"},
            "failed_step": {"during": "smoke test", "step": "loss",
                            "what": "the loss (cross-entropy)", "error": compile_graph},
            "seconds": 2.5 if person == "ana" else 3.1,
        }  # fmt: skip
        (tmp_path / f"{person}.json").write_text(json.dumps(report), encoding="utf-8")
    machines = load_folder(tmp_path).machines

    text = summarise(machines)

    section = text.split("Steps of training that fail on a GPU\n\n")[1]
    rows = section.splitlines()[2:3]
    assert rows == [
        "the loss (cross-entropy)  NVIDIA GeForce GTX 470  2         ana.json, ben.json"
    ]
    (problem,) = common_problems(machines)  # one problem for both machines, with its fix
    assert problem.sources == ["ana.json", "ben.json"] and problem.fix == fix


# ------------------------------------------------------------- reports from strangers
# A report is a file someone else wrote: nothing in it may steer the instructor's terminal,
# crash the summary, exhaust memory, miscount the room or inject Markdown.

HOSTILE = {
    "project": {"name": "\x1b]0;pwned\x07Digits\x1b[2J", "accelerator": "directml"},
    "verdict": {"exit_code": 4, "status": "broken", "message": "BROKEN\rWORKS"},
    "findings": [
        {
            "check": "GPU\x1b[1A",
            "status": "fail",
            "found": "no driver\x1b]52;c;ZWNobyBoaQ==\x07\x08\x08works",
            "fix": "install it \u202eskrow",
        }
    ],
    "chosen": {"label": "cpu", "name": "CPU\x9b31m"},
    "fallback_operators": ["aten::add\x1b[8m"],
    "python": "3.11\x1b[K",
}


def unsafe_characters(text):
    """Characters that move the cursor, recolour, retitle or reorder a terminal's text."""
    return sorted(
        {
            char
            for char in text
            if char != "\n" and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")
        }
    )


@pytest.mark.parametrize("markdown", [False, True], ids=["text", "markdown"])
def test_control_characters_in_a_report_are_shown_escaped(tmp_path, capsys, markdown):
    (tmp_path / "ana\u202enosj.json").write_text(json.dumps(HOSTILE), encoding="utf-8")
    (tmp_path / "ben.json").write_text("\x1b[2J not a report", encoding="utf-8")

    assert main([str(tmp_path)] + (["--markdown"] if markdown else [])) == 0
    out = capsys.readouterr().out

    assert unsafe_characters(out) == []
    # Shown, not obeyed: the instructor sees that the report holds escape sequences.
    assert "x1b" in out and "pwned" in out and "u202e" in out and "x9b" in out


def test_a_file_name_with_a_line_break_cannot_forge_a_line(tmp_path, capsys):
    if os.name == "nt":
        pytest.skip("Windows file names cannot hold line breaks")
    (tmp_path / "x.json\nworks         cuda:0.json").write_text(
        json.dumps(REPORT), encoding="utf-8"
    )

    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert unsafe_characters(out) == []
    assert not any(line.startswith("works         cuda:0") for line in out.splitlines())


@pytest.mark.parametrize(
    "content,reason",
    [
        (json.dumps(dict(REPORT, findings=1)), "findings"),
        (json.dumps(dict(REPORT, fallback_operators=5)), "fallback_operators"),
        (json.dumps(dict(REPORT, findings=[{"status": "warn", "found": "x"}] * 20_000)), "20,000"),
        (json.dumps(dict(REPORT, project="Digits")), "project"),
        (json.dumps(dict(REPORT, findings=[{"status": "fail", "found": ["a"]}])), "found"),
        (json.dumps(REPORT)[:-1] + ', "timing": {"device_ms": 1e999}}', "too large"),
        (json.dumps(REPORT)[:-1] + ', "timing": {"device_ms": ' + "9" * 400 + "}}", "digits"),
        (json.dumps(REPORT)[:-1] + ', "seconds": ' + "7" * 5000 + "}", "digits"),
        # Python's json writes these for a float that is none (H3): int() of them raised
        (json.dumps(REPORT).replace('"exit_code": 0', '"exit_code": NaN'), "exit_code"),
        (json.dumps(REPORT).replace('"exit_code": 0', '"exit_code": Infinity'), "exit_code"),
        (json.dumps(REPORT)[:-1] + ', "timing": {"device_ms": -Infinity}}', "device_ms"),
    ],
    ids=[
        "findings",
        "operators",
        "20k-findings",
        "project",
        "found",
        "float",
        "int",
        "int-4300",
        "exit-code-nan",
        "exit-code-infinity",
        "timing-minus-infinity",
    ],
)
def test_a_malformed_report_is_unreadable_and_the_others_are_summarised(
    tmp_path, capsys, content, reason
):
    (tmp_path / "bad.json").write_text(content, encoding="utf-8")
    (tmp_path / "ana.json").write_bytes((SAMPLES / "ana-linux-laptop.json").read_bytes())

    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 machines" in out and "cpu-fallback" in out
    unreadable = out.split("Unreadable files")[1]
    assert "bad.json" in unreadable and reason in unreadable


def test_a_huge_report_is_not_read_whole(tmp_path, capsys):
    import tracemalloc

    with open(tmp_path / "huge.json", "w", encoding="utf-8") as handle:
        handle.write('{"verdict": {"status": "works"}, "findings": [], "project": {"name": "')
        for _ in range(40):
            handle.write("A" * 1_000_000)
        handle.write('"}}')
    tracemalloc.start()
    try:
        assert main([str(tmp_path)]) == 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    out = capsys.readouterr().out
    assert peak < 10_000_000, f"{peak:,} bytes held to read a 40 MB file"
    assert len(out) < 5_000
    assert "huge.json" in out and "larger than 1 MB" in out


def test_a_long_field_is_cut_and_the_summary_says_so(tmp_path, capsys):
    report = dict(REPORT, project={"name": "N" * 200_000, "accelerator": "directml"})
    (tmp_path / "long.json").write_text(json.dumps(report), encoding="utf-8")

    assert main([str(tmp_path), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert len(out) < 5_000
    assert "200,000 characters" in out  # the cut is marked where it happens


def test_notepad_and_upper_case_names_are_read(tmp_path):
    (tmp_path / "ALICE.JSON").write_text(json.dumps(REPORT), encoding="utf-8")
    other = dict(REPORT, python="3.12.1")
    (tmp_path / "bob.json.txt").write_text(json.dumps(other), encoding="utf-8")
    (tmp_path / "notes.docx").write_bytes(b"PK\x03\x04")

    found = load_folder(tmp_path)

    assert sorted(m.source for m in found.machines) == ["ALICE.JSON", "bob.json.txt"]
    skipped = dict(found.skipped)
    assert "notes.docx" in " ".join(skipped) or "notes.docx" in " ".join(skipped.values())


def test_copies_and_links_of_one_report_count_one_machine(tmp_path, capsys):
    ana = tmp_path / "ana.json"
    ana.write_bytes((SAMPLES / "ana-linux-laptop.json").read_bytes())
    (tmp_path / "ana-again.json").write_bytes(ana.read_bytes())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ana.json").write_bytes(ana.read_bytes())
    for make in (os.link, os.symlink):
        # Not every file system or Windows account can make links: copies are tested anyway.
        with contextlib.suppress(OSError, NotImplementedError):
            make(ana, tmp_path / f"ana-{make.__name__}.json")

    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"verify_install reports in {tmp_path}: 1 machines")
    assert "the same report as ana.json" in out


def test_the_sample_reports_stay_out_of_a_real_summary(tmp_path, capsys):
    """`reports .` in the project folder: the shipped samples are not participants."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(SAMPLES, project / "tests" / "data" / "reports")
    (project / "reports").mkdir()
    (project / "reports" / "zoe.json").write_text(json.dumps(REPORT), encoding="utf-8")

    assert main([str(project)]) == 0
    out = capsys.readouterr().out
    assert ": 1 machines" in out.splitlines()[0]
    assert "tests/data/reports" in out and "sample reports" in out
    # Named on the command line, the samples are summarised (the workshop guide shows them).
    assert main([str(project / "tests" / "data" / "reports")]) == 0
    assert "7 machines" in capsys.readouterr().out


@pytest.mark.slow
def test_a_thousand_folders_deep_is_no_crash(tmp_path, capsys):
    deep = tmp_path
    try:
        for _ in range(1000):
            (deep / "d").mkdir()
            deep = deep / "d"
        (deep / "deep.json").write_text(json.dumps(REPORT), encoding="utf-8")
    except OSError:  # Windows without long paths stops near 260 characters
        pass
    (tmp_path / "ana.json").write_text(json.dumps(REPORT), encoding="utf-8")

    try:
        assert main([str(tmp_path)]) == 0
    finally:  # bottom up: shutil.rmtree of Python 3.11 and older recurses, as rglob did
        while deep != tmp_path:
            for child in deep.iterdir():
                if not child.is_dir():
                    child.unlink()
            deep.rmdir()
            deep = deep.parent
    out = capsys.readouterr().out
    assert "1 machines" in out and "levels deep" in out


@pytest.mark.parametrize("preferred", ["UTF-8", "cp936", "cp1252"])
def test_a_western_windows_report_is_read_as_cp1252(monkeypatch, preferred):
    monkeypatch.setattr(locale, "getpreferredencoding", lambda do_setlocale=True: preferred)
    data = dict(REPORT, project={"name": "Ziffern für Jürgen, Straße", "accelerator": "cpu"})
    text = json.dumps(data, ensure_ascii=False)

    assert json.loads(decode(text.encode("cp1252"))) == data


def test_markdown_shows_a_participants_text_as_text(tmp_path, capsys):
    report = dict(
        REPORT,
        project={"name": "<img src=x onerror=alert(1)>", "accelerator": "directml"},
        python="[click](https://evil.example/)",
        findings=[
            {
                "check": "GPU",
                "status": "fail",
                "found": "![tracker](https://evil.example/p.png) **urgent** <b>x</b> &lt;",
                "fix": "see www.evil.example or `rm -rf ~` | a cell",
            }
        ],
    )
    (tmp_path / "![ana](evil).json").write_text(json.dumps(report), encoding="utf-8")

    assert main([str(tmp_path), "--markdown"]) == 0
    out = capsys.readouterr().out

    # Each of these would be an image, HTML, a link, bold text, an entity or code.
    for raw in ("<img", "<b>", "](", "**urgent", "&lt;", "`rm", "https://", "www.e"):
        assert not re.search(r"(?<!\\)" + re.escape(raw), out), raw
    assert r"\<img src=x onerror=alert(1)\>" in out  # escaped, the text itself is all there


def test_findings_with_the_same_code_are_one_problem(tmp_path):
    for person, found in (("ana", "GTX 470: no driver."), ("ben", "Radeon 5700: no driver.")):
        report = dict(
            REPORT,
            schema_version=2,
            findings=[
                {"check": "GPU", "status": "fail", "code": "GPU-NO-DRIVER", "found": found,
                 "fix": f"Install the driver of the {found.split(':')[0]}."},
            ],
        )  # fmt: skip
        (tmp_path / f"{person}.json").write_text(json.dumps(report), encoding="utf-8")

    machines = load_folder(tmp_path).machines
    (problem,) = common_problems(machines)
    assert problem.sources == ["ana.json", "ben.json"] and problem.variants == 2
    assert problem.check == "GPU (GPU-NO-DRIVER)"
    assert "(and 1 other fix in the reports)" in problem.fix


def test_text_from_a_stranger_is_printed_escaped_and_cut():
    """The helper for any text from a file the user did not write (reports, lock files)."""
    assert printable("ok\x1b[2J\r\n\t\u202e\x00") == "ok\\x1b[2J\\r\\n\\t\\u202e\\x00"
    assert printable("Intel® Iris® Xe 显卡") == "Intel® Iris® Xe 显卡"
    assert printable("\udcff") == "\\udcff"  # an undecodable byte of a file name
    assert printable("A" * 1000, 10) == "AAAAAAAAAA... [cut: 1,000 characters]"
    assert printable(None) == "" and printable(4) == "4"
    assert "too long" in printable(10**5000)  # str() of it would raise
