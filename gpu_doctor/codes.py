"""The stable code of every finding, and the version of verify_install's ``--json`` report.

A finding's wording may change between versions of the project; its code does not. Scripts
and ``summary`` group a room's reports by code. Each rule module declares the codes it
gives (its ``CODES``, beside the rules); this is their union, in the order of docs/report.md's
table, which a test keeps equal. Never rename a code.
Standard library only (the project generator's hook imports the doctor before torch exists).
"""

from __future__ import annotations

from . import findings, onnx_runtime_check, project_venv
from .rules import (
    cards,
    cards_linux,
    cards_windows,
    cuda,
    device_checks,
    drivers,
    environment,
    packages,
    python,
    rocm,
    rocm_windows,
    system,
    torch_build,
    training_step,
)

# 2: codes on findings, template_version, created, home folder written as "~".
SCHEMA_VERSION = 2

SUBJECTS = (
    python,
    system,
    cards,
    cards_windows,
    cards_linux,
    rocm,
    rocm_windows,
    cuda,
    drivers,
    environment,
    project_venv,
    packages,
    torch_build,
    device_checks,
    training_step,
    onnx_runtime_check,
    findings,
)

CODES: dict[str, str] = {
    code: meaning for subject in SUBJECTS for code, meaning in subject.CODES.items()
}
