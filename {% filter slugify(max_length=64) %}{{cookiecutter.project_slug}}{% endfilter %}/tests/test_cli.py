"""The command lines as a user meets them: help (answered before torch loads, in the words its
parser has), errors without tracebacks, whole runs."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import (
    benchmark,
    data,
    draw,
    evaluate,
    export,
    train,
    verify_install,
)
from {{ cookiecutter.package_name }}.datasets import (
    mnist,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    cli,
    devices,
    discovery,
    predict_command,
    quick_help,
    startup,
    terminal_text,
    train_command,
)


def run_train(capsys, *args):
    code = train.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_help_states_the_defaults(capsys):
    with pytest.raises(SystemExit) as caught:
        train.main(["--help"])
    assert caught.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in (
        "--epochs",
        "--batch-size",
        "--lr",
        "--optimizer",
        "--seed",
        "--device",
        "--data-dir",
        "--dataset",
        "--output-dir",
        "--resume",
        "--dry-run",
        "--log-interval",
    ):
        assert option in text
    assert "number of epochs (default: 5)" in text
    batch = (
        "training batch size: images per optimizer step; under torchrun, of all processes "
        "together (each takes an equal share, so it must divide evenly) (default: 128)"
    )
    assert batch in text
    assert "0.05 for sgd" in text and "(default: auto)" in text
    assert "(default: a new folder in runs/" in text and "(default: None)" not in text


BAD_ARGUMENTS = [  # what a user typed, and what the one-sentence error says
    (["--epochs", "0"], "must be at least 1"),
    (["--batch-size", "many"], "is not a whole number"),
    (["--lr", "-1"], "must be a positive number"),
    (["--lr", "nan"], "must be a positive number"),
    (["--momentum", "-0.1"], "--momentum: must be from 0 up to (not including) 1"),
    (["--optimizer", "lbfgs"], "invalid choice"),
    (["--dataset", "cifar"], "'cifar' is not a dataset"),
    (["--seed", "99999999999999999999999"], "must be a whole number from 0 to"),
    (["--seed", "-1"], "must be a whole number from 0 to"),
]


def test_bad_arguments_exit_2_with_a_sentence(capsys):
    for args, expected in BAD_ARGUMENTS:
        with pytest.raises(SystemExit) as caught:
            train.main(args)
        assert caught.value.code == 2, args
        assert expected in capsys.readouterr().err, args


def test_unknown_device_names_what_is_available(capsys, cpu_only, tmp_path):
    code, _, err = run_train(
        capsys, "--device", "cuda:3", "--dataset", "synthetic", "--output-dir", str(tmp_path)
    )
    assert code == 2
    assert "error: Device 'cuda:3' is not available" in err and "Available: cpu (" in err


@pytest.mark.slow
def test_mnist_offline_explains_how_to_get_it(capsys, cpu_only, offline, tmp_path):
    code, _, err = run_train(
        capsys, "--data-dir", str(tmp_path / "data"), "--output-dir", str(tmp_path / "runs")
    )
    assert code == 2
    assert (
        "could not be downloaded" in err
        and ".data --data-dir" in err
        and "--dataset synthetic" in err
    )


def test_resume_without_a_run_is_a_clear_error(capsys, cpu_only, tmp_path):
    code, _, err = run_train(capsys, "--resume", "--output-dir", str(tmp_path))
    assert code == 2 and "Nothing to resume" in err


def test_resume_from_a_corrupt_checkpoint_is_a_clear_error(capsys, cpu_only, tmp_path):
    (tmp_path / "last.pt").write_bytes(b"\x00garbage" * 100)
    code, _, err = run_train(capsys, "--resume", "--output-dir", str(tmp_path))
    assert code == 2 and "truncated, corrupt or not a PyTorch file" in err


def edited_checkpoint(trained_run, folder, edit):
    """A copy of a real run's last.pt into ``folder``, changed by ``edit(state)``."""
    state = checkpoints.load_checkpoint(trained_run / "last.pt")
    edit(state)
    for key in ("format", "version"):
        state.pop(key)
    train.save_checkpoint(state, folder / "last.pt")


EDITS = {
    "batch_size=0": lambda state: state["config"].update(batch_size=0),
    "optimizer=lbfgs": lambda state: state["config"].update(optimizer="lbfgs"),
    "dataset=imagenet": lambda state: state["config"].update(dataset="imagenet"),
    "epochs=-1": lambda state: state["config"].update(epochs=-1),
    "another model": lambda state: state.update(
        model={k: v[..., :1] if v.dim() > 1 else v for k, v in state["model"].items()}
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_resume_from_a_checkpoint_it_cannot_continue_is_one_sentence(
    capsys, cpu_only, tmp_path, trained_run, edit
):
    edited_checkpoint(trained_run, tmp_path, edit)
    before = (tmp_path / "last.pt").read_bytes()
    code, _, err = run_train(capsys, "--resume", "--output-dir", str(tmp_path))
    assert code == 2, err
    assert err.startswith("error: ") and "cannot be resumed" in err
    assert "without --resume" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "last.pt").read_bytes() == before


def test_an_unwritable_output_directory_is_a_clear_error(capsys, cpu_only, tmp_path):
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the directory should be")
    code, _, err = run_train(capsys, "--dataset", "synthetic", "--output-dir", str(blocker / "x"))
    assert code == 2 and "Cannot write to the output directory" in err and "--output-dir" in err


@pytest.mark.slow
def test_dry_run_trains_a_few_batches_and_saves_nothing(
    capsys, cpu_only, small_synthetic, tmp_path
):
    out = tmp_path / "runs"
    code, text, _ = run_train(
        capsys, "--dataset", "synthetic", "--dry-run", "--output-dir", str(out)
    )
    assert code == 0
    assert "dry run : 3 batches" in text and "epoch 1/1" in text and "SYNTHETIC" in text
    assert not out.exists()


def test_a_gpu_that_cannot_run_an_operator_stops_training_with_one_sentence(
    capsys, monkeypatch, cpu_discovery, small_synthetic, tmp_path
):
    """What a driver error in the middle of training looks like: DirectML on a device that
    cannot compile the cross-entropy (seen under Wine's D3D12) raises this RuntimeError."""
    import torch

    gpu = devices.DeviceOption("directml", 0, "NVIDIA GeForce GTX 470", torch.device("meta"))
    found = devices.Discovery([gpu, *cpu_discovery.options], [])
    monkeypatch.setattr(devices, "discover", lambda probes=None: found)

    def cannot_compile(run, epoch):
        raise RuntimeError("device1->CompileGraph(&graphDesc, flags, IID_PPV_ARGS(&compiledGraph))")

    monkeypatch.setattr(train, "train_epoch", cannot_compile)
    code, _, err = run_train(capsys, "--dataset", "synthetic", "--output-dir", str(tmp_path))

    assert code == 4 and "Traceback" not in err
    assert err.startswith("error: directml:0 (NVIDIA GeForce GTX 470) failed while training: ")
    assert "RuntimeError: device1->CompileGraph(" in err and "Nothing was saved." in err
    assert f"python -m {train.__package__}.verify_install" in err and "--device cpu" in err


@pytest.mark.slow
def test_train_evaluate_and_resume_from_the_command_line(
    capsys, cpu_only, small_synthetic, tmp_path
):
    out = str(tmp_path / "runs")
    code, text, _ = run_train(
        capsys, "--dataset", "synthetic", "--epochs", "2", "--output-dir", out
    )
    assert code == 0
    assert "device  : cpu" in text and "SYNTHETIC digits" in text
    assert "epoch 2/2" in text and "samples/s" in text and "test accuracy" in text
    for name in ("metrics.csv", "metrics.json", "curves.png", "last.pt", "best.pt"):
        assert (tmp_path / "runs" / name).is_file(), name

    code, text, _ = run_train(capsys, "--resume", "--epochs", "9", "--output-dir", out)
    assert code == 0
    assert "ignored: --epochs" in text and "This run is complete" in text

    assert evaluate.main(["--output-dir", out]) == 0
    text = capsys.readouterr().out
    assert "Test accuracy" in text and "SYNTHETIC" in text and "digit" in text
    assert (tmp_path / "runs" / "confusion_matrix.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_evaluate_reads_the_test_files_from_where_the_run_trained(
    capsys, cpu_only, offline, monkeypatch, tmp_path
):
    """train --data-dir X, then evaluate without options: X, and only its two test files."""
    monkeypatch.setattr(mnist, "EXPECTED_IMAGES", {"train": 600, "t10k": 200})
    monkeypatch.setattr(data, "MNIST_VALIDATION_SIZE", 100)
    handed_round = tmp_path / "usb-stick"
    raw = mnist.write_mnist_raw(
        tmp_path, data.synthetic_digits(600, seed=4), data.synthetic_digits(200, seed=5)
    )
    raw.rename(handed_round)  # the four files directly in the folder
    out = str(tmp_path / "runs")
    args = ("--data-dir", str(handed_round), "--epochs", "2", "--batch-size", "50")
    code, text, err = run_train(capsys, *args, "--output-dir", out)
    assert code == 0, err
    # One test accuracy per run: train tests the model evaluate loads (best.pt), so both agree.
    assert "(best.pt: the model after epoch" in text and "evaluate, export and draw load it" in text
    trained = re.search(r"test accuracy (\d+\.\d\d)%", text).group(1)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (handed_round / name).unlink()  # evaluation needs the test set alone

    assert evaluate.main(["--output-dir", out]) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert f"MNIST test set from {handed_round}" in text
    assert "best.pt (the model after epoch" in text and "best validation accuracy" in text
    assert f"Test accuracy: {trained}%" in text


def test_evaluate_without_a_checkpoint_says_to_train_first(capsys, cpu_only, tmp_path):
    assert evaluate.main(["--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "There is no trained model in" in err and ".train --output-dir" in err


def test_evaluate_a_corrupt_checkpoint(capsys, cpu_only, tmp_path):
    (tmp_path / "best.pt").write_bytes(b"")
    assert evaluate.main(["--output-dir", str(tmp_path)]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_benchmark_prints_a_table_with_the_speed_up(capsys, cpu_only):
    assert benchmark.main(["--batches", "3", "--batch-size", "32", "--warmup", "1"]) == 0
    text = capsys.readouterr().out
    assert "samples/s" in text and "vs CPU" in text and "1.00x" in text and "SYNTHETIC" in text


def test_benchmark_reports_a_failing_device_and_goes_on(cpu_discovery):
    import torch

    broken = devices.DeviceOption("directml", 0, "Broken GPU", torch.device("meta"), {})
    timings = benchmark.run_benchmark(
        [cpu_discovery.options[0], broken], batches=2, batch_size=16, warmup=1
    )
    assert timings[0].seconds > 0 and not timings[0].error
    assert timings[1].error
    table = benchmark.format_timings(timings)
    assert "failed" in table and "1.00x" in table


def test_benchmark_rejects_an_unknown_device(capsys, cpu_only):
    assert benchmark.main(["--device", "mps"]) == 2
    assert "not available" in capsys.readouterr().err


@pytest.mark.slow
def test_python_m_train_exits_2_on_a_user_error(run_module, tmp_path):
    done = run_module(
        "train", "--device", "no-such-device", "--dataset", "synthetic", "--dry-run", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "Unknown device 'no-such-device'" in done.stderr and "Traceback" not in done.stderr


def test_checkpoint_written_by_train_loads_safely(trained_run):
    assert checkpoints.load_checkpoint(trained_run / "best.pt")["config"]["dataset"] == "synthetic"


def test_benchmark_shows_progress_for_each_device_before_the_table(capsys, cpu_only):
    assert benchmark.main(["--batches", "2", "--batch-size", "16", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    started = out.index("[1/1] cpu (CPU")
    finished = out.index("[1/1] cpu: ")
    assert out.index("Looking for devices") < started < finished < out.index("samples/s")


def test_benchmark_says_why_directml_is_not_among_the_devices(capsys, monkeypatch, cpu_discovery):
    """Only a project made for DirectML says it; a cpu or cuda project has no reason to."""
    note = "note: directml is not among the devices: torch-directml is not installed"
    for accelerator, noted in [("directml", True), ("cpu", False), ("cuda", False)]:
        reason = devices.directml_missing_reason(accelerator)
        missing = devices.Unavailable("directml", reason, installed=False)
        found = devices.Discovery(cpu_discovery.options, [missing])
        monkeypatch.setattr(devices, "discover", lambda probes=None, found=found: found)
        monkeypatch.setattr(benchmark, "_accelerator", lambda accelerator=accelerator: accelerator)
        assert benchmark.main(["--batches", "2", "--batch-size", "16", "--warmup", "1"]) == 0
        out = capsys.readouterr().out
        assert (note in out) is noted, f"{accelerator}: {out}"


DRIVER_NAMES = [  # as a driver or torch gave it, and as the project prints it
    ("NVIDIA GeForce GTX 470\x00", "NVIDIA GeForce GTX 470"),  # seen from torch_directml
    ("AMD Radeon(TM) Graphics\x00\x00\x00\x00", "AMD Radeon(TM) Graphics"),
    ("N\x00V\x00I\x00D\x00I\x00A\x00", "NVIDIA"),  # UTF-16 text read as single bytes
    ("Intel(R) UHD Graphics 630 \r\n", "Intel(R) UHD Graphics 630"),
    ("Radeon\tRX\x1b 6600\x7f", "Radeon RX 6600"),
    (b"GeForce GTX 1060\x00", "GeForce GTX 1060"),
    (None, ""),
    ("Intel® Iris® Xe 显卡", "Intel® Iris® Xe 显卡"),  # printable text stays as it is
]


def test_names_from_drivers_lose_nuls_and_control_characters():
    assert [terminal_text.clean_name(raw) for raw, _ in DRIVER_NAMES] == [
        clean for _, clean in DRIVER_NAMES
    ]


HUNDREDS_OF_DIGITS = "9" * 400


TOO_LARGE = [
    (["--epochs", HUNDREDS_OF_DIGITS], "--epochs: must be at most 100,000"),
    (["--batch-size", HUNDREDS_OF_DIGITS], "--batch-size: must be at most 1,000,000"),
    (["--epochs", "9" * 5000], "--epochs: must be at most 100,000"),  # past int()'s limit
    (["--log-interval", HUNDREDS_OF_DIGITS], "--log-interval: must be at most"),
]


def test_numbers_too_large_are_refused_before_training(capsys, cpu_only, small_synthetic, tmp_path):
    """Not an OverflowError, not a run of zero steps that reports success."""
    options = ["--dataset", "synthetic", "--device", "cpu", "--output-dir", str(tmp_path)]
    for args, expected in TOO_LARGE:
        with pytest.raises(SystemExit) as caught:
            train.main([*options, *args])
        assert caught.value.code == 2, args[0]
        err = capsys.readouterr().err
        assert expected in err and len(err) < 1000, err
    assert not (tmp_path / "last.pt").exists()


def test_benchmark_refuses_more_batches_than_it_can_mean(capsys, cpu_only, monkeypatch):
    def generate(n, seed=0):
        if n > 10**6:  # what 100 million batches of 128 would ask for
            raise MemoryError(f"cannot allocate {n} images")
        return data.synthetic_digits(n, seed)

    monkeypatch.setattr(data, "synthetic_digits", generate)
    with pytest.raises(SystemExit) as caught:
        benchmark.main(["--batches", "100000000"])
    assert caught.value.code == 2
    assert "--batches: must be at most 1,000,000" in capsys.readouterr().err


@pytest.mark.slow
def test_a_long_benchmark_needs_no_more_digits_than_a_short_one(cpu_discovery, monkeypatch):
    asked = []
    real = data.synthetic_digits

    def generate(n, seed=0):
        asked.append(n)
        return real(n, seed)

    monkeypatch.setattr(data, "synthetic_digits", generate)
    batches = benchmark.POOL_BATCHES + 30
    timings = benchmark.run_benchmark(cpu_discovery.options, batches, batch_size=2, warmup=1)
    assert asked == [benchmark.POOL_BATCHES * 2]
    assert timings[0].batches == batches and timings[0].samples == batches * 2
    assert not timings[0].error and timings[0].seconds > 0


def test_benchmark_help_states_each_default_once(capsys):
    with pytest.raises(SystemExit):
        benchmark.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: every available device)" in text
    assert "(default: None)" not in text and "(default: 200)" in text


# ------------------------------------------------- the options the commands share, one wording


def reference(add, **options) -> str:
    """The help a shared option gets from machinery/cli.py."""
    return add(argparse.ArgumentParser(), **options).help


DEVICE_TAIL = reference(cli.add_device_option, purpose="X").split(": ", 1)[1]
SHARED = {  # option: does this command's help say it in the shared words?
    "--device": lambda action: (
        action.help.startswith("the device to ") and f": {DEVICE_TAIL}" in action.help
    ),
    "--output-dir": lambda action: action.help == reference(cli.add_output_dir_option),
    "--checkpoint": lambda action: action.help == reference(cli.add_checkpoint_option),
    "--data-dir": lambda action: (
        action.help == reference(cli.add_data_dir_option, default=action.default)
    ),
}
COMMANDS = {  # command: its main, and the shared options it offers
    "train": (train.main, {"--device", "--data-dir"}),
    "evaluate": (evaluate.main, {"--output-dir", "--checkpoint", "--device", "--data-dir"}),
    "export": (export.main, {"--output-dir", "--checkpoint", "--data-dir"}),
    "draw": (draw.main, {"--output-dir", "--checkpoint", "--device"}),
    "benchmark": (benchmark.main, {"--device"}),
    "verify_install": (verify_install.main, {"--device"}),
    "data": (data.main, {"--data-dir"}),
}


def parser_and_help(main, monkeypatch, capsys) -> tuple[argparse.ArgumentParser, str]:
    """The parser ``main(["--help"])`` builds, and the help it prints."""
    parsers = []
    parse = argparse.ArgumentParser.parse_args

    def recorded(self, args=None, namespace=None):
        parsers.append(self)
        return parse(self, args, namespace)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", recorded)
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    return parsers[0], " ".join(capsys.readouterr().out.split())


def test_every_command_words_the_shared_options_alike(monkeypatch, capsys):
    """One wording per option, from machinery/cli.py: an option written out again in a
    command, in other words, fails here."""
    for name, (main, offered) in COMMANDS.items():
        with monkeypatch.context() as patched:
            parser, text = parser_and_help(main, patched, capsys)
        assert text.startswith(f"usage: python -m {train.__package__}.{name} ")
        options = {o: a for a in parser._actions for o in a.option_strings}
        assert offered <= set(options), f"{name} lacks {offered - set(options)}"
        for option in set(options) & set(SHARED):
            if (name, option) == ("train", "--output-dir"):
                continue  # the folder train writes, which the other commands read: its own words
            assert SHARED[option](options[option]), f"{name} {option}: {options[option].help!r}"
            assert option in text, f"{name}: {option}"
        if "--checkpoint" in offered:  # the checkpoint's default is found in --output-dir
            assert options["--output-dir"].default == cli.RUNS_DIR, name


def test_without_a_trained_model_every_command_says_the_same_and_what_to_run(
    capsys, cpu_only, tmp_path
):
    runs = ["--output-dir", str(tmp_path)]
    said = []
    for main, args in (
        (evaluate.main, runs),
        (export.main, runs),
        (draw.main, [*runs, "--no-browser"]),
    ):
        assert main(args) == 2
        said.append(capsys.readouterr().err)
    assert said[0] == said[1] == said[2], said
    assert said[0].startswith(f"error: There is no trained model in {tmp_path} yet")
    assert f"python -m {train.__package__}.train --output-dir {tmp_path} (MNIST)" in said[0]
    assert "--dataset synthetic" in said[0] and "--checkpoint FILE" in said[0]


def test_every_setting_of_train_config_is_an_option_with_its_default(monkeypatch, capsys):
    """A setting added to TrainConfig gets its option: none is left out (--momentum was)."""
    parser, text = parser_and_help(train.main, monkeypatch, capsys)
    options = {action.dest: action for action in parser._actions}
    defaults = train.TrainConfig()
    for setting in dataclasses.fields(train.TrainConfig):
        assert setting.name in options, f"train has no option for {setting.name}"
        assert options[setting.name].default == getattr(defaults, setting.name), setting.name
        assert "--" + setting.name.replace("_", "-") in text


def test_momentum_and_runs_dir_reach_the_run(tmp_path):
    seen = []
    argv = ["--momentum", "0.5", "--runs-dir", str(tmp_path), "--optimizer", "adam"]
    code = train_command.main(
        argv, lambda cfg, explicit: seen.append((cfg, explicit)), train.TrainConfig
    )
    assert code == 0
    ((cfg, explicit),) = seen
    assert (cfg.momentum, cfg.runs_dir, cfg.optimizer) == (0.5, tmp_path, "adam")
    assert sorted(explicit) == ["momentum", "optimizer", "runs_dir"]


def test_a_setting_added_to_train_config_gets_its_option_typed_by_its_annotation():
    @dataclasses.dataclass
    class Config(train.TrainConfig):
        label_smoothing: float = 0.1
        warmup_epochs: int = 0
        mixed: bool = False

    parser = train_command.build_parser(Config)
    args = parser.parse_args(["--label-smoothing", "0.2", "--warmup-epochs", "3", "--mixed"])
    assert (args.label_smoothing, args.warmup_epochs, args.mixed) == (0.2, 3, True)
    assert parser.parse_args([]).label_smoothing == 0.1
    with pytest.raises(SystemExit):
        parser.parse_args(["--warmup-epochs", "many"])


DIRECTML_TORCH = "2.4.1"  # the torch that torch-directml pins: the directml environment's


ENVIRONMENTS = [  # the project's stack, the environment's torch, why its backend is missing
    ("directml", "2.14.1+cpu", discovery.NOT_INSTALLED, False),  # the doctor's cpu environment
    ("directml", DIRECTML_TORCH, discovery.NOT_INSTALLED, True),  # its own, without the package
    ("cpu", "2.14.1+cpu", discovery.NOT_INSTALLED, False),
    ("cuda", "2.14.1+cpu", discovery.NOT_BUILT, False),  # the cpu environment of a cuda project
    ("cuda", "2.14.1+cu130", discovery.NO_DEVICE, True),  # the cuda environment, no GPU seen
]


def test_the_header_notes_a_missing_backend_only_in_the_environment_made_for_it(
    capsys, monkeypatch, cpu_discovery, small_synthetic, tmp_path
):
    """The cpu environment that the doctor names for a machine without a GPU trains on the CPU
    without a word about the default stack; the default stack's own environment, missing its
    backend, says why at every run."""
    monkeypatch.setattr(startup.this_project, "directml_torch", lambda: DIRECTML_TORCH)
    for accelerator, torch_version, code, noted in ENVIRONMENTS:
        kind = "directml" if accelerator == "directml" else "cuda"
        missing = devices.Unavailable(kind, "its reason", installed=False, code=code)
        found = devices.Discovery(cpu_discovery.options, [missing])
        with monkeypatch.context() as patched:
            patched.setattr(devices, "discover", lambda probes=None, found=found: found)
            patched.setattr(startup.this_project, "accelerator", lambda kind=accelerator: kind)
            patched.setattr(startup.torch, "__version__", torch_version)

            code_, text, _ = run_train(
                capsys, "--dataset", "synthetic", "--dry-run", "--output-dir", str(tmp_path)
            )

        assert code_ == 0
        case = f"{accelerator} project, torch {torch_version}"
        assert (f"note    : {kind} not used: its reason" in text) is noted, f"{case}: {text}"


# ------------------------------------------------------------ --help before torch loads

PACKAGE = train.__package__
SRC = Path(__file__).resolve().parents[1] / "src"
# A guard against a hang, not a speed goal (the benchmark times --help: docs/figures.json).
CHILD_LIMIT_S = 300 * float(os.environ.get("TEST_TIMEOUT_SCALE", "1"))
HELP_COMMANDS = {  # command: the main that parses its arguments once torch is loaded
    "train": train.main,
    "predict": predict_command.main,
    "evaluate": evaluate.main,
    "export": export.main,
    "draw": draw.main,
    "benchmark": benchmark.main,
    "data": data.main,
}
COLUMNS = "100"  # one width for the child's help and this process's

# The command run as `python -m` runs it; then: its exit code, and whether torch was loaded.
CHILD = """
import json, runpy, sys
sys.argv = ["-m", *sys.argv[1:]]
try:
    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as done:
    code = done.code
sys.stdout.flush()
sys.stderr.write(json.dumps({"code": code, "torch": "torch" in sys.modules}))
"""


def help_in_a_child(command: str, *args: str) -> tuple[str, dict]:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, f"{PACKAGE}.{command}", *args],
        env=dict(os.environ, PYTHONPATH=path, COLUMNS=COLUMNS),
        capture_output=True,
        text=True,
        timeout=CHILD_LIMIT_S,
    )
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("command", HELP_COMMANDS)
def test_help_answers_without_importing_torch_and_says_what_the_command_says(
    command, capsys, monkeypatch
):
    out, child = help_in_a_child(command, "--help")
    assert child == {"code": 0, "torch": False}, f"{command} --help: {child}"
    monkeypatch.setenv("COLUMNS", COLUMNS)
    with pytest.raises(SystemExit) as caught:
        HELP_COMMANDS[command](["--help"])
    assert caught.value.code == 0
    assert out == capsys.readouterr().out  # the same text, word for word
    assert out.split()[:4] == ["usage:", "python", "-m", f"{PACKAGE}.{command}"]  # may wrap


@pytest.mark.slow
def test_a_command_without_help_still_loads_torch_and_runs():
    """The check above can fail: a command that runs does import torch."""
    _, child = help_in_a_child("evaluate", "--output-dir", "no-such-folder")
    assert child == {"code": 2, "torch": True}


def test_help_is_only_an_option_before_a_double_dash():
    assert quick_help.asks_for_help(["--epochs", "2", "-h"])
    assert not quick_help.asks_for_help(["--", "--help"])  # a picture named --help
    assert not quick_help.asks_for_help(["--epochs", "2"])


def test_train_settings_read_without_torch_are_train_pys():
    import dataclasses

    read = quick_help.train_settings()
    assert [(f.name, f.default) for f in dataclasses.fields(read)] == [
        (f.name, f.default) for f in dataclasses.fields(train.TrainConfig)
    ]
    assert read.DEFAULT_LR == train.TrainConfig.DEFAULT_LR


def test_a_console_script_answers_help_too(monkeypatch, capsys):
    """``pip install -e .`` puts the commands on the PATH: their --help is as quick."""
    from importlib.metadata import EntryPoint

    script = EntryPoint("lenet-train", f"{PACKAGE}.train:main", "console_scripts")
    monkeypatch.setattr(quick_help, "_console_scripts", lambda: [script])
    for program in ["lenet-train", "lenet-train.exe", "lenet-train-script.py"]:  # Linux, Windows
        monkeypatch.setattr(sys, "argv", [str(Path("bin", program)), "--help"])
        with pytest.raises(SystemExit) as caught:
            quick_help.answer_console_script_help()
        assert caught.value.code == 0, program
        usage = capsys.readouterr().out.split()[:4]  # a long package name wraps the line
        assert usage == ["usage:", "python", "-m", f"{PACKAGE}.train"], program


def test_another_program_named_like_a_command_is_left_alone(monkeypatch, capsys):
    from importlib.metadata import EntryPoint

    script = EntryPoint("other-train", "other.train:main", "console_scripts")
    monkeypatch.setattr(quick_help, "_console_scripts", lambda: [script])
    monkeypatch.setattr(sys, "argv", ["other-train", "--help"])
    quick_help.answer_console_script_help()  # returns: not one of this project's
    assert capsys.readouterr().out == ""
