"""Step summaries kept between computes: goodput_steps reads one row per step, not every rank's.

A step's summary (queries/derived/rank_step_summaries.sql) depends on that step's rank rows
alone, and rank steps are only ever added. Each load that stores rank steps notes their jobs
(`rank_steps_loaded`, in the load's transaction); a pass of `gpufleet compute` summarises those
jobs again and keeps every other job's rows. `compute --force`, other code (the basis), a
cluster without its `kept_rows_basis` row, or summaries that then do not count every stored rank
step (rank steps written by a program that did not note them) summarise every job of the cluster.
"""

from __future__ import annotations

import duckdb

from pipelines.config import Settings
from pipelines.kept_rows import kept_basis, record_basis
from pipelines.sql import execute, execute_script

TABLE = "rank_step_summaries"


def update_step_summaries(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """The pass's cluster's step summaries brought up to date (or built again)."""
    basis, incremental = kept_basis(con, settings, TABLE)
    execute_script(con, f"derived/{TABLE}", {"incremental": incremental})
    if incremental and not execute(con, f"derived/{TABLE}_complete").fetchall()[0][0]:
        execute_script(con, f"derived/{TABLE}", {"incremental": False})
    record_basis(con, TABLE, basis)
