"""Derived tables a pass of `gpufleet compute` keeps between computes and brings up to date.

Each such table holds every cluster's rows; its SQL (`queries/derived/<table>.sql`, statements
run in the pass) says which rows new samples can change and finds only those again, given
`$incremental` and `$changed_from` (for GPU samples, the start of the earliest newly loaded
sample's 15-minute bucket: `gpu_scrapes` rows before it are unchanged). `kept_rows_basis` records, per cluster, the
code and settings the rows were built with: other ones (or `compute --force`, which empties it,
or a table not yet kept) build the cluster's rows from all samples.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from pipelines.config import Settings
from pipelines.sql import execute, execute_script, load_sql
from pipelines.times import FAR_FUTURE, FAR_PAST


def _basis(
    con: duckdb.DuckDBPyConnection,
    table: str,
    settings: Settings,
    basis_settings: tuple[str, ...],
    basis_queries: tuple[str, ...],
) -> str:
    params = settings.sql_params()
    digest = hashlib.sha256(load_sql(f"derived/{table}").encode())
    digest.update(repr([(name, params[name]) for name in basis_settings]).encode())
    for query in basis_queries:
        digest.update(repr(execute(con, query, params).fetchall()).encode())
    return digest.hexdigest()[:16]


def kept_basis(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    table: str,
    basis_settings: tuple[str, ...] = (),
    basis_queries: tuple[str, ...] = (),
) -> tuple[str, bool]:
    """The basis `table`'s rows are built on now, and whether the pass's cluster's kept rows were
    built on it (True: bring them up to date; False: build them again).

    `basis_queries` (`queries/<name>.sql`) each give a digest of inputs that are not kept by time
    (reference data, a few columns of `nodes`): when one changes, so does the basis."""
    basis = _basis(con, table, settings, basis_settings, basis_queries)
    previous = execute(con, "derived/kept_rows_basis_read", {"table_name": table}).fetchall()
    return basis, previous == [(basis,)]


def record_basis(con: duckdb.DuckDBPyConnection, table: str, basis: str) -> None:
    """The pass's cluster's rows of `table` are now built on `basis`."""
    execute_script(con, "derived/kept_rows_basis_write", {"table_name": table, "basis": basis})


def update_kept_rows(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    table: str,
    basis_settings: tuple[str, ...],
    changed_from_queries: tuple[str, ...] = ("derived/kept_samples_from",),
    basis_queries: tuple[str, ...] = (),
) -> None:
    """The pass's cluster's rows of `table` brought up to date (or rebuilt).

    `basis_settings` names the settings its rows depend on besides the data;
    `changed_from_queries` (`queries/<name>.sql`) each give the time from which new data of one
    kind arrived (NULL: none did); the rows are brought up to date from the earliest;
    `basis_queries`: see `kept_basis`.
    """
    basis, incremental = kept_basis(con, settings, table, basis_settings, basis_queries)
    changed_from = FAR_PAST
    if incremental:
        since = [
            execute(con, query, {"rebuild": False}).fetchall()[0][0]
            for query in changed_from_queries
        ]
        changed_from = min((t for t in since if t is not None), default=FAR_FUTURE)
    params = settings.sql_params() | {"incremental": incremental, "changed_from": changed_from}
    execute_script(con, f"derived/{table}", params)
    record_basis(con, table, basis)


def code_basis(settings: Settings, code: tuple[Path, ...]) -> str:
    """A digest of every setting and of the files `code`: the basis of rows kept per job, which
    any change to either builds again."""
    digest = hashlib.sha256(repr(sorted(settings.sql_params().items())).encode())
    for path in code:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


SET_ASIDE_PREFIX = "previous_"
"""Set-aside copies of kept-per-job tables are the temporary tables `previous_<table>`."""


def set_aside(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...], *, keep: bool) -> None:
    """Before a compute's passes: drop older set-aside copies of `tables`, and with `keep` copy
    the last compute's rows aside (the passes then build the tables anew and take the kept jobs'
    rows from the copies)."""
    for table in tables:
        con.execute(f"DROP TABLE IF EXISTS temp.main.{SET_ASIDE_PREFIX}{table}")
    if keep:
        for table in tables:
            con.execute(
                f"CREATE TEMP TABLE {SET_ASIDE_PREFIX}{table} AS SELECT * FROM main.{table}"
            )


def drop_set_aside(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> None:
    """After the passes: the set-aside copies are no longer needed."""
    set_aside(con, tables, keep=False)
