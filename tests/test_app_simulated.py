"""The dashboard on a fleet computed by the real pipeline (simulate → ingest → compute).

Nothing here knows the fleet in advance: each test picks its node, job and week from
the views and checks that the page shows what the views hold.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from tests.app_fixture import build_app_db
from tests.app_helpers import metrics, no_errors, open_page, pct, plotly_figures, sql


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_app_db(tmp_path_factory.mktemp("sim") / "fleet.duckdb", fleet="simulated")


@pytest.fixture
def use_sim(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUFLEET_DB", str(sim_db))
    return sim_db


def newest_week(db: Path) -> tuple[str, datetime, datetime]:
    day = sql(db, "SELECT max(day) AS d FROM fleet_availability_daily")["d"][0]
    iso = day.isocalendar()
    monday = datetime.fromisocalendar(iso.year, iso.week, 1).replace(tzinfo=UTC)
    return f"{iso.year}-W{iso.week:02d}", monday, monday + timedelta(days=7)


def test_overview_on_the_simulated_fleet(use_sim: Path) -> None:
    week, start, end = newest_week(use_sim)
    at = open_page(None)
    no_errors(at)
    assert at.query_params["week"] == week  # no full week in 3 days: the newest
    figures = plotly_figures(at)
    waterfall = next(f for f in figures if f["data"][0]["type"] == "waterfall")["data"][0]
    stack = sql(
        use_sim,
        "SELECT CAST(sum(capacity_gpu_h) AS DOUBLE) AS cap, "
        "CAST(sum(productive_gpu_h) AS DOUBLE) AS prod FROM goodput_stack "
        "WHERE window_start = ? AND cluster <> '*'",
        [start],
    ).row(0, named=True)
    steps = dict(zip(waterfall["x"], waterfall["y"]))
    assert steps["Capacity"] == pytest.approx(stack["cap"])
    assert sum(steps.values()) == pytest.approx(stack["prod"], abs=1e-6)
    failed = sql(
        use_sim,
        "SELECT count(*) AS n FROM attempt_outcomes WHERE fleet_failure "
        "AND end_ts >= ? AND end_ts < ?",
        [start, end],
    )["n"][0]
    pareto = next(f for f in figures if f["layout"]["title"]["text"].startswith("Failed attempts"))
    assert (
        sum(n for trace in pareto["data"] if trace["type"] == "bar" for n in trace["y"]) == failed
    )
    if "weekly_summary" in set(
        sql(use_sim, "SELECT table_name FROM duckdb_tables()")["table_name"]
    ):
        row = sql(
            use_sim,
            "SELECT * FROM weekly_summary WHERE week = ? AND coalesce(cluster, '*') = '*'",
            [week],
        ).row(0, named=True)
        shown = metrics(at)
        for column, label in [
            ("node_availability", "Node availability"),
            ("job_success_rate", "Job success rate"),
            ("job_success_rate_gpu_h", "Job success (GPU-h weighted)"),
            ("goodput", "Goodput"),
            ("ettr", "ETTR"),
        ]:
            assert shown[label][0] == pct(row[column]), label
        mttr = row["mttr_h"]
        assert shown["MTTR"][0] == ("—" if mttr is None else f"{mttr:,.1f} h")
    else:
        assert any("weekly summary is not computed" in w.value for w in at.warning)


def test_worst_node_drill_down(use_sim: Path) -> None:
    week, _, _ = newest_week(use_sim)
    at = open_page("nodes", week=week)
    no_errors(at)
    table = at.dataframe[0].value
    worst = table["node"].iloc[0]
    days = sql(
        use_sim,
        """
        SELECT sum(available_s + degraded_s) / sum(in_fleet_s - maintenance_s) AS a,
               sum(unavailable_s + unknown_s) AS lost_s
        FROM node_availability_daily WHERE node = ? AND isoyear(day) || '-W' || lpad(CAST(week(day) AS VARCHAR), 2, '0') = ?
    """,
        [worst, week],
    ).row(0, named=True)
    assert days["lost_s"] > 0  # the simulated faults cost this node time
    assert table["availability_pct"].iloc[0] == pytest.approx(days["a"] * 100)
    at = open_page("nodes", node=worst, week=week)
    no_errors(at)
    assert at.title[0].value == f"Node {worst}"
    assert metrics(at)["Availability"][0] == pct(days["a"])
    states = next(f for f in plotly_figures(at) if f["layout"]["title"]["text"] == "State timeline")
    shown_states = {trace["name"] for trace in states["data"]}
    expected_states = set(
        sql(use_sim, "SELECT DISTINCT state FROM node_state_intervals WHERE node = ?", [worst])[
            "state"
        ]
    )
    assert shown_states == expected_states


def test_straggler_job_drill_down(use_sim: Path) -> None:
    stragglers = sql(
        use_sim,
        """
        SELECT job_id, attempt, rank, node, gpu FROM rank_slowdown WHERE is_straggler
        ORDER BY median_ratio DESC""",
    )
    assert stragglers.height, "the simulated fleet has a throttled GPU whose rank straggles"
    job = stragglers["job_id"][0]
    at = open_page("jobs", job=job)
    no_errors(at)
    assert at.title[0].value == f"Job {job}"
    warning = next(w.value for w in at.warning if "straggler rank" in w.value)
    for _, _, rank, node, gpu in stragglers.filter(pl.col("job_id") == job).iter_rows():
        assert f"rank {rank} (gpu {gpu})" in warning and node in warning
    goodput = sql(use_sim, "SELECT goodput FROM job_goodput WHERE job_id = ?", [job])["goodput"][0]
    assert metrics(at)["Goodput"][0] == pct(goodput)
    heatmap = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")["data"][0]
    last_attempt = sql(use_sim, "SELECT max(attempt) AS a FROM rank_steps WHERE job_id = ?", [job])[
        "a"
    ][0]
    ranks = sql(
        use_sim,
        "SELECT count(DISTINCT rank) AS n FROM rank_steps WHERE job_id = ? AND attempt = ?",
        [job, last_attempt],
    )["n"][0]
    assert len(heatmap["y"]) == ranks
    assert len(heatmap["x"]) <= 200


def test_every_page_renders_on_the_simulated_fleet(use_sim: Path) -> None:
    week, _, _ = newest_week(use_sim)
    for page in (None, "nodes", "jobs", "anomalies"):
        at = open_page(page, week=week)
        no_errors(at)
        assert at.title, page


def test_checkpoints_table_is_the_checkpoint_advice(use_sim: Path) -> None:
    week, _, _ = newest_week(use_sim)
    at = open_page("jobs", week=week)
    no_errors(at)
    advice = sql(
        use_sim,
        "SELECT job_key, regained_gpu_h FROM checkpoint_advice WHERE week = ? "
        "ORDER BY regained_gpu_h DESC NULLS LAST, job_key",
        [week],
    )
    assert advice.height, "the simulated fleet has recurring jobs that save checkpoints"
    table = next(df.value for df in at.dataframe if "job_key" in df.value.columns)
    assert list(table["job_key"]) == list(advice["job_key"])
