"""The node page's NVLink and network panels: NVLink traffic as a rate of the bandwidth counter
(queries/app/node_nvlink_traffic.sql over the 15-minute rollup; a reset counts as the new value,
never as a negative rate) and the network links up per hour against the expected count
(queries/app/node_nic_links.sql), on hand-worked samples; then both panels on the node page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.sample_rollups import update_gpu_samples_15m
from pipelines.sql import query_pl
from pipelines.store import open_store
from testkit.landing_rows import add_gpu_samples
from tests.app_fixture import NODES, build_app_db, name_clusters
from tests.app_helpers import no_errors, open_page, plotly_figures, values

MONDAY = datetime(2026, 11, 23, tzinfo=UTC)
WEEK = {"node": "n1", "cluster": "c1", "week_start": MONDAY, "week_end": MONDAY + timedelta(days=7)}
NVLINK = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"


def at(hour: int, minute: int = 0) -> datetime:
    """Monday 2026-11-23 <hour>:<minute> UTC (negative hours: the Sunday before)."""
    return MONDAY + timedelta(hours=hour, minutes=minute)


# gpu 0's NVLink bandwidth counter (MiB): one sample per 15-minute bucket, its last value
NVLINK_SAMPLES = [
    (at(-1, 50), 1_000.0),  # the bucket before the week: only the start of the first step
    (at(0, 5), 4_600.0),  # +3,600
    (at(0, 20), 8_200.0),  # +3,600
    (at(0, 35), 11_800.0),  # +3,600
    (at(0, 50), 15_400.0),  # +3,600 -> hour 0: 14,400 MiB = 4 MiB/s
    (at(1, 5), 720.0),  # reset (GPU reset): the new value, +720, never -14,680
    (at(1, 20), 1_440.0),  # +720 -> hour 1: 1,440 MiB = 0.4 MiB/s
]
# nic_links_up, one sample every 20 minutes; the node expects 4 links
NIC_SAMPLES = [
    (at(0, 0), 4.0),
    (at(0, 20), 3.0),
    (at(0, 40), 4.0),  # hour 0: fewest 3, most 4
    (at(1, 0), 4.0),
    (at(1, 20), 4.0),
    (at(1, 40), 4.0),  # hour 1: 4 all hour
    (at(2, 0), 2.0),  # hour 2: 2
]


@pytest.fixture
def con(tmp_path: Path):
    connection = open_store(tmp_path / "fleet.duckdb")
    add_gpu_samples(connection, [("c1", t, "n1", 0, "GPU-0", NVLINK, v) for t, v in NVLINK_SAMPLES])
    connection.executemany(
        "INSERT INTO node_samples VALUES ('c1', ?, 'n1', 'nic_links_up', ?)", NIC_SAMPLES
    )
    connection.execute("INSERT INTO nodes VALUES ('n1', 'c1', 'p5.48xlarge', 'H100', 8, 4)")
    update_gpu_samples_15m(connection)
    # the rollup's `cluster`, as compute gives a one-cluster database's derived tables
    yield connection
    connection.close()


@pytest.mark.parametrize(
    ("hour", "increase", "mib_per_s"),
    [
        (0, 14_400.0, 4.0),  # four steps of 3,600 MiB in 3,600 s
        (1, 1_440.0, 0.4),  # the reset counts as the new value (720), then +720
    ],
)
def test_nvlink_traffic_hourly(con, hour: int, increase: float, mib_per_s: float) -> None:
    frame = query_pl(con, "app/node_nvlink_traffic", {**WEEK, "bucket_s": 3600})
    rows = {r["bucket_ts"]: (r["increase"], r["mib_per_s"]) for r in frame.iter_rows(named=True)}
    assert rows[at(hour)] == pytest.approx((increase, mib_per_s))
    assert frame["bucket_ts"].min() == MONDAY  # the look-back bucket is not a row of its own
    lowest = frame["mib_per_s"].min()
    assert isinstance(lowest, float) and lowest >= 0  # a DOUBLE column, not empty


@pytest.mark.parametrize(
    ("hour", "fewest", "most", "samples"),
    [
        (0, 3.0, 4.0, 3),  # one scrape with a link down shows in `fewest`
        (1, 4.0, 4.0, 3),
        (2, 2.0, 2.0, 1),
    ],
)
def test_nic_links_hourly(con, hour: int, fewest: float, most: float, samples: int) -> None:
    frame = query_pl(con, "app/node_nic_links", {**WEEK, "bucket_s": 3600})
    rows = {r["bucket_ts"]: r for r in frame.iter_rows(named=True)}
    row = rows[at(hour)]
    assert (row["links_min"], row["links_max"], row["samples"], row["expected"]) == (
        fewest,
        most,
        samples,
        4,
    )


# ---------------------------------------------------------------- the node page

PANEL_NODE = next(iter(NODES))
T0 = datetime(2026, 11, 25, tzinfo=UTC)


@pytest.fixture
def panel_db(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The app fixture plus two hours of NVLink traffic on gpu 3 and a link down for an hour."""
    db = build_app_db(tmp_path_factory.mktemp("links") / "fleet.duckdb")
    con = duckdb.connect(str(db))
    expected, cluster = con.execute(
        "SELECT nic_expected, cluster FROM nodes WHERE node = ?", [PANEL_NODE]
    ).fetchall()[0]
    if expected is None:
        con.execute("UPDATE nodes SET nic_expected = 4 WHERE node = ?", [PANEL_NODE])
        expected = 4
    # 36,000 MiB per 15 minutes = 40 MiB/s
    add_gpu_samples(
        con,
        [
            (cluster, T0 + timedelta(minutes=15 * i), PANEL_NODE, 3, "GPU-x", NVLINK, 36_000.0 * i)
            for i in range(9)
        ],
    )
    con.executemany(
        "INSERT INTO node_samples VALUES (?, ?, ?, 'nic_links_up', ?)",
        [
            (cluster, T0 + timedelta(minutes=30 * i), PANEL_NODE, float(expected - (i == 2)))
            for i in range(6)
        ],
    )
    update_gpu_samples_15m(con)
    name_clusters(con)  # the rebuilt rollup's rows take their node's cluster, as compute's
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    return db


def test_node_page_shows_nvlink_and_network_panels(panel_db: Path) -> None:
    at_page = open_page("nodes", node=PANEL_NODE, week="2026-W48")
    no_errors(at_page)
    headings = [h.value for h in at_page.subheader]
    assert "NVLink" in headings and "Network (InfiniBand / EFA)" in headings
    figures = {f["layout"]["title"]["text"]: f for f in plotly_figures(at_page)}
    traffic = figures["NVLink traffic per GPU (MiB/s, hourly mean)"]
    assert [t["name"] for t in traffic["data"]] == ["gpu 3"]
    # 00:00-00:45: three steps of 36,000 MiB (the 00:00 sample only starts the series) = 108,000
    # MiB in 3,600 s = 30 MiB/s; 01:00-02:00: four steps = 40 MiB/s
    assert values(traffic["data"][0]["y"])[:2] == [30.0, 40.0]
    links = figures["Network links up (InfiniBand / EFA)"]
    fewest = next(t for t in links["data"] if t["name"] == "fewest up")
    row = (
        duckdb.connect(str(panel_db), read_only=True)
        .execute("SELECT nic_expected - 1 FROM nodes WHERE node = ?", [PANEL_NODE])
        .fetchone()
    )
    assert row is not None  # the panel node is in the inventory
    assert min(values(fewest["y"])) == float(row[0])
    assert any("Fewer links up than expected in 1 hour(s)" in w.value for w in at_page.warning)
