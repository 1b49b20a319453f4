"""How your own images are split into training, validation and test pictures, and how a run
tells that the folder changed since it trained.

Each picture's part follows from a hash of its content, not from its place in the folder:
adding or removing pictures moves no other picture, and copies of one picture share a part.
A checkpoint keeps a record of its split (``split_record``) so that ``evaluate`` and
``--resume`` can say what changed (``split_change``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

from ..machinery.terminal_text import printable

FOLDER_HELD_OUT = 0.1  # of a folder's images for validation, and as much again for test


def split_part(digest: str) -> str:
    """The part of a picture whose bytes hash to ``digest`` (hex): "val" for the first
    FOLDER_HELD_OUT of the hash range, "test" for the next as much, else "train". A picture
    keeps its part whatever else is in the folder, and copies of one picture share theirs."""
    position = int(digest[:16], 16) / 16**16
    if position < FOLDER_HELD_OUT:
        return "val"
    return "test" if position < 2 * FOLDER_HELD_OUT else "train"


def folder_split(digests: Sequence[str]) -> dict[str, list[int]]:
    """The indices of each part. A part the hash left empty (a folder of a few pictures) takes
    the training picture nearest to it in the hash range, so that none is empty."""
    parts: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for index, digest in enumerate(digests):
        parts[split_part(digest)].append(index)
    for part in ("val", "test"):
        if not parts[part] and len(parts["train"]) > 1:
            nearest = min(parts["train"], key=lambda i: digests[i])
            parts["train"].remove(nearest)
            parts[part].append(nearest)
    return parts


def split_record(classes: Sequence[str], pictures: Sequence[Any], parts: dict) -> dict:
    """What a checkpoint keeps of a folder's split: the classes, and per part the count and a
    hash of its pictures (their content and class), enough to tell that the folder changed."""
    record: dict[str, Any] = {"classes": list(classes), "rule": "content hash, 10% / 10%"}
    for part, indices in parts.items():
        lines = sorted(f"{pictures[i].digest} {pictures[i].label}" for i in indices)
        digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
        record[part] = {"images": len(indices), "hash": digest}
    return record


@dataclass(frozen=True)
class SplitChange:
    """What changed in a folder since a run trained on it: ``what`` is UNRECORDED (the
    checkpoint keeps no record), CLASSES or PICTURES; ``sentence`` says it to the user."""

    what: str
    sentence: str


UNRECORDED, CLASSES, PICTURES = "unrecorded", "classes", "pictures"


def split_change(saved: Any, now: dict[str, Any] | None) -> SplitChange | None:
    """None when a folder holds the pictures a run was trained on (or the data is no folder:
    ``now`` None); otherwise what changed. ``saved``: the checkpoint's ``split_record``."""
    if now is None:
        return None
    if not isinstance(saved, dict):
        return SplitChange(
            UNRECORDED,
            "it does not record which pictures it trained on (an older version saved it), so "
            "its test pictures cannot be told from its training pictures.",
        )
    if saved.get("classes") != now["classes"]:
        then = saved.get("classes")
        then_text = ", ".join(map(printable, then)) if isinstance(then, list) else "unknown"
        return SplitChange(
            CLASSES,
            f"the classes changed since training (then: {then_text}; now: "
            f"{', '.join(map(printable, now['classes']))}), and the model's outputs are the "
            "classes it trained on.",
        )
    changed = [
        _part_change(part, now[part]["images"], _images(saved.get(part)))
        for part in ("train", "val", "test")
        if not isinstance(saved.get(part), dict) or saved[part].get("hash") != now[part]["hash"]
    ]
    if not changed:
        return None
    return SplitChange(PICTURES, f"the pictures changed since training ({'; '.join(changed)}).")


def _part_change(part: str, now: int, then: str) -> str:
    """How one part changed: its count, or other pictures in the same number."""
    if str(now) == then:
        return f"{part}: other pictures, {now} as before"
    return f"{part} {now} now, {then} then"


def _images(part: Any) -> str:
    count = part.get("images") if isinstance(part, dict) else None
    return str(count) if isinstance(count, int) and not isinstance(count, bool) else "?"
