"""Prometheus ingest against a REAL Prometheus server serving backfilled landing data.

The fleet: 2 nodes x 8 GPUs x 2 h, scraped every 30 s, with a telemetry gap, a NotReady
spell, an Unknown spell, a cordon, NIC links dropping, and two XIDs. Ingesting it back must
reproduce the landing rows exactly (same count, same values).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import duckdb
import polars as pl
import pytest

from pipelines.contract import LANDING_TABLES
from pipelines.errors import ConfigError, SourceError
from pipelines.sources.pci import normalise_pci_bus_id
from pipelines.sources.prometheus import (
    PrometheusClient,
    PrometheusSettings,
    chunks,
    ingest_prometheus,
    job_of_labels,
    node_of,
    read_watermarks,
    redact_url,
)
from pipelines.sources.prometheus.stage import Stage
from pipelines.store import open_store, row_counts
from pipelines.times import parse_time
from testkit.equivalence import table_differences
from testkit.prometheus_server import (
    OPENSSL,
    Certificates,
    available,
    backfill,
    make_certificates,
    prometheus_server,
)
from tests.conftest import require

T0 = datetime(2026, 11, 23, tzinfo=UTC)
SCRAPE = timedelta(seconds=30)
POINTS = 240  # 2 h
NODES = ("gpu-node-01", "gpu-node-02")
GPU_METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
GAP = (T0 + timedelta(minutes=40), T0 + timedelta(minutes=50))  # node 02 GPU 3 silent


def _uuid(node: str, gpu: int) -> str:
    return f"GPU-{NODES.index(node):08x}-0000-4000-8000-{gpu:012x}"


def small_fleet() -> dict[str, pl.DataFrame]:
    times = [T0 + i * SCRAPE for i in range(POINTS)]
    gpu_rows = []
    for node in NODES:
        for gpu in range(8):
            for i, ts in enumerate(times):
                if node == NODES[1] and gpu == 3 and GAP[0] <= ts < GAP[1]:
                    continue
                gpu_rows.append(
                    (
                        ts,
                        node,
                        gpu,
                        _uuid(node, gpu),
                        "DCGM_FI_DEV_GPU_UTIL",
                        float((i * 7 + gpu) % 101),
                    )
                )
                gpu_rows.append(
                    (
                        ts,
                        node,
                        gpu,
                        _uuid(node, gpu),
                        "DCGM_FI_DEV_GPU_TEMP",
                        40.0 + gpu + (i % 5) * 0.5,
                    )
                )
                dbe = 1.0 if (node == NODES[0] and gpu == 2 and i >= 100) else 0.0
                gpu_rows.append(
                    (ts, node, gpu, _uuid(node, gpu), "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", dbe)
                )
    gpu_samples = pl.DataFrame(
        gpu_rows, schema=["ts", "node", "gpu", "uuid", "metric", "value"], orient="row"
    ).with_columns(pl.col("gpu").cast(pl.Int64))
    cond_rows = []
    for node in NODES:
        for i, ts in enumerate(times):
            status = "True"
            if node == NODES[0] and 60 <= i < 70:
                status = "False"
            if node == NODES[1] and 150 <= i < 155:
                status = "Unknown"
            cond_rows.append((ts, node, "Ready", status))
            cond_rows.append((ts, node, "MemoryPressure", "False"))
            cordoned = node == NODES[1] and 200 <= i < 230
            cond_rows.append((ts, node, "Unschedulable", "True" if cordoned else "False"))
    node_conditions = pl.DataFrame(
        cond_rows, schema=["ts", "node", "condition", "status"], orient="row"
    )
    ns_rows = []
    for node in NODES:
        for i, ts in enumerate(times):
            up = 6.0 if (node == NODES[0] and i >= 120) else 8.0
            ns_rows.append((ts, node, "nic_links_up", up))
            ns_rows.append(
                (ts, node, "nic_link_errors_total", float(i // 10 if node == NODES[0] else 0))
            )
    node_samples = pl.DataFrame(ns_rows, schema=["ts", "node", "metric", "value"], orient="row")
    gpu_events = pl.DataFrame(
        [
            (times[100], NODES[0], 2, _uuid(NODES[0], 2), "xid", 48),
            (times[170], NODES[1], 5, _uuid(NODES[1], 5), "xid", 79),
        ],
        schema=["ts", "node", "gpu", "uuid", "kind", "code"],
        orient="row",
    )
    nodes = pl.DataFrame(
        [
            (NODES[0], "train-a", "p5.48xlarge", "NVIDIA H100 80GB HBM3", 8, 8),
            (NODES[1], "train-a", "p5.48xlarge", "NVIDIA H100 80GB HBM3", 8, 8),
        ],
        schema=["node", "cluster", "instance_type", "gpu_model", "gpu_count", "nic_expected"],
        orient="row",
    )
    return {
        "gpu_samples": gpu_samples,
        "node_conditions": node_conditions,
        "node_samples": node_samples,
        "gpu_events": gpu_events,
        "nodes": nodes,
    }


SETTINGS = PrometheusSettings(chunk_s=1800, retries=1, backoff_s=0.05, timeout_s=20)
END = T0 + POINTS * SCRAPE  # 02:00, exclusive


@pytest.fixture(scope="module")
def fleet() -> dict[str, pl.DataFrame]:
    return small_fleet()


@pytest.fixture(scope="module")
def tsdb(tmp_path_factory, fleet) -> Path:
    require(available(), "Prometheus (Debian package `prometheus`: prometheus, promtool)")
    storage = tmp_path_factory.mktemp("prom") / "data"
    backfill(fleet, storage)
    return storage


@pytest.fixture(scope="module")
def server(tsdb):
    with prometheus_server(tsdb) as srv:
        yield srv


def _rows(con, sql: str) -> set[tuple]:
    return set(con.execute(sql).fetchall())


def _landing(frame: pl.DataFrame, columns: list[str], until: datetime = END) -> set[tuple]:
    return set(frame.filter(pl.col("ts") < until).select(columns).rows())


@pytest.mark.integration
def test_ingest_reproduces_the_landing_samples(con, server, fleet):
    report = ingest_prometheus(con, server.url, T0, END, SETTINGS)
    counts = row_counts(con)
    assert counts["gpu_samples"] == fleet["gpu_samples"].height  # 2*8*240*3 - 20*3 (gap)
    assert _rows(con, "SELECT ts, node, gpu, uuid, metric, value FROM gpu_samples") == _landing(
        fleet["gpu_samples"], ["ts", "node", "gpu", "uuid", "metric", "value"]
    )
    assert counts["node_conditions"] == fleet["node_conditions"].height
    assert _rows(con, "SELECT ts, node, condition, status FROM node_conditions") == _landing(
        fleet["node_conditions"], ["ts", "node", "condition", "status"]
    )
    assert _rows(con, "SELECT ts, node, metric, value FROM node_samples") == _landing(
        fleet["node_samples"], ["ts", "node", "metric", "value"]
    )
    assert _rows(con, "SELECT ts, node, gpu, uuid, kind, code FROM gpu_events") == _landing(
        fleet["gpu_events"], ["ts", "node", "gpu", "uuid", "kind", "code"]
    )
    assert _rows(con, "SELECT DISTINCT source FROM gpu_events") == {("dcgm",)}
    assert _rows(con, "SELECT * FROM nodes") == set(fleet["nodes"].rows())
    # The PCI bus id of each GPU is kept for the kernel-log ingest.
    assert _rows(
        con, "SELECT pci_bus_id FROM gpu_devices WHERE node = 'gpu-node-01' AND gpu = 3"
    ) == {("0000:48:00",)}
    # Default metrics the small fleet does not have are reported, not silently ignored.
    empty = [w for w in report.warnings if "enable them in dcgm-exporter's counters file" in w]
    assert len(empty) == 1 and "`DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL`" in empty[0]
    assert "`DCGM_FI_DEV_GPU_UTIL`" not in empty[0]
    # 4 chunks of 30 min per query; each sample fetched exactly once.
    assert all(q.end == END for q in report.queries)
    assert report.samples_fetched >= counts["gpu_samples"]


@pytest.mark.integration
def test_second_run_fetches_only_what_is_new(con, server, fleet):
    middle = T0 + timedelta(minutes=65)  # not on a chunk edge
    # The first window sees no series with the `cluster` label (kube_node_info is exported at the
    # window's ends only), so the cluster is given, as a fleet of several clusters must.
    first = ingest_prometheus(con, server.url, T0, middle, SETTINGS, cluster="train-a")
    gpu_first = row_counts(con)["gpu_samples"]
    assert gpu_first == fleet["gpu_samples"].filter(pl.col("ts") < middle).height
    marks = read_watermarks(con, "prometheus:" + server.url)
    assert marks["gpu:DCGM_FI_DEV_GPU_UTIL"] == middle
    second = ingest_prometheus(con, server.url, T0, END, SETTINGS)
    gpu_queries = [q for q in second.queries if q.key.startswith("gpu:DCGM_FI_DEV_GPU_UTIL")]
    assert [q.start for q in gpu_queries] == [middle]
    # Only the samples after the watermark were fetched: util samples in [01:05, 02:00).
    new_util = fleet["gpu_samples"].filter(
        (pl.col("ts") >= middle) & (pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL")
    )
    assert gpu_queries[0].samples == new_util.height
    assert row_counts(con)["gpu_samples"] == fleet["gpu_samples"].height
    # The XID that happened after the watermark is found once, the one before it is not repeated.
    assert con.execute("SELECT count(*) FROM gpu_events").fetchall()[0][0] == 2
    assert first.samples_fetched + second.samples_fetched > 0
    # A third run over the same window fetches nothing and changes nothing.
    third = ingest_prometheus(con, server.url, T0, END, SETTINGS)
    assert third.queries == [] and third.samples_fetched == 0
    assert row_counts(con)["gpu_samples"] == fleet["gpu_samples"].height


@pytest.mark.integration
def test_staging_spilled_to_tables_lands_what_memory_staging_lands(
    tmp_path, server, fleet, monkeypatch
):
    """A long backfill stages fetched chunks in temporary tables (Stage.SPILL_ROWS): the rows,
    their given cluster included, must be those of a run staged in memory."""
    in_memory = open_store(tmp_path / "memory.duckdb")
    ingest_prometheus(in_memory, server.url, T0, END, SETTINGS, cluster="train-a")

    spills = []
    spill = Stage._spill

    def counted(self, table):
        spills.append(table)
        spill(self, table)

    monkeypatch.setattr(Stage, "SPILL_ROWS", 500)
    monkeypatch.setattr(Stage, "_spill", counted)
    spilled = open_store(tmp_path / "spilled.duckdb")
    ingest_prometheus(spilled, server.url, T0, END, SETTINGS, cluster="train-a")

    assert spills.count("gpu_samples") > 2  # several spills, not one final flush
    assert row_counts(spilled)["gpu_samples"] == fleet["gpu_samples"].height
    assert spilled.execute("SELECT DISTINCT cluster FROM gpu_samples").fetchall() == [("train-a",)]
    for table in ("gpu_samples", "node_samples", "node_conditions", "gpu_events", "nodes"):
        assert table_differences(in_memory, spilled, table) is None


@pytest.mark.integration
def test_hostname_label_of_newer_exporters_and_downsampling(con, tmp_path, fleet):
    require(available(), "Prometheus (Debian package `prometheus`)")
    storage = tmp_path / "lower"
    subset = {k: v for k, v in fleet.items() if k in ("gpu_samples", "nodes")}
    backfill(subset, storage, host_label="hostname")
    settings = PrometheusSettings(chunk_s=3600, retries=0, gpu_metrics=list(GPU_METRICS))
    with prometheus_server(storage) as srv:
        ingest_prometheus(con, srv.url, T0, END, settings)
        assert row_counts(con)["gpu_samples"] == fleet["gpu_samples"].height
        # Push-down: one point per 10 min per series, the server's max for counters.
        report = ingest_prometheus(con, srv.url, T0, END, settings, downsample_s=600)
    # `max_over_time` drops `__name__`: the samples still land under the field that was queried.
    assert con.execute("SELECT count(*) FROM gpu_samples WHERE metric = ''").fetchall()[0][0] == 0
    downsampled = next(q for q in report.queries if q.key == "gpu:DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    # 16 series x 12 steps in [00:00, 02:00); the gap GPU has a value in every step too.
    assert downsampled.samples == 16 * 12
    assert downsampled.series == 16 * 2  # two 1-h chunks


@pytest.mark.integration
def test_server_dying_mid_ingest_leaves_the_database_as_it_was(con, tmp_path, fleet):
    require(available(), "Prometheus (Debian package `prometheus`)")
    storage = tmp_path / "dying"
    backfill(fleet, storage)
    with prometheus_server(storage) as srv:
        ingest_prometheus(con, srv.url, T0, T0 + timedelta(minutes=30), SETTINGS)
        before = row_counts(con)
        marks_before = read_watermarks(con, "prometheus:" + srv.url)

        def kill_after_first_chunk(n: int) -> None:
            if n == 1:
                stopper = threading.Thread(target=srv.stop)
                stopper.start()
                stopper.join()

        with pytest.raises(SourceError, match="could not be reached"):
            ingest_prometheus(con, srv.url, T0, END, SETTINGS, after_chunk=kill_after_first_chunk)
    assert row_counts(con) == before
    assert read_watermarks(con, "prometheus:" + srv.url) == marks_before
    assert (
        con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__stage%'"
        ).fetchall()[0][0]
        == 0
    )


@pytest.mark.integration
def test_an_empty_window_is_a_clear_error(con, server):
    with pytest.raises(SourceError, match="returned no samples"):
        ingest_prometheus(
            con,
            server.url,
            datetime(2020, 1, 1, tzinfo=UTC),
            datetime(2020, 1, 1, 1, tzinfo=UTC),
            SETTINGS,
        )
    assert row_counts(con)["gpu_samples"] == 0


@pytest.mark.integration
def test_a_bad_selector_names_the_query(con, server):
    settings = PrometheusSettings(gpu_metrics=["DCGM_FI_DEV_GPU_UTIL{"], retries=0)
    with pytest.raises(SourceError, match=r"rejected the query .*HTTP 400"):
        ingest_prometheus(con, server.url, T0, END, settings)


# ------------------------------------------------- HTTP behaviour: a small real server


class _Flaky(BaseHTTPRequestHandler):
    """Answers `status` `failures` times, then one sample for a range selector (an empty
    vector for anything else); records the auth headers it saw."""

    failures = 0
    seen: ClassVar[list[str | None]] = []
    status = 503

    def do_POST(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode()) | parse_qs(urlsplit(self.path).query)
        if type(self).failures > 0:
            type(self).failures -= 1
            self.send_response(type(self).status)
            self.end_headers()
            self.wfile.write(b'{"status":"error","error":"overloaded"}')
            return
        data: dict = {"resultType": "vector", "result": []}
        if form["query"][0].endswith("ms]"):
            at = float(form["time"][0])
            labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n1"}
            data = {
                "resultType": "matrix",
                "result": [{"metric": labels, "values": [[at - 30, "5"]]}],
            }
        body = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def flaky():
    _Flaky.seen = []
    _Flaky.failures = 0
    _Flaky.status = 503
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Flaky
    httpd.shutdown()
    httpd.server_close()


def test_5xx_is_retried_with_backoff_and_the_token_is_sent(con, flaky):
    url, handler = flaky
    handler.failures = 2
    settings = PrometheusSettings(
        gpu_metrics=["DCGM_FI_DEV_GPU_UTIL"],
        node_metrics={},
        xid_count_metric="",
        xid_last_metric="",
        condition_metric="",
        unschedulable_metric="",
        retries=3,
        backoff_s=0.01,
    )
    report = ingest_prometheus(
        con, url, T0, T0 + timedelta(minutes=10), settings, env={"GPUFLEET_PROM_TOKEN": "s3cret"}
    )
    assert handler.seen[:3] == ["Bearer s3cret"] * 3  # two 503s, then the answer
    assert row_counts(con)["gpu_samples"] == 1
    assert report.loads


def test_basic_auth_from_the_environment_and_a_401_never_shows_the_secret(con, flaky):
    url, handler = flaky
    handler.failures, handler.status = 1, 401
    settings = PrometheusSettings(gpu_metrics=["DCGM_FI_DEV_GPU_UTIL"], retries=3, backoff_s=0.01)
    with pytest.raises(SourceError) as err:
        ingest_prometheus(
            con,
            url,
            T0,
            T0 + timedelta(minutes=10),
            settings,
            env={"GPUFLEET_PROM_USER": "sre", "GPUFLEET_PROM_PASSWORD": "pa55word"},
        )
    assert "HTTP 401" in str(err.value) and "GPUFLEET_PROM_TOKEN" in str(err.value)
    assert "pa55word" not in str(err.value)
    assert handler.seen == [
        "Basic c3JlOnBhNTV3b3Jk"
    ]  # base64("sre:pa55word"); a 401 is not retried


def test_5xx_that_persists_is_a_source_error(con, flaky):
    url, handler = flaky
    handler.failures = 100
    settings = PrometheusSettings(gpu_metrics=["DCGM_FI_DEV_GPU_UTIL"], retries=2, backoff_s=0.01)
    with pytest.raises(SourceError, match=r"kept failing \(HTTP 503\) after 2 retries"):
        ingest_prometheus(con, url, T0, T0 + timedelta(minutes=10), settings)
    assert len(handler.seen) == 3


def test_unreachable_server_is_a_source_error(con):
    from testkit.prometheus_server import free_port

    settings = PrometheusSettings(retries=1, backoff_s=0.01, timeout_s=2)
    with pytest.raises(SourceError, match="could not be reached"):
        ingest_prometheus(
            con, f"http://user:pw@127.0.0.1:{free_port()}", T0, T0 + timedelta(hours=1), settings
        )


# ------------------------------------------------- pure helpers


@pytest.mark.parametrize(
    ("start", "end", "size", "expected"),
    [
        (0, 10, 5, [(0, 5), (5, 10)]),  # exact split: b of one chunk is a of the next
        (0, 11, 5, [(0, 5), (5, 10), (10, 11)]),  # a short last chunk
        (3, 4, 5, [(3, 4)]),  # window shorter than a chunk
        (5, 5, 5, []),  # empty window
    ],
)
def test_chunks_are_half_open_and_cover_the_window(start, end, size, expected):
    assert chunks(start, end, size) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-23T00:00:00Z", datetime(2026, 11, 23, tzinfo=UTC)),
        ("2026-11-23T01:00:00+01:00", datetime(2026, 11, 23, tzinfo=UTC)),  # offset converted
        ("2026-11-23T00:00:00", datetime(2026, 11, 23, tzinfo=UTC)),  # no offset: UTC
        ("now", datetime(2026, 12, 2, 12, tzinfo=UTC)),
        ("-7d", datetime(2026, 11, 25, 12, tzinfo=UTC)),  # 12:00 Dec 2 - 7 * 24 h
        ("-90m", datetime(2026, 12, 2, 10, 30, tzinfo=UTC)),
        ("-1w", datetime(2026, 11, 25, 12, tzinfo=UTC)),
    ],
)
def test_parse_time(text, expected):
    assert parse_time(text, now=datetime(2026, 12, 2, 12, tzinfo=UTC)) == expected


@pytest.mark.parametrize("text", ["yesterday", "-7x", "2026-13-01T00:00:00Z", ""])
def test_parse_time_rejects(text):
    with pytest.raises(ConfigError, match="is not a time"):
        parse_time(text)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"node": "n1", "Hostname": "dcgm-exporter-x7k"}, "n1"),  # target label beats the pod name
        ({"Hostname": "n2"}, "n2"),  # dcgm-exporter up to 4.8
        ({"hostname": "n3"}, "n3"),  # newer releases
        ({"instance": "10.0.0.7:9400"}, "10.0.0.7"),  # port dropped
        ({"instance": "[fe80::1]:9400"}, "fe80::1"),
        ({"Hostname": ""}, None),
    ],
)
def test_node_of(labels, expected):
    assert node_of(labels, ["node", "Hostname", "hostname", "instance"]) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("00000000:3B:00.0", "0000:3b:00"),  # dcgm-exporter label
        ("0000:3b:00", "0000:3b:00"),  # kernel NVRM message
        ("PCI:0000:af:00", "0000:af:00"),
        ("3b:00.0", "0000:3b:00"),
        ("zz:00", None),
    ],
)
def test_normalise_pci_bus_id(text, expected):
    assert normalise_pci_bus_id(text) == expected


def test_redact_url_drops_credentials():
    assert (
        redact_url("https://sre:secret@prom.example:9090/api/") == "https://prom.example:9090/api"
    )


def test_unknown_prometheus_setting_is_named():
    with pytest.raises(ConfigError, match="prometheus.chunk_seconds"):
        PrometheusSettings.from_extra({"prometheus": {"chunk_seconds": 60}})


# ------------------------------------------------- the command line


def _cli(db: Path, *args: str, env: dict | None = None):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    return subprocess.run(
        [sys.executable, "-m", "pipelines", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        check=False,
        env={**os.environ, "PYTHONPATH": str(root), "GPUFLEET_CONFIG": "", **(env or {})},
    )


@pytest.mark.integration
def test_cli_ingest_prometheus(tmp_path, server, fleet):
    db = tmp_path / "cli.duckdb"
    config = tmp_path / "gpufleet.toml"
    config.write_text('[prometheus]\nchunk_s = 3600\ngpu_metrics = ["DCGM_FI_DEV_GPU_UTIL"]\n')
    done = _cli(
        db,
        "--config",
        str(config),
        "ingest",
        "prometheus",
        "--url",
        server.url,
        "--start",
        "2026-11-23T00:00:00Z",
        "--end",
        "2026-11-23T02:00:00Z",
        env={"GPUFLEET_PROM_TOKEN": "tok-123"},
    )
    assert done.returncode == 0, done.stderr
    util = fleet["gpu_samples"].filter(pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL").height
    assert f"{util:,}" in done.stdout and "samples/s" in done.stdout
    assert "tok-123" not in done.stdout + done.stderr


def test_cli_unreachable_server_exits_2_with_one_clear_message(tmp_path):
    from testkit.prometheus_server import free_port

    config = tmp_path / "gpufleet.toml"
    config.write_text("[prometheus]\nretries = 0\n")
    done = _cli(
        tmp_path / "x.duckdb",
        "--config",
        str(config),
        "ingest",
        "prometheus",
        "--url",
        f"http://127.0.0.1:{free_port()}",
        "--start",
        "-1h",
    )
    assert done.returncode == 2
    assert "could not be reached" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------- TLS: the same fleet served over HTTPS


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Certificates:
    require(Path(OPENSSL).is_file(), "openssl (Debian package `openssl`)")
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, fleet, certificates):
    require(available(), "Prometheus (Debian package `prometheus`)")
    storage = tmp_path_factory.mktemp("prom-tls") / "data"
    backfill(fleet, storage)
    with prometheus_server(storage, tls=certificates) as srv:
        yield srv


@pytest.fixture
def no_ca_bundle(monkeypatch):
    """The test CA is unknown unless a test names it (requests reads these variables too)."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.integration
def test_tls_certificate_of_an_unknown_ca_is_refused_and_nothing_changes(
    con, server, tls_server, no_ca_bundle, caplog
):
    caplog.set_level(logging.DEBUG)
    ingest_prometheus(con, server.url, T0, T0 + timedelta(minutes=30), SETTINGS)
    before = row_counts(con)
    marks_before = con.execute("SELECT * FROM ingest_watermarks ORDER BY ALL").fetchall()
    with pytest.raises(SourceError) as err:
        ingest_prometheus(
            con, tls_server.url, T0, END, SETTINGS, env={"GPUFLEET_PROM_TOKEN": "tls-t0ken"}
        )
    assert str(err.value).startswith(
        f"The TLS certificate of {tls_server.url} could not be verified: unable to get local issuer certificate"
    )
    assert "REQUESTS_CA_BUNDLE" in str(err.value) and "--insecure" in str(err.value)
    assert before["gpu_samples"] > 0 and row_counts(con) == before
    assert con.execute("SELECT * FROM ingest_watermarks ORDER BY ALL").fetchall() == marks_before
    assert "tls-t0ken" not in str(err.value) + caplog.text


@pytest.mark.integration
def test_tls_with_the_ca_in_requests_ca_bundle_lands_what_plain_http_lands(
    tmp_path, server, tls_server, certificates, no_ca_bundle, fleet
):
    via_http, via_https = (
        open_store(tmp_path / "http.duckdb"),
        open_store(tmp_path / "https.duckdb"),
    )
    try:
        ingest_prometheus(via_http, server.url, T0, END, SETTINGS)
        report = ingest_prometheus(
            via_https,
            tls_server.url,
            T0,
            END,
            SETTINGS,
            env={"REQUESTS_CA_BUNDLE": str(certificates.ca_cert)},
        )
        assert row_counts(via_https)["gpu_samples"] == fleet["gpu_samples"].height
        assert row_counts(via_https) == row_counts(via_http)
        for table in PROMETHEUS_TABLES:
            assert table_differences(via_https, via_http, table, NOT_CARRIED) is None
        assert not [w for w in report.warnings if "TLS" in w]
    finally:
        via_http.close()
        via_https.close()


@pytest.mark.integration
def test_https_to_a_plain_http_port_is_a_handshake_error(con, server):
    https_url = server.url.replace("http://", "https://")
    with pytest.raises(
        SourceError, match=rf"TLS handshake with {https_url} failed \(wrong version number\)"
    ):
        ingest_prometheus(con, https_url, T0, END, SETTINGS)


def test_a_ca_bundle_that_does_not_exist_is_a_config_error(tmp_path):
    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(
        ConfigError, match=r"`.*no-such-ca.pem` named by REQUESTS_CA_BUNDLE does not exist"
    ):
        PrometheusClient(
            "https://prometheus.example:9090", SETTINGS, env={"REQUESTS_CA_BUNDLE": str(missing)}
        )


@pytest.mark.integration
def test_cli_insecure_skips_verification_and_says_so_once(tmp_path, tls_server, fleet):
    db = tmp_path / "cli.duckdb"
    config = tmp_path / "gpufleet.toml"
    config.write_text('[prometheus]\nchunk_s = 3600\ngpu_metrics = ["DCGM_FI_DEV_GPU_UTIL"]\n')
    args = [
        "--config",
        str(config),
        "ingest",
        "prometheus",
        "--url",
        tls_server.url,
        "--start",
        "2026-11-23T00:00:00Z",
        "--end",
        "2026-11-23T02:00:00Z",
    ]
    no_bundle = {"REQUESTS_CA_BUNDLE": "", "CURL_CA_BUNDLE": ""}
    refused = _cli(db, *args, env=no_bundle)
    assert refused.returncode == 2
    assert (
        "could not be verified" in " ".join(refused.stderr.split())
        and "Traceback" not in refused.stderr
    )
    done = _cli(db, *args, "--insecure", env=no_bundle)
    assert done.returncode == 0, done.stderr
    util = fleet["gpu_samples"].filter(pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL").height
    assert f"{util:,}" in done.stdout
    # One warning in the report instead of urllib3's on every request (the console wraps lines).
    assert " ".join(done.stderr.split()).count("was not verified (--insecure)") == 1
    assert "InsecureRequestWarning" not in done.stderr


# ------------------------------------------------- EFA: the documented node_metrics mapping


def _documented_efa_mapping() -> dict[str, dict[str, str]]:
    import re
    import tomllib

    doc = (Path(__file__).resolve().parent.parent / "docs" / "sources.md").read_text()
    blocks = [
        tomllib.loads(b)
        for b in re.findall(r"```toml\n(.*?)```", doc, re.DOTALL)
        if "node_amazonefa_" in b
    ]
    assert len(blocks) == 1, "docs/sources.md should have one EFA node_metrics example"
    return blocks[0]["prometheus"]["node_metrics"]


@pytest.mark.integration
def test_documented_efa_mapping_counts_adapters_and_sums_error_counters(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Series as the EFA node exporter's `amazonefa` collector names and labels them."""
    require(available(), "Prometheus (Debian package `prometheus`)")
    from testkit.prometheus_server import create_blocks

    t0 = T0.timestamp()
    devices = ("rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27")
    rx_drops = {"rdmap16s27": [0, 0, 2, 5]}  # per scrape; other adapters stay 0
    read_errors = {"rdmap32s27": [0, 1, 1, 1]}
    target = 'node="gpu-node-01",instance="10.0.0.7:9100",job="efa-node-exporter"'
    families: dict[str, list[str]] = defaultdict(list)
    for i in range(4):  # 4 scrapes, 30 s apart; rdmap160s27 is gone from the third on
        at = f"{t0 + 30 * i:.3f}"
        for device in devices[:3] if i >= 2 else devices:
            families["node_amazonefa_info"].append(f'{{device="{device}",{target}}} 1 {at}')
            port = f'{{device="{device}",port="1",{target}}}'
            families["node_amazonefa_rx_drops"].append(
                f"{port} {rx_drops.get(device, [0] * 4)[i]} {at}"
            )
            families["node_amazonefa_rdma_read_wr_err"].append(
                f"{port} {read_errors.get(device, [0] * 4)[i]} {at}"
            )
            families["node_amazonefa_tx_bytes"].append(
                f"{port} {1.047e12 + i * 1e9} {at}"
            )  # traffic, not errors
    lines = []
    for name, samples in families.items():
        lines.append(
            f"# TYPE {name} gauge"
        )  # OpenMetrics counters would need `_total`; the exporter has none
        lines.extend(f"{name}{sample}" for sample in samples)
    text = tmp_path / "efa.om.txt"
    text.write_text("\n".join([*lines, "# EOF"]) + "\n")
    storage = tmp_path / "efa"
    create_blocks(text, storage)
    settings = PrometheusSettings.from_extra(
        {
            "prometheus": {
                "node_metrics": _documented_efa_mapping(),
                "gpu_metrics": [],
                "xid_count_metric": "",
                "xid_last_metric": "",
                "condition_metric": "",
                "unschedulable_metric": "",
            }
        }
    )
    with prometheus_server(storage) as srv:
        ingest_prometheus(con, srv.url, T0, T0 + timedelta(minutes=5), settings)
    landed = con.execute(
        "SELECT metric, list(value ORDER BY ts) FROM node_samples WHERE node = 'gpu-node-01' GROUP BY metric"
    ).fetchall()
    assert dict(landed) == {
        "nic_links_up": [4.0, 4.0, 3.0, 3.0],
        "nic_link_errors_total": [0.0, 1.0, 3.0, 6.0],
    }


# ------------------------------------------------- the simulator through a real Prometheus

PROMETHEUS_TABLES = ("gpu_samples", "node_samples", "node_conditions", "gpu_events", "nodes")
# Columns kube-state-metrics does not carry (condition reasons, and the evidence texts that
# quote them: `hardware_signal` says "AcceleratedHardwareReady=False (NvidiaXID79Error)"),
# or that name the source. Every number must match.
NOT_CARRIED = {"reason", "message", "source", "evidence", "hardware_signal"}


@pytest.mark.integration
@pytest.mark.slow
# 2026-11-30: an XID 48 after which its GPU is silent for 9 minutes (both XID signals scraped).
@pytest.mark.parametrize("start", ["2026-11-23", "2026-11-30"])
def test_simulated_fleet_round_trips_through_prometheus(tmp_path, start):
    require(available(), "Prometheus (Debian package `prometheus`)")
    from pipelines.compute import BOOKKEEPING_TABLES, compute
    from pipelines.config import Settings
    from pipelines.simulate import SimulationConfig, simulate
    from pipelines.store import TableInput, load_batch, open_store

    # Fixed starts: the default follows today's date, and the fleet with it.
    frames = simulate(SimulationConfig.create(nodes=1, days=1, seed=3, start=start))
    storage = tmp_path / "sim"
    backfill(frames, storage)
    direct = open_store(tmp_path / "direct.duckdb")
    via_prom = open_store(tmp_path / "prom.duckdb")
    landing = [t for t in frames if t in LANDING_TABLES]  # not the simulator's ground truths
    load_batch(
        direct,
        [TableInput(t, frames[t].with_row_index("__row", 1), t) for t in landing],
        "simulator",
    )
    # What Prometheus does not carry (jobs, steps, checkpoints, maintenance) comes from files.
    others = [t for t in landing if t not in PROMETHEUS_TABLES]
    load_batch(
        via_prom,
        [TableInput(t, frames[t].with_row_index("__row", 1), t) for t in others],
        "simulator",
    )
    start = frames["gpu_samples"]["ts"].min()
    end = max(
        frames[t]["ts"].max() for t in ("gpu_samples", "node_samples", "node_conditions")
    ) + timedelta(seconds=1)
    with prometheus_server(storage) as srv:
        ingest_prometheus(via_prom, srv.url, start, end, PrometheusSettings(scrape_interval_s=60))
    for table in PROMETHEUS_TABLES:
        assert table_differences(via_prom, direct, table, NOT_CARRIED) is None
    # Every derived table (metrics, anomalies) computed from either database is the same.
    landing_and_bookkeeping = set(landing) | BOOKKEEPING_TABLES
    compute(direct, Settings())
    compute(via_prom, Settings())
    derived = [
        r[0]
        for r in direct.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT temporary"
        ).fetchall()
        if r[0] not in landing_and_bookkeeping
    ]
    for table in derived:
        if table == "node_state_intervals":
            # Intervals split where their reason changes, and reasons are not carried (a condition's
            # reason text, e.g. `NvidiaXID79Error`, is not in kube-state-metrics): compare state runs.
            assert _state_runs(via_prom) == _state_runs(direct), table
            continue
        assert table_differences(via_prom, direct, table, NOT_CARRIED) is None


def _state_runs(con) -> list[tuple]:
    """node_state_intervals with adjacent intervals of the same state merged."""
    runs: list[list] = []
    for node, start, end, state in con.execute(
        "SELECT node, start_ts, end_ts, state FROM node_state_intervals ORDER BY node, start_ts"
    ).fetchall():
        if runs and runs[-1][0] == node and runs[-1][3] == state and runs[-1][2] == start:
            runs[-1][2] = end
        else:
            runs.append([node, start, end, state])
    return [tuple(run) for run in runs]


@pytest.mark.integration
def test_one_gpu_scraped_by_two_jobs_lands_once(con, tmp_path):
    require(available(), "Prometheus (Debian package `prometheus`)")
    from testkit.prometheus_server import create_blocks

    t0 = T0.timestamp()
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for job in ("dcgm-a", "dcgm-b"):
        for i in range(3):  # 3 scrapes, 30 s apart
            lines.append(
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-1",Hostname="n1",job="{job}"}} {10 + i} {t0 + 30 * i:.3f}'
            )
    lines.append("# EOF")
    text = tmp_path / "dup.om.txt"
    text.write_text("\n".join(lines) + "\n")
    storage = tmp_path / "dup"
    create_blocks(text, storage)
    with prometheus_server(storage) as srv:
        ingest_prometheus(
            con,
            srv.url,
            T0,
            T0 + timedelta(minutes=5),
            PrometheusSettings(gpu_metrics=["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL"]),
        )
    # Two series x 3 samples, listed twice in the settings: still 3 rows.
    assert con.execute("SELECT value FROM gpu_samples ORDER BY ts").fetchall() == [
        (10.0,),
        (11.0,),
        (12.0,),
    ]


def test_the_window_stops_settle_s_before_now(con, flaky):
    url, _handler = flaky
    settings = PrometheusSettings(
        gpu_metrics=["DCGM_FI_DEV_GPU_UTIL"],
        node_metrics={},
        xid_count_metric="",
        xid_last_metric="",
        condition_metric="",
        unschedulable_metric="",
        settle_s=120,
    )
    now = datetime.now(UTC)
    report = ingest_prometheus(
        con, url, now - timedelta(hours=1), now + timedelta(hours=1), settings
    )
    # The end moved back to (about) now - 120 s: the run started after `now`, so allow its length.
    assert (
        now - timedelta(seconds=120)
        <= report.queries[0].end
        <= datetime.now(UTC) - timedelta(seconds=120)
    )
    with pytest.raises(ConfigError, match="nothing is settled"):
        ingest_prometheus(con, url, now - timedelta(seconds=60), now, settings)


@pytest.mark.integration
def test_mig_instance_series_land_with_their_instance_id_and_profile(con, tmp_path):
    """dcgm-exporter's exact MIG label set (render_metrics.go: GPU_I_PROFILE, GPU_I_ID after
    modelName, then the driver version, then the pod / hpc_job attributes). Instance series land
    in gpu_instance_samples, never in gpu_samples; the whole-device series of the same GPU does."""
    require(available(), "Prometheus (Debian package `prometheus`)")
    from testkit.prometheus_server import create_blocks

    t0 = T0.timestamp()
    device = (
        'gpu="0",UUID="GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167",pci_bus_id="00000000:53:00.0",'
        'device="nvidia0",modelName="NVIDIA A100 80GB PCIe"'
    )
    instances = (
        # (GPU_I_PROFILE, GPU_I_ID, attributes, activity per scrape)
        ("3g.40gb", "1", 'container="vllm",namespace="serving",pod="chat-worker-0"', (0.5, 0.6)),
        ("2g.20gb", "5", 'container="",namespace="",pod="",hpc_job="4711"', (0.1, 0.2)),
        ("1g.10gb", "13", 'container="",namespace="",pod=""', (0.0, 0.0)),
    )
    lines = ["# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    for i in range(2):  # 2 scrapes, 30 s apart
        at = f"{t0 + 30 * i:.3f}"
        for profile, gi, attributes, activity in instances:
            lines.append(
                f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{device},GPU_I_PROFILE="{profile}",GPU_I_ID="{gi}",'
                f'Hostname="gpu-node-07",DCGM_FI_DRIVER_VERSION="550.54.15",{attributes}}} {activity[i]} {at}'
            )
    lines.append("# TYPE DCGM_FI_DEV_GPU_TEMP gauge")
    for i in range(2):
        lines.append(
            f'DCGM_FI_DEV_GPU_TEMP{{{device},Hostname="gpu-node-07",DCGM_FI_DRIVER_VERSION="550.54.15"}} '
            f"{40 + i} {t0 + 30 * i:.3f}"
        )
    # An XID reported on an instance's series still names the physical GPU.
    lines.append("# TYPE DCGM_FI_DEV_XID_ERRORS gauge")
    for i, code in enumerate((0, 48)):
        lines.append(
            f'DCGM_FI_DEV_XID_ERRORS{{{device},GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",'
            f'Hostname="gpu-node-07",DCGM_FI_DRIVER_VERSION="550.54.15"}} {code} {t0 + 30 * i:.3f}'
        )
    lines.append("# EOF")
    text = tmp_path / "mig.om.txt"
    text.write_text("\n".join(lines) + "\n")
    storage = tmp_path / "mig"
    create_blocks(text, storage)
    settings = PrometheusSettings(
        gpu_metrics=["DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_TEMP"]
    )
    with prometheus_server(storage) as srv:
        report = ingest_prometheus(con, srv.url, T0, T0 + timedelta(minutes=5), settings)
    landed = con.execute(
        "SELECT node, gpu, uuid, gpu_i_id, gpu_i_profile, job_id, list(value ORDER BY ts) "
        "FROM gpu_instance_samples GROUP BY ALL ORDER BY gpu_i_id"
    ).fetchall()
    uuid = "GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167"
    assert landed == [
        (
            "gpu-node-07",
            0,
            uuid,
            1,
            "3g.40gb",
            "serving/chat",
            [0.5, 0.6],
        ),  # Kubeflow replica suffix dropped
        ("gpu-node-07", 0, uuid, 5, "2g.20gb", "4711", [0.1, 0.2]),  # Slurm hpc_job
        ("gpu-node-07", 0, uuid, 13, "1g.10gb", None, [0.0, 0.0]),  # no workload on it
    ]
    # Device health reads only the whole-device series.
    assert con.execute(
        "SELECT metric, list(value ORDER BY ts) FROM gpu_samples GROUP BY metric"
    ).fetchall() == [("DCGM_FI_DEV_GPU_TEMP", [40.0, 41.0])]
    assert not any("skipped" in w for w in report.warnings)
    assert con.execute("SELECT node, gpu, uuid, kind, code FROM gpu_events").fetchall() == [
        ("gpu-node-07", 0, uuid, "xid", 48)
    ]


@pytest.mark.parametrize(
    "labels, expected",
    [
        (
            {"hpc_job": "123", "pod": "x-abcde"},
            "123",
        ),  # Slurm wins: hpc_job is the scheduler's own id
        ({"pod": "train-worker-3", "namespace": "ml"}, "ml/train"),  # Kubeflow replica
        ({"pod": "batch-infer-7xk2p", "namespace": "ml"}, "ml/batch-infer"),  # batch Job pod
        (
            {"pod_name": "chat-master-0", "pod_namespace": "serve"},
            "serve/chat",
        ),  # 1.x attribute names
        ({"pod": "", "namespace": ""}, None),
        ({}, None),
    ],
)
def test_job_of_dcgm_exporter_labels(labels, expected):
    assert job_of_labels(labels) == expected
