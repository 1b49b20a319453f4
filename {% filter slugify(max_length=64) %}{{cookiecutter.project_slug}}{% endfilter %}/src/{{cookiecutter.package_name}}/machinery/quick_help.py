"""``python -m <package>.<command> --help`` answers at once: torch takes seconds to import
(more on Windows), and help needs none of it.

Each command's file calls ``answer_help`` before its imports, when it runs as a program: with
``-h`` or ``--help`` among its arguments, the command's own parser (``parsers``; train's from
``train_command`` and the settings in train.py) prints the help and the program ends there.
The project's console scripts get the same from the package's ``__init__``. Standard library
only. Anything this cannot build leaves the help to the command, as before.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from typing import Any, Sequence

HELP = ("-h", "--help")


def asks_for_help(argv: Sequence[str]) -> bool:
    """-h or --help among the options (not after ``--``, where it would be a file's name)."""
    options = list(argv)
    if "--" in options:
        options = options[: options.index("--")]
    return any(arg in HELP for arg in options)


def answer_help(command: str, argv: Sequence[str] | None = None) -> None:
    """Where ``argv`` (the program's arguments) asks for help, print ``command``'s help and
    exit 0, as its parser does; otherwise return, and the command runs."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not asks_for_help(argv):
        return
    try:
        parser = build_parser(command)
    except Exception:  # a settings class that needs torch itself, say: the command answers
        return
    parser.parse_args(argv)  # ends the program: the help (0), or an option given wrong (2)


def answer_console_script_help() -> None:
    """The same for the project's console scripts (``<project>-train --help``, installed by
    ``pip install -e .``): the program is one of them when its name is one of the entry points
    that run a command of this package."""
    program = Path(sys.argv[0]).name
    for suffix in (".exe", "-script.pyw", "-script.py"):  # the launchers on Windows
        if program.lower().endswith(suffix):
            program = program[: -len(suffix)]
    package = (__package__ or "").rpartition(".")[0]
    for script in _console_scripts():
        module, _, function = script.value.partition(":")
        command = module.rpartition(".")[2]
        if script.name == program and module == f"{package}.{command}" and function == "main":
            answer_help(command)
            return


def _console_scripts() -> list:
    from importlib import metadata

    found = metadata.entry_points()
    if hasattr(found, "select"):  # Python 3.10+
        return list(found.select(group="console_scripts"))
    return list(found.get("console_scripts", []))


def build_parser(command: str) -> Any:
    """``command``'s parser, the one the command itself parses with."""
    from . import parsers, train_command

    if command == "train":
        return train_command.build_parser(train_settings())
    return getattr(parsers, command)()


def train_settings(source: Path | None = None) -> type:
    """train.py's ``TrainConfig``, without running train.py (which imports torch): the class
    alone, with the standard library's modules that train.py imports."""
    path = source or Path(__file__).resolve().parents[1] / "train.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    wanted = [
        node
        for node in tree.body
        if (isinstance(node, ast.ClassDef) and node.name == "TrainConfig")
        or (isinstance(node, (ast.Import, ast.ImportFrom)) and _standard(node))
    ]
    # A module of its own: dataclass reads the annotations (ClassVar) in the class's module.
    module = types.ModuleType(f"{__name__}.train_settings")
    sys.modules[module.__name__] = module
    try:
        exec(compile(ast.Module(body=wanted, type_ignores=[]), str(path), "exec"), vars(module))
    finally:
        del sys.modules[module.__name__]
    return module.TrainConfig


def _standard(node: ast.Import | ast.ImportFrom) -> bool:
    """An import from the standard library, which loads in milliseconds."""
    if isinstance(node, ast.ImportFrom):
        names = [node.module or ""] if node.level == 0 else []
    else:
        names = [alias.name for alias in node.names]
    return bool(names) and all(name.partition(".")[0] in STANDARD for name in names)


# The standard library's modules a settings class may use (sys.stdlib_module_names: 3.10+).
STANDARD = set(getattr(sys, "stdlib_module_names", ())) or {
    "__future__", "collections", "dataclasses", "enum", "math", "os", "pathlib", "sys", "time",
    "typing",
}  # fmt: skip
