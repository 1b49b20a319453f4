"""Training with several processes under ``torchrun``: everything that changes, in one place.

    torchrun --standalone --nproc-per-node=2 -m <package>.train --dataset synthetic

torchrun starts one process per GPU (or several on the CPU) and tells each, through the
environment, its rank (0, 1, ...), its local rank on its machine and their number, the world
size. Each process then trains a copy of the model on its own device, and PyTorch's
``DistributedDataParallel`` averages the gradients of all copies after every backward pass,
so that every copy takes the same step. What this module adds to a run, and nothing when the
run was started without torchrun (``current()`` is then ``SINGLE`` and every function returns
its input):

- ``processes``: joins the process group (nccl for CUDA and ROCm, xccl for Intel XPU, gloo for
  the CPU) on the device of this process's local rank; refuses DirectML and MPS, which have no
  distributed backend. A process that finds another one gone (killed, out of memory) stops
  with one sentence (``ProcessLost``) instead of gloo's or nccl's traceback.
- ``shared``: the model wrapped in ``DistributedDataParallel``; ``unwrapped`` gives it back
  for checkpoints.
- ``my_share``: every W-th image of a split, starting at this process's rank: each process
  trains on its slice of the same shuffle (the order is drawn from the same generator in
  every process), and the union of the W slices of batch k is batch k of one process.
- ``--batch-size`` is the batch of all processes together: each takes ``batch / W`` images a
  step, so that a step, the schedule and the checkpoints mean the same with any W.
- ``summed``, ``read_back``, ``summed_points``: sums (loss, correct answers, images) over the
  processes, for the printed and saved figures; ``same_on_all``: what the first process
  decides (the run folder, the checkpoint to resume) sent to the others; ``AgreedStop``:
  Ctrl+C stops every process at the same step.
- Only the first process (rank 0) prints, writes the run folder, the curves and the
  checkpoints (``ranks.is_main``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from dataclasses import replace
from typing import Any, Callable, Iterator, TypeVar

import torch

from .command_entry import silence_stdout
from .ranks import SINGLE, Processes, current, set_current
from .ranks import is_main as is_main  # for train.py: which process writes the files
from .stopping import DeviceFailed, StopSignal, TrainError

T = TypeVar("T")

# What gloo and nccl say when another process of the run is gone (killed, out of memory).
LOST_PEER = re.compile(
    r"Connection (reset|closed) by peer|Broken pipe|remote process exited|"
    r"NCCL communicator was aborted|ncclRemoteError",
    re.IGNORECASE,
)

# The stacks that can train with several processes, and the backend each uses.
BACKENDS = {"cuda": "nccl", "xpu": "xccl", "cpu": "gloo"}
CAN = "CUDA or ROCm GPUs (nccl), Intel XPUs (xccl) or the CPU (gloo, --device cpu)"


def from_environment(environ: Any = os.environ) -> Processes:
    """What torchrun (or srun with the same variables) set; SINGLE without it or for one
    process, which then runs exactly as without torchrun."""
    try:
        world = int(environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return SINGLE
        return Processes(int(environ["RANK"]), int(environ.get("LOCAL_RANK", "0")), world)
    except (KeyError, ValueError) as error:
        raise TrainError(
            f"The process variables are incomplete or not numbers ({error}): start several "
            "processes with torchrun, which sets RANK, LOCAL_RANK and WORLD_SIZE."
        ) from error


def refusal(kind: str, world_size: int) -> str | None:
    """The sentence for a device that cannot train with several processes, or None."""
    if kind in BACKENDS or world_size <= 1:
        return None
    name = {"directml": "DirectML", "mps": "Apple MPS"}.get(kind, kind)
    return (
        f"{name} cannot train with several processes ({world_size} were started by torchrun): "
        f"only {CAN} can; start without torchrun to train on {name} in one process."
    )


def process_batch(batch_size: int, processes: Processes | None = None) -> int:
    """Each process's share of ``--batch-size`` (the batch of all processes together)."""
    world = (processes or current()).world_size
    if batch_size % world:
        lower = max(world, batch_size - batch_size % world)
        raise TrainError(
            f"--batch-size {batch_size} is the batch of all processes together and cannot be "
            f"split evenly over {world} processes: use a multiple of {world}, such as {lower}."
        )
    return batch_size // world


def devices_line(kind: str, count: int | None = None) -> str:
    """What verify_install says about the devices of the chosen ``kind``: how many there are
    here, and the torchrun command that trains on all of them when there are several."""
    count = device_count(kind) if count is None else count
    command = devices_to_use(kind, count)
    line = f"{count} {kind} device{'s' if count != 1 else ''} on this machine"
    if command is None:
        return line + "."
    return f"{line}: `{command}` trains on all of them (docs/distributed.md)."


def devices_to_use(kind: str, count: int) -> str | None:
    """The torchrun command that trains on all ``count`` devices of ``kind`` on this machine
    (for verify_install), or None when there is only one or the kind cannot."""
    if count <= 1 or kind not in BACKENDS or kind == "cpu":
        return None
    package = __package__.rsplit(".", 1)[0]
    return f"torchrun --standalone --nproc-per-node={count} -m {package}.train --device {kind}"


def device_count(kind: str) -> int:
    """How many devices of ``kind`` torch sees here (0 when it sees none)."""
    try:
        if kind == "cuda":
            return torch.cuda.device_count() if torch.cuda.is_available() else 0
        xpu = getattr(torch, "xpu", None)
        if kind == "xpu" and xpu is not None:
            return xpu.device_count() if xpu.is_available() else 0
    except Exception:  # a broken driver: verify_install reports it elsewhere
        return 0
    return 0


# --------------------------------------------------------------------------------------------
# Joining and leaving the process group


@contextlib.contextmanager
def processes(option: Any, environ: Any = os.environ) -> Iterator[Any]:
    """Under torchrun: join the process group on this process's device and yield the device
    option for it (cuda:LOCAL_RANK, xpu:LOCAL_RANK, or the CPU); leave the group at the end.
    Without torchrun: yield ``option`` unchanged."""
    found = from_environment(environ)
    if not found.many:
        yield option
        return
    sentence = refusal(option.kind, found.world_size)
    if sentence:
        raise TrainError(sentence)
    import torch.distributed as dist

    if option.kind != "cpu":  # one device per process, chosen by the rank on this machine
        index = found.local_rank
        module = torch.cuda if option.kind == "cuda" else torch.xpu
        if index >= module.device_count():
            raise TrainError(
                f"torchrun started {found.local_rank + 1} or more processes on this machine, "
                f"but it has only {module.device_count()} {option.kind} device(s): set "
                "--nproc-per-node to at most that number."
            )
        module.set_device(index)
        device = torch.device(option.kind, index)
        option = replace(option, index=index, device=device, name=_device_name(module, index))
    if sys.platform == "win32":  # PyTorch's Windows wheels have no libuv store
        os.environ.setdefault("USE_LIBUV", "0")
    try:
        dist.init_process_group(backend=BACKENDS[option.kind])
    except (RuntimeError, ValueError) as error:
        raise TrainError(_init_failure(error)) from error
    set_current(found)
    if found.rank != 0:  # rank 0 alone prints; the others' tracebacks still reach stderr
        silence_stdout()
    try:
        yield option
        _leave_together()
    except ProcessLost:
        raise
    except Exception as error:
        sentence = lost_process(error)
        if sentence is None:
            raise
        raise ProcessLost(sentence) from error
    finally:
        set_current(SINGLE)
        with contextlib.suppress(Exception):  # after a failure of another process too
            dist.destroy_process_group()


def _leave_together() -> None:
    """A run that ended well: every process waits here until the first is done writing.

    While a process waits, without holding the interpreter, gloo's worker threads let go of
    the last collectives' tensors, which needs the interpreter; a process that went on to end
    its interpreter first could abort (``end_process``). After a failure nobody waits: another
    process may be gone."""
    import torch.distributed as dist

    dist.barrier()


def end_process(code: int) -> int:
    """``code``, or under torchrun: end this process now with ``code``, its output flushed.

    Ending the interpreter (Python's finalization) while one of gloo's worker threads still
    lets go of a collective's tensors aborts the process: the thread asks for the interpreter,
    Python ends the thread, and C++ calls "terminate called without an active exception"
    (SIGABRT); torchrun then reports a run that finished as failed. On a busy machine that
    thread runs late. Everything is saved by now (checkpoints are flushed to disk when
    written), so the process ends without the finalization, as a killed one would."""
    try:
        many = from_environment().many
    except TrainError:
        many = False
    if not many:
        return code
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class ProcessLost(TrainError):
    """Another process of the run is gone: this one stops with one sentence, whatever its
    rank, since rank 0 may be the one that is gone."""

    exit_code = 1


def lost_process(error: BaseException) -> str | None:
    """The sentence for ``error`` (or the error behind it, such as a GPU failure it was taken
    for) when it says that another process of the run is gone; None for any other error."""
    seen: BaseException | None = error
    while seen is not None:
        found = LOST_PEER.search(str(seen))
        if found:
            return (
                f"Another process of this run stopped (killed, or out of memory?), so this one "
                f"stops too ({found.group(0)}): start the same torchrun command with --resume "
                "to continue from the last checkpoint."
            )
        seen = seen.__cause__ or seen.__context__
    return None


def _device_name(module: Any, index: int) -> str:
    try:
        return str(module.get_device_name(index))
    except Exception:
        return f"device {index}"


def _init_failure(error: BaseException) -> str:
    detail = " ".join(str(error).split())[:200]
    if "libuv" in detail.lower():
        return (
            "This PyTorch was built without libuv, which torchrun's store uses by default: set "
            "USE_LIBUV=0 before torchrun (PowerShell: $env:USE_LIBUV = '0'; cmd: set "
            "USE_LIBUV=0), or train in one process without torchrun, or use WSL."
        )
    return (
        f"The processes could not join each other ({detail}): check that every machine runs "
        "the same command, and that the rendezvous address and port can be reached."
    )


# --------------------------------------------------------------------------------------------
# Inside the run


def shared(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` wrapped in DistributedDataParallel (gradients averaged over the processes
    after every backward pass; the first process's initial weights copied to the others)."""
    if not current().many:
        return model
    from torch.nn.parallel import DistributedDataParallel

    device = next(model.parameters()).device
    ids = None if device.type == "cpu" else [device.index]
    return DistributedDataParallel(model, device_ids=ids)  # LeNet has no buffers to sync


def unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside DistributedDataParallel (its state dict has no ``module.`` prefix)."""
    return getattr(model, "module", model)


def my_share(split: T, whole: bool = False) -> T:
    """This process's slice of ``split``: images rank, rank + W, rank + 2W, ... Training
    (``whole`` False) leaves out the last ``len % W`` images of the shuffle, so that every
    process has as many batches (an uneven count would leave one waiting for the others);
    evaluation (``whole`` True) keeps every image. A process beyond the last image (more
    processes than validation pictures) gets none: it adds zero to the sums."""
    if not current().many:
        return split
    from .. import data  # data imports the datasets, which need nothing from here

    rank, world = current().rank, current().world_size
    end = max(rank, len(split) if whole else len(split) - len(split) % world)
    if isinstance(split, data.LoaderSplit):  # a folder: the DataLoader reads only these
        return split.reordered(torch.arange(rank, end, world))
    return data.Split(split.images[rank:end:world], split.labels[rank:end:world])


def usable(count: int) -> int:
    """How many of ``count`` training images an epoch uses with this many processes."""
    return count - count % current().world_size


def summed(
    loss_sum: torch.Tensor, correct: torch.Tensor, seen: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(loss sum, correct answers, images seen) added up over all processes: one collective,
    and the same three values back without torchrun."""
    if not current().many:
        return loss_sum, correct, seen
    images = torch.tensor(float(seen), device=loss_sum.device)
    totals = summed_rows(torch.stack([loss_sum.float(), correct.float(), images]))
    return totals[0], totals[1].round().long(), int(round(float(totals[2].item())))


def read_back(loss_sum: torch.Tensor, correct: torch.Tensor, seen: int) -> tuple[float, int, int]:
    """(loss sum, correct answers, images seen) as Python numbers: one readback, which waits
    for the device to finish its queue (a sync); under torchrun every process's, added up."""
    loss_sum, correct, seen = summed(loss_sum, correct, seen)
    return float(loss_sum.item()), int(correct.item()), seen


def summed_points(
    kept: list[tuple[int, torch.Tensor, torch.Tensor, int]],
) -> list[tuple[int, float, int, int]]:
    """Sums kept on the device within an epoch, as (batch, loss sum, correct, images seen),
    read back in one go; under torchrun every process's added up, in one collective."""
    if not kept:
        return []
    sums = [torch.stack([loss, right.to(loss.dtype)]) for _, loss, right, _ in kept]
    counts = torch.tensor([[n] for *_, n in kept], dtype=sums[0].dtype, device=sums[0].device)
    rows = summed_rows(torch.cat([torch.stack(sums), counts], dim=1))
    return [
        (batch, loss, int(round(right)), int(round(n)))
        for (batch, *_), (loss, right, n) in zip(kept, rows.cpu().tolist())
    ]


def summed_rows(rows: torch.Tensor) -> torch.Tensor:
    """A tensor of sums on the device, added up over all processes (one collective)."""
    if not current().many:
        return rows
    import torch.distributed as dist

    rows = rows.to(torch.float32)
    dist.all_reduce(rows, op=dist.ReduceOp.SUM)
    return rows


def first_then_others(load: Callable[[], T]) -> T:
    """``load()`` in the first process of each machine, then in the others: the first
    downloads what is missing (MNIST), the others then find it there."""
    if not current().many:
        return load()
    import torch.distributed as dist

    result: Any = None
    failure: Exception | None = None
    if current().local_rank == 0:
        try:
            result = load()
        except Exception as error:  # raised below, once every process is past the barrier
            failure = error
    dist.barrier()  # reached in every case: an error must not leave the others waiting
    if failure is not None:
        raise failure
    return result if current().local_rank == 0 else load()


class Mirrored(TrainError):
    """The first process's error, raised in the others too; only the first prints it."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def same_on_all(decide: Callable[..., T], *args: Any) -> T:
    """``decide(*args)`` in the first process, its result (or its error) in every process:
    for choices that must not differ (the run folder's name holds the time) and files only
    the first machine may have (the checkpoint to resume)."""
    if not current().many:
        return decide(*args)
    import torch.distributed as dist

    box: list[Any] = [None]
    if current().rank == 0:
        try:
            box[0] = ("ok", decide(*args))
        except TrainError as error:
            box[0] = ("error", str(error), error.exit_code)
            dist.broadcast_object_list(box, src=0)
            raise
    dist.broadcast_object_list(box, src=0)
    if box[0][0] == "error":
        raise Mirrored(box[0][1], box[0][2])
    return box[0][1]


class AgreedStop(StopSignal):
    """Ctrl+C under torchrun: torchrun passes the signal on to every process, which may be at
    different steps when it arrives. ``requested`` therefore changes only in ``agree()``, a
    collective that every process calls at the same step (the loss readbacks, the end of an
    epoch): all of them stop at the same step, and rank 0 saves it."""

    # A terminal's Ctrl+C reaches a process twice when it shares torchrun's process group
    # (older torch): once from the terminal, once passed on by torchrun. Within this many
    # seconds a second signal is the same Ctrl+C, not a second one.
    SAME_PRESS_S = 2.0

    def __init__(self) -> None:
        super().__init__()
        self._agreed = False
        self._first = 0.0

    @property
    def requested(self) -> bool:
        return self._agreed

    def request(self) -> None:
        super().request()
        self._first = time.monotonic()

    def again_means_now(self) -> bool:
        return time.monotonic() - self._first > self.SAME_PRESS_S

    def agree(self) -> None:
        if self._agreed or not current().many:
            self._agreed = self._agreed or self.pressed
            return
        import torch.distributed as dist

        flag = torch.tensor([1 if self.pressed else 0], dtype=torch.int32)
        group = _cpu_group()
        if group is None:  # nccl/xccl reduce device tensors
            flag = flag.to(torch.device(_backend_device()))
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
        self._agreed = bool(flag.item())


def stop_signal() -> StopSignal:
    """The stop flag for this run: agreed between the processes under torchrun."""
    return AgreedStop() if current().many else StopSignal()


def _cpu_group() -> Any:
    import torch.distributed as dist

    return dist.group.WORLD if dist.get_backend() == "gloo" else None


def _backend_device() -> str:
    import torch.distributed as dist

    return {"nccl": "cuda", "xccl": "xpu"}.get(dist.get_backend(), "cpu")


def keeps_quiet(error: TrainError) -> bool:
    """Whether this process keeps ``error`` to itself: it is not rank 0, and the error is rank
    0's or the same as rank 0's (a device that failed in this process alone is said)."""
    try:
        rank = from_environment().rank
    except TrainError:
        return False
    return rank != 0 and not isinstance(error, (DeviceFailed, ProcessLost))
