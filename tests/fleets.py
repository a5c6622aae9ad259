"""Tiny hand-made fleets written as landing rows, for tests whose answers were worked out by hand.

`tiny_fleet()` is four nodes with two GPUs each, observed every minute from 2026-11-23 22:00 to
2026-11-24 02:00 UTC (the data horizon), so the lifetime of every node is 4 h = 14400 s:
7200 s on Monday 2026-11-23 and 7200 s on Tuesday 2026-11-24. Conditions `Ready` (good when True)
and `Unschedulable` (good when False); one DCGM field per GPU. What happens to each node:

- n1 (c1): maintenance 23:00-23:30 "firmware" (Ready=False 23:05-23:19 inside it: still maintenance);
  no Ready sample between 01:09 and 01:30 (the 01:09 sample holds until 01:14: `Ready stale` 01:14-01:30);
  Ready=Unknown 01:40-01:44 (unknown 01:40-01:45).
- n2 (c1): XID 79 on gpu 1 at 00:28; Ready=False (KubeletNotReady) 00:30-00:59 (unavailable 00:30-01:00).
- n3 (c1): gpu 1 silent from 23:40 to 00:19 (the 23:39 sample holds until 23:44: unknown 23:44-00:20,
  across midnight); XID 13 (an application error) at 01:10.
- n4 (c2): a warn anomaly (throttling) 22:30-22:45 (degraded); cordoned 01:00-01:29 (unavailable 01:00-01:30).

Jobs are described where `tiny_fleet` builds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import polars as pl

from pipelines.store import ROW_COLUMN, TableInput, load_batch

START = datetime(2026, 11, 23, 22, 0, tzinfo=UTC)
HORIZON = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)


def at(hhmm: str, day: int = 0) -> datetime:
    """A time of the fleet: "22:05" is on 2026-11-23, "00:30" on 2026-11-24 (hours < 12 are the next day)."""
    hour, minute = (int(x) for x in hhmm.split(":"))
    base = datetime(2026, 11, 23, tzinfo=UTC) + timedelta(days=1 if hour < 12 else 0)
    return base + timedelta(hours=hour, minutes=minute, days=day)


def minutes(start: datetime, end: datetime) -> list[datetime]:
    """Every whole minute in [start, end]."""
    count = int((end - start).total_seconds() // 60)
    return [start + timedelta(minutes=i) for i in range(count + 1)]


@dataclass
class Fleet:
    """Landing rows per table, loaded in one batch by `load`."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, table: str, records: Iterable[dict[str, Any]]) -> None:
        self.rows.setdefault(table, []).extend(records)

    def load(self, con: duckdb.DuckDBPyConnection) -> None:
        # A job whose nodes span clusters cannot be placed by the loader: it takes its first node's.
        node_cluster = {r["node"]: r["cluster"] for r in self.rows.get("nodes", [])}
        first_node: dict[str, str | None] = {}  # job_id → its first attempt's first node
        for r in self.rows.get("job_attempts", []):
            first_node.setdefault(r["job_id"], r["nodes"][0] if r["nodes"] else None)
        for table in ("jobs", "job_attempts"):
            for r in self.rows.get(table, []):
                if r.get("cluster") is None and node_cluster.get(first_node.get(r["job_id"])):
                    r["cluster"] = node_cluster[first_node[r["job_id"]]]
        items = []
        for table, records in self.rows.items():
            if not records:
                continue
            frame = pl.DataFrame(records, infer_schema_length=None).with_row_index(
                ROW_COLUMN, offset=1
            )
            items.append(TableInput(table, frame, f"{table} (test fleet)"))
        if items:
            load_batch(con, items, "test-fleet")

    def node(self, node: str, cluster: str, gpu_count: int = 2) -> None:
        self.add(
            "nodes",
            [
                {
                    "node": node,
                    "cluster": cluster,
                    "instance_type": "p5.48xlarge",
                    "gpu_model": "NVIDIA H100 80GB HBM3",
                    "gpu_count": gpu_count,
                    "nic_expected": None,
                }
            ],
        )

    def condition(
        self,
        node: str,
        condition: str,
        times: Iterable[datetime],
        status: str,
        reason: str | None = None,
    ) -> None:
        self.add(
            "node_conditions",
            [
                {
                    "ts": t,
                    "node": node,
                    "condition": condition,
                    "status": status,
                    "reason": reason,
                    "message": None,
                }
                for t in times
            ],
        )

    def gpu(self, node: str, gpu: int, times: Iterable[datetime]) -> None:
        self.add(
            "gpu_samples",
            [
                {
                    "ts": t,
                    "node": node,
                    "gpu": gpu,
                    "uuid": f"GPU-{node}-{gpu}",
                    "metric": "DCGM_FI_DEV_GPU_TEMP",
                    "value": 40.0,
                }
                for t in times
            ],
        )

    def xid(self, node: str, gpu: int, ts: datetime, code: int) -> None:
        self.add(
            "gpu_events",
            [
                {
                    "ts": ts,
                    "node": node,
                    "gpu": gpu,
                    "uuid": f"GPU-{node}-{gpu}",
                    "kind": "xid",
                    "code": code,
                    "message": f"NVRM: Xid {code}",
                    "source": "test",
                }
            ],
        )

    def job(
        self,
        job_id: str,
        num_gpus: int,
        state: str,
        attempts: list[tuple[str, str | None, str, int | None, list[str]]],
        exit_code: int | None = None,
        reason: str | None = None,
        cluster: str | None = None,
    ) -> None:
        """attempts: (start "HH:MM", end "HH:MM" or None, state, exit_code, nodes).

        `cluster`: for a job whose nodes span clusters (the loader cannot tell which it ran in)."""
        first, last = attempts[0], attempts[-1]
        self.add(
            "jobs",
            [
                {
                    "cluster": cluster,
                    "job_id": job_id,
                    "name": job_id,
                    "user": "u",
                    "team": "t",
                    "queue": "q",
                    "submit_ts": at(first[0]) - timedelta(minutes=1),
                    "start_ts": at(first[0]),
                    "end_ts": at(last[1]) if last[1] else None,
                    "num_gpus": num_gpus,
                    "state": state,
                    "exit_code": exit_code,
                    "reason": reason,
                }
            ],
        )
        self.add(
            "job_attempts",
            [
                {
                    "cluster": cluster,
                    "job_id": job_id,
                    "attempt": i,
                    "start_ts": at(s),
                    "end_ts": at(e) if e else None,
                    "state": st,
                    "exit_code": code,
                    "reason": reason if i == len(attempts) - 1 else None,
                    "nodes": nodes,
                }
                for i, (s, e, st, code, nodes) in enumerate(attempts)
            ],
        )


def healthy_node(
    fleet: Fleet,
    node: str,
    cluster: str,
    *,
    ready: list[datetime] | None = None,
    gpu1: list[datetime] | None = None,
) -> None:
    """A node sampled every minute over the whole fleet window; override Ready or gpu 1 sample times."""
    everything = minutes(START, HORIZON)
    fleet.node(node, cluster)
    fleet.condition(node, "Ready", everything if ready is None else ready, "True", "KubeletReady")
    fleet.condition(node, "Unschedulable", everything, "False")
    fleet.gpu(node, 0, everything)
    fleet.gpu(node, 1, everything if gpu1 is None else gpu1)


def tiny_fleet() -> Fleet:
    f = Fleet()
    everything = minutes(START, HORIZON)

    # n1: Ready True except False 23:05-23:19 (inside maintenance), no sample 01:10-01:29, Unknown 01:40-01:44.
    ready_false = set(minutes(at("23:05"), at("23:19")))
    ready_missing = set(minutes(at("01:10"), at("01:29")))
    ready_unknown = set(minutes(at("01:40"), at("01:44")))
    ready_true = [t for t in everything if t not in ready_false | ready_missing | ready_unknown]
    healthy_node(f, "n1", "c1", ready=ready_true)
    f.condition("n1", "Ready", sorted(ready_false), "False", "KubeletNotReady")
    f.condition("n1", "Ready", sorted(ready_unknown), "Unknown", "NodeStatusUnknown")
    f.add(
        "maintenance",
        [{"node": "n1", "start_ts": at("23:00"), "end_ts": at("23:30"), "reason": "firmware"}],
    )

    # n2: the XID 79 node; Ready=False 00:30-00:59.
    n2_false = set(minutes(at("00:30"), at("00:59")))
    healthy_node(f, "n2", "c1", ready=[t for t in everything if t not in n2_false])
    f.condition("n2", "Ready", sorted(n2_false), "False", "KubeletNotReady")
    f.xid("n2", 1, at("00:28"), 79)

    # n3: gpu 1 silent 23:40..00:19; an application XID 13 at 01:10.
    gpu_gap = set(minutes(at("23:40"), at("00:19")))
    healthy_node(f, "n3", "c1", gpu1=[t for t in everything if t not in gpu_gap])
    f.xid("n3", 0, at("01:10"), 13)

    # n4: throttling anomaly 22:30-22:45 (warn); cordoned 01:00-01:29.
    f.node("n4", "c2")
    cordoned = set(minutes(at("01:00"), at("01:29")))
    f.condition("n4", "Ready", everything, "True", "KubeletReady")
    f.condition("n4", "Unschedulable", [t for t in everything if t not in cordoned], "False")
    f.condition("n4", "Unschedulable", sorted(cordoned), "True")
    f.gpu("n4", 0, everything)
    f.gpu("n4", 1, everything)

    # Jobs (2 GPUs each unless said otherwise).
    f.job("j-hw", 2, "failed", [("23:50", "00:29", "failed", 1, ["n2"])], exit_code=1)
    f.job(
        "j-crash",
        2,
        "failed",
        [
            ("00:00", "00:10", "failed", 1, ["n1"]),
            ("00:12", "00:20", "failed", 1, ["n1"]),
            ("00:22", "00:30", "failed", 1, ["n1"]),
        ],
        exit_code=1,
    )
    f.job("j-pre", 2, "preempted", [("23:00", "23:20", "preempted", None, ["n4"])])
    f.job("j-cancel", 2, "cancelled", [("22:00", "22:30", "cancelled", None, ["n3"])])
    f.job(
        "j-ok",
        4,
        "succeeded",
        [("00:40", "01:40", "succeeded", 0, ["n3", "n4"])],
        exit_code=0,
        cluster="c1",
    )
    f.job(
        "j-retry",
        2,
        "succeeded",
        [("01:00", "01:20", "node_fail", None, ["n1"]), ("01:35", "01:55", "succeeded", 0, ["n4"])],
        exit_code=0,
    )
    f.job("j-oom", 2, "oom", [("22:05", "22:25", "oom", 137, ["n1"])], exit_code=137)
    f.job("j-noexit", 2, "failed", [("23:40", "23:50", "failed", None, ["n1"])])
    f.job("j-app", 2, "failed", [("01:00", "01:10", "failed", 1, ["n3"])], exit_code=1)
    f.job("j-run", 2, "running", [("01:50", None, "running", None, ["n3"])])
    f.job(
        "j-evict",
        2,
        "failed",
        [("22:10", "22:20", "failed", 143, ["n3"])],
        exit_code=143,
        reason="Evicted: the node was low on memory",
    )
    return f


def throttling_anomaly() -> dict[str, Any]:
    """The warn-level anomaly on n4 22:30-22:45 (written to `anomalies`, which compute does not clear)."""
    return {
        "anomaly_id": "a-n4-throttle",
        "entity_type": "gpu",
        "node": "n4",
        "gpu": 0,
        "uuid": "GPU-n4-0",
        "job_id": None,
        "rank": None,
        "kind": "throttling",
        "start_ts": at("22:30"),
        "end_ts": at("22:45"),
        "score": 5.0,
        "severity": "warn",
        "evidence": "{}",
        "action": "watch",
        "impact_gpu_h": 0.0,
    }


def insert_anomalies(con: duckdb.DuckDBPyConnection, anomalies: list[dict[str, Any]]) -> None:
    """Write rows to the derived `anomalies` table (the detection steps fill it in production)."""
    from pipelines.sql import load_sql, statements

    for statement in statements(load_sql("schema/derived")):
        con.execute(statement)
    if not anomalies:
        return
    frame = pl.DataFrame(anomalies, infer_schema_length=None)  # noqa: F841 (read by DuckDB below)
    con.execute("INSERT INTO anomalies BY NAME SELECT * FROM frame")


AVAILABILITY_TABLES = (
    "xid_catalogue",
    "data_horizon",
    "node_state_intervals",
    "node_availability_daily",
    "fleet_availability_daily",
    "attempt_outcomes",
    "job_outcomes",
)


GOODPUT_TABLES = (
    "attempt_clusters",
    "goodput_attempts",
    "goodput_checkpoints",
    "rank_step_summaries",  # what goodput_steps reads of the ranks (not a table of its own)
    "goodput_steps",
    "job_stalls",
    "goodput_segments",
)


def compute_availability(
    con: duckdb.DuckDBPyConnection, settings: Any = None, *, with_goodput: bool = False
) -> None:
    """Run just the availability and job-outcome steps (and the goodput timeline), in `gpufleet compute` order.

    The full `compute` also runs the detection steps, which rewrite `anomalies`; the hand-made
    cases here pin their anomalies themselves.
    """
    from pipelines.compute import _clusters, _steps
    from pipelines.config import Settings
    from pipelines.sample_rollups import update_gpu_scrapes
    from pipelines.sql import execute

    # The per-scrape table node states and the data horizon read their sample times from.
    update_gpu_scrapes(con)
    settings = settings or Settings()
    params = settings.sql_params()
    wanted = AVAILABILITY_TABLES + (GOODPUT_TABLES if with_goodput else ())
    # One cluster, built from scratch each call (as `compute --force` does): the cases change
    # their tables by hand, not through loads a kept table could follow.
    con.execute("SET VARIABLE pass_cluster = ?", [_clusters(con)[0]])
    con.execute("DELETE FROM kept_rows_basis")
    for step in _steps():
        if step.name in wanted:
            if step.run is None:
                execute(con, f"derived/{step.name}", params)
            else:
                step.run(con, settings)
