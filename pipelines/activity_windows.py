"""gpu_activity_windows kept between computes: an update finds again only the rows new data changes.

A row of gpu_activity_windows depends on its own sample, the next sample of its GPU or MIG
instance, and who held the GPU then (gpu_job_assignments). Each pass of `gpufleet compute`
therefore keeps its cluster's rows and finds again only those that the samples loaded since the
last compute, or the assignments that changed since, can change
(queries/derived/gpu_activity_windows.sql says which). Other settings or code (the basis),
`compute --force`, or a table not yet kept rebuild the cluster's rows from all samples.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import duckdb

from pipelines.config import Settings
from pipelines.sql import bind, execute, load_sql, statements

TABLE = "gpu_activity_windows"
PREVIOUS_ASSIGNMENTS = "previous_gpu_job_assignments"
FAR_PAST = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)
FAR_FUTURE = dt.datetime(9000, 1, 1, tzinfo=dt.UTC)
BASIS_SETTINGS = ("util_window_max_s",)
"""The settings a row depends on besides the data."""


def keep_previous_assignments(con: duckdb.DuckDBPyConnection, *, rebuild: bool) -> None:
    """Before a compute's passes: set the last compute's assignments aside (the temporary table
    `previous_gpu_job_assignments`: the first pass replaces gpu_job_assignments), or, with
    `rebuild`, forget every cluster's basis so every row is built again."""
    con.execute(f"DROP TABLE IF EXISTS temp.main.{PREVIOUS_ASSIGNMENTS}")
    present = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = 'gpu_job_assignments' AND column_name = 'cluster'"
    ).fetchall()[0][0]
    if rebuild or not present:
        con.execute("DELETE FROM kept_rows_basis WHERE table_name = ?", [TABLE])
    if present:
        con.execute(
            f"CREATE TEMP TABLE {PREVIOUS_ASSIGNMENTS} AS SELECT cluster, job_id, attempt, node, "
            "gpu, start_us, end_us, mapped_by FROM main.gpu_job_assignments"
        )
    else:
        con.execute(
            f"CREATE TEMP TABLE {PREVIOUS_ASSIGNMENTS} (cluster VARCHAR, job_id VARCHAR, "
            "attempt INTEGER, node VARCHAR, gpu SMALLINT, start_us BIGINT, end_us BIGINT, "
            "mapped_by VARCHAR)"
        )


def drop_previous_assignments(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"DROP TABLE IF EXISTS temp.main.{PREVIOUS_ASSIGNMENTS}")


def _basis(settings: Settings) -> str:
    params = settings.sql_params()
    digest = hashlib.sha256(load_sql(f"derived/{TABLE}").encode())
    digest.update(repr([(name, params[name]) for name in BASIS_SETTINGS]).encode())
    return digest.hexdigest()[:16]


def update_activity_windows(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """The pass's cluster's rows of gpu_activity_windows brought up to date (or rebuilt)."""
    basis = _basis(settings)
    previous = con.execute(
        "SELECT basis FROM kept_rows_basis "
        "WHERE cluster = getvariable('pass_cluster') AND table_name = ?",
        [TABLE],
    ).fetchall()
    incremental = previous == [(basis,)]
    changed_from = FAR_PAST
    if incremental:
        since = execute(con, "derived/kept_samples_from", {"rebuild": False}).fetchall()[0][0]
        changed_from = since if since is not None else FAR_FUTURE
    params = settings.sql_params() | {"incremental": incremental, "changed_from": changed_from}
    for statement in statements(load_sql(f"derived/{TABLE}")):
        con.execute(statement, bind(statement, params))
    con.execute(
        "DELETE FROM kept_rows_basis WHERE cluster = getvariable('pass_cluster') AND table_name = ?",
        [TABLE],
    )
    con.execute(
        "INSERT INTO kept_rows_basis VALUES (getvariable('pass_cluster'), ?, ?)", [TABLE, basis]
    )
