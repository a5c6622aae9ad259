"""Builders for tiny hand-made fleets: landing rows loaded through the real store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import polars as pl

from pipelines.store import TableInput, load_batch

T0 = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)  # Monday of ISO week 2026-W48


def at(seconds: float) -> datetime:
    """T0 plus `seconds`."""
    return T0 + timedelta(seconds=seconds)


def load(con: duckdb.DuckDBPyConnection, tables: dict[str, list[dict[str, Any]]]) -> None:
    """Load landing rows (table -> list of records) in one batch. A job whose nodes span clusters
    cannot be placed by the loader: it takes its first node's cluster."""
    node_cluster = {r["node"]: r["cluster"] for r in tables.get("nodes", []) if r.get("cluster")}
    first_node: dict[str, str | None] = {}
    for r in tables.get("job_attempts", []):
        first_node.setdefault(r["job_id"], r["nodes"][0] if r["nodes"] else None)
    for table in ("jobs", "job_attempts", "rank_steps", "checkpoints"):
        for r in tables.get(table, []):
            cluster = node_cluster.get(first_node.get(r["job_id"]) or "")
            if r.get("cluster") is None and cluster:
                r["cluster"] = cluster
    inputs = []
    for table, rows in tables.items():
        if not rows:
            continue
        frame = pl.DataFrame(rows, infer_schema_length=None).with_row_index("__row", offset=1)
        inputs.append(TableInput(table, frame, f"{table}.test"))
    load_batch(con, inputs, "test")


def job(
    job_id: str,
    *,
    start: float,
    end: float | None,
    state: str,
    gpus: int = 2,
    submit: float | None = None,
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_ts": at(submit if submit is not None else start),
        "start_ts": at(start),
        "end_ts": at(end) if end is not None else None,
        "num_gpus": gpus,
        "state": state,
    }


def attempt(
    job_id: str,
    n: int,
    *,
    start: float,
    end: float | None,
    state: str,
    nodes: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "attempt": n,
        "start_ts": at(start),
        "end_ts": at(end) if end is not None else None,
        "state": state,
        "nodes": nodes or ["n1"],
    }


def steps(
    job_id: str,
    n: int,
    *,
    first_end: float,
    step_s: float,
    count: int,
    first_step: int = 1,
    ranks: int = 2,
    first_step_s: float | None = None,
    slow: dict[int, float] | None = None,
    compute: bool = False,
    node: str = "n1",
) -> list[dict[str, Any]]:
    """`count` back-to-back steps of `step_s` seconds; the first ends at `first_end`.

    `first_step_s` overrides the first step's logged duration (program startup). `slow` maps a
    rank to a factor on its compute_s (with `compute`) or step_s.
    """
    rows = []
    for i in range(count):
        end = first_end + i * step_s
        for rank in range(ranks):
            factor = (slow or {}).get(rank, 1.0)
            logged = first_step_s if (i == 0 and first_step_s is not None) else step_s
            rows.append(
                {
                    "job_id": job_id,
                    "attempt": n,
                    "step": first_step + i,
                    "rank": rank,
                    "node": node,
                    "gpu": rank,
                    "end_ts": at(end),
                    "step_s": float(logged if compute else logged * factor),
                    "compute_s": float(logged * 0.8 * factor) if compute else None,
                }
            )
    return rows


def checkpoint(
    job_id: str, n: int, step: int, kind: str, *, start: float, duration: float
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "attempt": n,
        "step": step,
        "kind": kind,
        "start_ts": at(start),
        "duration_s": duration,
    }


NODE_STATE_COLUMNS = (
    "node VARCHAR, start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, state VARCHAR, reason VARCHAR"
)


def set_node_states(
    con: duckdb.DuckDBPyConnection, rows: list[tuple[str, float, float, str]]
) -> None:
    """Replace `node_state_intervals` (the node availability step's table) with hand-made rows.

    Rows are (node, start seconds, end seconds, state) relative to T0.
    """
    con.execute(f"CREATE OR REPLACE TABLE node_state_intervals ({NODE_STATE_COLUMNS})")
    for node, start, end, state in rows:
        con.execute(
            "INSERT INTO node_state_intervals VALUES (?, ?, ?, ?, NULL)",
            [node, at(start), at(end), state],
        )


def compute_with_node_states(
    con: duckdb.DuckDBPyConnection,
    settings: Any,
    rows: Sequence[tuple[str, float, float, str]] = (),
) -> None:
    """Run `gpufleet compute`, then rebuild the goodput stack over hand-made node states.

    The node availability step derives node_state_intervals from node conditions; these tests
    pin the node states instead, so the stack is rebuilt over them.
    """
    from pipelines.compute import compute
    from pipelines.sql import execute

    compute(con, settings, force=True)
    set_node_states(con, list(rows))
    execute(con, "derived/goodput_stack", settings.sql_params())
