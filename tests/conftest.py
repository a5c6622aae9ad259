"""Shared fixtures: a real DuckDB file per test, and the CI rule that nothing skips."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.store import open_store

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, what: str) -> None:
    """Skip locally when a component is missing; in CI a missing component fails the run."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} is missing; .ci/run must install it.")
    pytest.skip(f"{what} is missing")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "fleet.duckdb"


@pytest.fixture
def con(db_path: Path):
    connection = open_store(db_path)
    yield connection
    connection.close()
