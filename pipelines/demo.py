"""The one-screen summary `gpufleet demo --no-app` prints."""

from __future__ import annotations

import duckdb

from pipelines.contract import LANDING_TABLES
from pipelines.sql import execute
from pipelines.store import row_counts


def demo_summary(con: duckdb.DuckDBPyConnection) -> str:
    counts = row_counts(con, LANDING_TABLES)
    nodes, gpus, first, last = execute(con, "store/fleet_span").fetchall()[0]
    lines = [f"Fleet: {nodes} nodes, {gpus} GPUs, {first} .. {last} (UTC)", ""]
    lines += [f"  {table:<16} {rows:>12,} rows" for table, rows in counts.items()]
    return "\n".join(lines)
