"""`gpufleet report`: the 12-week trend table and goodput per team and per queue, the same
queries as the dashboard's, with the hand-worked numbers of the report fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.report import build_report, to_json, to_markdown
from pipelines.store import connect
from pipelines.weeks import parse_week
from tests.report_fixture import simulated_fleet

W48 = parse_week("2026-W48")


TREND_LINES = [
    (
        "| Week | Cluster | Availability | Job success | Goodput | ETTR | MTBF | MTTR "
        "| Interruptions / 1,000 GPU-days | Escape rate |\n"
    ),
    # the numbers of the summary table (see test_report.py): W47 and W48, all clusters;
    # escape rate: W47 1 of 1 fleet failure escaped, W48 0 of 1 (report_fixture)
    "| 2026-W47 | all | 99.01 % | 100.00 % | 80.00 % | 38.71 % | 249.5 h | 4.0 h | 200.0 | 100.00 % |\n",
    "| 2026-W48 | all | 97.39 % | 50.00 % | 67.17 % | 48.00 % | 161.7 h | 4.0 h | 363.6 | 0.00 % |\n",
    # c2 in W48: no node failure (MTBF n/a), goodput 88/152 = 57.89 %, no fleet failure (escape n/a)
    "| 2026-W48 | c2 | 98.21 % | 0.00 % | 57.89 % | 10.00 % | n/a | n/a | 789.5 | n/a |\n",
]


@pytest.mark.parametrize("line", TREND_LINES)
def test_trend_table_in_markdown(fixture_db: Path, line: str) -> None:
    con = connect(fixture_db, read_only=True)
    text = to_markdown(build_report(con, W48))
    con.close()
    assert "## Trends (12 weeks)" in text
    assert line in text


def test_escape_rate_column_only_when_a_week_has_one(fixture_db: Path) -> None:
    # c2 had no fleet failure in W47 or W48: its trend table has no escape-rate column at all
    con = connect(fixture_db, read_only=True)
    text = to_markdown(build_report(con, W48, cluster="c2"))
    con.close()
    trends = text[text.index("## Trends") : text.index("## Goodput by team")]
    assert "| Interruptions / 1,000 GPU-days |\n" in trends
    assert "Escape rate" not in trends


def test_trend_table_of_one_cluster(fixture_db: Path) -> None:
    con = connect(fixture_db, read_only=True)
    report = build_report(con, W48, cluster="c2")
    con.close()
    assert report.trends["cluster"].unique().to_list() == ["c2"]
    assert report.trends["week"].to_list() == ["2026-W47", "2026-W48"]
    assert report.trends["goodput"].to_list()[-1] == pytest.approx(88 / 152)


def test_json_carries_trends_and_goodput_groups(fixture_db: Path) -> None:
    con = connect(fixture_db, read_only=True)
    payload = json.loads(to_json(build_report(con, W48)))
    con.close()
    w48 = next(r for r in payload["trends"] if r["week"] == "2026-W48" and r["cluster"] == "*")
    assert w48["node_availability"] == pytest.approx(485 / 498)
    assert "goodput_groups" in payload


def test_goodput_groups_split_the_weeks_allocation(tmp_path: Path) -> None:
    # the real pipeline on a small simulated fleet: each grouping sums to the goodput stack
    con = connect(simulated_fleet(tmp_path / "fleet.duckdb"), read_only=True)
    report = build_report(con, W48)
    stack = con.execute(
        "SELECT sum(allocated_gpu_h)::DOUBLE, sum(productive_gpu_h)::DOUBLE FROM goodput_stack "
        "WHERE week = '2026-W48' AND cluster <> '*'"
    ).fetchone()
    con.close()
    assert stack is not None  # an aggregate query always returns one row
    groups = report.goodput_groups
    assert set(groups["grouping"]) == {"team", "queue"}
    for grouping in ("team", "queue"):
        part = groups.filter(groups["grouping"] == grouping)
        # the stack rounds each leaf to 1e-6 GPU-h
        assert part["allocated_gpu_h"].sum() == pytest.approx(stack[0], abs=1e-4)
        assert part["productive_gpu_h"].sum() == pytest.approx(stack[1], abs=1e-4)
    assert "## Goodput by team and queue" in to_markdown(report)
