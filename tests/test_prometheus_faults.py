"""Partial and odd answers from a store, through a fault-injecting proxy in front of a REAL
Prometheus serving the small fleet of test_prometheus.py.

Partial answers (Thanos/Mimir `warnings`, VictoriaMetrics `isPartial`) are never loaded as
complete; --allow-partial loads them, lists the windows as incomplete, and a later complete
run fills them. Odd answers are one clear line; secrets never appear in any message.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import unicodedata
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import ConfigError, SourceError
from pipelines.sources.prometheus import (
    PrometheusClient,
    PrometheusSettings,
    ingest_prometheus,
    read_incomplete,
    read_watermarks,
)
from pipelines.sources.prometheus import parse_matrix as _matrix
from pipelines.store import row_counts
from testkit.prometheus_server import available, backfill, free_port, prometheus_server
from tests.conftest import require
from tests.fault_proxy import ANNOTATION, THANOS_WARNING, Request, fault_proxy
from tests.test_prometheus import END, SETTINGS, T0, _landing, small_fleet

ROOT = Path(__file__).resolve().parent.parent
SECRET = "SECRETTOKEN-abc123"


@pytest.fixture(scope="module")
def fleet() -> dict[str, pl.DataFrame]:
    return small_fleet()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory, fleet):
    require(available(), "Prometheus (Debian package `prometheus`: prometheus, promtool)")
    storage = tmp_path_factory.mktemp("prom-faults") / "data"
    backfill(fleet, storage)
    with prometheus_server(storage) as srv:
        yield srv


@pytest.fixture
def proxy(upstream):
    with fault_proxy(upstream.url) as p:
        yield p


def _source(proxy) -> str:
    return f"prometheus:{proxy.url}"


def _is_range(r: Request) -> bool:
    return r.query.endswith("ms]")


def every_second_range_query(fault: str, attempts: int = 99):
    """`fault` on every 2nd range query, counting queries and chunks: of the 1st selector the
    2nd, 4th, ... chunk, of the 2nd selector the 1st, 3rd, ...; for its first `attempts` tries."""
    selectors: dict[str, int] = {}
    times: dict[str, dict[str, int]] = {}

    def plan(r: Request) -> str | None:
        if not _is_range(r):
            return None
        selector = r.query.rsplit("[", 1)[0]
        n = selectors.setdefault(selector, len(selectors))
        chunk = times.setdefault(selector, {}).setdefault(r.time, len(times[selector]))
        return fault if (n + chunk) % 2 == 1 and r.attempt <= attempts else None

    return plan


# What each query key lands, to compare what is stored below its watermark with the data.
def _stored_and_expected(con, fleet, key: str) -> tuple[set, set]:
    kind, _, name = key.partition(":")
    if kind == "gpu":
        stored = set(
            con.execute(
                "SELECT ts, node, gpu, metric, value FROM gpu_samples WHERE metric = $m",
                {"m": name},
            ).fetchall()
        )
        expected = (
            fleet["gpu_samples"]
            .filter(pl.col("metric") == name)
            .select("ts", "node", "gpu", "metric", "value")
        )
    elif kind == "node":
        stored = set(
            con.execute(
                "SELECT ts, node, metric, value FROM node_samples WHERE metric = $m", {"m": name}
            ).fetchall()
        )
        expected = (
            fleet["node_samples"]
            .filter(pl.col("metric") == name)
            .select("ts", "node", "metric", "value")
        )
    elif key == "kube:conditions":
        stored = set(
            con.execute(
                "SELECT ts, node, condition, status FROM node_conditions "
                "WHERE condition <> 'Unschedulable'"
            ).fetchall()
        )
        expected = (
            fleet["node_conditions"]
            .filter(pl.col("condition") != "Unschedulable")
            .select("ts", "node", "condition", "status")
        )
    elif key == "kube:unschedulable":
        stored = set(
            con.execute(
                "SELECT ts, node, condition, status FROM node_conditions "
                "WHERE condition = 'Unschedulable'"
            ).fetchall()
        )
        expected = (
            fleet["node_conditions"]
            .filter(pl.col("condition") == "Unschedulable")
            .select("ts", "node", "condition", "status")
        )
    else:  # xid:count, xid:last land the same events
        stored = set(con.execute("SELECT ts, node, gpu, kind, code FROM gpu_events").fetchall())
        expected = fleet["gpu_events"].select("ts", "node", "gpu", "kind", "code")
    return stored, set(expected.rows())


def assert_nothing_partial_stored_as_complete(con, fleet, source: str) -> None:
    """Below each query's watermark (outside windows listed as incomplete) the store holds
    exactly the data; above it, nothing the data does not have."""
    marks = read_watermarks(con, source)
    incomplete = read_incomplete(con, source)
    for key, mark in marks.items():
        stored, expected = _stored_and_expected(con, fleet, key)
        assert stored <= expected, key  # never a wrong row
        holes = incomplete.get(key, [])
        if key.startswith(
            "xid:"
        ):  # both XID queries land the same events: the earlier mark bounds them
            count_mark, last_mark = marks.get("xid:count"), marks.get("xid:last")
            if count_mark is None or last_mark is None:
                continue
            mark = min(count_mark, last_mark)
            holes = incomplete.get("xid:count", []) + incomplete.get("xid:last", [])
        below = {
            row for row in expected if row[0] < mark and not any(a <= row[0] < b for a, b in holes)
        }
        assert below <= stored, (
            f"{key}: {len(below - stored)} rows below the watermark {mark} are missing"
        )


def assert_landing_equals_data(con, fleet) -> None:
    assert row_counts(con)["gpu_samples"] == fleet["gpu_samples"].height
    assert set(
        con.execute("SELECT ts, node, gpu, uuid, metric, value FROM gpu_samples").fetchall()
    ) == _landing(fleet["gpu_samples"], ["ts", "node", "gpu", "uuid", "metric", "value"])
    assert set(
        con.execute("SELECT ts, node, condition, status FROM node_conditions").fetchall()
    ) == _landing(fleet["node_conditions"], ["ts", "node", "condition", "status"])
    assert set(
        con.execute("SELECT ts, node, metric, value FROM node_samples").fetchall()
    ) == _landing(fleet["node_samples"], ["ts", "node", "metric", "value"])
    assert set(
        con.execute("SELECT ts, node, gpu, uuid, kind, code FROM gpu_events").fetchall()
    ) == _landing(fleet["gpu_events"], ["ts", "node", "gpu", "uuid", "kind", "code"])
    assert set(con.execute("SELECT * FROM nodes").fetchall()) == set(fleet["nodes"].rows())


# ------------------------------------------------- partial answers, refused


@pytest.mark.integration
def test_partial_answers_in_both_dialects_are_never_stored_as_complete(con, proxy, fleet):
    source = _source(proxy)
    hours = [T0 + timedelta(hours=1), T0 + timedelta(minutes=90), END]
    # Run 1, Thanos/Mimir dialect: every 2nd range query keeps answering half its series with a warning.
    proxy.reset(every_second_range_query("partial"))
    first = ingest_prometheus(con, proxy.url, T0, hours[0], SETTINGS)
    assert first.partial and not first.partial_loaded
    assert {p.warning for p in first.partial} == {THANOS_WARNING}
    assert any(f == "partial" for f, _ in proxy.faults)
    assert_nothing_partial_stored_as_complete(con, fleet, source)
    marks = read_watermarks(con, source)
    # Each query's watermark stops at the start of its chunk that stayed partial (none: it never moved).
    first_partial = {p.query_key: p.start for p in first.partial}
    assert {k: marks.get(k) for k in first_partial} == {
        k: (None if a == T0 else a) for k, a in first_partial.items()
    }
    assert set(first_partial.values()) == {T0, T0 + timedelta(minutes=30)}
    log = con.execute(
        "SELECT partial_chunks, loaded_chunks, warning FROM ingest_partial_log"
    ).fetchall()
    assert log == [(len(first.partial), 0, THANOS_WARNING)]
    assert con.execute("SELECT count(*) FROM ingest_incomplete").fetchall()[0][0] == 0

    # Run 2, VictoriaMetrics dialect, a later end.
    proxy.reset(every_second_range_query("vm_partial"))
    second = ingest_prometheus(con, proxy.url, T0, hours[1], SETTINGS)
    assert second.partial and {p.warning for p in second.partial} == {
        "isPartial: true (some storage nodes did not answer)"
    }
    assert_nothing_partial_stored_as_complete(con, fleet, source)

    # Run 3: a partial answer that a retry gets complete is loaded as complete.
    proxy.reset(every_second_range_query("partial", attempts=1))
    third = ingest_prometheus(con, proxy.url, T0, hours[2], SETTINGS)
    assert not third.partial and any(f == "partial" for f, _ in proxy.faults)
    assert_nothing_partial_stored_as_complete(con, fleet, source)

    # Run 4: the store is healthy again; the incremental runs end with exactly the data.
    proxy.reset()
    fourth = ingest_prometheus(con, proxy.url, T0, END, SETTINGS)
    assert not fourth.partial
    assert_landing_equals_data(con, fleet)
    assert all(m == END for m in read_watermarks(con, source).values())


@pytest.mark.integration
def test_complete_answers_ask_for_no_partial_response_and_show_annotations(con, proxy, fleet):
    proxy.reset(lambda r: "annotation" if "DCGM_FI_DEV_GPU_UTIL[" in r.query else None)
    report = ingest_prometheus(con, proxy.url, T0, END, SETTINGS)
    assert not report.partial
    assert report.warnings.count(f"The store said: {ANNOTATION}") == 1  # shown once, not per chunk
    assert {r.form.get("partial_response") for r in proxy.seen} == {"false"}  # Thanos
    assert {r.form.get("deny_partial_response") for r in proxy.seen} == {"1"}  # VictoriaMetrics
    assert_landing_equals_data(con, fleet)


@pytest.mark.integration
def test_a_store_down_without_partial_response_is_retried_then_named(con, proxy, fleet):
    # Once: the retry gets the answer, everything lands.
    proxy.reset(lambda r: "store_down" if _is_range(r) and r.attempt == 1 else None)
    ingest_prometheus(con, proxy.url, T0, END, _one_metric())
    util = fleet["gpu_samples"].filter(pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL").height
    assert row_counts(con)["gpu_samples"] == util
    # Always: one line naming what the store said, after the retries.
    proxy.reset(lambda r: "store_down" if _is_range(r) else None)
    with pytest.raises(
        SourceError,
        match=r"could not run the query .*\(HTTP 422: fetch series for .* after 1 retries",
    ):
        ingest_prometheus(con, proxy.url, T0, END + timedelta(hours=1), _one_metric())


# ------------------------------------------------- partial answers, allowed


@pytest.mark.integration
def test_allow_partial_lists_incomplete_windows_until_a_complete_run_fills_them(
    con, proxy, fleet, tmp_path
):
    source = _source(proxy)
    proxy.reset(every_second_range_query("vm_partial"))
    first = ingest_prometheus(con, proxy.url, T0, END, SETTINGS, allow_partial=True)
    assert first.partial and first.partial == first.partial_loaded
    windows = read_incomplete(con, source)
    assert sum(len(w) for w in windows.values()) == len(first.partial)
    # What came was loaded: fewer GPU samples than the data, none wrong; every watermark at the end.
    stored = set(
        con.execute("SELECT ts, node, gpu, uuid, metric, value FROM gpu_samples").fetchall()
    )
    assert stored < _landing(fleet["gpu_samples"], ["ts", "node", "gpu", "uuid", "metric", "value"])
    assert all(m == END for m in read_watermarks(con, source).values())
    assert_nothing_partial_stored_as_complete(con, fleet, source)
    assert con.execute(
        "SELECT partial_chunks, loaded_chunks FROM ingest_partial_log"
    ).fetchall() == [(len(first.partial), len(first.partial))]

    # The dashboard's data status part and the report list them.
    from pipelines.sql import query_pl

    listed = query_pl(con, "app/incomplete_windows")
    assert listed.height == len({(p.start, p.end) for p in first.partial})
    assert (
        listed["store_said"].to_list()
        == ["isPartial: true (some storage nodes did not answer)"] * listed.height
    )
    report_rows = query_pl(con, "report/incomplete_windows", {"week_start": T0.date()})
    assert report_rows.height == listed.height

    # A run with a healthy store fetches only those windows again, fills them, clears the list.
    proxy.reset()
    second = ingest_prometheus(con, proxy.url, T0, END, SETTINGS, allow_partial=True)
    assert not second.partial and second.refilled == len(first.partial)
    # Only the incomplete windows were fetched again.
    assert {(q.key, q.start, q.end) for q in second.queries} == {
        (p.query_key, p.start, p.end) for p in first.partial
    }
    assert read_incomplete(con, source) == {}
    assert query_pl(con, "app/incomplete_windows").is_empty()
    assert_landing_equals_data(con, fleet)


@pytest.mark.integration
def test_incomplete_windows_on_the_data_status_part_and_in_the_report(
    tmp_path, proxy, fleet, monkeypatch
):
    """The app's sidebar and the report (Markdown) say which windows the store answered in part."""
    from streamlit.testing.v1 import AppTest

    from pipelines.compute import compute
    from pipelines.config import Settings
    from pipelines.report import build_report, to_markdown
    from pipelines.store import open_store
    from pipelines.weeks import IsoWeek

    db = tmp_path / "fleet.duckdb"
    con = open_store(db)
    first_chunk_at = f"{(T0 + timedelta(minutes=30)).timestamp() - 0.001:.3f}"
    proxy.reset(
        lambda r: (
            "partial"
            if r.query.startswith("DCGM_FI_DEV_GPU_TEMP[") and r.time == first_chunk_at
            else None
        )
    )
    report = ingest_prometheus(con, proxy.url, T0, END, SETTINGS, allow_partial=True)
    assert [(p.query_key, p.start, p.end) for p in report.partial] == [
        ("gpu:DCGM_FI_DEV_GPU_TEMP", T0, T0 + timedelta(minutes=30))
    ]
    compute(con, Settings())
    week = IsoWeek.parse("2026-W48")
    markdown = to_markdown(build_report(con, week))
    assert "## Telemetry incomplete from the store" in markdown
    # (cells are Markdown-escaped: `_` as `\_`)
    assert "| 2026-11-23 00:00 | 2026-11-23 00:30 | gpu:DCGM\\_FI\\_DEV\\_GPU\\_TEMP |" in markdown
    con.close()

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    app.run()
    texts = [w.value for w in app.sidebar.warning]
    assert any(
        "Telemetry incomplete from the store for 1 windows: 2026-11-23 00:00–00:30 UTC "
        "(gpu:DCGM_FI_DEV_GPU_TEMP)" in t
        for t in texts
    ), texts

    # A complete run fills the window and the list is gone from both.
    con = open_store(db)
    proxy.reset()
    ingest_prometheus(con, proxy.url, T0, END, SETTINGS)
    compute(con, Settings())
    assert "Telemetry incomplete" not in to_markdown(build_report(con, week))
    con.close()


# ------------------------------------------------- odd answers: one clear line each


def _one_metric(**overrides) -> PrometheusSettings:
    base: dict = {
        "gpu_metrics": ["DCGM_FI_DEV_GPU_UTIL"],
        "node_metrics": {},
        "xid_count_metric": "",
        "xid_last_metric": "",
        "condition_metric": "",
        "unschedulable_metric": "",
        "chunk_s": 1800,
        "retries": 1,
        "backoff_s": 0.01,
        "timeout_s": 20,
    }
    return PrometheusSettings(**(base | overrides))


ODD_ANSWERS = [
    # (fault, what the message must say)
    (
        "status_error",
        r"answered the query `DCGM_FI_DEV_GPU_UTIL\[1800000ms\]` with an error: store gateway overloaded",
    ),
    ("not_json", r"did not answer with JSON \(HTTP 200, text/html, 39 bytes\)"),
    ("cut_off", r"was cut off after [\d,]+ bytes of [\d,]+ announced after 1 retries"),
    ("dropped", r"was cut off after [\d,]+ bytes after 1 retries"),
]


@pytest.mark.integration
@pytest.mark.parametrize(("fault", "message"), ODD_ANSWERS, ids=[f for f, _ in ODD_ANSWERS])
def test_an_odd_answer_is_one_clear_error_and_nothing_changes(con, proxy, fault, message):
    ingest_prometheus(con, proxy.url, T0, T0 + timedelta(minutes=30), _one_metric())
    before, marks = row_counts(con), read_watermarks(con, _source(proxy))
    proxy.reset(lambda r: fault if _is_range(r) else None)
    with pytest.raises(SourceError, match=message) as err:
        ingest_prometheus(con, proxy.url, T0, END, _one_metric())
    assert "--url at the server root" not in str(err.value) or fault == "not_json"
    assert row_counts(con) == before and read_watermarks(con, _source(proxy)) == marks


@pytest.mark.integration
def test_timeout_is_a_deadline_for_the_whole_request(con, proxy):
    """A server that trickles its answer a byte at a time (never idle for a socket timeout)."""
    proxy.reset(lambda r: "trickle" if _is_range(r) else None)
    began = time.monotonic()
    with pytest.raises(
        SourceError, match=r"timed out \(the answer was not complete within timeout_s = 1 s"
    ):
        ingest_prometheus(con, proxy.url, T0, END, _one_metric(timeout_s=1, retries=1))
    # Two tries of at most 1 s each plus the 0.01 s backoff; the trickle alone would take minutes.
    assert time.monotonic() - began < 6


@pytest.mark.parametrize(
    ("values", "kept", "skipped"),
    [
        ([["1.0", "5"], ["2.0", "+Inf"], ["3.0", "7"]], [5.0, 7.0], 1),
        ([["1.0", "-Inf"], ["2.0", "NaN"]], [], 2),  # nothing left: the series is dropped
        ([["1.0", "0"], ["2.0", "1e308"]], [0.0, 1e308], 0),  # large is still finite
    ],
)
def test_non_finite_samples_are_skipped_and_counted(values, kept, skipped):
    chunk, non_finite = _matrix([{"metric": {"gpu": "0"}, "values": values}], 0, 10_000)
    assert chunk.values.tolist() == kept and non_finite == skipped
    assert len(chunk.labels) == (1 if kept else 0)


@pytest.mark.integration
def test_an_infinite_xid_value_is_skipped_not_a_crash(con, proxy, fleet):
    # The last-XID query reads a series that is mostly 0; the proxy makes one sample per answer +Inf.
    metric = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
    settings = _one_metric(gpu_metrics=[metric], xid_last_metric=metric)
    proxy.reset(lambda r: "inf" if r.query.startswith(f"{metric}[") else None)
    report = ingest_prometheus(con, proxy.url, T0, END, settings)
    # 4 chunks; the gpu query and the XID query send the same selector, so each answer has one +Inf.
    assert any("8 samples were not finite numbers" in w for w in report.warnings), report.warnings
    expected = fleet["gpu_samples"].filter(pl.col("metric") == metric).height - 4
    assert row_counts(con)["gpu_samples"] == expected


# ------------------------------------------------- secrets


@pytest.mark.parametrize("token", [f"{SECRET}\n", f" {SECRET}", f"{SECRET} x", f"{SECRET}\x00"])
def test_a_token_with_whitespace_or_control_characters_is_refused_by_name(token):
    with pytest.raises(ConfigError) as err:
        PrometheusClient("http://127.0.0.1:9", SETTINGS, env={"GPUFLEET_PROM_TOKEN": token})
    assert "GPUFLEET_PROM_TOKEN contains whitespace or control characters" in str(err.value)
    assert SECRET not in str(err.value)


def test_a_password_with_a_trailing_newline_is_refused_by_name():
    with pytest.raises(ConfigError, match="GPUFLEET_PROM_PASSWORD contains") as err:
        PrometheusClient(
            "http://127.0.0.1:9",
            SETTINGS,
            env={"GPUFLEET_PROM_USER": "sre", "GPUFLEET_PROM_PASSWORD": f"{SECRET}\n"},
        )
    assert SECRET not in str(err.value)


def _cli(
    db: Path, config: Path, url: str, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines",
            "--db",
            str(db),
            "--config",
            str(config),
            "ingest",
            "prometheus",
            "--url",
            url,
            "--start",
            "2026-11-23T00:00:00Z",
            "--end",
            "2026-11-23T01:00:00Z",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GPUFLEET_CONFIG": "", **env},
    )


SECRET_PATHS = [
    # (how it fails, environment, proxy fault, exit code, what stderr says)
    (
        "token with a newline",
        {"GPUFLEET_PROM_TOKEN": f"{SECRET}\n"},
        None,
        2,
        "GPUFLEET_PROM_TOKEN contains",
    ),
    (
        "password with a newline",
        {"GPUFLEET_PROM_USER": "sre", "GPUFLEET_PROM_PASSWORD": f"{SECRET}\n"},
        None,
        2,
        "GPUFLEET_PROM_PASSWORD contains",
    ),
    ("status error", {"GPUFLEET_PROM_TOKEN": SECRET}, "status_error", 2, "with an error"),
    ("not json", {"GPUFLEET_PROM_TOKEN": SECRET}, "not_json", 2, "did not answer with JSON"),
    ("cut off", {"GPUFLEET_PROM_TOKEN": SECRET}, "cut_off", 2, "was cut off after"),
    ("dropped", {"GPUFLEET_PROM_TOKEN": SECRET}, "dropped", 2, "was cut off after"),
    ("trickle", {"GPUFLEET_PROM_TOKEN": SECRET}, "trickle", 2, "timed out"),
    ("partial", {"GPUFLEET_PROM_TOKEN": SECRET}, "partial", 3, "only in part"),
    ("unreachable", {"GPUFLEET_PROM_TOKEN": SECRET}, "unreachable", 2, "could not be reached"),
    (
        "basic auth, unreachable",
        {"GPUFLEET_PROM_USER": "sre", "GPUFLEET_PROM_PASSWORD": SECRET},
        "unreachable",
        2,
        "could not be reached",
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("case", "env", "fault", "code", "says"), SECRET_PATHS, ids=[c[0] for c in SECRET_PATHS]
)
def test_no_failing_path_of_the_cli_shows_the_secret(tmp_path, proxy, case, env, fault, code, says):
    config = tmp_path / "gpufleet.toml"
    config.write_text(
        "[prometheus]\nretries = 1\nbackoff_s = 0.01\ntimeout_s = 2\n"
        'gpu_metrics = ["DCGM_FI_DEV_GPU_UTIL"]\n'
    )
    proxy.reset(lambda r: fault if _is_range(r) else None)
    url = f"http://127.0.0.1:{free_port()}" if fault == "unreachable" else proxy.url
    done = _cli(tmp_path / "x.duckdb", config, url, env)
    output = done.stdout + done.stderr
    assert done.returncode == code, output
    assert says in " ".join(done.stderr.split()), done.stderr
    assert "Traceback" not in output
    assert SECRET not in output and SECRET[:8] not in output


@pytest.mark.integration
def test_cli_partial_answers_exit_3_and_say_how_many(tmp_path, proxy):
    config = tmp_path / "gpufleet.toml"
    config.write_text(
        "[prometheus]\nretries = 1\nbackoff_s = 0.01\nchunk_s = 1800\n"
        'gpu_metrics = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP"]\n'
    )
    db = tmp_path / "x.duckdb"
    proxy.reset(lambda r: "partial" if "DCGM_FI_DEV_GPU_TEMP[" in r.query else None)
    refused = _cli(db, config, proxy.url, {})
    assert refused.returncode == 3, refused.stderr
    stderr = " ".join(refused.stderr.split())
    assert "1 chunk partial" in " ".join(refused.stdout.split())
    assert (
        f"The store answered 1 chunk only in part after the retries (gpu:DCGM_FI_DEV_GPU_TEMP): it said "
        f'"{THANOS_WARNING}". 1 was not loaded'
    ) in stderr
    allowed = _cli(db, config, proxy.url, {}, "--allow-partial")
    assert allowed.returncode == 3 and "were loaded as incomplete (--allow-partial)" in " ".join(
        allowed.stderr.split()
    )
    proxy.reset()
    healthy = _cli(db, config, proxy.url, {})
    assert healthy.returncode == 0, healthy.stderr
    assert "2 incomplete windows now complete" in " ".join(
        healthy.stdout.split()
    )  # the two 30 min chunks of the hour


@given(before=st.text(max_size=6), after=st.text(max_size=6))
@settings(max_examples=300, deadline=None)
def test_a_token_is_either_clean_and_sent_as_is_or_refused_without_being_shown(before, after):
    from pipelines.sources.prometheus import read_credentials

    token = before + SECRET + after
    clean = not any(
        c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in token
    )
    if clean:
        headers, auth = read_credentials({"GPUFLEET_PROM_TOKEN": token})
        assert headers == {"Authorization": f"Bearer {token}"} and auth is None
    else:
        with pytest.raises(ConfigError) as err:
            read_credentials({"GPUFLEET_PROM_TOKEN": token})
        assert "GPUFLEET_PROM_TOKEN" in str(err.value) and SECRET not in str(err.value)
