"""Telemetry as an SRE reads it, under AppTest on the hand-made fleet: the node page's counter
rates, min/max band, clock-event reasons and GPU UUIDs, and the Fleet telemetry heatmap page.
Expected numbers come from the raw samples (SQL written here) or the fixture's hand-set values."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from tests.app_fixture import (
    ECC_GPU,
    ECC_NODE,
    NODES,
    REASONS_THROTTLED,
    build_app_db,
    uuid,
)
from tests.app_helpers import no_errors, open_page, plotly_figures, sql, values

W48_START = "TIMESTAMPTZ '2026-11-23 00:00+00'"
W48_END = "TIMESTAMPTZ '2026-11-30 00:00+00'"


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_app_db(tmp_path_factory.mktemp("telemetry") / "fleet.duckdb")


@pytest.fixture
def use_db(app_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUFLEET_DB", str(app_db))
    return app_db


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
        "ECC single-bit errors", str(ECC_GPU), 32.0, 10.0)
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
    low = next(t for t in chart["data"] if t["name"] == "gpu 5 min")
    high = next(t for t in chart["data"] if t["name"] == "gpu 5 min-max")
    mean = next(t for t in chart["data"] if t["name"] == "gpu 5")
    assert high["fill"] == "tonexty"
    expected = sql(use_db, f"""
        SELECT min(value) AS lo, max(value) AS hi FROM gpu_samples
        WHERE node = 'gpu-000' AND gpu = 5 AND metric = 'DCGM_FI_DEV_SM_CLOCK'
          AND ts >= {W48_START} AND ts < {W48_END}""").row(0)
    lows = [v for v in values(low["y"]) if v is not None and not np.isnan(v)]
    highs = [v for v in values(high["y"]) if v is not None and not np.isnan(v)]
    means = [v for v in values(mean["y"]) if v is not None and not np.isnan(v)]
    # fixture: gpu 5 at 345 MHz idle, 1980 busy, 1500 throttled
    assert (min(lows), max(highs)) == expected == (345.0, 1980.0)
    assert all(lo <= m <= hi for lo, m, hi in zip(values(low["y"]), values(mean["y"]), values(high["y"]))
               if not np.isnan(m))
    assert len(lows) == len(highs) == len(means)


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
    assert not any(f["layout"]["title"]["text"].startswith("Clock-event") for f in plotly_figures(at))


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
        ({"field": "DCGM_FI_DEV_SM_CLOCK", "stat": "min"}, "DCGM_FI_DEV_SM_CLOCK", "min", "min(value)"),
        ({"field": "DCGM_FI_DEV_POWER_USAGE", "stat": "max"}, "DCGM_FI_DEV_POWER_USAGE", "max", "max(value)"),
    ],
)
def test_fleet_heatmap_is_nodes_by_hour(use_db: Path, query: dict, field: str, statistic: str,
                                        sql_value: str) -> None:
    at = open_page("telemetry", week="2026-W48", **query)
    no_errors(at)
    trace = heatmap(at)["data"][0]
    expected = sql(use_db, f"""
        SELECT node, time_bucket(INTERVAL 1 HOUR, ts) AS hour, {sql_value} AS v
        FROM gpu_samples WHERE metric = '{field}' AND ts >= {W48_START} AND ts < {W48_END}
        GROUP BY ALL ORDER BY node, hour""")
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


def test_rollup_from_an_older_version_asks_for_a_recompute(app_db: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
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
