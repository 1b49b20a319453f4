"""The output folder of a run: the user's own files stay, a lock that holds no live run never
blocks or crashes, a folder that cannot be used is one sentence."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import (
    train,
)
from {{ cookiecutter.package_name }}.machinery import (
    output_lock,
)


def run(cfg, dataset, discovery):
    return train.train(cfg, discovery=discovery, dataset=dataset)


@pytest.fixture
def dead_pid(child_limit) -> int:
    """The id of a process that has ended."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=child_limit,
    )
    return int(done.stdout)


@pytest.fixture
def live_pid(child_limit):
    """The id of a process that is running (os.getppid() is 0 for a Windows Python started
    from a program that is not a Windows process)."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    yield child.pid
    child.stdin.close()
    child.wait(timeout=child_limit)


HOLD_THE_LOCK = """
import sys
from pathlib import Path
from {{ cookiecutter.package_name }}.machinery import output_lock
with output_lock.claim(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def write_holder(folder: Path, content: str | bytes) -> Path:
    """What a run says about itself in the folder it holds."""
    holder = folder / output_lock.HOLDER_NAME
    holder.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return holder


def write_lock(folder: Path, content: str | bytes) -> Path:
    """The lock file and the holder's file as a run that died left them (nobody holds them)."""
    (folder / output_lock.LOCK_NAME).write_bytes(b"")
    return write_holder(folder, content)


# -------------------------------------------------------------------- the user's own files


def test_a_run_that_fails_at_once_removes_nothing(capsys, cpu_only, tmp_path, dead_pid):
    """`--output-dir .` with a wrong --device: every file in the folder is still there."""
    mine = [tmp_path / ".notes.tmp", tmp_path / ".draft.docx.tmp", tmp_path / "thesis.tmp"]
    leftover = tmp_path / f".last.pt.{dead_pid}.tmp"
    for path in [*mine, leftover]:
        path.write_text("kept", encoding="utf-8")
    args = ["--device", "xyz", "--dataset", "synthetic", "--output-dir", str(tmp_path)]
    assert train.main(args) == 2
    assert "Unknown device 'xyz'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in [*mine, leftover])


@pytest.mark.slow
def test_training_removes_only_the_projects_own_stale_leftovers(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, dead_pid, live_pid
):
    users = [
        ".notes.tmp",  # a user's own temporary files, whatever they look like
        f".notes.txt.{dead_pid}.tmp",
        f".last.pt.{dead_pid}.tmp.bak",
        f"last.pt.{dead_pid}.tmp",
        ".last.pt.tmp",
    ]
    for name in users:
        (tmp_path / name).write_text("the user's", encoding="utf-8")
    stale = [f".last.pt.{dead_pid}.tmp", f".metrics.csv.{dead_pid}.tmp"]
    for name in stale:
        (tmp_path / name).write_bytes(b"PK\x03\x04 half a file")
    # evaluate, running now in another process, is writing its metrics: not a leftover yet
    saving_now = tmp_path / f".test_metrics.json.{live_pid}.tmp"
    saving_now.write_text("{", encoding="utf-8")

    run(tiny_config(tmp_path, epochs=1), tiny_dataset, cpu_discovery)

    names = {p.name for p in tmp_path.iterdir()}
    assert set(users) <= names
    assert saving_now.name in names
    assert not set(stale) & names


def test_an_old_leftover_of_a_reused_process_id_is_removed(tmp_path):
    old = tmp_path / f".best.pt.{os.getppid()}.tmp"  # the id now belongs to a live process
    old.write_bytes(b"PK")
    hours_ago = time.time() - 2 * output_lock.LEFTOVER_AGE_S
    os.utime(old, (hours_ago, hours_ago))
    assert output_lock.remove_leftovers(tmp_path) == [old]


def test_every_file_a_run_and_evaluate_write_is_known_as_the_projects(trained_run):
    written = {p.name for p in trained_run.iterdir() if not p.name.startswith(".")}
    written |= {"test_metrics.json", "confusion_matrix.png"}  # evaluate's, beside best.pt
    assert written <= set(output_lock.OWN_FILES)


# ------------------------------------------------------------- locks that hold no live run


@pytest.mark.slow
@pytest.mark.parametrize(
    "content",
    [
        b"",  # the disk was full when the lock was written
        b'{"pid": 12',  # cut off
        b"\xff\xfe garbage \x00",
        b"[1, 2]",
        b'{"pid": "many", "host": null}',
    ],
    ids=["empty", "cut-off", "garbage", "a-list", "wrong-types"],
)
def test_an_unreadable_lock_nobody_holds_does_not_block(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, content
):
    write_lock(tmp_path, content)
    result = run(tiny_config(tmp_path, epochs=1), tiny_dataset, cpu_discovery)
    assert [row["epoch"] for row in result.history] == [1]
    assert not (tmp_path / output_lock.LOCK_NAME).exists()
    assert not (tmp_path / output_lock.HOLDER_NAME).exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "pid",
    [os.getppid(), 2**31, 2**64, -1, 0],
    ids=["reused-by-a-live-process", "2**31", "2**64", "negative", "zero"],
)
def test_a_lock_naming_no_live_run_of_this_project_does_not_block(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config, pid
):
    write_lock(tmp_path, json.dumps({"pid": pid, "host": socket.gethostname(), "started": "x"}))
    result = run(tiny_config(tmp_path, epochs=1), tiny_dataset, cpu_discovery)
    assert [row["epoch"] for row in result.history] == [1]


@pytest.mark.slow
def test_resume_after_a_full_disk_left_an_empty_lock(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config
):
    run(tiny_config(tmp_path, epochs=1), tiny_dataset, cpu_discovery)
    write_lock(tmp_path, "")
    result = run(tiny_config(tmp_path, resume=True), tiny_dataset, cpu_discovery)
    assert [row["epoch"] for row in result.history] == [1]  # continued, not refused
    assert not (tmp_path / output_lock.LOCK_NAME).exists()
    assert not (tmp_path / output_lock.HOLDER_NAME).exists()


def test_a_live_run_is_refused_and_its_lock_text_cannot_control_the_terminal(
    tmp_path, tiny_dataset, cpu_discovery, tiny_config
):
    hostile = {
        "pid": "7\x1b[2J\x1b[H",  # clear the screen, cursor home
        "host": "pc\x1b]0;pwned\x07\r\u202eevil",  # window title, carriage return, bidi
        "started": "x" * 2000,  # quoted only in part
    }
    with output_lock.claim(tmp_path):  # a live run holds the folder
        write_holder(tmp_path, json.dumps(hostile))  # and its holder's file says this
        with pytest.raises(output_lock.OutputFolderInUse) as caught:
            run(tiny_config(tmp_path, epochs=1), tiny_dataset, cpu_discovery)
    message = str(caught.value)
    assert "Another training run (process 7\\x1b[2J" in message
    assert "pc\\x1b]0;pwned\\x07\\r\\u202eevil" in message
    assert not any(ord(c) < 32 or c == "\u202e" for c in message)
    assert len(message) < 600
    assert not (tmp_path / "last.pt").exists()


def test_a_busy_latest_run_is_refused_without_an_option_the_user_never_typed(
    tmp_path, tiny_dataset, cpu_discovery
):
    latest = tmp_path / "runs" / "2026-03-14_10-00-00"
    latest.mkdir(parents=True)
    (latest / "last.pt").write_bytes(b"x")
    cfg = train.TrainConfig(device="cpu", runs_dir=tmp_path / "runs", resume=True)
    refused = pytest.raises(output_lock.OutputFolderInUse)
    with output_lock.claim(latest), refused as caught:  # another run writes the latest run
        run(cfg, tiny_dataset, cpu_discovery)
    message = str(caught.value)
    assert "Wait for it to finish, then run this command again." in message
    assert "--output-dir" not in message


@pytest.mark.slow
def test_a_lock_held_by_a_live_process_blocks_even_if_its_text_is_empty(tmp_path, child_limit):
    src = Path(output_lock.__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        write_holder(tmp_path, "")  # the holder's text is lost; its lock is not
        in_use = pytest.raises(output_lock.OutputFolderInUse, match=r"process \? on \?")
        with in_use, output_lock.claim(tmp_path):
            pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=child_limit)
    with output_lock.claim(tmp_path):  # released with its run: the folder is free again
        pass


def test_a_run_killed_while_it_holds_the_folder_blocks_nothing(tmp_path, child_limit):
    """kill -9 (or a crash, a closed lid) gives no run a chance to clean up: the operating
    system releases its lock, and the next run takes the folder over."""
    src = Path(output_lock.__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert holder.stdout.readline().strip() == b"held"
    said = json.loads((tmp_path / output_lock.HOLDER_NAME).read_text(encoding="utf-8"))
    assert said["pid"] == holder.pid
    holder.kill()
    holder.wait(timeout=child_limit)
    holder.stdin.close()
    holder.stdout.close()
    deadline = time.monotonic() + 10  # Windows unlocks a dead process's files soon, not at once
    while True:
        try:
            with output_lock.claim(tmp_path):
                said = json.loads((tmp_path / output_lock.HOLDER_NAME).read_text(encoding="utf-8"))
            break
        except output_lock.OutputFolderInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert said["pid"] == os.getpid()


# --------------------------------------------------------------- folders that cannot be used


def test_an_output_dir_name_over_255_characters_is_one_sentence(capsys, cpu_only, tmp_path):
    args = ["--dataset", "synthetic", "--epochs", "1", "--device", "cpu"]
    assert train.main([*args, "--output-dir", str(tmp_path / ("x" * 300))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Cannot write to the output directory")
    assert "Choose another one with --output-dir" in err and "Traceback" not in err


def test_an_output_dir_the_user_may_not_enter_is_one_sentence(
    capsys, cpu_only, tmp_path, monkeypatch
):
    """A folder without the execute permission: every look inside it is refused."""
    closed = tmp_path / "someone-elses"

    def refused(call):
        def call_or_refuse(path, *args, **kwargs):
            if str(path).startswith(str(closed) + os.sep):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return call(path, *args, **kwargs)

        return call_or_refuse

    monkeypatch.setattr(os, "stat", refused(os.stat))
    monkeypatch.setattr(os, "mkdir", refused(os.mkdir))
    args = ["--dataset", "synthetic", "--epochs", "1", "--device", "cpu"]
    assert train.main([*args, "--output-dir", str(closed / "runs")]) == 2
    err = capsys.readouterr().err
    assert "Cannot write to the output directory" in err and "Permission denied" in err
    assert "Traceback" not in err
