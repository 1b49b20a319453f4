"""README.txt on the stick: what it holds and the one command per laptop, for the room."""

from __future__ import annotations

from .fetch import human_size
from .platforms import TARGETS

README_FIRST_LINE = "Workshop stick for "  # make writes over a README.txt that starts so only


def room_readme(manifest: dict) -> str:
    package = manifest.get("package") or "<package>"
    lines = [
        f"{README_FIRST_LINE}{manifest['project']}: install with no network.",
        "",
        "On each laptop, in the project folder (E:\\ is where this stick is):",
        "1. Create an empty environment with the Python named below and activate it:",
        "   venv:  py -3.11 -m venv .venv-STACK, then .venv-STACK\\Scripts\\activate (Windows);",
        "          python3.11 -m venv .venv-STACK, then source .venv-STACK/bin/activate",
        "   conda: conda create -n NAME --offline python=3.11 pip, then conda activate NAME",
        "          (use the Python version of the line below)",
        "2. python E:\\install.py STACK   (STACK as verify_install names it). It checks every",
        "   file against manifest.json first: a missing or damaged file stops it with one",
        "   sentence, before anything is installed.",
        "   A uv environment has no pip, which install.py runs: `python -m ensurepip` adds it",
        "   offline, or install with uv (PART: the environment's name in brackets below):",
        "     uv venv --offline --python 3.11 .venv-STACK, then activate it as above",
        "     uv pip install --offline --no-index --find-links E:\\wheels --require-hashes"
        " -r E:\\requirements\\PART.txt",
        "     uv pip install --offline --no-index --find-links E:\\wheels --no-deps"
        ' --no-build-isolation -e ".[dev]"',
        f"3. python -m {package}.train --data-dir E:\\data   (MNIST from the stick)",
        "",
        "verify_install --bundle E:\\ says whether this stick holds what the laptop needs.",
        "",
        "Environments on this stick:",
    ]
    for name, part in sorted(manifest["parts"].items()):
        label = TARGETS[part["platform"]].label if part["platform"] in TARGETS else ""
        gpus = part.get("gpu_targets") or []
        for_gpus = f", kernels for {' '.join(gpus)}" if gpus else ""
        lines.append(
            f"  {part['stack']:<14} Python {part['python']:<5} {label}{for_gpus}: "
            f"{human_size(part.get('bytes', 0))} ({name})"
        )
    return "\n".join(lines) + "\n"
