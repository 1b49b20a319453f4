"""README.txt on the stick: what it holds and the one command per laptop, for the room."""

from __future__ import annotations

from .platforms import TARGETS


def room_readme(manifest: dict) -> str:
    lines = [
        f"Workshop stick for {manifest['project']}: install with no network.",
        "",
        "On each laptop, in the project folder:",
        "1. Create an empty environment with the Python named below and activate it:",
        "   venv:  py -3.11 -m venv .venv-STACK, then .venv-STACK\\Scripts\\activate (Windows);",
        "          python3.11 -m venv .venv-STACK, then source .venv-STACK/bin/activate",
        "   conda: conda create -n NAME --offline python=3.11 pip, then conda activate NAME",
        "          (use the Python version of the line below)",
        "2. python E:\\install.py STACK   (E:\\ is where this stick is; STACK as verify_install",
        "   names it). It checks every file against manifest.json first: a missing or damaged",
        "   file stops it with one sentence, before anything is installed.",
        f"3. python -m {manifest.get('package') or '<package>'}.train --data-dir E:\\data"
        "   (MNIST from the stick)",
        "",
        "verify_install --bundle E:\\ says whether this stick holds what the laptop needs.",
        "",
        "Environments on this stick:",
    ]
    for name, part in sorted(manifest["parts"].items()):
        label = TARGETS[part["platform"]].label if part["platform"] in TARGETS else ""
        lines.append(
            f"  {part['stack']:<14} Python {part['python']:<5} {label}: "
            f"{part['bytes'] / 1e9:.2f} GB ({name})"
        )
    return "\n".join(lines) + "\n"
