"""Run folders: each training run keeps its own, and the latest is easy to find.

    runs/
      2026-03-14_10-02-41/                  the first run (default settings)
      2026-03-14_10-09-13_adam/             --optimizer adam
      2026-03-14_10-15-55_adam_lr0.001/     --optimizer adam --lr 0.001
      compare.png                           the runs' curves in one picture

A new run gets a folder named after the time it started and the settings that differ from
the defaults, so that trying ``--optimizer adam`` never replaces the run before it and the
folder names say what each run tried. "The latest run" is the one whose ``last.pt`` was
written last: ``--resume`` continues it, and ``evaluate``, ``export`` and ``draw`` use its
model (``find_checkpoint``) unless told otherwise.
Folder names use no ``:`` (Windows forbids it) and sort by time.

After each epoch a run writes its metrics and curves into its folder, and compare.png beside
the runs before it (``write_metrics_and_curves``); at its end it tests the model of best.pt
and lists its files (``load_best``, ``finish``). Nothing here imports ``train.py``: its
``TrainConfig`` and ``Run`` come in as arguments.
"""

from __future__ import annotations

import datetime as _dt
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from . import checkpoints, distributed, metrics, plots
from .checkpoints import BEST, LAST, RUN_SETTINGS
from .cli import RUNS_DIR
from .console import say
from .ranks import is_main
from .stopping import TrainError
from .terminal_text import printable

TrainConfig = Any  # train.py's settings (a dataclass); Run: train.py's run
Run = Any

COMPARE_PNG = "compare.png"
MAX_COMPARED = 6  # more lines than this are hard to tell apart in one picture

# How a setting that differs reads in a folder name and in the comparison's legend.
_SHORT = {
    "optimizer": ("{}", "{}"),
    "lr": ("lr{:g}", "lr {:g}"),
    "epochs": ("{}epochs", "{} epochs"),  # "1 epochs" is made "1 epoch" in ``_say``
    "batch_size": ("batch{}", "batch {}"),
    "weight_decay": ("wd{:g}", "weight decay {:g}"),
    "momentum": ("momentum{:g}", "momentum {:g}"),
    "seed": ("seed{}", "seed {}"),
    "dataset": ("{}", "{}"),
}


def _say(pattern: str, value: Any) -> str:
    try:
        text = pattern.format(value)
    except (TypeError, ValueError):  # a setting of another type in a run's metrics.json
        text = pattern.replace(":g", "").format("?" if value is None else value)
    return text[:-1] if value == 1 and text.endswith("epochs") else text


def _safe(text: str) -> str:
    """A folder-name part: letters, digits, '.', '-', '_' and '+' (an exponent's sign: lr1e+09)
    only; a dataset such as ``folder:C:\\photos`` would otherwise put ':' and '\\' into it."""
    kept = "".join(c if c.isalnum() or c in ".-_+" else "-" for c in text)
    return kept.strip("-.")[:40] or "x"


def run_name(cfg: TrainConfig, now: _dt.datetime | None = None) -> str:
    """``YYYY-MM-DD_HH-MM-SS`` plus each setting that differs from the defaults of
    ``type(cfg)``, e.g. ``2026-03-14_10-09-13_adam_lr0.001``."""
    stamp = (now or _dt.datetime.now()).strftime("%Y-%m-%d_%H-%M-%S")
    defaults = type(cfg)()
    parts = [stamp]
    for name, (short, _) in _SHORT.items():
        value = getattr(cfg, name, None)
        if value is not None and value != getattr(defaults, name, None):
            parts.append(_safe(_say(short, value)))
    return "_".join(parts)


def new_run_folder(runs_dir: Path, name: str) -> Path:
    """``runs_dir / name``, or ``name-2``, ``name-3``... when a run of the same second and
    settings has it already. The folder itself is created by the run when it writes."""
    folder, count = Path(runs_dir) / name, 1
    while folder.exists():
        count += 1
        folder = Path(runs_dir) / f"{name}-{count}"
    return folder


def runs_in(runs_dir: Path) -> list[Path]:
    """The run folders in ``runs_dir`` (those holding ``last.pt``), oldest first by when
    ``last.pt`` was written. ``runs_dir`` itself counts when it holds one (a run written
    there by an older version of this project, or with ``--output-dir runs``). A run removed
    while this looks is left out."""
    runs_dir = Path(runs_dir)
    try:
        candidates = [runs_dir, *sorted(p for p in runs_dir.iterdir() if p.is_dir())]
    except OSError:  # no runs folder (yet), or one that cannot be listed
        return []
    found = []
    for folder in candidates:
        try:
            written = (folder / LAST).stat()
        except OSError:  # no last.pt, or removed meanwhile
            continue
        if stat.S_ISREG(written.st_mode):
            found.append((written.st_mtime, folder))
    return [folder for _, folder in sorted(found, key=lambda pair: pair[0])]


def latest_run(runs_dir: Path) -> Path | None:
    """The run folder whose ``last.pt`` was written last, or None when there is none."""
    found = runs_in(runs_dir)
    return found[-1] if found else None


class NoTrainedModel(Exception):
    """No model where one was looked for; the message says what to run first."""


def find_checkpoint(output_dir: Path = RUNS_DIR) -> Path:
    """best.pt, else last.pt, of the latest run in ``output_dir`` (a folder of runs, or one
    run's own folder): the model evaluate, export and draw use unless given --checkpoint.
    NoTrainedModel when there is neither."""
    output_dir = Path(output_dir)
    folder = latest_run(output_dir) or output_dir
    for name in (BEST, LAST):
        if (folder / name).is_file():
            return folder / name
    package = (__package__ or "<package>.").rpartition(".")[0]
    train = f"python -m {package}.train"
    if output_dir != RUNS_DIR:  # train writes to runs/ unless told another folder
        train += f" --output-dir {printable(output_dir, 300)}"
    raise NoTrainedModel(
        f"There is no trained model in {printable(output_dir, 300)} yet (no {BEST} or {LAST}). "
        f"Train one first: {train} (MNIST), or offline {train} --dataset synthetic; or pass "
        "--checkpoint FILE."
    )


# --------------------------------------------------------------------------------------------
# Several runs in one picture


@dataclass
class ComparedRun:
    folder: Path
    config: dict[str, Any]
    history: list[dict[str, Any]]
    within: list[dict[str, Any]]
    label: str = ""


_NUMBERS = ("epoch", "val_loss", "val_accuracy")  # what the picture draws of each epoch
_WITHIN = ("epoch", "train_loss", "train_accuracy")


def _read(folder: Path) -> ComparedRun | str | None:
    """The run's curves from its metrics.json; None for a run without epochs yet; a reason
    when the file cannot be used (edited by hand, written by other code, half copied)."""
    try:
        saved = metrics.read_metrics(folder)
    except FileNotFoundError:  # a run stopped before its first epoch ended
        return None
    except (OSError, ValueError) as error:
        return f"its {metrics.METRICS_JSON} cannot be read ({type(error).__name__})"
    if not isinstance(saved, dict):
        return f"its {metrics.METRICS_JSON} holds no run's metrics"
    epochs = metrics.rows_of_numbers(saved.get("epochs"), _NUMBERS)
    within = metrics.rows_of_numbers(saved.get("within_epochs", []), _WITHIN)
    config = saved.get("config")
    if not isinstance(config, dict) or epochs is None or within is None:
        return f"its {metrics.METRICS_JSON} is not one this project writes"
    if not epochs:
        return None
    return ComparedRun(folder, config, list(epochs), list(within))


def label_runs(runs: Sequence[ComparedRun]) -> None:
    """Name each run by the settings that differ between the runs (``adam, lr 0.001``); runs
    with the same settings are told apart by their folder's name."""

    def value(run: ComparedRun, name: str) -> Any:
        if name == "lr":  # the peak the run used, also when it took the default
            return run.config.get("peak_lr", run.config.get("lr"))
        return run.config.get(name)

    names = [n for n in _SHORT if len({repr(value(r, n)) for r in runs}) > 1]
    for run in runs:
        parts = [_say(_SHORT[n][1], value(run, n)) for n in names]
        run.label = ", ".join(parts) or run.folder.name
    labels = [r.label for r in runs]
    for run in runs:
        if labels.count(run.label) > 1:
            run.label = f"{run.label} ({run.folder.name[:19]})" if names else run.folder.name


def compare(
    runs_dir: Path, say: Callable[[str], None] | None = None, limit: int = MAX_COMPARED
) -> Path | None:
    """Draw ``runs_dir/compare.png``: the curves of the latest ``limit`` runs, each labelled by
    what differs between them. None (and nothing drawn) with fewer than two runs. A run whose
    metrics cannot be used is left out, and ``say`` is told so in one line."""
    found: list[ComparedRun] = []
    for folder in runs_in(runs_dir):
        read = _read(folder)
        if isinstance(read, str) and say is not None:
            say(f"note: {printable(folder.name)} is left out of {COMPARE_PNG}: {read}.")
        elif isinstance(read, ComparedRun):
            found.append(read)
    found = found[-limit:]
    if len(found) < 2:
        return None
    label_runs(found)
    datasets = {str(r.config.get("dataset")) for r in found}
    title = "Runs compared"
    if len(datasets) == 1:
        title += f" on {plots.dataset_label(datasets.pop())}"
    path = Path(runs_dir) / COMPARE_PNG
    plots.plot_comparison([(r.label, r.history, r.within) for r in found], path, title)
    return path


# --------------------------------------------------------------------------------------------
# What a run writes after each epoch besides its checkpoints


@dataclass
class Written:
    """What ``write_metrics_and_curves`` wrote."""

    files: list[Path]  # in the run's folder
    compared: Path | None = None  # compare.png beside the runs before it, when drawn


_said: set[tuple[str, str]] = set()  # (run folder, note): a picture's failure, said once


def write_metrics_and_curves(run: Run, extra: dict[str, Any] | None = None) -> Written:
    """metrics.csv and metrics.json, then curves.png, then compare.png beside the runs before
    it (only for a folder in --runs-dir). A picture that fails never stops the run: why is said
    once, and the run goes on."""
    if not is_main():  # under torchrun the first process alone writes the run's files
        return Written([])
    title = curves_title(run)
    within = metrics.within_epochs(run.points)
    config = {n: getattr(run.cfg, n) for n in RUN_SETTINGS}
    config["peak_lr"] = run.cfg.peak_lr  # what a run with the default lr used
    extra = {**(extra or {}), "config": config, "within_epochs": within}
    # A file that cannot be written (a full disk) raises CheckpointWriteError: the run stops
    # with one sentence that says what is kept (stopping.training_stops_cleanly).
    files = metrics.write_metrics(run.history, run.out, run.dataset.name, extra)
    png, compared = run.out / plots.CURVES_PNG, run.out.parent / COMPARE_PNG
    pictures = {png: lambda: plots.plot_curves(run.history, png, title, within)}
    if run.out.resolve().parent == Path(run.cfg.runs_dir).resolve():
        pictures[compared] = lambda: compare(run.out.parent, say)
    drawn = [plots.draw_safely(draw, path) for path, draw in pictures.items()]
    for why in drawn:  # a picture not drawn: why, said once per run folder and picture
        if isinstance(why, str) and (str(run.out), why) not in _said:
            _said.add((str(run.out), why))
            say(f"note: {why}")
    files += [png] if png in drawn else []
    return Written(files, compared if compared in drawn else None)


def curves_title(run: Run) -> str:
    """curves.png's title: the dataset by its name (never the folder it was read from), and
    the device."""
    return f"LeNet-5 on {plots.dataset_label(run.dataset.name)} - {run.option.describe()}"


# --------------------------------------------------------------------------------------------
# The end of a run: the model of best.pt tested, the files listed


@dataclass
class RunResult:
    """What ``train.train`` returns."""

    history: list[dict[str, Any]]
    test_loss: float
    test_accuracy: float  # of the model in best.pt, the one evaluate loads
    device: str
    dataset: str
    files: list[Path] = field(default_factory=list)
    output_dir: Path | None = None  # this run's folder
    compared: Path | None = None  # the picture comparing it with the runs before it


def load_best(run: Run) -> str:
    """Put best.pt's weights into the model (CPU tensors copied into the model on the device),
    so that the test accuracy is that of the model evaluate, export and draw use. Returns which
    model that is, in words ("" for a dry run, which saves nothing)."""
    if run.cfg.dry_run:
        return ""
    best = run.out / BEST
    saved = distributed.same_on_all(_read_if_saved, best)  # under torchrun: read once
    if saved is None:  # no epoch's validation accuracy was a number (NaN is never "better")
        return f"the model after epoch {run.epochs_done}: no {BEST} was written"
    checkpoints.restore_module(distributed.unwrapped(run.model), saved.model, best)
    return f"{BEST}: {saved.which_epoch(best)}; evaluate, export and draw load it"


def _read_if_saved(path: Path) -> checkpoints.Checkpoint | None:
    """The checkpoint at ``path``, or None where there is none; one sentence if it is damaged."""
    if not path.exists():
        return None
    try:
        return checkpoints.Checkpoint.load(path)
    except checkpoints.CheckpointError as error:
        raise TrainError(str(error)) from error


def test_set_label(name: str) -> str:
    """The test set in words, for the line that gives a test accuracy (train's and evaluate's)."""
    fixed = {"synthetic": "SYNTHETIC test digits (not MNIST)", "mnist": "MNIST test set"}
    return fixed.get(name) or f"test part of {printable(plots.dataset_label(name))}"


def finish(run: Run, test: tuple[float, float], tested: str) -> RunResult:
    """Print the test result (``tested``: which model, in words), write the final metrics,
    list the output files."""
    test_loss, test_accuracy = test
    images = len(run.dataset.test)
    test_set = test_set_label(run.dataset.name)
    say(
        f"test accuracy {100 * test_accuracy:.2f}% on the {test_set} ({images} images), "
        f"loss {test_loss:.4f}"
    )
    if tested:
        say(f"          ({tested})")
    device = run.option.describe()
    result = RunResult(run.history, test_loss, test_accuracy, device, run.dataset.name)
    if run.cfg.dry_run:
        return result
    result.output_dir = run.out
    if run.history:
        extra = {"test": {"loss": test_loss, "accuracy": test_accuracy, "images": images}}
        written = write_metrics_and_curves(run, {**extra, "device": device})
        saved = [p for p in (run.out / LAST, run.out / BEST) if p.exists()]
        result.files, result.compared = written.files + saved, written.compared
        say("outputs : " + ", ".join(str(p) for p in result.files))
        if result.compared is not None:
            say(f"compare : {result.compared} (this run beside the runs before it)")
    return result
