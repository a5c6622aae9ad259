"""XIDs reported by both a node's kernel log and dcgm-exporter count once
(queries/metrics/xid_events.sql; docs/metrics.md "XIDs seen by two sources").

Hand-worked case (cluster `east` unless said; times on 2026-11-23):
- n1 gpu 2 XID 79: log 10:00:00; exporter 10:00:30 (the log's XID) and 10:10:00 (10 min on:
  another XID). Exporter 10:00:30 on gpu 3 is another GPU's XID.
- n2 XID 48: log line at 11:00:00 with no GPU (unmapped bus id); exporter 11:00:20 on gpu 5: the
  exporter's row stands, it names the GPU.
- n3 gpu 0 XID 13: log 12:00:00, 12:00:01, 12:00:02 (three lines, three XIDs); exporter 12:00:30
  (within 300 s of them: one of them).
- n4 gpu 1 XID 31: exporter only, 13:00:00. n5 gpu 0 XID 79: log only, 14:00:00.
- n1 gpu 2 XID 79 in cluster `west` at 10:00:30 (a node of the same name elsewhere): stands.
- n6 gpu 4 XID 94: exporter 15:00:00, log 15:00:50 (the node's clock 50 s behind the scrape's:
  within 60 s) -> the log's row; n7 gpu 4 XID 94: exporter 16:00:00, log 16:01:30 -> both.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.sql import query_pl
from pipelines.store import TableInput, load_batch

DAY = datetime(2026, 11, 23, tzinfo=UTC)

EVENTS = [
    # cluster, hh:mm:ss, node, gpu, code, source
    ("east", "10:00:00", "n1", 2, 79, "kernel-log"),
    ("east", "10:00:30", "n1", 2, 79, "dcgm"),
    ("east", "10:10:00", "n1", 2, 79, "dcgm"),
    ("east", "10:00:30", "n1", 3, 79, "dcgm"),
    ("east", "11:00:00", "n2", None, 48, "kernel-log"),
    ("east", "11:00:20", "n2", 5, 48, "dcgm"),
    ("east", "12:00:00", "n3", 0, 13, "kernel-log"),
    ("east", "12:00:01", "n3", 0, 13, "kernel-log"),
    ("east", "12:00:02", "n3", 0, 13, "kernel-log"),
    ("east", "12:00:30", "n3", 0, 13, "dcgm"),
    ("east", "13:00:00", "n4", 1, 31, "dcgm"),
    ("east", "14:00:00", "n5", 0, 79, "kernel-log"),
    ("west", "10:00:30", "n1", 2, 79, "dcgm"),
    ("east", "15:00:00", "n6", 4, 94, "dcgm"),
    ("east", "15:00:50", "n6", 4, 94, "kernel-log"),
    ("east", "16:00:00", "n7", 4, 94, "dcgm"),
    ("east", "16:01:30", "n7", 4, 94, "kernel-log"),
]

DROPPED = {
    ("east", "10:00:30", "n1", 2, 79, "dcgm"),
    ("east", "11:00:00", "n2", None, 48, "kernel-log"),
    ("east", "12:00:30", "n3", 0, 13, "dcgm"),
    ("east", "15:00:00", "n6", 4, 94, "dcgm"),
}


def _at(hms: str) -> datetime:
    h, m, s = (int(x) for x in hms.split(":"))
    return DAY.replace(hour=h, minute=m, second=s)


def _load(con) -> None:
    frame = pl.DataFrame(
        [
            {
                "cluster": c,
                "ts": _at(t),
                "node": n,
                "gpu": g,
                "uuid": None,
                "kind": "xid",
                "code": code,
                "message": None,
                "source": src,
            }
            for c, t, n, g, code, src in EVENTS
        ],
        schema_overrides={
            "gpu": pl.Int16,
            "code": pl.Int32,
            "uuid": pl.String,
            "message": pl.String,
        },
    )
    nodes = pl.DataFrame(
        {
            "cluster": [c for c, *_ in sorted({(e[0], e[2]) for e in EVENTS})],
            "node": [n for _, n in sorted({(e[0], e[2]) for e in EVENTS})],
            "gpu_count": 8,
        }
    )
    load_batch(
        con,
        [
            TableInput("nodes", nodes.with_row_index("__row", 1), "nodes"),
            TableInput("gpu_events", frame.with_row_index("__row", 1), "events"),
        ],
        "test",
    )


def test_each_xid_counts_once_across_kernel_log_and_exporter(con):
    _load(con)
    rows = query_pl(con, "metrics/xid_events").sort("cluster", "node", "ts", "source")
    got = {
        (
            r["cluster"],
            r["ts"].astimezone(UTC).strftime("%H:%M:%S"),
            r["node"],
            r["gpu"],
            r["code"],
            r["source"],
        )
        for r in rows.iter_rows(named=True)
    }
    assert got == set(EVENTS) - DROPPED
    assert len(got) == len(EVENTS) - 4


def test_the_xid_findings_count_each_xid_once(con):
    """The XID detector's score is the number of XIDs of an episode: n1 gpu 2's XID 79 episode
    (10:00:00 and 10:10:00, 10 min apart: one episode with the default clear time) scores 2, not 3;
    n2's XID 48 is a GPU finding on gpu 5, not a node finding."""
    _load(con)
    compute(con, Settings())
    findings = con.execute(
        "SELECT cluster, node, gpu, json_extract(evidence, '$.xid')::INT AS xid, score "
        "FROM anomalies WHERE kind = 'xid' ORDER BY cluster, node, gpu"
    ).fetchall()
    assert ("east", "n1", 2, 79, 2.0) in findings
    assert ("east", "n1", 3, 79, 1.0) in findings
    assert ("west", "n1", 2, 79, 1.0) in findings
    assert ("east", "n2", 5, 48, 1.0) in findings
    assert not [f for f in findings if f[1] == "n2" and f[2] is None]
