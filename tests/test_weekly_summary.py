"""weekly_summary on the hand-made fleet of tests/report_fixture.py; values worked out by hand."""

from __future__ import annotations

import math
from datetime import date

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.config import Settings
from pipelines.sql import execute, query_pl
from pipelines.store import connect
from tests.report_fixture import SUMMARY_STEPS, build_report_fixture


def compute_summary(con) -> None:
    for step in SUMMARY_STEPS:
        execute(con, f"derived/{step}", Settings().sql_params())


@pytest.fixture(scope="module")
def summary():
    con = connect(":memory:")
    build_report_fixture(con)
    compute_summary(con)
    frame = con.sql("SELECT * FROM weekly_summary").pl()
    con.close()
    return {(r["week"], r["cluster"]): r for r in frame.iter_rows(named=True)}


@pytest.fixture(scope="module")
def fleet_con():
    """One database for the property test's examples; each example replaces the job tables."""
    con = connect(":memory:")
    build_report_fixture(con)
    yield con
    con.close()


CASES = [
    # --- node availability: (available + degraded) / (in fleet - maintenance), hours ---
    # n1 W48: 168 in fleet, 6 maintenance, 12 degraded, 4 unavailable -> up 158 of 162;
    # n2 W48: 2 unknown + 2 + 2 unavailable -> up 162 of 168. c1 = 320 / 330.
    ("2026-W48", "c1", "node_availability", 320 / 330),
    # n3 W48: 3 h of the 22:00-03:00 outage fall in W48 -> 165 / 168.
    ("2026-W48", "c2", "node_availability", 165 / 168),
    # all clusters: (320 + 165) / (330 + 168) = 485 / 498 (summed, not the mean of 2 ratios).
    ("2026-W48", "*", "node_availability", 485 / 498),
    # W47: n1 up 165, n2 168, n3 166 of 168 each -> c1 333/336, all 499/504.
    ("2026-W47", "c1", "node_availability", 333 / 336),
    ("2026-W47", "*", "node_availability", 499 / 504),
    # --- job success among jobs that ended in the week; j4 cancelled is not eligible ---
    # c1 W48: j1, j2 succeeded of eligible j1, j2 -> 2/2.
    ("2026-W48", "c1", "job_success_rate", 1.0),
    # c2 W48: j3 failed, j5 timeout -> 0/2 (j6 is still running: not counted).
    ("2026-W48", "c2", "job_success_rate", 0.0),
    ("2026-W48", "*", "job_success_rate", 2 / 4),
    # GPU-hour weighted: succeeded j1 80 + j2 160 of eligible 80 + 160 + j3 24 + j5 32.
    ("2026-W48", "*", "job_success_rate_gpu_h", 240 / 296),
    ("2026-W47", "*", "job_success_rate_gpu_h", 120 / 120),
    # first attempt: only j1 succeeded at once (j2 needed a retry) -> c1 1/2, all 1/4.
    ("2026-W48", "c1", "first_attempt_success_rate", 1 / 2),
    ("2026-W48", "*", "first_attempt_success_rate", 1 / 4),
    # W47: j0 retried, j00 first try -> 1/2.
    ("2026-W47", "*", "first_attempt_success_rate", 1 / 2),
    # --- goodput from the stack: productive GPU-h / allocated GPU-h ---
    ("2026-W48", "c1", "goodput", 178 / 244),
    ("2026-W48", "*", "goodput", (178 + 88) / (244 + 152)),
    ("2026-W47", "*", "goodput", (24 + 72) / (40 + 80)),
    # --- ETTR: sum productive / sum (end - submit), jobs ended in the week ---
    # c1: j1 28800 / 39600 (09:00->20:00), j2 25200 / 41400 (07:00->18:30), j4 7200 / 18000.
    ("2026-W48", "c1", "ettr", (28800 + 25200 + 7200) / (39600 + 41400 + 18000)),
    # c2: j3 0 / 14400, j5 3600 / 21600 -> 3600 / 36000.
    ("2026-W48", "c2", "ettr", 3600 / 36000),
    ("2026-W48", "*", "ettr", 64800 / 135000),
    # W47: j0 10800 / 72000 (11-18 08:00 -> 11-19 04:00), j00 32400 / 39600.
    ("2026-W47", "*", "ettr", 43200 / 111600),
    # --- MTBF: up hours / transitions up -> unavailable|unknown in the week ---
    # c1 W48: up 158 + 162 = 320 h; n1 11-26 08:00, n2 11-27 00:00, n2 11-29 22:00 -> 320 / 3.
    ("2026-W48", "c1", "mtbf_h", 320 / 3),
    # c2 W48: n3's outage began in W47, so no failure in W48 -> NULL (not infinite, not 0).
    ("2026-W48", "c2", "mtbf_h", None),
    ("2026-W48", "*", "mtbf_h", 485 / 3),
    # W47: c1 up 333 h, one failure (n1 10:00; unavailable -> unknown is not a new one).
    ("2026-W47", "c1", "mtbf_h", 333.0),
    ("2026-W47", "c2", "mtbf_h", 166.0),
    ("2026-W47", "*", "mtbf_h", 499 / 2),
    # --- MTTR: mean merged episode length, attributed to the week it starts ---
    # c1 W48: n1 4 h, n2 2 + 2 = 4 h merged; n2's 11-29 22:00 episode is still open at the
    # horizon (no known length): left out -> 8 / 2.
    ("2026-W48", "c1", "mttr_h", 8 / 2),
    ("2026-W48", "c2", "mttr_h", None),
    # W47: n1 2 + 1 = 3 h merged; n3 5 h in full although 3 h fall in W48 -> (3 + 5) / 2.
    ("2026-W47", "c2", "mttr_h", 5.0),
    ("2026-W47", "*", "mttr_h", 4.0),
    # --- interruptions per 1,000 allocated GPU-days ---
    # c1 W48: j2 a0 node_fail (j4 cancelled does not count); 244 GPU-h = 244/24 GPU-days.
    ("2026-W48", "c1", "interruptions_per_1k_gpu_days", 1 * 1000 / (244 / 24)),
    # c2 W48: j3 three failed + j5 preempted + j5 timeout = 5 in 152/24 GPU-days.
    ("2026-W48", "c2", "interruptions_per_1k_gpu_days", 5 * 1000 / (152 / 24)),
    ("2026-W48", "*", "interruptions_per_1k_gpu_days", 6 * 1000 / (396 / 24)),
    ("2026-W47", "*", "interruptions_per_1k_gpu_days", 1 * 1000 / (120 / 24)),
    ("2026-W47", "c2", "interruptions_per_1k_gpu_days", 0.0),
    # --- failed attempts by class ---
    ("2026-W48", "c1", "hardware_failures", 1),  # j2 a0
    ("2026-W48", "c1", "user_failures", 1),  # j4 cancelled
    ("2026-W48", "c2", "software_failures", 3),  # j3 a0..a2
    (
        "2026-W48",
        "c2",
        "infrastructure_failures",
        0,
    ),  # j5 a0 preempted: policy, never a fleet failure
    ("2026-W48", "c2", "user_failures", 1),  # j5 a1 timeout
    ("2026-W48", "*", "hardware_failures", 1),
    ("2026-W48", "*", "software_failures", 3),
    ("2026-W48", "*", "infrastructure_failures", 0),
    ("2026-W48", "*", "user_failures", 2),
    ("2026-W47", "*", "hardware_failures", 1),  # j0 a0
    ("2026-W47", "c2", "hardware_failures", 0),
    # --- failure escapes: fleet failures (hardware / infrastructure, failed or node_fail) ---
    # W47 c1: j0 a0 failed on n1 09:00-10:00; n1 goes unavailable at 10:00, the failure itself: escaped.
    ("2026-W47", "c1", "escape_rate", 1 / 1),
    ("2026-W47", "*", "escape_rate", 1 / 1),
    ("2026-W47", "*", "median_lead_time_s", None),
    # W48 c1: j2 a0 (node_fail 11-24 08:00-12:00, implicated n2) started on n2 while its
    # ecc_sbe_rate finding (07:00) was open: placed on a flagged node, lead 12:00 - 07:00 = 18000 s.
    ("2026-W48", "c1", "escape_rate", 0 / 1),
    ("2026-W48", "c1", "jobs_placed_on_flagged", 1),
    ("2026-W48", "c1", "median_lead_time_s", 18000.0),
    # W48 c2: j3's software failures and j5's preemption are not the fleet's: nothing to rate.
    ("2026-W48", "c2", "escape_rate", None),
    ("2026-W48", "c2", "jobs_placed_on_flagged", 0),
    ("2026-W48", "*", "fleet_failures", 1),
    ("2026-W48", "*", "escaped_failures", 0),
    # --- numerators and denominators ---
    ("2026-W48", "*", "jobs_ended", 5),  # j1..j5; j6 runs on
    ("2026-W48", "*", "eligible_jobs", 4),
    ("2026-W48", "*", "interruptions", 6),
    ("2026-W48", "c1", "node_failures", 3),
    ("2026-W48", "*", "allocated_gpu_h", 396.0),
]


@pytest.mark.parametrize(("week", "cluster", "column", "expected"), CASES)
def test_weekly_summary_values(summary, week, cluster, column, expected):
    value = summary[(week, cluster)][column]
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, rel=1e-12)


def test_one_row_per_week_and_cluster_plus_all_clusters(summary):
    assert sorted(summary) == [
        ("2026-W47", "*"),
        ("2026-W47", "c1"),
        ("2026-W47", "c2"),
        ("2026-W48", "*"),
        ("2026-W48", "c1"),
        ("2026-W48", "c2"),
    ]
    assert str(summary[("2026-W48", "*")]["week_start"]) == "2026-11-23"


def test_contract_columns_come_first(con):
    build_report_fixture(con)
    compute_summary(con)
    columns = con.sql("SELECT * FROM weekly_summary LIMIT 0").columns
    assert columns[:16] == [
        "week",
        "cluster",
        "node_availability",
        "job_success_rate",
        "job_success_rate_gpu_h",
        "first_attempt_success_rate",
        "goodput",
        "ettr",
        "mtbf_h",
        "mttr_h",
        "interruptions_per_1k_gpu_days",
        "hardware_failures",
        "software_failures",
        "infrastructure_failures",
        "user_failures",
        "unknown_failures",
    ]


def test_a_week_without_jobs_has_null_rates_not_perfect_ones(con):
    build_report_fixture(con)
    con.execute("DELETE FROM job_outcomes WHERE end_ts >= '2026-11-23'")
    compute_summary(con)
    rows = con.sql(
        "SELECT job_success_rate, ettr FROM weekly_summary WHERE week = '2026-W48' AND cluster = 'c1'"
    ).fetchall()
    assert rows == [(None, None)]


# Property: the '*' row re-aggregates the per-cluster rows exactly (numerators and denominators).
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    outcomes=st.lists(
        st.tuples(
            st.sampled_from(["n1", "n2", "n3"]),
            st.integers(min_value=0, max_value=13),  # day offset from 2026-11-16
            st.sampled_from(
                ["succeeded", "failed", "node_fail", "timeout", "cancelled", "preempted"]
            ),
            st.integers(min_value=1, max_value=64),
        ),
        max_size=12,
    )
)
def test_all_clusters_row_sums_the_clusters(
    fleet_con: duckdb.DuckDBPyConnection, outcomes: list[tuple[str, int, str, int]]
) -> None:
    con = fleet_con
    con.execute(
        "DELETE FROM job_outcomes; DELETE FROM attempt_outcomes; DELETE FROM job_attempts; "
        "DELETE FROM jobs"
    )
    for i, (node, day, state, gpus) in enumerate(outcomes):
        end = f"2026-11-{16 + day:02d} 12:00:00+00"
        eligible = state not in ("cancelled", "preempted")
        con.execute(
            "INSERT INTO job_attempts VALUES (coalesce((SELECT min(cluster) FROM nodes WHERE node = ?), 'c1'), "
            "?, 0, ?::TIMESTAMPTZ - INTERVAL 1 HOUR, ?, ?, NULL, NULL, ?)",
            [node, f"h{i}", end, end, state, [node]],
        )
        con.execute(
            "INSERT INTO jobs (cluster, job_id, start_ts, end_ts, num_gpus, state) "
            "SELECT cluster, job_id, start_ts, end_ts, ?, state FROM job_attempts WHERE job_id = ?",
            [gpus, f"h{i}"],
        )
        con.execute(
            "INSERT INTO job_outcomes VALUES (?, ?, ?, ?, ?, NULL, false, 1, ?, ?, ?, [])",
            [
                f"h{i}",
                end,
                state,
                eligible,
                state == "succeeded",
                gpus,
                float(gpus),
                state == "succeeded",
            ],
        )
        con.execute(
            "INSERT INTO attempt_outcomes (job_id, attempt, start_ts, end_ts, state, num_gpus) "
            "VALUES (?, 0, ?::TIMESTAMPTZ - INTERVAL 1 HOUR, ?, ?, ?)",
            [f"h{i}", end, end, state, gpus],
        )
    compute_summary(con)
    rows = con.sql("SELECT * FROM weekly_summary").pl().iter_rows(named=True)
    by_week: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_week.setdefault(row["week"], {})[row["cluster"]] = row
    for week, clusters in by_week.items():
        total = clusters.pop("*")
        for column in ("eligible_jobs", "succeeded_jobs", "interruptions", "jobs_ended"):
            assert total[column] == sum(c[column] for c in clusters.values()), (week, column)
        eligible = total["eligible_jobs"]
        if eligible:
            assert math.isclose(total["job_success_rate"], total["succeeded_jobs"] / eligible)
            assert 0.0 <= total["job_success_rate"] <= 1.0
        else:
            assert total["job_success_rate"] is None


# One cluster attribution for all, and the '*' row holds every job: full `gpufleet compute` on landing
# rows. Nodes n1 (c1), n3 and n4 (c2), 8 GPUs each; every job holds 2 GPUs for 1 h in 2026-W48 and logs
# no step timings (succeeded: all productive; failed without a save: all wasted). A job counts in
# the cluster it was landed in (SPEC "Fleet-wide identity"), whatever its nodes:
#   j2  c1, succeeded on n1                      -> c1, 2 GPU-h productive
#   j1  c1, failed, a jobs row and no attempt    -> c1 (no node to go by), 2 GPU-h wasted
#   jm  c2, succeeded on n1, n3, n4              -> c2, 2 GPU-h productive
ATTRIBUTION_CASES = [
    # c1: j2 + j1: goodput 2 / 4; j1's one interruption per 4 / 24 GPU-days = 6000.
    ("c1", "goodput", 2 / 4),
    ("c1", "allocated_gpu_h", 4.0),
    ("c1", "interruptions_per_1k_gpu_days", 1 * 1000 / (4 / 24)),
    # c2: jm (its first node n1 is in c1; it was landed in c2).
    ("c2", "goodput", 2 / 2),
    ("c2", "allocated_gpu_h", 2.0),
    # '*': j2 + jm productive 4 GPU-h of j2 + j1 + jm allocated 6 GPU-h = 0.6667 (dropping j1: 1.0).
    ("*", "goodput", 4 / 6),
    ("*", "allocated_gpu_h", 6.0),
    # '*': j1's one interruption per 6 / 24 GPU-days = 4000 (dropping j1's GPU-hours: 1000 / (4/24) = 6000).
    ("*", "interruptions_per_1k_gpu_days", 1 * 1000 / (6 / 24)),
    ("*", "interruptions", 1),
]


@pytest.fixture(scope="module")
def attribution_summary(tmp_path_factory):
    from pipelines.compute import compute
    from pipelines.store import open_store
    from tests.goodput_fleet import attempt, job, load

    con = open_store(tmp_path_factory.mktemp("attribution") / "fleet.duckdb")
    load(
        con,
        {
            "nodes": [
                {"node": n, "cluster": c, "gpu_count": 8}
                for n, c in (("n1", "c1"), ("n3", "c2"), ("n4", "c2"))
            ],
            # Every job is in one cluster (SPEC "Fleet-wide identity"): j1 ran on no node, so its cluster
            # is given; jm's nodes span both clusters, so its cluster is given too.
            "jobs": [
                {**job("j2", start=0, end=3600, state="succeeded"), "cluster": "c1"},
                {**job("j1", start=0, end=3600, state="failed"), "cluster": "c1"},
                {**job("jm", start=0, end=3600, state="succeeded"), "cluster": "c2"},
            ],
            "job_attempts": [
                {
                    **attempt("j2", 0, start=0, end=3600, state="succeeded", nodes=["n1"]),
                    "cluster": "c1",
                },
                {
                    **attempt(
                        "jm", 0, start=0, end=3600, state="succeeded", nodes=["n1", "n3", "n4"]
                    ),
                    "cluster": "c2",
                },
            ],
        },
    )
    compute(con, Settings(), force=True)
    rows = (
        con.sql("SELECT * FROM weekly_summary WHERE week = '2026-W48'").pl().iter_rows(named=True)
    )
    stack = con.execute(
        "SELECT cluster, allocated_gpu_h FROM goodput_stack ORDER BY cluster"
    ).fetchall()
    report = {
        r["level"]: r["gpu_h"]
        for r in query_pl(
            con, "report/goodput_stack", {"week_start": date(2026, 11, 23), "cluster": "*"}
        ).iter_rows(named=True)
    }
    con.close()
    return {r["cluster"]: r for r in rows}, stack, report


@pytest.mark.parametrize(("cluster", "column", "expected"), ATTRIBUTION_CASES)
def test_every_job_counts_in_the_all_clusters_row(attribution_summary, cluster, column, expected):
    summary, _, _ = attribution_summary
    assert summary[cluster][column] == pytest.approx(expected, rel=1e-12)


def test_the_stack_attributes_attempts_like_attempt_clusters(attribution_summary):
    _, stack, report = attribution_summary
    # jm in c2 and j1 in c1, the clusters they were landed in; no row named 'unknown'.
    assert [(c, float(h)) for c, h in stack] == [("c1", 4.0), ("c2", 2.0)]
    # The report's all-clusters waterfall holds the same 6 allocated GPU-h, 4 of them productive.
    assert (report["allocated"], report["productive"]) == (6.0, 4.0)


# Interruptions per 1,000 GPU-days has one definition: the weekly summary and metrics/job_success.sql
# over the same window agree. Job jx (2 GPUs, on n1) logs attempt 0 [0 h, 2 h) failed and attempt 1
# [1 h, 3 h) succeeded: overlapping attempts (bad data), so attempt 0 ends when attempt 1 starts and
# the GPUs were held 2 x (1 + 2) = 6 GPU-h, not 2 x (2 + 2) = 8. One interruption (attempt 0):
# 1 x 1000 / (6 / 24) = 4000 per 1,000 GPU-days (the raw spans would give 1000 / (8 / 24) = 3000).
INTERRUPTION_CASES = [
    ("weekly_summary", 1 * 1000 / (6 / 24)),
    ("job_success", 1 * 1000 / (6 / 24)),
]


@pytest.fixture(scope="module")
def overlapping_attempts(tmp_path_factory):
    from pipelines.compute import compute
    from pipelines.store import open_store
    from tests.goodput_fleet import attempt, job, load

    con = open_store(tmp_path_factory.mktemp("interruptions") / "fleet.duckdb")
    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [job("jx", start=0, end=3 * 3600, state="succeeded")],
            "job_attempts": [
                {**attempt("jx", 0, start=0, end=2 * 3600, state="failed"), "exit_code": 1},
                attempt("jx", 1, start=3600, end=3 * 3600, state="succeeded"),
            ],
        },
    )
    compute(con, Settings(), force=True)
    yield con
    con.close()


@pytest.mark.parametrize(("source", "expected"), INTERRUPTION_CASES)
def test_interruptions_per_1k_gpu_days_is_one_definition(overlapping_attempts, source, expected):
    from datetime import UTC, datetime

    from pipelines.sql import query_pl

    con = overlapping_attempts
    if source == "weekly_summary":
        (value,) = con.execute(
            "SELECT interruptions_per_1k_gpu_days FROM weekly_summary WHERE week = '2026-W48' AND cluster = '*'"
        ).fetchall()[0]
    else:
        week = {
            "start": datetime(2026, 11, 23, tzinfo=UTC),
            "end": datetime(2026, 11, 30, tzinfo=UTC),
        }
        value = query_pl(con, "metrics/job_success", week)["interruptions_per_1k_gpu_days"][0]
    assert value == pytest.approx(expected, rel=1e-9)
