"""Shared fixtures: a real DuckDB file per test, the computed report fixture, the app's database,
and the CI rule that nothing skips."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from pipelines.store import open_store
from tests.app_fixture import build_app_db
from tests.report_fixture import computed_fixture

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


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    """A copy of the hand-made fleet with every derived table computed (tests/report_fixture.py)."""
    return computed_fixture(tmp_path / "fleet.duckdb")


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-made fleet of tests/app_fixture.py, computed: built once per test module."""
    return build_app_db(tmp_path_factory.mktemp("app") / "fleet.duckdb")


@pytest.fixture
def use_db(app_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The app reads `app_db` (a module may override `app_db` with a database of its own)."""
    monkeypatch.setenv("GPUFLEET_DB", str(app_db))
    return app_db


def database_of_schema_at(commit: str, path: Path) -> duckdb.DuckDBPyConnection:
    """A new database at `path` with the landing schema of an older commit (for upgrade tests)."""
    old_schema = subprocess.run(
        ["git", "show", f"{commit}:queries/schema/landing.sql"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
    )
    require(old_schema.returncode == 0, f"commit {commit} in the git history")
    con = duckdb.connect(str(path))
    con.execute(old_schema.stdout)
    return con
