"""The goodput tables kept per job: `goodput_steps`, `job_stalls`, `goodput_segments`, `job_goodput`.

Each job's rows of these tables are built from that job's rows of `goodput_attempts`,
`goodput_checkpoints` and `rank_step_summaries` alone (and whether its records have an end). A
compute builds `goodput_attempts` and `goodput_checkpoints` for every job as before (they are
small: one row per attempt or checkpoint, and they carry the data horizon into a running job's
rows), then digests each job's inputs (`queries/derived/goodput_jobs.sql`) and builds the four
tables only for the jobs whose digest changed since the last compute: `goodput_attempts` is
narrowed to them while the four steps run. The other jobs keep the last compute's rows, set aside
before the passes. A finished job is built once; a running one, whose span ends at the data
horizon, every compute. New settings or new code build every job again, as does
`compute --force`.
"""

from __future__ import annotations

import duckdb

from pipelines.config import Settings
from pipelines.kept_rows import code_basis, drop_set_aside, set_aside
from pipelines.sql import execute, execute_script, queries_dir, quote_ident

KEPT_PER_JOB = ("goodput_steps", "job_stalls", "goodput_segments", "job_goodput")
_NARROWED = "goodput_attempts"

# The code a job's rows come from: a change to any of it builds every job again.
_CODE = tuple(queries_dir() / "derived" / f"{name}.sql" for name in (*KEPT_PER_JOB, "goodput_jobs"))


def basis(settings: Settings) -> str:
    """What besides a job's own inputs its rows depend on: the settings and the code."""
    return code_basis(settings, _CODE)


def keep_previous_goodput(con: duckdb.DuckDBPyConnection, *, rebuild: bool) -> None:
    """Before a compute's passes: set the last compute's four tables aside (temporary tables
    `previous_<table>`; the passes build the tables anew), or, with `rebuild` or without all of
    them, forget every job's digest so that every job is built."""
    present = execute(con, "compute/goodput_kept_present", {"tables": list(KEPT_PER_JOB)})
    keep = not rebuild and present.fetchall()[0][0] == len(KEPT_PER_JOB)
    set_aside(con, KEPT_PER_JOB, keep=keep)
    if not keep:
        execute(con, "compute/goodput_inputs_forget")


def drop_previous_goodput(con: duckdb.DuckDBPyConnection) -> None:
    """After the passes: the set-aside tables are no longer needed."""
    drop_set_aside(con, KEPT_PER_JOB)


def narrow_to_changed_jobs(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Compute step: digest the pass's jobs, then show the next steps only the `goodput_attempts`
    rows of the jobs to build (a temporary view over the pass's table)."""
    execute_script(con, "derived/goodput_jobs", {"basis": basis(settings)})
    database = execute(con, "compute/current_database").fetchall()[0][0]
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {_NARROWED} AS "
        f"SELECT * FROM {quote_ident(database)}.main.{_NARROWED} "
        "WHERE job_id IN (SELECT job_id FROM goodput_jobs WHERE NOT kept)"
    )


def add_kept_goodput_rows(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Compute step: widen `goodput_attempts` again, add the kept jobs' rows to the four tables
    and note every job's digest for the next compute."""
    con.execute(f"DROP VIEW temp.main.{_NARROWED}")
    if execute(con, "compute/previous_goodput_present").fetchall()[0][0]:
        execute_script(con, "derived/goodput_kept_rows")
    execute_script(con, "derived/goodput_inputs_note")
