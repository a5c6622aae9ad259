"""The overview's trend and weighting views under AppTest, on the hand-made fleet: sparklines and
the Trends section are the weekly summary, the weighted Pareto is the goodput tables' lost
GPU-hours, the team and queue tables are the goodput segments. Expected numbers come from the
views (SQL written here, apart from the app's queries), so they hold on a computed database too."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from tests.app_helpers import no_errors, open_page, plotly_figures, sql, values

W48_START = "TIMESTAMPTZ '2026-11-23 00:00+00'"
W48_END = "TIMESTAMPTZ '2026-11-30 00:00+00'"


def summary(db: Path, cluster: str) -> pl.DataFrame:
    return sql(
        db, "SELECT * FROM weekly_summary WHERE coalesce(cluster, '*') = ? ORDER BY week", [cluster]
    )


# ---------------------------------------------------------------- sparklines


@pytest.mark.parametrize(
    ("label", "column"),
    [
        ("Node availability", "node_availability"),
        ("Goodput", "goodput"),
        ("MTTR", "mttr_h"),  # W47 1.0 h, W48 2.5 h (all clusters)
        ("Interruptions / 1,000 GPU-days", "interruptions_per_1k_gpu_days"),  # 0.0 then 55.56
    ],
)
def test_kpi_sparkline_is_the_weekly_summary(use_db: Path, label: str, column: str) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    card = next(m for m in at.metric if m.label == label)
    # fixture: two weeks of summary (W47, W48); the sparkline starts at the first week with a value
    expected = summary(use_db, "*")[column].to_list()
    assert list(card.proto.chart_data) == pytest.approx(expected)


def test_a_single_point_draws_no_sparkline(use_db: Path) -> None:
    # c1's job success rate: W47 NULL (no job ended), W48 1.0 -> one point is no trend
    at = open_page(None, week="2026-W48", cluster="c1")
    no_errors(at)
    card = next(m for m in at.metric if m.label == "Job success rate")
    assert list(card.proto.chart_data) == []
    assert len(next(m for m in at.metric if m.label == "Node availability").proto.chart_data) == 2


# ---------------------------------------------------------------- Trends section


@pytest.mark.parametrize(
    ("panel", "column", "scale"),
    [
        ("Node availability %", "node_availability", 100),
        ("Job success %", "job_success_rate", 100),
        ("ETTR %", "ettr", 100),
        ("MTBF (h)", "mtbf_h", 1),
        ("Interruptions / 1,000 GPU-days", "interruptions_per_1k_gpu_days", 1),
        ("Escape rate %", "escape_rate", 100),
    ],
)
def test_trends_section_draws_every_cluster_per_week(
    use_db: Path, panel: str, column: str, scale: int
) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    figure = next(
        f for f in plotly_figures(at) if f["layout"]["title"]["text"] == "Per ISO week and cluster"
    )
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    axis = titles.index(panel) + 1
    xaxis = "x" if axis == 1 else f"x{axis}"
    traces = {t["name"]: t for t in figure["data"] if t["xaxis"] == xaxis}
    assert set(traces) == {"all clusters", "c1", "c2"}
    for name, cluster in [("all clusters", "*"), ("c1", "c1"), ("c2", "c2")]:
        rows = summary(use_db, cluster)
        # 12 weeks on the axis, the last two (W47, W48) from the fixture; a NULL is a gap
        shown = traces[name]["y"][-2:]
        for got, want in zip(shown, rows[column].to_list()):
            if want is None:
                assert got is None
            else:
                assert got == pytest.approx(want * scale)
        assert len(traces[name]["x"]) == 12
        assert all(y is None for y in traces[name]["y"][:-2])  # no data before W47: gaps, not 0


def test_trend_table_lists_each_week_and_cluster(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    table = next(
        d.value for d in at.dataframe if "interruptions_per_1k_gpu_days" in d.value.columns
    )
    assert len(table) == 6  # 2 weeks x (c1, c2, all clusters)
    row = table[(table["week"] == "2026-W48") & (table["cluster"] == "c2")].iloc[0]
    assert row["goodput"] == pytest.approx(81.02)  # 0.8102 as a percentage


# ---------------------------------------------------------------- weighted Pareto

LOST_SQL = f"""
    -- wasted progress of the attempt (its GPUs x time) + the recovery gap after it (the job's GPUs)
    SELECT o.failure_class,
           sum(CASE s.category WHEN 'wasted' THEN s.gpus ELSE o.num_gpus END
               * epoch(s.end_ts - s.start_ts)) / 3600 AS lost_gpu_h
    FROM attempt_outcomes o
    JOIN goodput_segments s USING (job_id, attempt)
    WHERE o.failure_class IS NOT NULL AND s.category IN ('wasted', 'recovery')
      AND o.end_ts >= {W48_START} AND o.end_ts < {W48_END}
    GROUP BY ALL
"""


def test_pareto_weighted_by_gpu_hours_lost(use_db: Path) -> None:
    at = open_page(None, week="2026-W48", pareto="lost")
    no_errors(at)
    assert at.query_params["pareto"] == "lost"
    figure = next(
        f for f in plotly_figures(at) if f["layout"]["title"]["text"].startswith("GPU-hours lost")
    )
    bars = {t["name"]: sum(t["y"]) for t in figure["data"] if t["type"] == "bar"}
    expected = dict(sql(use_db, LOST_SQL).iter_rows())
    # fixture: hardware j-101 a0 = 16 GPUs x 35 min wasted + 16 x 2 h 55 min recovery = 56 GPU-h;
    # software j-102 = 3 x 8 GPUs x 20 min wasted + 2 x 8 GPUs x 5 min recovery = 9.33 GPU-h
    assert bars["hardware"] == pytest.approx(expected["hardware"]) == pytest.approx(56.0)
    assert bars["software"] == pytest.approx(expected["software"]) == pytest.approx(8.0 + 4 / 3)
    # counted by attempts software leads (3 vs 1); weighted by GPU-hours hardware does, 6x
    assert figure["layout"]["xaxis"]["categoryarray"][0].startswith("XID 79")
    line = next(t for t in figure["data"] if t["type"] == "scatter")
    assert values(line["y"])[0] == pytest.approx(100 * 56.0 / (56.0 + 8.0 + 4 / 3))
    assert values(line["y"])[-1] == pytest.approx(100.0)


def test_pareto_counts_attempts_by_default(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    assert "pareto" not in at.query_params
    titles = [f["layout"]["title"]["text"] for f in plotly_figures(at)]
    assert "Failed attempts by cause (Pareto)" in titles
    assert not any(t.startswith("GPU-hours lost") for t in titles)


# ---------------------------------------------------------------- goodput per team and queue

GROUP_SQL = f"""
    SELECT coalesce(j.{{group}}, '(none)') AS name,
           sum(s.gpus * epoch(least(s.end_ts, {W48_END}) - greatest(s.start_ts, {W48_START}))) / 3600
               AS allocated,
           sum(s.gpus * epoch(least(s.end_ts, {W48_END}) - greatest(s.start_ts, {W48_START}))) FILTER
               (WHERE s.category = 'productive') / 3600 AS productive
    FROM goodput_segments s JOIN jobs j USING (job_id)
    WHERE s.gpus > 0 AND s.start_ts < {W48_END} AND s.end_ts > {W48_START}
    GROUP BY ALL
"""


@pytest.mark.parametrize("group", ["team", "queue"])
def test_goodput_per_team_and_queue(use_db: Path, group: str) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    table = next(d.value for d in at.dataframe if group in d.value.columns)
    expected = sql(use_db, GROUP_SQL.format(group=group))
    shown = dict(zip(table[group], zip(table["allocated_gpu_h"], table["goodput_pct"])))
    assert set(shown) == set(expected["name"])
    for name, allocated, productive in expected.iter_rows():
        assert shown[name][0] == pytest.approx(allocated)
        assert (
            shown[name][1] == pytest.approx(100 * productive / allocated)
            if productive
            else (shown[name][1] == 0 or math.isnan(shown[name][1]))
        )
    # fixture, team llm: j-101 + j-103 = 16 x (0.5 + 1 + 35/60 + 0.25 + 4.75) + 16 x 4 = 177.33 GPU-h
    if group == "team":
        assert shown["llm"][0] == pytest.approx(16 * (0.5 + 1 + 35 / 60 + 0.25 + 4.75) + 16 * 4)


def test_team_and_queue_tables_split_the_same_allocation(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    team = next(d.value for d in at.dataframe if "team" in d.value.columns)
    queue = next(d.value for d in at.dataframe if "queue" in d.value.columns)
    assert team["allocated_gpu_h"].sum() == pytest.approx(queue["allocated_gpu_h"].sum())
    assert team["productive_gpu_h"].sum() == pytest.approx(queue["productive_gpu_h"].sum())


def test_escape_rate_trend_only_when_a_week_has_one() -> None:
    from gpufleet_app.trends import shown_metrics
    from pipelines.trend_metrics import TREND_METRICS

    none_yet = pl.DataFrame({"escape_rate": [None, None]}, schema={"escape_rate": pl.Float64})
    assert "escape_rate" not in [c for c, _, _ in shown_metrics(none_yet)]
    assert len(shown_metrics(none_yet)) == len(TREND_METRICS) - 1
    one_week = pl.DataFrame({"escape_rate": [None, 0.5]})
    assert "escape_rate" in [c for c, _, _ in shown_metrics(one_week)]
