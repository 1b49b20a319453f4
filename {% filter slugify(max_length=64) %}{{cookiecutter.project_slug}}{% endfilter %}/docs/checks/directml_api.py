"""The whole Python API of the installed torch-directml, read from its files without importing it.

Guides call functions such as ``torch_directml.synchronize()`` or ``empty_cache()``. This check
lists what the package really defines, by parsing its source with ``ast`` (importing it would
need a DirectX 12 driver), so it runs on any machine where torch-directml is installed:

    python docs/checks/directml_api.py

Exit code 0 when the package matches docs/directml.md, 2 when torch-directml is not installed.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from importlib import metadata
from pathlib import Path

NAMED_IN_GUIDES = [
    "synchronize",
    "empty_cache",
    "set_default_device",
    "enable_deferred_clear",
    "autocast",
]
DOCUMENTED = [
    "is_available",
    "device_count",
    "device_name",
    "default_device",
    "device",
    "has_float64_support",
    "gpu_memory",
    "disable_tiled_resources",
]


def public_functions(tree: ast.Module) -> list:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    ]


def star_imports(tree: ast.Module) -> list:
    """Modules pulled in with ``from .x import *``."""
    return [
        node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        if any(alias.name == "*" for alias in node.names)
    ]


def calls_in_defaults(function: ast.FunctionDef) -> list:
    """Default values that are calls: Python evaluates them when the module is imported."""
    args = function.args.args[len(function.args.args) - len(function.args.defaults) :]
    return [
        f"{arg.arg}={ast.unparse(default) if hasattr(ast, 'unparse') else 'a call'}"
        for arg, default in zip(args, function.args.defaults)
        if isinstance(default, ast.Call)
    ]


def main() -> int:
    spec = importlib.util.find_spec("torch_directml")
    if spec is None or not spec.submodule_search_locations:
        print("torch-directml is not installed in this environment.")
        return 2
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        where = f"{folder.relative_to(sys.prefix).as_posix()} in this environment"
    except ValueError:
        where = str(folder)
    print(f"torch-directml {metadata.version('torch-directml')} ({where})")
    init = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    names: list = []
    for module in star_imports(init):
        tree = ast.parse((folder / f"{module}.py").read_text(encoding="utf-8"))
        functions = public_functions(tree)
        names += [f.name for f in functions]
        print(f"\n{module}.py (imported with *):")
        for function in functions:
            at_import = calls_in_defaults(function)
            note = f"   default evaluated at import: {', '.join(at_import)}" if at_import else ""
            print(f"  {function.name}(){note}")
    names += [f.name for f in public_functions(init)]
    for node in init.body:
        if isinstance(node, ast.ClassDef):
            stubs = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef)
                and "autocast" in item.name
                and all(
                    isinstance(stmt, (ast.Pass, ast.Return, ast.Expr)) and not _calls(stmt)
                    for stmt in item.body
                )
            ]
            if stubs:
                print(f"\n__init__.py, class {node.name} (registered as torch.privateuseone):")
                print(f"  {', '.join(stubs)}: constant or empty bodies")
    print("\nNamed in guides:")
    names += [path.stem for path in folder.iterdir() if not path.name.startswith("_")]
    for name in NAMED_IN_GUIDES:
        print(f"  torch_directml.{name:22} {'defined' if name in names else 'does not exist'}")
    ok = all(name in names for name in DOCUMENTED)
    ok &= not any(name in names for name in NAMED_IN_GUIDES)
    print("\nAgrees with docs/directml.md:", "yes" if ok else "NO")
    return 0 if ok else 1


def _calls(stmt: ast.stmt) -> bool:
    return any(isinstance(node, ast.Call) for node in ast.walk(stmt))


if __name__ == "__main__":
    sys.exit(main())
