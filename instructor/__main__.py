"""python instructor.pyz stick ... | room ...: the instructor's two tools in one file."""

from __future__ import annotations

import sys
from typing import Sequence

USAGE = """\
usage: python instructor.pyz COMMAND ...   (in the project folder)

commands:
  stick make STICK [options]   write a workshop stick: every wheel, MNIST and install.py
  stick check STICK [STACK]    check a stick for one environment on this machine
  room FOLDER [--markdown]     summarise a room's verify_install --json reports

python instructor.pyz COMMAND --help says more; docs/workshop.md says when to use each."""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "stick":
        from .stick.__main__ import main as stick

        return stick(rest)
    if command == "room":
        from .room.summary import main as room

        return room(rest)
    print(f"{USAGE}\n\nerror: no command {command!r}: name stick or room.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
