"""Hand-made landing rows written straight into a store, for tests that build tiny fleets.

`gpu_samples` is a view over compact storage (queries/schema/landing.sql), so it takes rows
through `pipelines.store.insert_gpu_samples`, not INSERT.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb
import polars as pl

from pipelines.store import insert_gpu_samples

GPU_SAMPLE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "cluster": pl.String,
    "ts": pl.Datetime("us", "UTC"),
    "node": pl.String,
    "gpu": pl.Int16,
    "uuid": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
}


def add_gpu_samples(con: duckdb.DuckDBPyConnection, rows: Iterable[Sequence[Any]]) -> int:
    """Store (cluster, ts, node, gpu, uuid, metric, value) rows as GPU samples; returns the count."""
    frame = pl.DataFrame(list(rows), schema=GPU_SAMPLE_SCHEMA, orient="row")
    return add_gpu_sample_frame(con, frame)


def add_gpu_sample_frame(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> int:
    """Store a frame with gpu_samples' columns (any order) as GPU samples; returns the count."""
    con.register("__gpu_sample_rows", frame)
    try:
        return insert_gpu_samples(
            con,
            "SELECT cluster, ts::TIMESTAMPTZ AS ts, node, gpu::SMALLINT AS gpu, uuid, metric, "
            "value::DOUBLE AS value FROM __gpu_sample_rows",
        )
    finally:
        con.unregister("__gpu_sample_rows")


def insert_landing(con: duckdb.DuckDBPyConnection, table: str, query: str) -> None:
    """INSERT a query's rows (matched by column name) into a landing table, compact ones included."""
    if table == "gpu_samples":
        insert_gpu_samples(con, query)
    else:
        con.execute(f'INSERT INTO "{table}" BY NAME {query}')
