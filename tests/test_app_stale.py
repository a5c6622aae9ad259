"""The dashboard says when raw data changed since the derived tables were computed."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.app_fixture import build_app_db
from tests.app_helpers import no_errors, open_page

NOTICE = "Raw data changed since the last compute"


def with_compute_log(db: Path, computed_version: int, loaded_versions: int) -> Path:
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE OR REPLACE TABLE compute_log (data_version BIGINT, settings VARCHAR, "
        "computed_at TIMESTAMPTZ, duration_s DOUBLE)"
    )
    con.execute(
        "INSERT INTO compute_log VALUES (?, 'x', TIMESTAMPTZ '2026-11-30 00:10:00+00', 1.0)",
        [computed_version],
    )
    for batch in range(2, loaded_versions + 1):  # the fixture holds batch 1
        con.execute(
            "INSERT INTO load_log VALUES (?, TIMESTAMPTZ '2026-11-30 00:20:00+00', 'files', "
            "['gpu_samples'], 1, 1)",
            [batch],
        )
    con.close()
    return db


@pytest.mark.parametrize(
    ("computed", "loaded", "shown"),
    [
        (1, 1, False),  # computed from what is loaded: nothing to say
        (1, 2, True),  # an ingest published after the last compute
    ],
)
def test_sidebar_says_when_raw_data_changed_since_the_compute(
    tmp_path, monkeypatch, computed, loaded, shown
):
    db = with_compute_log(build_app_db(tmp_path / "fleet.duckdb"), computed, loaded)
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    at = open_page()
    no_errors(at)
    warnings = [w.value for w in at.sidebar.warning]
    assert any(NOTICE in w for w in warnings) == shown, warnings
    if shown:
        assert (
            f"built from data version {computed}; the database holds version {loaded}"
            in " ".join(warnings)
        )
