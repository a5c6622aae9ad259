"""Telemetry as an SRE reads it, under AppTest on the hand-made fleet: the node page's counter
rates, min/max band, clock-event reasons and GPU UUIDs, and the Fleet telemetry heatmap page.
Expected numbers come from the raw samples (SQL written here) or the fixture's hand-set values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import polars as pl
import pytest

from gpufleet_app import figures
from tests.app_fixture import (
    ECC_GPU,
    ECC_NODE,
    NODES,
    REASONS_THROTTLED,
    uuid,
)
from tests.app_helpers import no_errors, open_page, plotly_figures, sql, values

W48_START = "TIMESTAMPTZ '2026-11-23 00:00+00'"
W48_END = "TIMESTAMPTZ '2026-11-30 00:00+00'"


def figure(at, title: str) -> dict:
    return next(f for f in plotly_figures(at) if f["layout"]["title"]["text"] == title)


def epoch_ms(text: str) -> float:
    """A plotly date string (UTC, naive) as epoch milliseconds."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000


# ---------------------------------------------------------------- node page


def test_counters_are_rates_per_hour_reset_safe(use_db: Path) -> None:
    at = open_page("nodes", node=ECC_NODE, week="2026-W48")
    no_errors(at)
    chart = figure(at, "Error counters, rate per hour (reset-safe increases)")
    # Only the counter that went up gets a panel (ECC SBE); the flat DBE counter is named below it.
    assert [a["text"] for a in chart["layout"]["annotations"]] == ["ECC single-bit errors"]
    # only the GPU whose counter went up is drawn (the other seven stayed at 0)
    assert [t["name"] for t in chart["data"]] == [f"gpu {ECC_GPU}"]
    trace = chart["data"][0]
    rates = dict(zip(trace["x"], values(trace["y"])))
    # fixture: 100 until 11-26 00:00, then 105, 110, ... 130 every half hour to 02:30 (+5 each:
    # 10 per hour at 00, 01, 02 h), reset to 2 at 03:00 -> the new value, +2 (never -128)
    assert rates["2026-11-26T00:00:00.000000"] == 10.0
    assert rates["2026-11-26T01:00:00.000000"] == 10.0
    assert rates["2026-11-26T02:00:00.000000"] == 10.0
    assert rates["2026-11-26T03:00:00.000000"] == 2.0
    assert min(rates.values()) == 0.0 and sum(rates.values()) == 32.0  # never negative
    totals = next(d.value for d in at.dataframe if "peak_per_hour" in d.value.columns)
    row = totals.iloc[0]
    assert (row["counter"], row["gpu"], row["increase"], row["peak_per_hour"]) == (
        "ECC single-bit errors",
        str(ECC_GPU),
        32.0,
        10.0,
    )
    assert any("ECC double-bit errors" in c.value for c in at.caption)  # flat all week


def test_node_field_picker_offers_no_cumulative_counter(use_db: Path) -> None:
    at = open_page("nodes", node=ECC_NODE, week="2026-W48")
    no_errors(at)
    options = next(s for s in at.selectbox if s.label == "Field").options
    assert not any("ECC" in o or "PCIE_REPLAY" in o or "NVLINK_BANDWIDTH" in o for o in options)


def test_gpu_chart_band_is_the_min_and_max_of_the_samples(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-000", week="2026-W48", metric="DCGM_FI_DEV_SM_CLOCK")
    no_errors(at)
    chart = figure(at, "SM clock (MHz)")
    band = next(t for t in chart["data"] if t["name"] == "gpu 5 min-max")
    mean = next(t for t in chart["data"] if t["name"] == "gpu 5")
    assert band["fill"] == "toself"
    expected = sql(
        use_db,
        f"""
        SELECT min(value) AS lo, max(value) AS hi FROM gpu_samples
        WHERE node = 'gpu-000' AND gpu = 5 AND metric = 'DCGM_FI_DEV_SM_CLOCK'
          AND ts >= {W48_START} AND ts < {W48_END}""",
    ).row(0)
    edges: dict[str, dict[pd.Timestamp, float]] = {"max": {}, "min": {}}
    for x, y, edge in zip(band["x"], band["y"], band["customdata"]):
        if edge is not None:
            edges[edge][pd.Timestamp(x)] = y
    lows, highs = edges["min"], edges["max"]
    means = {
        pd.Timestamp(x): y
        for x, y in zip(mean["x"], values(mean["y"]))
        if y is not None and not np.isnan(y)
    }
    # fixture: gpu 5 at 345 MHz idle, 1980 busy, 1500 throttled
    assert (min(lows.values()), max(highs.values())) == expected == (345.0, 1980.0)
    assert lows.keys() == highs.keys() == means.keys()
    assert all(lows[x] <= means[x] <= highs[x] for x in means)


def _filled_spans(traces: list[go.Scatter]) -> list[tuple[datetime, datetime]]:
    """The time spans plotly.js fills for the band traces: `toself` closes every run between
    nulls on its own; `tonexty` joins its runs into one path (the nulls only break the line), so
    it fills from its first to its last point."""
    spans = []
    for trace in traces:
        xs = list(trace.x)
        if trace.fill == "toself":
            runs: list[list[Any]] = []  # x values as plotly was given them (datetimes or strings)
            run: list[Any] = []
            for x in [*xs, None]:
                if x is None:
                    if run:
                        runs.append(run)
                    run = []
                else:
                    run.append(x)
        elif trace.fill == "tonexty":
            runs = [[x for x in xs if x is not None and not pd.isna(x)]]
        else:
            continue
        spans += [
            (pd.Timestamp(min(r)).to_pydatetime(), pd.Timestamp(max(r)).to_pydatetime())
            for r in runs
        ]
    return spans


def test_band_and_mean_line_break_at_a_telemetry_gap() -> None:
    """Buckets 00:00, 00:15, 00:30, then silence until 02:00, 02:15: spacing median 15 min, so
    the 90-minute silence (> 2 x 15 min) is a gap. The band covers 00:00-00:30 and 02:00-02:15 and
    nothing in between; the mean line has a null at 00:45 (the bucket after 00:30)."""
    minutes = [0, 15, 30, 120, 135]
    samples = pl.DataFrame(
        {
            "gpu": [0] * 5,
            "bucket_ts": [
                datetime(2026, 11, 23, tzinfo=UTC) + timedelta(minutes=m) for m in minutes
            ],
            "value": [10.0, 11.0, 12.0, 20.0, 21.0],
            "min_value": [8.0, 9.0, 10.0, 18.0, 19.0],
            "max_value": [12.0, 13.0, 14.0, 22.0, 23.0],
        }
    )
    anomalies = pl.DataFrame(
        schema={
            "start_ts": pl.Datetime("us", "UTC"),
            "end_ts": pl.Datetime("us", "UTC"),
            "gpu": pl.Int64,
            "severity": pl.Utf8,
            "kind": pl.Utf8,
        }
    )
    fig = figures.gpu_metric_band(samples, anomalies, "SM clock (MHz)")
    bands = [t for t in fig.data if t.fill in ("toself", "tonexty")]
    spans = _filled_spans(bands)
    at = datetime(2026, 11, 23)
    assert spans == [
        (at, at + timedelta(minutes=30)),
        (at + timedelta(hours=2), at + timedelta(minutes=135)),
    ]
    inside_gap = at + timedelta(hours=1)
    assert not any(start <= inside_gap <= end for start, end in spans)
    # both edges of each polygon: max forward, min back (8..10 under 12..14, 18..19 under 22..23)
    band = bands[0]
    assert [y for y in band.y if y is not None] == [
        12.0,
        13.0,
        14.0,
        10.0,
        9.0,
        8.0,
        22.0,
        23.0,
        19.0,
        18.0,
    ]
    mean = next(t for t in fig.data if t.name == "gpu 0")
    breaks = [pd.Timestamp(x).to_pydatetime() for x, y in zip(mean.x, mean.y) if np.isnan(y)]
    assert breaks == [at + timedelta(minutes=45)]


def test_clock_event_reasons_decoded_per_gpu(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-000", week="2026-W48")
    no_errors(at)
    chart = figure(at, "Clock-event (throttle) reasons, hours active per GPU")
    bars = {t["name"]: dict(zip(t["x"], t["y"])) for t in chart["data"]}
    # fixture: gpu 5 reports 96 = 0x20 | 0x40 from 11-26 00:00: samples 11-26 00:00 .. 11-29 23:30
    # = 192 of its 336 half-hourly samples; reported span 167.75 h (first bucket .. last + 15 min)
    throttled_share = 192 / 336
    assert int(REASONS_THROTTLED) == 0x20 | 0x40
    assert bars["sw_thermal_slowdown"] == pytest.approx({"gpu 5": throttled_share * 167.75})
    assert bars["hw_thermal_slowdown"] == pytest.approx({"gpu 5": throttled_share * 167.75})
    # idle (0x1) outside the busy hours 11-25 08:00-18:00 (20 samples busy): 316/336 of the week
    assert bars["gpu_idle"]["gpu 0"] == pytest.approx(316 / 336 * 167.75)
    assert "hw_slowdown" not in bars  # bit 0x8 never set


def test_node_without_reasons_field_says_so(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    no_errors(at)
    assert any("reports neither" in c.value for c in at.caption)
    assert not any(
        f["layout"]["title"]["text"].startswith("Clock-event") for f in plotly_figures(at)
    )


def test_gpu_uuids_for_an_rma_ticket(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    no_errors(at)
    table = next(d.value for d in at.dataframe if "uuid" in d.value.columns)
    assert table["gpu"].tolist() == list(range(8))
    assert table["uuid"].tolist() == [uuid("gpu-001", g) for g in range(8)]


# ---------------------------------------------------------------- Fleet telemetry page


def heatmap(at) -> dict:
    return next(f for f in plotly_figures(at) if f["data"] and f["data"][0]["type"] == "heatmap")


@pytest.mark.parametrize(
    ("query", "field", "statistic", "sql_value"),
    [
        # default: GPU temperature, mean of the node's GPUs' samples in the hour
        ({}, "DCGM_FI_DEV_GPU_TEMP", "avg", "avg(value)"),
        (
            {"field": "DCGM_FI_DEV_SM_CLOCK", "stat": "min"},
            "DCGM_FI_DEV_SM_CLOCK",
            "min",
            "min(value)",
        ),
        (
            {"field": "DCGM_FI_DEV_POWER_USAGE", "stat": "max"},
            "DCGM_FI_DEV_POWER_USAGE",
            "max",
            "max(value)",
        ),
    ],
)
def test_fleet_heatmap_is_nodes_by_hour(
    use_db: Path, query: dict, field: str, statistic: str, sql_value: str
) -> None:
    at = open_page("telemetry", week="2026-W48", **query)
    no_errors(at)
    trace = heatmap(at)["data"][0]
    expected = sql(
        use_db,
        f"""
        SELECT node, time_bucket(INTERVAL 1 HOUR, ts) AS hour, {sql_value} AS v
        FROM gpu_samples WHERE metric = '{field}' AND ts >= {W48_START} AND ts < {W48_END}
        GROUP BY ALL ORDER BY node, hour""",
    )
    nodes = sorted(expected["node"].unique().to_list())
    assert trace["y"] == nodes  # fixture: gpu-000 and gpu-001 report DCGM fields
    assert len(trace["x"]) == 168  # 7 days of 1-hour columns (at most 200)
    z = values(trace["z"]) if isinstance(trace["z"], dict) else trace["z"]
    grid = np.array(z, dtype=float).reshape(len(nodes), -1)
    hours = [epoch_ms(x) for x in trace["x"]]
    for node, hour, value in expected.iter_rows():
        cell = grid[nodes.index(node), hours.index(hour.timestamp() * 1000)]
        assert cell == pytest.approx(value)
    for name, value in query.items():
        assert at.query_params[name] == value


def test_fleet_heatmap_keeps_a_column_no_node_reported_empty() -> None:
    """Columns 00:00, 01:00 and 04:00 reported, 02:00 and 03:00 by no node: the heatmap has all five
    1-hour columns and the two silent ones are empty, not covered by widened neighbours (plotly
    sizes a cell to meet the next x)."""
    at = datetime(2026, 11, 23, tzinfo=UTC)
    cells = pl.DataFrame(
        {
            "node": ["n1", "n2", "n1", "n2", "n1"],
            "column_ts": [
                at,
                at,
                at + timedelta(hours=1),
                at + timedelta(hours=1),
                at + timedelta(hours=4),
            ],
            "mean_value": [50.0, 60.0, 51.0, 61.0, 54.0],
        }
    )
    trace = figures.fleet_heatmap(cells, "mean_value", "GPU temperature (°C)").data[
        0
    ]  # 1-h columns
    assert [pd.Timestamp(x).hour for x in trace.x] == [0, 1, 2, 3, 4]
    grid = np.array(trace.z, dtype=float)
    assert np.isnan(grid[:, 2:4]).all()
    assert grid[0].tolist()[:2] == [50.0, 51.0] and grid[0][4] == 54.0
    assert grid[1].tolist()[:2] == [60.0, 61.0] and np.isnan(grid[1][4])  # n2 silent at 04:00


def test_links_up_step_lines_break_at_missing_buckets() -> None:
    """Hourly buckets 00, 01, 02, then none until 05, 06: the 02:00 step is held to 03:00 (the end
    of its bucket), then the line breaks; it is never drawn across 03:00-05:00, where no scrape
    said how many links were up."""
    at = datetime(2026, 11, 23, tzinfo=UTC)
    hours = [0, 1, 2, 5, 6]
    links = pl.DataFrame(
        {
            "bucket_ts": [at + timedelta(hours=h) for h in hours],
            "links_min": [32, 32, 30, 32, 32],
            "links_max": [32, 32, 32, 32, 32],
            "expected": [32] * 5,
        }
    )
    fig = figures.nic_links(links)  # hourly buckets
    fewest = next(t for t in fig.data if t.name == "fewest up")
    points = [
        (pd.Timestamp(x).hour, None if np.isnan(y) else y) for x, y in zip(fewest.x, fewest.y)
    ]
    assert points == [(0, 32), (1, 32), (2, 30), (3, 30), (3, None), (5, 32), (6, 32)]
    most = next(t for t in fig.data if t.name == "most up")
    assert [pd.Timestamp(x).hour for x in most.x] == [0, 1, 2, 3, 3, 5, 6]


def test_fleet_heatmap_filters_by_cluster(use_db: Path) -> None:
    at = open_page("telemetry", week="2026-W48", cluster="c1")
    no_errors(at)
    assert heatmap(at)["data"][0]["y"] == sorted(n for n, c in NODES.items() if c == "c1")
    assert at.query_params["cluster"] == "c1"


def test_fleet_heatmap_unknown_field_says_so(use_db: Path) -> None:
    at = open_page("telemetry", week="2026-W48", field="DCGM_FI_BOGUS")
    no_errors(at)
    assert any("Unknown field `DCGM_FI_BOGUS`" in w.value for w in at.warning)
    assert heatmap(at)["data"][0]["colorbar"]["title"]["text"] == "GPU temperature (°C)"


def test_fleet_heatmap_cluster_without_telemetry(use_db: Path) -> None:
    # fixture: c2's nodes (gpu-002, gpu-003) land no DCGM samples
    at = open_page("telemetry", week="2026-W48", cluster="c2")
    no_errors(at)
    assert any("No `DCGM_FI_DEV_GPU_TEMP` samples" in i.value for i in at.info)


def test_fleet_telemetry_page_shows_no_stray_text(use_db: Path) -> None:
    # Streamlit draws a bare string literal of a page script: the page's notes must be comments
    at = open_page("telemetry", week="2026-W48")
    no_errors(at)
    assert [m.value for m in at.markdown if "column" in m.value or "URL" in m.value] == []


def test_rollup_from_an_older_version_asks_for_a_recompute(
    app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a database computed before the rollup had `increase`: a clear message, not a traceback
    import shutil

    import duckdb

    old = tmp_path / "old.duckdb"
    shutil.copyfile(app_db, old)
    con = duckdb.connect(str(old))
    con.execute("ALTER TABLE gpu_samples_15m DROP COLUMN increase")
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(old))
    at = open_page("nodes", node=ECC_NODE, week="2026-W48")
    assert not at.exception
    assert any("computed by an older gpufleet" in e.value for e in at.error)
    assert any("gpufleet compute --force" in m.value for m in at.markdown)
