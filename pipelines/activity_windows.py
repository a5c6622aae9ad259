"""gpu_activity_windows kept between computes: an update finds again only the rows new data changes.

A row of gpu_activity_windows depends on its own sample, the next sample of its GPU or MIG
instance, and who held the GPU then (gpu_job_assignments). Each pass of `gpufleet compute`
therefore keeps its cluster's rows and finds again only those that the samples loaded since the
last compute, or the assignments that changed since, can change
(queries/derived/gpu_activity_windows.sql says which). Other settings or code (the basis),
`compute --force`, or a table not yet kept rebuild the cluster's rows from all samples.
"""

from __future__ import annotations

import duckdb

from pipelines.config import Settings
from pipelines.kept_rows import update_kept_rows
from pipelines.sql import execute

TABLE = "gpu_activity_windows"
BASIS_SETTINGS = ("util_window_max_s",)
"""The settings a row depends on besides the data."""


def keep_previous_assignments(con: duckdb.DuckDBPyConnection) -> None:
    """Before a compute's passes: set the last compute's assignments aside (the temporary table
    `previous_gpu_job_assignments`: the first pass replaces gpu_job_assignments). Without them (an
    older database) every cluster's rows are built again."""
    execute(con, "compute/previous_assignments_drop")
    present = execute(
        con, "compute/column_present", {"table": "gpu_job_assignments", "column": "cluster"}
    ).fetchall()[0][0]
    if present:
        execute(con, "compute/previous_assignments_keep")
    else:
        execute(con, "compute/kept_rows_forget", {"table_name": TABLE})
        execute(con, "compute/previous_assignments_empty")


def drop_previous_assignments(con: duckdb.DuckDBPyConnection) -> None:
    execute(con, "compute/previous_assignments_drop")


def update_activity_windows(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """The pass's cluster's rows of gpu_activity_windows brought up to date (or rebuilt)."""
    update_kept_rows(con, settings, TABLE, BASIS_SETTINGS)
