"""docs/metrics.md documents every column of the availability and job-outcome tables and every setting they use."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pipelines.config import AvailabilitySettings, FailureSettings
from pipelines.store import open_store
from tests.fleets import compute_availability, insert_anomalies, tiny_fleet

DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
TABLES = [
    "data_horizon",
    "node_state_intervals",
    "node_availability_daily",
    "fleet_availability_daily",
    "attempt_outcomes",
    "job_outcomes",
]


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    con = open_store(tmp_path_factory.mktemp("docs") / "fleet.duckdb")
    tiny_fleet().load(con)
    insert_anomalies(con, [])
    compute_availability(con)
    yield con
    con.close()


@pytest.mark.parametrize("table", TABLES)
def test_every_column_is_documented(computed, table):
    text = DOCS.read_text()
    columns = [c[0] for c in computed.execute(f"SELECT * FROM {table} LIMIT 0").description]
    missing = [c for c in columns if f"`{c}`" not in text]
    assert missing == [], f"{table}: document {missing} in docs/metrics.md"


@pytest.mark.parametrize(
    ("section", "cls"), [("availability", AvailabilitySettings), ("failures", FailureSettings)]
)
def test_every_setting_is_documented(section, cls):
    text = DOCS.read_text()
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in text]
    assert missing == [], f"document [{section}] {missing} in docs/metrics.md"
