"""docs/metrics.md documents every column of the goodput and rank slowdown tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import Settings
from pipelines.store import open_store
from tests.goodput_fleet import attempt, compute_with_node_states, job, load, steps

DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
INTERNAL = {"start_us", "end_us"}  # epoch microseconds beside start_ts / end_ts, for exact joins


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    con = open_store(tmp_path_factory.mktemp("docs") / "fleet.duckdb")
    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [job("j", start=0, end=100, state="succeeded")],
            "job_attempts": [attempt("j", 0, start=0, end=100, state="succeeded")],
            "rank_steps": steps("j", 0, first_end=20, step_s=10, count=5),
        },
    )
    compute_with_node_states(con, Settings(), [("n1", 0, 100, "available")])
    yield con
    con.close()


@pytest.mark.parametrize(
    "table", ["goodput_segments", "job_goodput", "rank_slowdown", "goodput_stack"]
)
def test_every_column_is_documented(computed, table):
    text = DOCS.read_text()
    columns = [c[0] for c in computed.execute(f"SELECT * FROM {table} LIMIT 0").description]
    missing = [c for c in columns if c not in INTERNAL and f"`{c}`" not in text]
    assert missing == [], f"{table}: document {missing} in docs/metrics.md"
