"""The dashboard, run by Streamlit's AppTest against a real DuckDB file.

Every number the tests check is read back from the views the page claims to show,
so the same assertions hold on a database the real pipeline computed.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.store import open_store
from tests.app_helpers import metrics, no_errors, open_page, pct, plotly_figures, pp, sql, values

# ---------------------------------------------------------------- overview


@pytest.mark.parametrize(
    ("week", "cluster"),
    [
        ("2026-W48", None),  # all clusters: weekly_summary row cluster '*' (or NULL)
        ("2026-W48", "c1"),
        ("2026-W47", "c2"),  # the previous week has no data: deltas are empty
    ],
)
def test_overview_kpis_are_the_weekly_summary(use_db: Path, week: str, cluster: str | None) -> None:
    at = open_page(None, week=week, **({"cluster": cluster} if cluster else {}))
    no_errors(at)
    rows = sql(
        use_db,
        "SELECT * FROM weekly_summary WHERE coalesce(cluster, '*') = ? ORDER BY week",
        [cluster or "*"],
    )
    cur = rows.filter(pl.col("week") == week).row(0, named=True)
    prev_rows = rows.filter(pl.col("week") < week)
    prev = prev_rows.row(-1, named=True) if prev_rows.height else {}
    shown = metrics(at)
    for column, label in [
        ("node_availability", "Node availability"),
        ("job_success_rate", "Job success rate"),
        ("job_success_rate_gpu_h", "Job success (GPU-h weighted)"),
        ("goodput", "Goodput"),
        ("ettr", "ETTR"),
    ]:
        assert shown[label] == (pct(cur[column]), pp(cur[column], prev.get(column))), label
    for column, label in [("mtbf_h", "MTBF"), ("mttr_h", "MTTR")]:
        value = "—" if cur[column] is None else f"{cur[column]:,.1f} h"
        assert shown[label][0] == value, label
    value = cur["interruptions_per_1k_gpu_days"]
    assert shown["Interruptions / 1,000 GPU-days"][0] == f"{value:,.1f}"
    assert at.query_params["week"] == week


@pytest.mark.parametrize(
    ("week", "cluster"), [("2026-W48", None), ("2026-W48", "c1"), ("2026-W47", "c2")]
)
def test_overview_escapes_section_is_the_weekly_summary(
    use_db: Path, week: str, cluster: str | None
) -> None:
    at = open_page(None, week=week, **({"cluster": cluster} if cluster else {}))
    no_errors(at)
    assert "Escapes" in [s.value for s in at.subheader]
    rows = sql(
        use_db,
        "SELECT * FROM weekly_summary WHERE coalesce(cluster, '*') = ? ORDER BY week",
        [cluster or "*"],
    )
    cur = rows.filter(pl.col("week") == week).row(0, named=True)
    prev_rows = rows.filter(pl.col("week") < week)
    prev = prev_rows.row(-1, named=True) if prev_rows.height else {}
    shown = metrics(at)
    # W48 all clusters: 0 of 1 escaped vs W47's 1 of 1 -> 0.00 %, -100.00 pp; lead 300 s = 5 min
    assert shown["Escape rate"] == (
        pct(cur["escape_rate"]),
        pp(cur["escape_rate"], prev.get("escape_rate")),
    )
    assert shown["Jobs placed on flagged nodes"][0] == f"{cur['jobs_placed_on_flagged']:,.0f}"
    if week == "2026-W48":
        # j-101's attempt 0: the XID finding on gpu-001 opened 5 min before the failure
        detectors = next(df.value for df in at.dataframe if "detector" in df.value.columns)
        assert list(
            zip(detectors["detector"], detectors["catches"], detectors["escapes"], strict=True)
        ) == [("node_unavailable", 1, 0)]
    lead = cur["median_lead_time_s"]
    assert shown["Median lead time"][0] == (
        "—" if lead is None else f"{int(lead) // 60} min {int(lead) % 60:02d} s"
    )


def test_worst_nodes_sort_by_node_cost_and_the_node_page_shows_it(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    table = next(df.value for df in at.dataframe if "cost_gpu_h" in df.value.columns)
    cost = sql(
        use_db,
        "SELECT node, lost_gpu_h FROM node_cost WHERE week = '2026-W48' ORDER BY lost_gpu_h DESC, node",
    )
    # gpu-000 and gpu-001 share j-101's failure (16 GPUs x 35 min / 2 nodes = 4.67 GPU-h each)
    # ties (equal cost) fall back to GPU-hours unavailable + unknown
    assert set(table["node"][: cost.height]) == set(cost["node"])
    assert list(table["cost_gpu_h"][: cost.height]) == pytest.approx(list(cost["lost_gpu_h"]))
    assert list(table["cost_gpu_h"]) == sorted(table["cost_gpu_h"], reverse=True)
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    no_errors(at)
    expected = cost.filter(pl.col("node") == "gpu-001")["lost_gpu_h"][0]
    assert metrics(at)["Node cost"][0] == f"{expected:,.1f} GPU-h"
    nodes_page = open_page("nodes", week="2026-W48")
    listed = next(df.value for df in nodes_page.dataframe if "cost_gpu_h" in df.value.columns)
    assert list(listed["cost_gpu_h"]) == sorted(listed["cost_gpu_h"], reverse=True)


def test_jobs_page_has_a_checkpoints_section(use_db: Path) -> None:
    at = open_page("jobs", week="2026-W48")
    no_errors(at)
    assert "Checkpoints" in [s.value for s in at.subheader]


def test_overview_defaults_to_the_newest_full_week(use_db: Path) -> None:
    at = open_page(None)
    no_errors(at)
    newest = sql(use_db, "SELECT max(day) AS d FROM fleet_availability_daily")["d"][0]
    iso = newest.isocalendar()
    assert at.query_params["week"] == f"{iso.year}-W{iso.week:02d}"  # fixture: 2026-W48, 7 days


def test_overview_week_without_data_says_so(use_db: Path) -> None:
    at = open_page(None, week="2025-W01")
    assert not at.exception
    assert any("No data for week “2025-W01”" in w.value for w in at.warning)
    assert at.query_params["week"] == "2026-W48"


def test_overview_waterfall_is_the_goodput_stack(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    stack = sql(
        use_db, "SELECT * FROM goodput_stack WHERE window_start = TIMESTAMPTZ '2026-11-23 00:00+00'"
    )
    waterfall = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "waterfall")["data"][
        0
    ]
    steps = dict(zip(waterfall["x"], waterfall["y"]))
    # Capacity is absolute; losses and badput are negative steps; totals are drawn by plotly.
    assert steps["Capacity"] == pytest.approx(stack["capacity_gpu_h"].sum())
    assert steps["Unavailable"] == pytest.approx(-stack["unavailable_gpu_h"].sum())
    assert steps["Idle"] == pytest.approx(-stack["idle_gpu_h"].sum())
    assert steps["Wasted"] == pytest.approx(-stack["wasted_gpu_h"].sum())
    assert waterfall["measure"][waterfall["x"].index("Productive")] == "total"
    # The drawn productive total = capacity minus every step (the stack sums exactly).
    assert sum(steps.values()) == pytest.approx(stack["productive_gpu_h"].sum())
    # Idle is told in two parts under the chart: unallocated (the Idle step) and allocated but
    # idle, a tenth of allocated in the fixture: (134.5 + 72.0) / 10 = 20.65 GPU-h.
    caption = next(c.value for c in at.caption if c.value.startswith("Fleet goodput"))
    assert f"Idle: {stack['idle_gpu_h'].sum():,.1f} GPU-h unallocated" in caption
    assert stack["allocated_idle_gpu_h"].sum() == pytest.approx(20.65)
    assert "allocated but idle (telemetry, part of allocated)" in caption


def test_overview_pareto_counts_every_fleet_failure_of_the_week(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    expected = sql(
        use_db,
        """
        SELECT failure_class, count(*) AS n FROM attempt_outcomes
        WHERE fleet_failure
          AND end_ts >= TIMESTAMPTZ '2026-11-23 00:00+00' AND end_ts < TIMESTAMPTZ '2026-11-30 00:00+00'
        GROUP BY ALL""",
    )
    pareto = next(
        f for f in plotly_figures(at) if f["layout"]["title"]["text"].startswith("Failed attempts")
    )
    bars = [trace for trace in pareto["data"] if trace["type"] == "bar"]
    line = next(trace for trace in pareto["data"] if trace["type"] == "scatter")
    counts = [n for trace in bars for n in trace["y"]]
    assert (
        sum(counts) == expected["n"].sum()
    )  # fixture: 3 software + 1 hardware (the user one apart)
    assert pareto["layout"]["xaxis"]["categoryarray"] == line["x"]  # bars in the line's order
    assert values(line["y"]) == sorted(values(line["y"]))
    assert values(line["y"])[-1] == pytest.approx(100.0)
    by_class = {trace["name"]: sum(trace["y"]) for trace in bars}
    assert by_class == dict(expected.iter_rows())


def test_overview_top_nodes_and_open_anomalies(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    lost = sql(
        use_db,
        """
        SELECT d.node, sum(d.unavailable_s + d.unknown_s) * any_value(n.gpu_count) / 3600 AS lost_gpu_h,
               coalesce(any_value(c.lost_gpu_h), 0) AS cost_gpu_h
        FROM node_availability_daily d JOIN nodes n USING (node)
        LEFT JOIN node_cost c ON c.node = d.node AND c.week = '2026-W48'
        WHERE d.day BETWEEN DATE '2026-11-23' AND DATE '2026-11-29' GROUP BY d.node
        ORDER BY cost_gpu_h DESC, lost_gpu_h DESC, d.node""",
    )
    top = next(df.value for df in at.dataframe if "cost_gpu_h" in df.value.columns)
    # fixture: gpu-000 and gpu-001 cost 4.67 GPU-h each (j-101's failure); gpu-001 also lost 20 GPU-h down
    assert top["node"].iloc[0] == lost["node"][0] == "gpu-001"
    open_by_severity = dict(
        sql(
            use_db,
            """
        SELECT severity, count(*) FROM anomalies
        WHERE start_ts < TIMESTAMPTZ '2026-11-30 00:00+00'
          AND (end_ts IS NULL OR end_ts > TIMESTAMPTZ '2026-11-30 00:00+00') GROUP BY ALL""",
        ).iter_rows()
    )
    shown = metrics(at)
    for severity in ("critical", "warn", "info"):
        assert shown[severity][0] == str(open_by_severity.get(severity, 0))


def test_overview_row_click_opens_the_node(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    first = next(df.value for df in at.dataframe if "cost_gpu_h" in df.value.columns)["node"].iloc[
        0
    ]
    at.session_state["top_nodes"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    no_errors(at)
    assert at.title[0].value == f"Node {first}"
    assert at.query_params["node"] == first


# ---------------------------------------------------------------- nodes


def test_nodes_table_availability_is_from_summed_seconds(use_db: Path) -> None:
    at = open_page("nodes", week="2026-W48")
    no_errors(at)
    expected = sql(
        use_db,
        """
        SELECT node, sum(available_s + degraded_s) / sum(in_fleet_s - maintenance_s) * 100 AS pct
        FROM node_availability_daily WHERE day BETWEEN DATE '2026-11-23' AND DATE '2026-11-29'
        GROUP BY node""",
    )
    table = at.dataframe[0].value
    assert sorted(table["node"]) == sorted(expected["node"])
    shown = dict(zip(table["node"], table["availability_pct"]))
    for node, value in expected.iter_rows():
        assert shown[node] == pytest.approx(value)


def test_node_drill_down_from_the_url(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    no_errors(at)
    assert at.title[0].value == "Node gpu-001"
    avail = sql(
        use_db,
        """
        SELECT sum(available_s + degraded_s) / sum(in_fleet_s - maintenance_s) AS a,
               sum(unavailable_s) * 8 / 3600 AS unavailable_gpu_h
        FROM node_availability_daily WHERE node = 'gpu-001'
          AND day BETWEEN DATE '2026-11-23' AND DATE '2026-11-29'""",
    ).row(0, named=True)
    shown = metrics(at)
    assert shown["Availability"][0] == pct(avail["a"])  # fixture: 1 - 2.5 h / 168 h = 98.51 %
    assert shown["Unavailable GPU-h"][0] == f"{avail['unavailable_gpu_h']:,.1f}"  # 2 h x 8 GPUs
    subheaders = [s.value for s in at.subheader]
    assert {
        "Condition history",
        "GPU telemetry (DCGM)",
        "XID and GPU events",
        "Jobs that ran here",
        "Remediation history",
    } <= set(subheaders)
    # the finding closed at 12:30 on the 25th, yet what it called for stays on record
    ladder = next(df.value for df in at.dataframe if "step" in df.value.columns)
    assert list(ladder["step"]) == ["reset_gpu"]
    findings = next(df.value for df in at.dataframe if "goodput_lost_gpu_h" in df.value.columns)
    assert list(findings["goodput_lost_gpu_h"]) == [24.0]
    events = next(df.value for df in at.dataframe if "code" in df.value.columns)
    assert 79 in set(events["code"])
    jobs = next(df.value for df in at.dataframe if "attempt_state" in df.value.columns)
    expected_jobs = sql(
        use_db,
        """
        SELECT DISTINCT job_id FROM job_attempts WHERE list_contains(nodes, 'gpu-001')
          AND start_ts < TIMESTAMPTZ '2026-11-30 00:00+00' AND end_ts > TIMESTAMPTZ '2026-11-23 00:00+00'""",
    )
    assert set(jobs["job_id"]) == set(expected_jobs["job_id"])
    figures = plotly_figures(at)
    states = next(f for f in figures if f["layout"]["title"]["text"] == "State timeline")
    assert {trace["name"] for trace in states["data"]} >= {"available", "unavailable", "unknown"}


def test_node_page_lists_its_ranks_straggler_episodes(use_db: Path) -> None:
    # gpu-003 hosts rank 11 of j-103, 10 % slow for the whole run: one episode listed.
    at = open_page("nodes", node="gpu-003", week="2026-W48")
    no_errors(at)
    assert "Straggler episodes on this node" in [s.value for s in at.subheader]
    episodes = next(df.value for df in at.dataframe if "first_step" in df.value.columns)
    assert episodes[["job_id", "rank", "gpu", "first_step", "last_step"]].values.tolist() == [
        ["j-103", 11, 3, 0, 39]
    ]
    # gpu-001 hosted no straggler: the section says so.
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    assert any("No rank on this node was a straggler" in s.value for s in at.success)


def test_node_drill_down_of_an_unknown_node(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-999", week="2026-W48")
    assert not at.exception
    assert any("gpu-999" in w.value for w in at.warning)


# ---------------------------------------------------------------- jobs


def test_jobs_table_lists_jobs_ended_in_the_week(use_db: Path) -> None:
    at = open_page("jobs", week="2026-W48")
    no_errors(at)
    expected = sql(
        use_db,
        """
        SELECT job_id FROM job_outcomes
        WHERE end_ts >= TIMESTAMPTZ '2026-11-23 00:00+00' AND end_ts < TIMESTAMPTZ '2026-11-30 00:00+00'
           OR end_ts IS NULL""",
    )
    table = at.dataframe[0].value
    assert set(table["job_id"]) == set(expected["job_id"])


def test_job_drill_down_from_the_url(use_db: Path) -> None:
    at = open_page("jobs", job="j-103")
    no_errors(at)
    assert at.title[0].value == "Job j-103"
    goodput = sql(use_db, "SELECT goodput, ettr FROM job_goodput WHERE job_id = 'j-103'").row(
        0, named=True
    )
    shown = metrics(at)
    assert shown["Goodput"][0] == pct(goodput["goodput"])  # fixture: 3.8 h / 4 h = 95.00 %
    assert shown["ETTR"][0] == pct(goodput["ettr"])
    stragglers = sql(
        use_db, "SELECT rank, node, gpu FROM rank_slowdown WHERE job_id = 'j-103' AND is_straggler"
    )
    for rank, node, gpu in stragglers.iter_rows():
        assert any(f"rank {rank} (gpu {gpu})" in w.value and node in w.value for w in at.warning)
    heatmap = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")["data"][0]
    ranks = sql(use_db, "SELECT count(DISTINCT rank) AS n FROM rank_steps WHERE job_id = 'j-103'")[
        "n"
    ][0]
    assert len(heatmap["y"]) == ranks
    assert len(heatmap["x"]) <= 200
    # The straggler's episode (rank 11, steps 0-39) is outlined on the heatmap and listed.
    figure = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")
    boxes = [(s["x0"], s["x1"], s["y0"], s["y1"]) for s in figure["layout"].get("shapes", [])]
    assert boxes == [(0, 39, 10.5, 11.5)]
    episodes = next(df.value for df in at.dataframe if "first_step" in df.value.columns)
    assert episodes[["rank", "first_step", "last_step"]].values.tolist() == [[11, 0, 39]]


def test_job_drill_down_shows_attempt_causes(use_db: Path) -> None:
    at = open_page("jobs", job="j-101")
    no_errors(at)
    attempts = next(df.value for df in at.dataframe if "failure_class" in df.value.columns)
    expected = sql(
        use_db,
        "SELECT attempt, failure_class FROM attempt_outcomes WHERE job_id = 'j-101' ORDER BY attempt",
    )
    assert list(attempts["attempt"]) == expected["attempt"].to_list()
    assert list(attempts["failure_class"].fillna("")) == [
        c or "" for c in expected["failure_class"]
    ]


# ---------------------------------------------------------------- anomalies


@pytest.mark.parametrize(
    ("query", "where"),
    [
        ({"severity": "critical"}, "severity = 'critical'"),
        ({"status": "open"}, "(end_ts IS NULL OR end_ts > TIMESTAMPTZ '2026-11-30 00:00+00')"),
        ({"kind": "straggler"}, "kind = 'straggler'"),
        ({}, "TRUE"),
    ],
)
def test_anomalies_filters_from_the_url(use_db: Path, query: dict[str, str], where: str) -> None:
    at = open_page("anomalies", week="2026-W48", **query)
    no_errors(at)
    expected = sql(
        use_db,
        f"""
        SELECT count(*) AS n FROM anomalies
        WHERE start_ts < TIMESTAMPTZ '2026-11-30 00:00+00'
          AND (end_ts IS NULL OR end_ts > TIMESTAMPTZ '2026-11-23 00:00+00') AND {where}""",
    )["n"][0]
    if expected:
        table = at.dataframe[0].value
        assert len(table) == expected
        links = set(table["link"])
        assert all(link.startswith(("/nodes?node=", "/jobs?job=")) for link in links)
    else:
        assert not at.dataframe
    for name, value in query.items():
        assert at.query_params[name] == value


# ---------------------------------------------------------------- missing and empty databases


def test_missing_database_gives_the_command_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUFLEET_DB", str(tmp_path / "nope.duckdb"))
    at = open_page(None)
    assert not at.exception
    assert any("does not exist" in e.value for e in at.error)
    assert any("gpufleet demo --no-app" in m.value for m in at.markdown)
    assert not (tmp_path / "nope.duckdb").exists()  # the app never creates it


def test_uncomputed_database_gives_the_command_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "fleet.duckdb"
    open_store(db).close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    for page in (None, "nodes", "jobs", "anomalies"):
        at = open_page(page)
        assert not at.exception
        assert any("no computed metrics" in i.value for i in at.info), page
        assert any("gpufleet compute" in m.value for m in at.markdown), page


def test_node_chart_field_from_the_url(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-000", week="2026-W48", metric="DCGM_FI_DEV_GPU_TEMP")
    no_errors(at)
    chart = next(
        f for f in plotly_figures(at) if f["layout"]["title"]["text"] == "GPU temperature (°C)"
    )
    expected = sql(
        use_db,
        """
        SELECT max(value) AS hottest FROM gpu_samples
        WHERE node = 'gpu-000' AND metric = 'DCGM_FI_DEV_GPU_TEMP'
          AND ts >= TIMESTAMPTZ '2026-11-23 00:00+00' AND ts < TIMESTAMPTZ '2026-11-30 00:00+00'""",
    )
    # 15-minute means never exceed the hottest raw sample (fixture: 88 °C on the throttled gpu 5).
    assert max(max(values(trace["y"])) for trace in chart["data"]) <= expected["hottest"][0]
    # one mean line per GPU, each over its min-max band (one legend-less trace of closed shapes);
    # the node's findings are markers on the top edge, one trace per severity
    gpu_traces = [t for t in chart["data"] if not t["name"].endswith(" finding")]
    assert len([t for t in gpu_traces if t.get("showlegend", True)]) == 8
    assert len(gpu_traces) == 2 * 8
    assert at.query_params["metric"] == "DCGM_FI_DEV_GPU_TEMP"


@pytest.mark.parametrize(
    ("page", "query", "column", "expected_sql"),
    [
        # Nodes of cluster c2 only (fixture: gpu-002, gpu-003).
        ("nodes", {"cluster": "c2"}, "node", "SELECT node AS v FROM nodes WHERE cluster = 'c2'"),
        # Jobs that count against the success rate: eligible and not succeeded (fixture: j-102).
        (
            "jobs",
            {"outcome": "failed"},
            "job_id",
            (
                "SELECT job_id AS v FROM job_outcomes WHERE eligible AND NOT succeeded "
                "AND end_ts >= TIMESTAMPTZ '2026-11-23 00:00+00' AND end_ts < TIMESTAMPTZ '2026-11-30 00:00+00'"
            ),
        ),
        # Cancelled jobs are listed under their own state (fixture: j-104).
        (
            "jobs",
            {"outcome": "cancelled"},
            "job_id",
            (
                "SELECT job_id AS v FROM job_outcomes WHERE final_state = 'cancelled' "
                "AND end_ts >= TIMESTAMPTZ '2026-11-23 00:00+00' AND end_ts < TIMESTAMPTZ '2026-11-30 00:00+00'"
            ),
        ),
    ],
)
def test_table_filters_from_the_url(
    use_db: Path, page: str, query: dict[str, str], column: str, expected_sql: str
) -> None:
    at = open_page(page, week="2026-W48", **query)
    no_errors(at)
    expected = set(sql(use_db, expected_sql)["v"])
    assert expected
    assert set(at.dataframe[0].value[column]) == expected
    for name, value in query.items():
        assert at.query_params[name] == value
