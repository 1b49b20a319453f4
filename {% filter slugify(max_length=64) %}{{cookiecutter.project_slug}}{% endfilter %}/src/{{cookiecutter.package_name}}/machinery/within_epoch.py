"""What an epoch keeps besides train.py's running sums: where it starts (``InEpoch``: a run
stopped inside an epoch goes on from the batch after the stop, exactly) and curves.png's points
within it (``EpochPoints``: copies of the sums every few batches, read back once)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .distributed import summed_points

POINTS_PER_EPOCH = 25  # training points within an epoch in curves.png (a one-epoch run too)


@dataclass
class InEpoch:
    """RESUME: where an epoch starts. A fresh epoch starts at batch 0 with zero sums; a run
    stopped inside it (its checkpoint's ``position``) goes on from the batch after the stop, on
    the same shuffle, with the sums and seconds it had. Under torchrun the saved sums are every
    process's: the first process carries them on, the others start from zero."""

    batch: int = 0
    shuffle: Any = None  # the generator's state as the epoch started: what a stop saves
    loss_sum: float = 0.0  # this process's sums to start from
    correct: int = 0
    seen: int = 0
    seen_before: int = 0  # every process's images before this session (for the speed)
    seconds: float = 0.0

    @classmethod
    def start(cls, position: dict[str, Any] | None, generator: Any, main: bool) -> InEpoch:
        """Where the epoch starts; ``generator`` is set to its shuffle (``position``'s)."""
        before = position or {}
        if before:
            generator.set_state(before["generator"])
        carried = before if main else {}
        sums = carried.get("loss_sum", 0.0), carried.get("correct", 0), carried.get("seen", 0)
        seen, seconds = before.get("seen", 0), before.get("seconds", 0.0)
        return cls(before.get("batch", 0), generator.get_state(), *sums, seen, seconds)


class EpochPoints:
    """curves.png's points within an epoch: copies of the running sums every few batches, kept
    on the device (no readback while the epoch runs), read back once at its end (under
    torchrun every process's added up, in one collective)."""

    def __init__(self, epoch: int, steps_per_epoch: int) -> None:
        self.epoch, self.steps = epoch, steps_per_epoch
        self.every = max(1, steps_per_epoch // POINTS_PER_EPOCH)
        self.kept: list[tuple[int, Any, Any, int]] = []

    def keep(self, batch: int, loss_sum: Any, correct: Any, seen: int) -> None:
        if batch % self.every == 0:
            self.kept.append((batch, loss_sum.clone(), correct.clone(), seen))

    def read(self) -> list[dict[str, Any]]:
        """The points; ``x`` is the epoch count at each (0.5: half of the first epoch), as on
        the curves' axis."""
        points = []
        for batch, loss, right, seen in summed_points(self.kept):
            x = self.epoch + batch / self.steps
            sums = {"loss_sum": loss, "correct": right, "seen": seen}
            points.append({"epoch": self.epoch + 1, "x": x, **sums})
        return points
