"""The one-screen summary `gpufleet demo --no-app` prints."""

from __future__ import annotations

import duckdb

from pipelines.contract import LANDING_TABLES
from pipelines.store import row_counts


def demo_summary(con: duckdb.DuckDBPyConnection) -> str:
    counts = row_counts(con, LANDING_TABLES)
    first, last = con.execute("SELECT min(ts), max(ts) FROM node_conditions").fetchall()[0]
    nodes, gpus = con.execute("SELECT count(*), coalesce(sum(gpu_count), 0) FROM nodes").fetchall()[
        0
    ]
    lines = [f"Fleet: {nodes} nodes, {gpus} GPUs, {first} .. {last} (UTC)", ""]
    lines += [f"  {table:<16} {rows:>12,} rows" for table, rows in counts.items()]
    return "\n".join(lines)
