"""XID events from a REAL Prometheus server when both of dcgm-exporter's XID signals are scraped:
the per-code count (`DCGM_EXP_XID_ERRORS_COUNT{xid}`) and the last-XID gauge
(`DCGM_FI_DEV_XID_ERRORS`). One XID is one event, also when the GPU stops reporting right
after it (the gauge then shows the new code only when the GPU comes back).

The fleet, node n1, scraped every 30 s from T0 for 30 min (times in seconds from T0):
- GPU 3: gauge 0 up to 540, silent until 1080, then 48. The count series of XID 48 reports
  once, 1 at 550 (the exporter's event), then 0 from 1080 (its window has passed).
  One XID: event (550, 48).
- GPU 4: gauge 0, then 13 from 600; no count series (the count collector did not see it).
  One XID seen by the gauge alone: event (600, 13).
- GPU 5: count of XID 48 is 1 at 90-360 and 0 after; gauge 0, 48 from 90, 13 from 690,
  48 again from 1200 (no count rise: an XID only the gauge saw).
  Events (90, 48) (both signals at one scrape), (690, 13), (1200, 48): the last is no repeat
  of the XID 48 at 90, which came before the gauge's previous reading (1170).
- GPU 6: count of XID 48 is 1 at 300-570 and 0 after; gauge 0, 48 from 300, 13 from 600, 48
  again from 900 (no count rise). Events (300, 48), (600, 13), (900, 48). When a run starts at
  900, the gauge's change is its first sample: the seed must say the gauge was last read at 870
  (after the counted XID at 300), or that XID would swallow the new one.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from pipelines.sources.prometheus import PrometheusSettings, ingest_prometheus
from testkit.prometheus_server import available, create_blocks, prometheus_server
from tests.conftest import require

T0 = datetime(2026, 11, 23, tzinfo=UTC)
END = T0 + timedelta(minutes=30)
SCRAPES = range(0, 1800, 30)

SETTINGS = PrometheusSettings(
    gpu_metrics=["DCGM_FI_DEV_GPU_UTIL"],
    node_metrics={},
    condition_metric="",
    unschedulable_metric="",
    scrape_interval_s=30,
)


def _gauge(t: int, gpu: int) -> int | None:
    """The last-XID gauge of `gpu` at scrape `t`, None while the GPU is silent."""
    if gpu == 3:
        return None if 540 < t < 1080 else (48 if t >= 1080 else 0)
    if gpu == 4:
        return 13 if t >= 600 else 0
    if gpu == 5:
        return 48 if t >= 1200 else 13 if t >= 690 else 48 if t >= 90 else 0
    return 48 if t >= 900 else 13 if t >= 600 else 48 if t >= 300 else 0


def _count_48(t: int, gpu: int) -> int | None:
    """The count series of XID 48 on `gpu` at `t` (None: no sample)."""
    if gpu == 3:
        return 1 if t == 550 else (0 if t >= 1080 else None)
    if gpu == 5 and t >= 90:
        return 1 if t <= 360 else 0
    if gpu == 6 and t >= 300:
        return 1 if t <= 570 else 0
    return None


def _exposition() -> str:
    def labels(gpu: int) -> str:
        return f'gpu="{gpu}",UUID="GPU-{gpu}",Hostname="n1"'

    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for gpu in (3, 4, 5, 6):
        for t in SCRAPES:
            if (value := _gauge(t, gpu)) is not None:
                lines.append(
                    f"DCGM_FI_DEV_XID_ERRORS{{{labels(gpu)}}} {value} {T0.timestamp() + t:.3f}"
                )
    lines.append("# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge")
    for gpu in (3, 5, 6):
        for t in sorted({*SCRAPES, 550}):
            if (count := _count_48(t, gpu)) is not None:
                lines.append(
                    f'DCGM_EXP_XID_ERRORS_COUNT{{{labels(gpu)},window_size_in_ms="300000",xid="48"}} '
                    f"{count} {T0.timestamp() + t:.3f}"
                )
    lines.append("# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
    for t in SCRAPES:
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels(0)}}} 50 {T0.timestamp() + t:.3f}")
    return "\n".join([*lines, "# EOF"]) + "\n"


EXPECTED = [
    (4, 600, 13),
    (3, 550, 48),
    (5, 90, 48),
    (5, 690, 13),
    (5, 1200, 48),
    (6, 300, 48),
    (6, 600, 13),
    (6, 900, 48),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require(available(), "Prometheus (Debian package `prometheus`)")
    root = tmp_path_factory.mktemp("xid")
    text = root / "xid.om.txt"
    text.write_text(_exposition())
    create_blocks(text, root / "data")
    with prometheus_server(root / "data") as srv:
        yield srv


def _events(con) -> list[tuple]:
    rows = con.execute(
        "SELECT gpu, epoch(ts)::BIGINT - $t0, code FROM gpu_events ORDER BY gpu, ts",
        {"t0": int(T0.timestamp())},
    ).fetchall()
    return sorted(rows, key=lambda r: (r[0] != 4, r[0], r[1]))


@pytest.mark.integration
def test_each_xid_lands_once_in_one_run(con, server):
    ingest_prometheus(con, server.url, T0, END, SETTINGS)
    assert _events(con) == EXPECTED


@pytest.mark.integration
@pytest.mark.parametrize("split_s", [570, 900, 1140])
def test_each_xid_lands_once_across_hourly_runs(con, server, split_s):
    """570: the count's event in the first run, the GPU silent at the split; 900: its gauge
    change in the second run, whose seed reads the gauge's last sample (540) before it, and
    GPU 6's change is the second run's first sample (its seed: last read at 870);
    1140: GPU 5's gauge reading before its second 48 falls in the second run."""
    ingest_prometheus(con, server.url, T0, T0 + timedelta(seconds=split_s), SETTINGS)
    ingest_prometheus(con, server.url, T0 + timedelta(seconds=split_s), END, SETTINGS)
    assert _events(con) == EXPECTED


@pytest.mark.integration
def test_the_gauge_alone_still_reports_every_change(con, server):
    """With the count series off, each change of the gauge to a new code is an event (the
    GPU 3 XID at the time the gauge first shows it)."""
    settings = dataclasses.replace(SETTINGS, xid_count_metric="")
    ingest_prometheus(con, server.url, T0, END, settings)
    # The same events, but GPU 3's XID at 1080, when the gauge first shows it (not the count's 550).
    assert _events(con) == [(3, 1080, 48) if e == (3, 550, 48) else e for e in EXPECTED]
