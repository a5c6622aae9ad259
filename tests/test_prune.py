"""`gpufleet prune --keep-raw`: raw GPU samples go, what was built from them stays.

A simulated fleet's first three days are loaded and computed, then pruned to one day of raw
history. Every derived table and the week's report must be what they were, after a compute
and after `compute --force`; the next day's load and compute must give what a database that
was never pruned gives; a load older than the cut is refused and changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.compute import DERIVED_TABLES, compute
from pipelines.config import Settings
from pipelines.errors import ConfigError, GpufleetError, InputError
from pipelines.prune import parse_keep, prune_raw
from pipelines.report import build_report, to_json
from pipelines.simulator.deliveries import deliver
from pipelines.simulator.model import SimulationConfig
from pipelines.simulator.output import simulate_to_dir
from pipelines.sources.files import ingest_files
from pipelines.sql import load_sql
from pipelines.store import open_store
from pipelines.weeks import IsoWeek
from testkit.equivalence import rows_difference, same_value, table_differences, table_rows
from testkit.processes import run_python

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
START = datetime(2026, 11, 23, tzinfo=UTC)
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
WEEK = IsoWeek(2026, 48)
# The last history day: the newest data is in it, so keeping one day cuts at its midnight minus a day.
CUT = START + DAY

COUNTER_METRICS = (
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
)


def _derived(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {table: table_rows(con, table) for table in DERIVED_TABLES}


def _differences(con: duckdb.DuckDBPyConnection, before: dict[str, list[tuple]]) -> list[str]:
    found = (rows_difference(before[t], table_rows(con, t), t) for t in DERIVED_TABLES)
    return [d for d in found if d]


def _copy(db: Path, folder: Path) -> Path:
    """A test's own copy of the pruned database (each test changes it)."""
    copy = folder / db.name
    copy.write_bytes(db.read_bytes())
    return copy


def _gpufleet(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "pipelines", "--db", str(db), *args], env=ENV, cwd=ROOT)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """Six nodes over four days, cut into the first three days and the fourth."""
    root = tmp_path_factory.mktemp("prune")
    simulate_to_dir(
        SimulationConfig.create(nodes=6, days=4, seed=11, start="2026-11-23"), root / "fleet"
    )
    deliver(root / "fleet", root / "history", START, START + 3 * DAY)
    deliver(root / "fleet", root / "next_day", START + 3 * DAY, START + 4 * DAY)
    _add_error_counter_faults(root / "history" / "gpu_samples.parquet")
    return root


def _add_error_counter_faults(samples: Path) -> None:
    """Before the cut, one GPU's single-bit ECC counter climbs for two hours and another GPU's
    double-bit level is 1 for two hours: findings only the raw counter series can rebuild."""
    frame = pl.read_parquet(samples)
    node = frame["node"].min()
    minutes = (pl.col("ts") - pl.lit(START + 10 * HOUR)).dt.total_minutes()
    climbing = (
        (pl.col("node") == node)
        & (pl.col("gpu") == 0)
        & (pl.col("metric") == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")
        & (pl.col("ts") >= START + 10 * HOUR)
        & (pl.col("ts") < CUT)
    )
    raised = (
        (pl.col("node") == node)
        & (pl.col("gpu") == 1)
        & (pl.col("metric") == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
        & (pl.col("ts") >= START + 6 * HOUR)
        & (pl.col("ts") < START + 8 * HOUR)
    )
    frame.with_columns(
        value=pl.when(climbing)
        .then(pl.col("value") + 500 * pl.min_horizontal(minutes, 120))
        .when(raised)
        .then(pl.lit(1.0))
        .otherwise(pl.col("value"))
    ).write_parquet(samples)


@pytest.fixture(scope="module")
def pruned(fleet: Path) -> dict:
    """The history loaded, computed, its derived tables and report noted, then pruned by the CLI."""
    db = fleet / "pruned.duckdb"
    con = open_store(db)
    ingest_files(con, fleet / "history")
    compute(con, Settings())
    before = {
        "derived": _derived(con),
        "report": to_json(build_report(con, WEEK)),
        "samples": con.execute("SELECT count(*) FROM gpu_sample_values").fetchall()[0][0],
        "old_findings": con.execute(
            "SELECT kind, count(*) FROM anomalies WHERE start_ts < ? GROUP BY kind ORDER BY kind",
            [CUT],
        ).fetchall(),
    }
    con.close()
    size_before = db.stat().st_size
    done = _gpufleet(db, "prune", "--keep-raw", "1d")
    assert done.returncode == 0, done.stderr
    return {**before, "db": db, "stdout": done.stdout, "size_before": size_before}


def test_the_history_has_findings_before_the_cut(pruned):
    """The comparisons below mean something: raw-sample findings of several kinds before the cut."""
    kinds = dict(pruned["old_findings"])
    assert {"ecc_sbe_rate", "ecc_dbe", "temp_above_peers", "throttling", "straggler"} <= set(
        kinds
    ), kinds


def test_prune_drops_the_old_samples_but_the_error_counters(pruned):
    con = duckdb.connect(str(pruned["db"]), read_only=True)
    try:
        left = con.execute(
            "SELECT DISTINCT s.metric FROM gpu_sample_values v JOIN gpu_series s USING (series_id) "
            "WHERE v.ts < ? ORDER BY 1",
            [CUT],
        ).fetchall()
        (cut, keep_s, dropped), *more = con.execute(
            "SELECT pruned_before, keep_raw_s, samples_dropped FROM raw_retention"
        ).fetchall()
        stored = con.execute("SELECT count(*) FROM gpu_sample_values").fetchall()[0][0]
    finally:
        con.close()
    assert not more
    assert cut == CUT and keep_s == 86400
    assert {m for (m,) in left} == set(COUNTER_METRICS)
    assert dropped > 0 and stored == pruned["samples"] - dropped
    assert f"Dropped {dropped:,} raw GPU samples before 2026-11-24" in pruned["stdout"]
    # The file is rewritten without the freed blocks.
    assert pruned["db"].stat().st_size < pruned["size_before"]


def test_every_derived_table_and_the_report_stay_through_compute_and_force(pruned, tmp_path):
    con = open_store(_copy(pruned["db"], tmp_path))
    try:
        assert compute(con, Settings()).skipped  # the prune changed no data the compute reads
        assert _differences(con, pruned["derived"]) == []
        forced = compute(con, Settings(), force=True)
        assert not forced.skipped
        assert _differences(con, pruned["derived"]) == []
        # The same report, floats to 1e-9 (DuckDB sums in parallel, in no fixed order).
        assert same_value(
            json.loads(to_json(build_report(con, WEEK))), json.loads(pruned["report"])
        )
    finally:
        con.close()


def test_the_next_day_computes_as_if_nothing_was_pruned(fleet, pruned, tmp_path):
    kept = open_store(tmp_path / "kept.duckdb")
    ingest_files(kept, fleet / "history")
    compute(kept, Settings())
    ingest_files(kept, fleet / "next_day")
    compute(kept, Settings())
    con = open_store(_copy(pruned["db"], tmp_path))
    try:
        ingest_files(con, fleet / "next_day")
        compute(con, Settings())
        differences = [table_differences(con, kept, t) for t in DERIVED_TABLES]
        assert [d for d in differences if d] == []
        # And a second prune moves the cut a day on, with the inventory of both prunes combined.
        result = prune_raw(con, Settings(), parse_keep("1d"))
        assert result.pruned_before == CUT + DAY and result.samples_dropped > 0
        compute(con, Settings(), force=True)
        assert table_differences(con, kept, "gpu_inventory") is None
        assert table_differences(con, kept, "node_state_intervals") is None
    finally:
        con.close()
        kept.close()


def test_a_load_older_than_the_cut_is_refused_and_changes_nothing(fleet, pruned, tmp_path):
    con = open_store(_copy(pruned["db"], tmp_path))
    try:
        counts = con.execute(
            "SELECT (SELECT count(*) FROM gpu_sample_values), (SELECT count(*) FROM load_log)"
        ).fetchall()
        with pytest.raises(InputError) as refused:
            ingest_files(con, fleet / "history")
        message = str(refused.value)
        assert "gpu_samples" in message and "column `ts`" in message
        assert re.search(r"(row|line) \d+", message)
        assert "older than 2026-11-24 00:00 UTC" in message, message
        assert (
            con.execute(
                "SELECT (SELECT count(*) FROM gpu_sample_values), (SELECT count(*) FROM load_log)"
            ).fetchall()
            == counts
        )
    finally:
        con.close()


def test_prune_refuses_before_the_compute_and_does_nothing_twice(fleet, tmp_path):
    con = open_store(tmp_path / "fresh.duckdb")
    try:
        ingest_files(con, fleet / "history")
        with pytest.raises(GpufleetError, match="Run `gpufleet compute` first"):
            prune_raw(con, Settings(), parse_keep("1d"))
        compute(con, Settings())
        assert prune_raw(con, Settings(), parse_keep("1d")).samples_dropped > 0
        again = prune_raw(con, Settings(), parse_keep("1d"))
        assert (again.samples_dropped, again.already_before) == (0, CUT)
        # Keeping more than the history holds drops nothing.
        assert prune_raw(con, Settings(), parse_keep("2w")).samples_dropped == 0
    finally:
        con.close()


@pytest.mark.parametrize("text", ["0d", "14", "1.5d", "-1d", "14 days", ""])
def test_a_retention_is_a_whole_number_of_hours_days_or_weeks(text):
    with pytest.raises(ConfigError):
        parse_keep(text)


def test_the_kept_raw_series_are_every_counter_the_detectors_read():
    """prune_raw.sql keeps the series queries/detect/counters.sql reads, and sets aside the
    inventory of the fields queries/derived/gpu_inventory_days.sql reads."""
    prune = load_sql("store/prune_raw")
    kept = set(re.findall(r"'(DCGM_FI_\w+)'", prune.split("-- gpu_inventory's rows")[0]))
    read_by_detectors = set(re.findall(r"'(DCGM_FI_\w+)'", load_sql("detect/counters")))
    assert read_by_detectors and kept == read_by_detectors
    inventory_fields = set(re.findall(r"'(DCGM_FI_\w+)'", load_sql("derived/gpu_inventory_days")))
    set_aside = set(re.findall(r"'(DCGM_FI_\w+)'", prune.split("-- gpu_inventory's rows")[1]))
    assert inventory_fields and set_aside == inventory_fields
    # No other detector or derived table reads the raw samples (the kept tables read them from
    # their own start on, which never precedes the cut).
    readers = {
        path.relative_to(ROOT / "queries").as_posix()
        for path in (ROOT / "queries").glob("*/*.sql")
        if re.search(r"\bgpu_sample_values\b|\bFROM gpu_samples\b", path.read_text())
    }
    assert readers == {
        "detect/counters.sql",
        # The counters' carry: each series' last sample before what counters.sql reads, of which
        # counters.sql keeps its own series' alone.
        "detect/counter_carry.sql",
        "derived/gpu_scrapes.sql",
        "derived/gpu_samples_15m.sql",
        "derived/kept_samples_from.sql",
        "derived/kept_samples_to.sql",  # where the windows of the two above stop: a max(ts)
        "derived/gpu_inventory_days.sql",
        "store/gpu_samples_add.sql",
        "store/prune_raw.sql",
        "schema/landing.sql",  # the storage itself and the gpu_samples view over it
    }
