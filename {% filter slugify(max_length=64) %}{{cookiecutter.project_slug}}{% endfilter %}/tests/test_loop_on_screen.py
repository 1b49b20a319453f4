"""What a learner changes is in train.py, in view: the optimizer built with its arguments, the
running sums of the loss and the correct answers, what a checkpoint holds and its one
``torch.save``. ``machinery/`` holds only what a first reading may skip, and never imports
train.py back."""

from __future__ import annotations

import ast
from pathlib import Path

from {{ cookiecutter.package_name }} import (
    train,
)

PACKAGE = Path(train.__file__).parent
MACHINERY = sorted((PACKAGE / "machinery").glob("*.py"))
MOST_NAMES_FROM_MACHINERY = 10  # a reader of train.py follows few names out of it


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def dotted(node: ast.AST) -> str:
    """``torch.optim.SGD`` for the expression that names it ("" for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def optimizer_classes() -> set[str]:
    """The optimizers defined in machinery (LerpFreeAdam): building one is train.py's job."""
    return {
        node.name
        for path in MACHINERY
        for node in ast.walk(tree(path))
        if isinstance(node, ast.ClassDef)
        and any(dotted(base).endswith("optim.Optimizer") for base in node.bases)
    }


def test_no_module_of_machinery_builds_an_optimizer_or_sums_a_loss():
    ours, found = optimizer_classes(), []
    for path in MACHINERY:
        for node in ast.walk(tree(path)):
            where = f"machinery/{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                name = dotted(node.func)
                built = name.rpartition(".")[2]
                if ("optim." in name and built != "Optimizer") or built in ours:
                    found.append(f"{where} builds an optimizer ({name})")
            if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                target = dotted(node.target).lower()
                if "loss" in target or "correct" in target:
                    found.append(f"{where} sums a loss or correct answers ({target} +=)")
    assert not found, "; ".join(found) + ": that belongs in train.py, where a learner reads it"


def test_train_py_builds_both_optimizers_and_saves_with_one_torch_save():
    calls = [
        dotted(n.func) for n in ast.walk(tree(PACKAGE / "train.py")) if isinstance(n, ast.Call)
    ]
    assert "torch.optim.SGD" in calls and "torch.optim.Adam" in calls
    assert calls.count("torch.save") == 1, "train.py writes every checkpoint with one torch.save"
    everywhere = [
        path.name
        for path in [*MACHINERY, *PACKAGE.glob("*.py")]
        if path.name != "train.py" and "torch.save" in map(dotted, ast.walk(tree(path)))
    ]
    assert not everywhere, f"{everywhere} save checkpoints too: train.save_checkpoint does"


def test_machinery_never_imports_train_py():
    found = []
    for path in MACHINERY:
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                names = {alias.name for alias in node.names}
                if node.module == "train" or (node.module is None and "train" in names):
                    found.append(f"machinery/{path.name}:{node.lineno}")
    assert not found, f"{found} import train.py, which imports machinery: a circle"


def test_train_py_takes_few_names_from_machinery():
    names = [
        alias.name
        for node in tree(PACKAGE / "train.py").body
        if isinstance(node, ast.ImportFrom)
        and node.level == 1
        and (node.module or "").startswith("machinery")
        for alias in node.names
    ]
    assert 0 < len(names) <= MOST_NAMES_FROM_MACHINERY, names
