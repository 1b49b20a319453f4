"""Which of torchrun's processes this one is: set by ``distributed.processes`` when a run joins
the process group, read by everything that prints or writes files (only rank 0 does).

Apart from ``distributed.py`` so that what prints (``console.py``) can ask without importing
the process-group machinery. Without torchrun ``current()`` is ``SINGLE``: rank 0 of 1.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Processes:
    """This process's place among the processes torchrun started."""

    rank: int = 0  # 0 .. world_size - 1, over all machines
    local_rank: int = 0  # on this machine: which of its devices this process uses
    world_size: int = 1

    @property
    def many(self) -> bool:
        return self.world_size > 1


SINGLE = Processes()
_current = SINGLE


def current() -> Processes:
    return _current


def is_main() -> bool:
    """Whether this process prints and writes files: the only one, or rank 0."""
    return _current.rank == 0


def set_current(processes: Processes) -> None:
    """This process's place, from joining the process group until leaving it."""
    global _current
    _current = processes
