"""An epoch's loss and accuracy, summed on the device without slowing the loop down, and where
a stopped run stands inside its epoch (what ``--resume`` continues from)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from . import distributed
from .ranks import is_main


@dataclass
class Position:
    """Where a run stands inside an epoch: enough to continue it exactly."""

    batch: int  # the next batch to run
    generator: torch.Tensor  # shuffling generator state at the start of the epoch
    loss_sum: float
    correct: int
    seen: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class EpochTraining:
    loss: float  # mean over the epoch's training samples
    accuracy: float
    batches: int  # batches done in this epoch
    samples: int  # samples trained in this session (a resumed epoch counts only its rest)
    seconds: float  # time of this session's part, ended by a readback
    seconds_before: float  # time spent on this epoch before a resume
    started: float  # perf_counter() when this session's part began
    points: list = field(default_factory=list)  # (batch, loss sum, correct, seen) so far


class EpochMeter:
    """Loss and correct predictions summed over an epoch in device tensors: ``add`` never reads
    a value back (a readback is a synchronisation point); ``running`` and ``finish`` do.

    Every ``every`` batches ``add`` also keeps a copy of the sums on the device (no readback);
    ``finish`` reads them back together with the epoch's sums: the points of curves.png."""

    def __init__(
        self,
        device: torch.device,
        generator_state: torch.Tensor,
        first: int,
        position: Position | None,
        every: int = 0,
    ) -> None:
        self.generator_state, self.first = generator_state, first
        self.batch, self.every, self.kept = first, every, []
        self.loss_sum = torch.zeros((), device=device)
        self.correct = torch.zeros((), dtype=torch.int64, device=device)
        self.seen, self.seconds_before, self.seen_before = 0, 0.0, 0
        if position is not None:  # continue the sums of the part done before a resume
            if is_main():  # under torchrun they are counted once, by rank 0
                self.loss_sum += position.loss_sum
                self.correct += position.correct
                self.seen = position.seen
            self.seconds_before, self.seen_before = position.seconds, position.seen
        self.started = time.perf_counter()

    def add(self, loss_sum: torch.Tensor, correct: torch.Tensor, samples: int) -> None:
        self.loss_sum += loss_sum
        self.correct += correct
        self.seen += samples
        self.batch += 1
        if self.every and self.batch % self.every == 0:  # copies stay on the device
            self.kept.append((self.batch, self.loss_sum.clone(), self.correct.clone(), self.seen))

    def points(self) -> list[tuple[int, float, int, int]]:
        """The kept sums as (batch, loss sum, correct, seen), read back in one go."""
        if not self.kept:
            return []
        sums = torch.stack([torch.stack([k[1], k[2].to(k[1].dtype)]) for k in self.kept])
        seen = [k[3] for k in self.kept]
        if distributed.current().many:  # every process's sums added up, in one collective
            column = torch.tensor(seen, dtype=sums.dtype, device=sums.device)[:, None]
            rows = distributed.summed_rows(torch.cat([sums, column], dim=1))
            sums, seen = rows[:, :2], [int(round(s)) for s in rows[:, 2].tolist()]
        points = [
            (batch, float(loss), int(round(correct)), images)
            for (batch, *_), (loss, correct), images in zip(self.kept, sums.cpu().tolist(), seen)
        ]
        self.kept = []
        return points

    def totals(self) -> tuple[float, int, int]:
        """(loss sum, correct, seen) so far, of all processes under torchrun: one readback."""
        loss_sum, correct, seen = distributed.summed(self.loss_sum, self.correct, self.seen)
        return float(loss_sum.item()), int(correct.item()), seen

    def running(self) -> tuple[float, float]:
        """(mean loss, accuracy) so far: one readback."""
        loss_sum, correct, seen = self.totals()
        return loss_sum / seen, correct / seen

    def position(self, next_batch: int) -> Position:
        loss_sum, correct, seen = self.totals()
        return Position(
            next_batch,
            self.generator_state,
            loss_sum,
            correct,
            seen,
            self.seconds_before + time.perf_counter() - self.started,
        )

    def finish(self, batches: int) -> EpochTraining:
        loss_sum, correct, seen = self.totals()  # readback: the timing barrier
        loss, accuracy = loss_sum / max(1, seen), correct / max(1, seen)
        seconds = time.perf_counter() - self.started
        samples = seen - self.seen_before
        return EpochTraining(
            loss,
            accuracy,
            batches,
            samples,
            seconds,
            self.seconds_before,
            self.started,
            self.points(),
        )
