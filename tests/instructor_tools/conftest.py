"""The instructor's tests: ``project_under_test`` bakes the project they run against and puts
the package and the project's doctor on sys.path before any test module imports them."""

from __future__ import annotations

import os

import pytest

from . import project_under_test  # noqa: F401  (sys.path, before the test modules import instructor)

# A guard against a child Python that hangs, never a speed goal (as in the project's tests).
CHILD_LIMIT_S = 300 * float(os.environ.get("TEST_TIMEOUT_SCALE", "1"))


@pytest.fixture(scope="session")
def child_limit() -> float:
    return CHILD_LIMIT_S
