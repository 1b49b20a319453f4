"""Checkpoints that survive crashes, full disks and other programs' files.

- What a checkpoint holds, and its one ``torch.save``, are in train.py (``checkpoint``,
  ``save_checkpoint``); here is what it uses: ``to_cpu`` (every tensor moved to the CPU, so a
  checkpoint loads on any machine without ``map_location`` set to a DirectML device, which
  fails) and ``atomic_file``.
- Writing is atomic: a temporary file in the same folder, flushed to disk, then ``os.replace``.
  A crash, Ctrl+C or full disk while writing leaves the previous checkpoint as it was. Metrics,
  pictures and exported models are written the same way (``write_text_atomic``,
  ``write_bytes_atomic``, ``atomic_path``).
- Loading uses ``torch.load(path, map_location="cpu", weights_only=True)``: only tensors and
  plain containers are accepted, never arbitrary pickled code. The caller then calls
  ``load_state_dict`` on the model that is already on its device.
- A file that is truncated, corrupt or not ours raises CheckpointError with a clear sentence;
  an exported ONNX model is recognised as one, and the command says what reads it instead.

``Checkpoint`` is what a training run saves, read once and checked once (``Checkpoint.load``):
evaluate, export, draw and ``--resume`` use its fields, never the file's raw entries. An entry
of the right type with the wrong content (a negative epoch count, a history row that is text)
counts as missing and says why in ``problems``; ``resume_refusal`` turns what ``--resume``
cannot do without into one sentence, before anything is trained or written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import torch

from .terminal_text import printable

FORMAT = "lenet5-training-checkpoint"
LAST = "last.pt"  # written after every epoch (and on Ctrl+C): what --resume continues
BEST = "best.pt"  # the epoch with the best validation accuracy so far
VERSION = 1
NUM_OUTPUTS = 10  # LeNet-5's outputs: the digits, or up to ten classes of your own pictures
# The settings a checkpoint keeps: everything that shapes the curve, which --resume takes back.
RUN_SETTINGS = (
    "epochs",
    "batch_size",
    "lr",
    "optimizer",
    "momentum",
    "weight_decay",
    "seed",
    "dataset",
)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: missing, truncated, corrupt, or not ours."""


class CheckpointWriteError(OSError):
    """Writing failed (disk full, no permission, ...); the previous file is unchanged."""


def _replace(source: Path, target: Path) -> None:
    # On Windows a virus scanner or indexer may hold the target for a moment: retry briefly.
    for attempt in range(5):
        try:
            os.replace(str(source), str(target))
            return
        except PermissionError:
            if attempt == 4:
                raise
            time.sleep(0.1 * (attempt + 1))


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one step."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, content: bytes) -> None:
    try:
        with atomic_path(path) as tmp:
            tmp.write_bytes(content)
    except OSError as error:
        raise CheckpointWriteError(_write_failure(path, error)) from error


def copy_atomic(source: Path, target: Path) -> None:
    """Copy ``source`` over ``target`` in one step (CheckpointWriteError when it fails)."""
    try:
        with atomic_path(target) as tmp:
            shutil.copyfile(source, tmp)
    except OSError as error:
        raise CheckpointWriteError(_write_failure(target, error)) from error


def _write_failure(path: Path, error: Exception) -> str:
    """What CheckpointWriteError says: the file, why, and that the previous one is unchanged."""
    if isinstance(error, OSError):
        reason = error.strerror or str(error) or type(error).__name__
    else:  # torch.save's zip writer reports a full disk as RuntimeError("... unexpected pos ...")
        reason = f"the file could not be completed ({_one_line(error)}){_free_space(path)}"
    return (
        f"Could not write {path}: {reason}. The previous {Path(path).name} (if any) is unchanged."
    )


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _free_space(path: Path) -> str:
    try:
        free = shutil.disk_usage(Path(path).parent).free
    except OSError:
        return ""
    return f"; {free / 2**20:.1f} MB free there: is the disk full?"


def to_cpu(value: Any) -> Any:
    """A copy of ``value`` with every tensor detached and on the CPU (dicts, lists, tuples)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return type(value)((k, to_cpu(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(v) for v in value)
    return value


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A file to ``torch.save`` into: a temporary file beside ``path``, flushed to disk, then
    renamed over ``path`` in one step. CheckpointWriteError when writing fails; the previous
    file is then unchanged."""
    path = Path(path)
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
    except (OSError, RuntimeError) as error:  # RuntimeError: torch.save on a full disk
        raise CheckpointWriteError(_write_failure(path, error)) from error


# The field that may follow an ONNX model's first (ir_version): producer name and version,
# domain, model version, doc string, graph, opset import (onnx.proto's ModelProto, 2 to 8).
_ONNX_SECOND_FIELDS = frozenset({0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42})


def is_onnx_model(path: Path) -> bool:
    """Whether the file starts as an ONNX model does, whatever its name: ir_version (field 1,
    a small number), then another field of a ModelProto. PyTorch files start otherwise."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(3)
    except OSError:
        return False
    return len(head) == 3 and head[0] == 0x08 and head[1] < 0x80 and head[2] in _ONNX_SECOND_FIELDS


def load_checkpoint(path: Path, onnx_fix: str = "") -> dict[str, Any]:
    """The state ``train.save_checkpoint`` saved, with tensors on the CPU; CheckpointError if the
    file is missing, truncated, corrupt, or not a checkpoint of this project. ``onnx_fix``: what
    the command reads an exported ONNX model with, said when ``path`` is one."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(
            f"{printable(path)} is a folder: name a checkpoint in it, such as "
            f"{printable(path / BEST)}."
        )
    if not path.is_file():
        raise CheckpointError(f"There is no checkpoint at {path}.")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as error:
        if is_onnx_model(path):  # a valid model, of the other kind: not "corrupt"
            raise CheckpointError(
                f"{printable(path)} is an exported ONNX model, not a checkpoint of this "
                f"project's training: {onnx_fix or 'name a best.pt or last.pt of a run instead'}."
            ) from None
        detail = " ".join(f"{type(error).__name__}: {error}".split())
        if len(detail) > 200:
            detail = detail[:197] + "..."
        detail = printable(detail, None)  # it may quote names from the file
        raise CheckpointError(
            f"{path} cannot be read: it is truncated, corrupt or not a PyTorch file ({detail}). "
            "Delete it, or point to another checkpoint."
        ) from error
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        kind = type(state).__name__
        # The file's names, escaped: a key may hold escape sequences that steer a terminal.
        keys = (
            ", ".join(sorted(printable(k, 40) for k in state)[:5])
            if isinstance(state, dict)
            else ""
        )
        raise CheckpointError(
            f"{path} is a PyTorch file but not a checkpoint written by this project's training "
            f"(found a {kind}{' with keys ' + keys if keys else ''}). "
            "Use a best.pt or last.pt from this project's output directory."
        )
    if state.get("version") != VERSION:
        raise CheckpointError(
            f"{path} has checkpoint version {printable(state.get('version'), 40) or 'none'}; this "
            f"code reads version {VERSION}. Train again, or use the code version that wrote it."
        )
    return state


def restore_module(module: torch.nn.Module, state_dict: dict[str, Any], path: Path) -> None:
    """``load_state_dict`` on a module already on its device; CheckpointError on a mismatch."""
    try:
        module.load_state_dict(state_dict)
    except Exception as error:
        detail = printable(" ".join(str(error).split()), 300)  # the file's key names: escaped
        raise CheckpointError(f"{path} holds a different model: {detail}") from error


# --------------------------------------------------------------------------------------------
# What a training run saves


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _is_state(value: Any) -> bool:
    """A random generator's state, as ``get_state`` gives it: a 1-D uint8 tensor."""
    return isinstance(value, torch.Tensor) and value.dtype == torch.uint8 and value.dim() == 1


# What a row of the history, a point of the curves within epochs, and the position of a run
# stopped inside an epoch hold: each entry and what it must be.
HISTORY_ROW = {
    "epoch": _is_int,
    "train_loss": _is_number,
    "train_accuracy": _is_number,
    "val_loss": _is_number,
    "val_accuracy": _is_number,
}
POINT = {
    "epoch": _is_int,
    "x": _is_number,
    "loss_sum": _is_number,
    "correct": _is_count,
    "seen": _is_count,
}
POSITION = {
    "batch": _is_count,
    "generator": _is_state,
    "loss_sum": _is_number,
    "correct": _is_count,
    "seen": _is_count,
    "seconds": _is_number,
}


def _entry_problem(value: Any, wanted: dict[str, Any], what: str) -> str | None:
    """Why ``value`` is not a ``what`` with the entries ``wanted`` names, or None."""
    if not isinstance(value, dict):
        return f"{what} is a {type(value).__name__}, not a table of numbers"
    for name, valid in wanted.items():
        if name not in value:
            return f"{what} has no {name}"
        if not valid(value[name]):
            return f"{what} has {name}={printable(repr(value[name]), 40)}"
    return None


def _rows_problem(rows: list[Any], wanted: dict[str, Any], what: str) -> str | None:
    for index, row in enumerate(rows):
        problem = _entry_problem(row, wanted, f"{what} {index + 1}")
        if problem:
            return problem
        extra = [k for k, v in row.items() if not (isinstance(k, str) and _is_number(v))]
        if extra:
            return f"{what} {index + 1} holds {printable(repr(extra[0]), 40)}, not a number"
    return None


def _history_problem(history: list[Any]) -> str | None:
    problem = _rows_problem(history, HISTORY_ROW, "history row")
    if problem:
        return problem
    numbers = [row["epoch"] for row in history]
    if numbers != list(range(1, len(history) + 1)):
        return f"its history's epochs are {printable(numbers, 40)}, not 1, 2, 3, ..."
    return None


def _rng_problem(rng: dict[str, Any]) -> str | None:
    for name in ("generator", "torch"):
        if not _is_state(rng.get(name)):
            return f"its random state has no {name} state (a 1-D tensor of bytes)"
    return None


def _content_problems(found: dict[str, Any]) -> dict[str, str]:
    """What is wrong with the content of entries of the right type: {entry: why}."""
    checks = {
        "epochs_done": lambda v: None if v >= 0 else f"epochs_done is {v}, below 0",
        "history": _history_problem,
        "points": lambda v: _rows_problem(v, POINT, "curve point"),
        "position": lambda v: None if v is None else _entry_problem(v, POSITION, "its position"),
        "rng": _rng_problem,
    }
    problems = {}
    for name, check in checks.items():
        problem = check(found[name]) if name in found else None
        if problem:
            problems[name] = problem
    return problems


@dataclass
class Checkpoint:
    """A training run's state after ``epochs_done`` epochs (``last.pt``, ``best.pt``).

    ``model`` alone is needed to use the model; the rest says what it was trained on and
    lets ``--resume`` continue the same curve. A file written by an older version, or edited,
    may lack entries: ``missing`` names them, and the fields keep their defaults."""

    model: dict[str, Any]  # the state dict, CPU tensors
    config: dict[str, Any] = field(default_factory=dict)  # the run's settings (RUN_SETTINGS)
    data_dir: str = ""  # where evaluate finds the MNIST test files
    data_split: dict[str, Any] | None = None  # a folder's classes and parts; None otherwise
    epochs_done: int = 0
    optimizer: dict[str, Any] = field(default_factory=dict)
    position: dict[str, Any] | None = None  # where a stopped run stands inside an epoch
    history: list[dict[str, Any]] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)  # sums within epochs (curves)
    best_val_accuracy: float = -1.0
    rng: dict[str, Any] = field(default_factory=dict)  # "generator" and "torch" RNG states
    torch_version: str = ""
    model_class: str = "LeNet5"
    missing: tuple[str, ...] = ()  # entries the file did not hold (or held damaged)
    problems: dict[str, str] = field(default_factory=dict)  # damaged entries: what is wrong

    @property
    def dataset(self) -> str:
        """mnist, synthetic or folder:PATH."""
        return str(self.config.get("dataset", "mnist"))

    @property
    def classes(self) -> list[str] | None:
        """The class names of a folder of your own pictures, as the run recorded them; None
        for digits, or when the checkpoint does not say."""
        names = self.data_split.get("classes") if self.data_split else None
        if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            return names[:NUM_OUTPUTS]
        return None

    def which_epoch(self, path: Path) -> str:
        """Which model the file at ``path`` holds, in words: best.pt and last.pt differ."""
        if "epochs_done" in self.missing:
            return ""
        total = self.config.get("epochs")
        of = f" of {total}" if _is_int(total) else ""
        if self.position is not None:  # a run stopped inside an epoch
            batches = self.position["batch"]
            return f"the model during epoch {self.epochs_done + 1}{of}, after {batches} batches"
        if Path(path).name == BEST:
            return f"the model after epoch {self.epochs_done}{of}, the best validation accuracy"
        return f"the model after epoch {self.epochs_done}{of}"

    @classmethod
    def load(cls, path: Path, onnx_fix: str = "") -> Checkpoint:
        """The checkpoint at ``path``; CheckpointError when it cannot be read or holds no
        model (``onnx_fix``: as for ``load_checkpoint``). Entries of the wrong type, or of the
        right type with the wrong content, count as missing; ``problems`` says what is wrong
        with the latter."""
        state = load_checkpoint(path, onnx_fix)
        if not isinstance(state.get("model"), dict):
            raise CheckpointError(
                f"{path} holds no model; use a best.pt or last.pt of this project."
            )
        wanted = {
            "config": lambda v: isinstance(v, dict),
            "data_dir": lambda v: isinstance(v, str),
            "data_split": lambda v: v is None or isinstance(v, dict),
            "epochs_done": _is_int,
            "optimizer": lambda v: isinstance(v, dict),
            "position": lambda v: v is None or isinstance(v, dict),
            "history": lambda v: isinstance(v, list),
            "points": lambda v: isinstance(v, list),
            "best_val_accuracy": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "rng": lambda v: isinstance(v, dict),
            "torch_version": lambda v: isinstance(v, str),
            "model_class": lambda v: isinstance(v, str),
        }
        found = {
            name: state[name] for name, ok in wanted.items() if name in state and ok(state[name])
        }
        problems = _content_problems(found)
        found = {name: value for name, value in found.items() if name not in problems}
        missing = tuple(name for name in wanted if name not in found)
        return cls(model=state["model"], **found, missing=missing, problems=problems)

    def resume_refusal(self, path: Path) -> str | None:
        """Why ``--resume`` cannot continue from this checkpoint (read from ``path``), in one
        sentence that says what to do; None when it can. Checked before the run trains or
        writes anything, so that a damaged file is never saved again."""
        problem = self._resume_problem()
        return None if problem is None else cannot_resume(path, problem)

    def _resume_problem(self) -> str | None:
        needed = ("optimizer", "config", "history", "rng", "epochs_done", "position")
        for name in (*needed, "points"):  # points: older files have none, which is fine
            if name in self.problems:
                return self.problems[name]
        absent = [name for name in needed if name in self.missing]
        if absent:
            return f"it is incomplete (no {', '.join(absent)})"
        planned = self.config.get("epochs")
        if _is_int(planned) and self.epochs_done > planned:
            return f"epochs_done is {self.epochs_done}, more than the {planned} epochs planned"
        rows, done = len(self.history), self.epochs_done
        if rows != done:
            return f"its history has {rows} epochs, but epochs_done is {done}"
        if self.position is not None and _is_int(planned) and self.epochs_done >= planned:
            return "it stopped inside an epoch after its last one"
        late = [p["epoch"] for p in self.points if not 1 <= p["epoch"] <= self.epochs_done + 1]
        if late:
            return f"a curve point is of epoch {late[0]}, not one it trained"
        return None


def cannot_resume(path: Path, problem: str) -> str:
    """The sentence that refuses ``--resume`` from ``path`` because of ``problem``."""
    return (
        f"{path} cannot be resumed: {problem}. Start a new run without --resume, or in "
        f"another --output-dir (evaluate, export and draw use the {BEST} beside it)."
    )


def optimizer_problem(saved: dict[str, Any], optimizer: torch.optim.Optimizer) -> str | None:
    """Why ``saved`` (an optimizer's state dict read from a file) cannot go into
    ``optimizer``, or None. ``load_state_dict`` checks only the number of parameters: a
    setting that is not a number, or a momentum buffer of another shape, would fail only in
    the middle of the first step."""
    groups, state = saved.get("param_groups"), saved.get("state")
    own_groups = optimizer.state_dict()["param_groups"]
    if not isinstance(groups, list) or not isinstance(state, dict):
        return "its optimizer state is not a state dict"
    if len(groups) != len(own_groups):
        return "its optimizer state is not one of this optimizer"
    shapes: dict[Any, torch.Size] = {}
    for group, own, live in zip(groups, own_groups, optimizer.param_groups):
        ids = group.get("params") if isinstance(group, dict) else None
        if not isinstance(ids, list) or len(ids) != len(own["params"]):
            return "its optimizer state is not one of this optimizer"
        for name, value in own.items():
            if name != "params" and name in group and not _like(group[name], value):
                return f"its optimizer's {name} is {printable(repr(group[name]), 40)}"
        shapes.update((i, param.shape) for i, param in zip(ids, live["params"]))
    for key, entries in state.items():
        if key not in shapes or not isinstance(entries, dict):
            return "its optimizer state is not one of this optimizer"
        for name, value in entries.items():
            if not _fits(value, shapes[key]):
                return f"its optimizer's {printable(name, 40)} does not fit the model"
    return None


def _like(value: Any, own: Any) -> bool:
    """Whether a saved optimizer setting can stand where the optimizer has ``own``."""
    if isinstance(own, bool):
        return isinstance(value, bool)
    if _is_number(own):
        return _is_number(value) and not (value != value or abs(value) == float("inf"))
    if isinstance(own, (tuple, list)):
        return isinstance(value, (tuple, list)) and len(value) == len(own)
    return True  # None or text: torch itself checks it


def _fits(value: Any, shape: torch.Size) -> bool:
    """A state entry of a parameter: a step count, or a tensor of the parameter's shape."""
    if isinstance(value, torch.Tensor):
        return value.dim() == 0 or value.shape == shape
    return value is None or _is_number(value)
