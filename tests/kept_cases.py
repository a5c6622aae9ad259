"""Shared pieces of the hand-worked tests of tables kept between computes: a one-node store in
cluster c1 loaded piece by piece, each compute checked against `compute --force`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import TableInput, load_batch

T0 = datetime(2026, 11, 23, tzinfo=UTC)


def at(minute: int) -> datetime:
    return T0 + timedelta(minutes=minute)


def one_node(gpu_count: int) -> list[dict]:
    """The `nodes` row of n1."""
    return [
        {
            "node": "n1",
            "instance_type": "p5",
            "gpu_model": "NVIDIA A100 80GB PCIe",
            "gpu_count": gpu_count,
            "nic_expected": None,
        }
    ]


def load(con, tables: dict[str, list[dict]]) -> None:
    """One load of hand-made landing rows, every one in cluster c1."""
    items = [
        TableInput(
            name,
            pl.DataFrame(rows)
            .with_columns(pl.lit("c1").alias("cluster"))
            .with_row_index("__row", offset=1),
            f"{name} (hand-made)",
        )
        for name, rows in tables.items()
    ]
    load_batch(con, items, "test")


def computed_equals_a_rebuild(con, *queries: str) -> list[list[tuple]]:
    """Compute (kept rows brought up to date), then `compute --force`: each query's rows must be
    the same after both. Returns them, in the order of `queries`."""
    compute(con, Settings())
    kept = [con.execute(query).fetchall() for query in queries]
    compute(con, Settings(), force=True)
    assert [con.execute(query).fetchall() for query in queries] == kept
    return kept
