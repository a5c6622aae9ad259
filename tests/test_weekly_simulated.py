"""The weekly summary, report and export on a small simulated fleet run through the real pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.export import export_week
from pipelines.report import build_report, to_json
from pipelines.store import connect
from pipelines.weeks import parse_week
from tests.report_fixture import simulated_fleet

W48 = parse_week("2026-W48")


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    connection = connect(
        simulated_fleet(tmp_path_factory.mktemp("sim") / "fleet.duckdb"), read_only=True
    )
    yield connection
    connection.close()


def test_weekly_rows_agree_with_the_daily_views(con):
    # Same failures, repairs and seconds as node_availability_daily, summed over the week's days.
    rows = con.sql(
        """
        WITH daily AS (
            SELECT strftime(day, '%G-W%V') AS week, cluster,
                   sum(failures) AS failures, sum(repair_episodes) AS episodes,
                   sum(repair_s) AS repair_s, sum(up_s) AS up_s,
                   sum(in_fleet_s - maintenance_s) AS counted_s
            FROM node_availability_daily GROUP BY ALL
        )
        SELECT w.week, w.cluster, w.node_failures, d.failures, w.mttr_h, d.repair_s / 3600 / nullif(d.episodes, 0),
               w.node_availability, d.up_s / d.counted_s, w.mtbf_h, d.up_s / 3600 / nullif(d.failures, 0)
        FROM weekly_summary w JOIN daily d USING (week, cluster)
        """
    ).fetchall()
    assert len(rows) == 4  # 2 weeks x 2 clusters
    for week, cluster, failures, daily_failures, *pairs in rows:
        assert failures == daily_failures, (week, cluster)
        for ours, theirs in zip(pairs[::2], pairs[1::2]):
            assert (ours is None and theirs is None) or ours == pytest.approx(theirs), (
                week,
                cluster,
            )
    # not vacuous: the simulated faults make nodes fail and recover
    assert sum(r[2] for r in rows) > 0 and any(r[4] is not None for r in rows)


def test_all_clusters_rows_sum_the_clusters(con):
    rows = con.sql(
        """
        SELECT week,
               sum(eligible_jobs) FILTER (WHERE cluster <> '*') = sum(eligible_jobs) FILTER (WHERE cluster = '*'),
               sum(interruptions) FILTER (WHERE cluster <> '*') = sum(interruptions) FILTER (WHERE cluster = '*'),
               sum(allocated_gpu_h) FILTER (WHERE cluster <> '*') - sum(allocated_gpu_h) FILTER (WHERE cluster = '*')
        FROM weekly_summary GROUP BY week ORDER BY week
        """
    ).fetchall()
    assert [r[0] for r in rows] == ["2026-W47", "2026-W48"]
    for _, jobs_equal, interruptions_equal, allocated_diff in rows:
        assert jobs_equal and interruptions_equal and abs(allocated_diff) < 1e-9


def test_ratios_are_ratios(con):
    bad = con.sql(
        """
        SELECT * FROM weekly_summary
        WHERE NOT (coalesce(node_availability, 0) BETWEEN 0 AND 1
               AND coalesce(job_success_rate, 0) BETWEEN 0 AND 1
               AND coalesce(job_success_rate_gpu_h, 0) BETWEEN 0 AND 1
               AND coalesce(first_attempt_success_rate, 0) BETWEEN 0 AND 1
               AND coalesce(goodput, 0) BETWEEN 0 AND 1
               AND coalesce(ettr, 0) BETWEEN 0 AND 1)
        """
    ).fetchall()
    assert bad == []


def test_report_numbers_are_the_views_numbers(con):
    payload = json.loads(to_json(build_report(con, W48)))
    summary = {r["metric"]: r["value"] for r in payload["summary"]}
    view = con.sql("SELECT * FROM weekly_summary WHERE week = '2026-W48' AND cluster = '*'").pl()
    for metric, value in summary.items():
        assert value == pytest.approx(view[metric][0], nan_ok=True), metric
    stack = {r["level"]: r["gpu_h"] for r in payload["goodput_stack"]}
    capacity, productive = con.sql(
        "SELECT sum(capacity_gpu_h)::DOUBLE, sum(productive_gpu_h)::DOUBLE FROM goodput_stack "
        "WHERE week = '2026-W48'"
    ).fetchall()[0]
    assert stack["capacity"] == pytest.approx(capacity) and stack["productive"] == pytest.approx(
        productive
    )
    lost = con.sql(
        "SELECT sum((unavailable_s + unknown_s) * n.gpu_count) / 3600 FROM node_availability_daily d "
        "JOIN nodes n USING (node) WHERE day >= '2026-11-23' AND day < '2026-11-30'"
    ).fetchall()[0][0]
    assert sum(n["down_gpu_h"] for n in payload["top_nodes"]) == pytest.approx(lost)
    # the Pareto counts fleet failures; user and policy attempts are listed apart, and together
    # they are every attempt that ended without succeeding
    failed, ended_badly = con.sql(
        "SELECT count(*) FILTER (WHERE fleet_failure), count(*) FROM attempt_outcomes "
        "WHERE failure_class IS NOT NULL AND end_ts >= '2026-11-23' AND end_ts < '2026-11-30'"
    ).fetchall()[0]
    assert sum(f["attempts"] for f in payload["failures"]) == failed
    assert failed + sum(f["attempts"] for f in payload["not_failures"]) == ended_badly


@pytest.mark.parametrize(
    "table", ["job_goodput", "rank_slowdown", "goodput_segments", "goodput_stack"]
)
def test_exported_parquet_equals_the_view(con, tmp_path: Path, table):
    # DECIMAL seconds and GPU-hours, lists and booleans survive the round trip.
    export_week(con, W48, tmp_path, "parquet", [table])
    columns = ", ".join(f'"{c}"' for c in con.sql(f"SELECT * FROM {table} LIMIT 0").columns)
    view = con.sql(
        f"SELECT {columns} FROM {table} WHERE "
        + (
            "week = '2026-W48'"
            if table == "goodput_stack"
            else "job_id IN (SELECT job_id FROM job_outcomes WHERE end_ts >= '2026-11-23' AND end_ts < '2026-11-30')"
        )
    ).fetchall()
    back = con.sql(
        f"SELECT {columns} FROM read_parquet('{tmp_path}/{table}/**/*.parquet', hive_partitioning = true)"
    ).fetchall()
    assert len(view) > 0
    assert sorted(back, key=repr) == sorted(view, key=repr)
