"""gpu_samples_15m kept between computes: an update reads the new samples, not the history.

Every load that stores GPU samples records the earliest one (`gpu_samples_loaded`, in the
load's transaction). `gpufleet compute` then rebuilds, cluster by cluster, the 15-minute
buckets from the start of that sample's bucket on and keeps every earlier bucket
(queries/derived/gpu_samples_15m.sql says why the rows equal a build from all history). A late
batch, older than the last compute, moves the start back: it costs the buckets from its own
time on. `--force`, an older database, or a table missing its `kept_tables` row rebuild it all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from pipelines.sql import bind, execute, load_sql, statements

TABLE = "gpu_samples_15m"


def record_loaded_samples(con: duckdb.DuckDBPyConnection, earliest: datetime | Any) -> None:
    """Note, in the load's transaction, that GPU samples from `earliest` on were stored."""
    con.execute("INSERT INTO gpu_samples_loaded VALUES (?)", [earliest])


def _is_kept(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_tables() t JOIN kept_tables k ON k.table_name = t.table_name "
            "WHERE t.database_name = current_database() AND t.schema_name = 'main' "
            "AND t.table_name = ?",
            [TABLE],
        ).fetchall()[0][0]
    )


def update_gpu_samples_15m(con: duckdb.DuckDBPyConnection, *, rebuild: bool = False) -> None:
    """Bring gpu_samples_15m up to date with the samples loaded since the last compute.

    Runs in the caller's transaction. `rebuild` (or a table not kept yet) builds it from all
    samples.
    """
    rebuild = rebuild or not _is_kept(con)
    from_ts = execute(con, "derived/gpu_samples_15m_from", {"rebuild": rebuild}).fetchall()[0][0]
    if rebuild:
        con.execute(f"DROP TABLE IF EXISTS {TABLE}")
    if from_ts is not None:
        clusters = [
            r[0]
            for r in con.execute("SELECT DISTINCT cluster FROM gpu_series ORDER BY 1").fetchall()
        ]
        for cluster in clusters:
            for statement in statements(load_sql(f"derived/{TABLE}")):
                con.execute(statement, bind(statement, {"cluster": cluster, "from_ts": from_ts}))
    if rebuild:
        # The table's shape, even on a store without samples (the dashboard reads it).
        con.execute(statements(load_sql(f"derived/{TABLE}"))[0])
        con.execute("DELETE FROM kept_tables WHERE table_name = ?", [TABLE])
        con.execute("INSERT INTO kept_tables VALUES (?, now())", [TABLE])
    con.execute("DELETE FROM gpu_samples_loaded")
