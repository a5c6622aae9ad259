"""The DuckDB store: open it, create the landing tables, load batches.

A batch (every table a source produced in one run) is validated in full before
anything is written, then loaded in one transaction: all of it or none of it.
Loading is idempotent by natural key (see `pipelines.contract`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.contract import (
    ALLOWED_VALUES,
    INTERVAL_COLUMNS,
    LANDING_TABLES,
    NATURAL_KEYS,
    UNIQUE_IN_BATCH,
    UPSERT_TABLES,
)
from pipelines.errors import DatabaseMissingError, GpufleetError, InputError
from pipelines.sql import load_sql, statements

ROW_COLUMN = "__row"
"""Column a source relation carries with the 1-based line/row number of each record."""


def quote_ident(name: str) -> str:
    """The one place identifiers are escaped for generated SQL."""
    return '"' + name.replace('"', '""') + '"'


def connect(path: str | Path, *, read_only: bool = False, retries: int = 0) -> duckdb.DuckDBPyConnection:
    """Open this very file with UTC as the session time zone.

    gpufleet commands reach `--db` through `pipelines.serving` (writers publish a copy,
    readers open the newest published version); this is the plain open beneath it.
    `retries` waits (0.2 s, doubling) while another process holds DuckDB's write lock.
    """
    from pipelines.serving import duckdb_writer_pid, explain, first_line, foreign_writer_error

    path = Path(path)
    if read_only and not path.exists():
        raise DatabaseMissingError(
            f"Database `{path}` does not exist.",
            "Create it with `gpufleet demo --no-app`, or point GPUFLEET_DB / --db at your database.",
        )
    delay = 0.2
    for attempt in range(retries + 1):
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as e:
            if "lock" not in str(e).lower():
                raise explain(e, path) or GpufleetError(f"Cannot open database `{path}`: {first_line(e)}") from None
            if attempt == retries:
                raise foreign_writer_error(path, duckdb_writer_pid(path)) from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        except duckdb.Error as e:
            raise explain(e, path) or GpufleetError(f"Cannot open database `{path}`: {first_line(e)}") from None
    con.execute("SET TimeZone = 'UTC'")
    if not read_only and os.environ.get("GPUFLEET_MEMORY_LIMIT"):
        # Caps DuckDB's buffer memory (e.g. `6GB`) so big computes spill to disk instead.
        limit = os.environ["GPUFLEET_MEMORY_LIMIT"]
        try:
            con.execute("SET memory_limit = $limit", {"limit": limit})
        except duckdb.Error:
            con.close()
            raise GpufleetError(
                f"GPUFLEET_MEMORY_LIMIT must be a size such as 6GB or 512MB, not `{limit}`.",
                "Fix or unset it.",
            ) from None
    return con


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the landing tables if they do not exist (idempotent)."""
    for statement in statements(load_sql("schema/landing")):
        con.execute(statement)


def open_store(path: str | Path, *, retries: int = 0) -> duckdb.DuckDBPyConnection:
    """A writable connection to this very file with the landing schema in place.

    For a file no other process reads (tests, private copies); commands that write `--db`
    use `pipelines.serving.writing`, which publishes instead of writing in place.
    """
    con = connect(path, retries=retries)
    ensure_schema(con)
    return con


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[Column]:
    rows = con.execute(
        "SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns "
        "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [Column(*row) for row in rows]


def _column_types(con: duckdb.DuckDBPyConnection, view: str) -> dict[str, str]:
    """The input relation's column types, spelled as information_schema spells them."""
    rows = con.execute(f"DESCRIBE SELECT * FROM {view}").fetchall()
    return {name: str(col_type) for name, col_type, *_ in rows}


@dataclass
class TableInput:
    """One landing table's worth of input: a relation plus where it came from.

    `relation` is a polars DataFrame or a DuckDB relation with the landing columns
    (any types that cast) and a `__row` column holding the 1-based line or row
    number used in error messages. `position` is "line" (text files) or "row".
    """

    table: str
    relation: pl.DataFrame | duckdb.DuckDBPyRelation
    origin: str
    position: str = "row"


@dataclass(frozen=True)
class LoadResult:
    table: str
    rows_in: int
    rows_new: int


def _validate(con: duckdb.DuckDBPyConnection, item: TableInput, view: str) -> tuple[int, Any, Any]:
    """Check columns, types, nulls and allowed values; return (rows, min_ts, max_ts)."""
    columns = table_columns(con, item.table)
    expected = [c.name for c in columns]
    present = [c for c in con.sql(f"SELECT * FROM {view} LIMIT 0").columns if c != ROW_COLUMN]
    extra = [c for c in present if c not in expected]
    if extra:
        raise InputError(
            f"unknown column `{extra[0]}` for table `{item.table}`",
            file=item.origin,
            hint=f"Expected columns: {', '.join(expected)}.",
        )
    missing = [c.name for c in columns if c.name not in present and not c.nullable]
    if missing:
        raise InputError(
            f"missing required column `{missing[0]}` for table `{item.table}`",
            file=item.origin,
            hint=f"Expected columns: {', '.join(expected)}.",
        )

    source_types = _column_types(con, view)
    # (column, SQL predicate that is true for a bad cell, what is wrong with it)
    checks: list[tuple[str, str, str]] = []
    for c in columns:
        if c.name not in present:
            continue
        ref = quote_ident(c.name)
        if not c.nullable:
            checks.append((c.name, f"{ref} IS NULL", "value is required but empty"))
        if source_types[c.name] != c.type:
            # A column that already has the target type (typed Parquet) cannot fail the cast.
            checks.append((c.name, f"{ref} IS NOT NULL AND TRY_CAST({ref} AS {c.type}) IS NULL",
                           f"value is not a valid {c.type}"))
        allowed = ALLOWED_VALUES.get((item.table, c.name))
        if allowed:
            values = ", ".join("'" + v.replace("'", "''") + "'" for v in allowed)
            checks.append((c.name, f"{ref} IS NOT NULL AND CAST({ref} AS VARCHAR) NOT IN ({values})",
                           f"value is not one of {', '.join(allowed)}"))
    interval = INTERVAL_COLUMNS.get(item.table)
    if interval and set(interval) <= set(present):
        start, end = (f"TRY_CAST({quote_ident(c)} AS TIMESTAMPTZ)" for c in interval)
        checks.append((interval[1], f"{end} < {start}", f"the interval ends before its `{interval[0]}`"))
    firsts = "".join(f", min({ROW_COLUMN}) FILTER (WHERE {pred})" for _, pred, _ in checks)
    has_ts = "ts" in present
    ts = "ts" if source_types.get("ts") == "TIMESTAMP WITH TIME ZONE" else "TRY_CAST(ts AS TIMESTAMPTZ)"
    ts_range = f"min({ts}), max({ts})" if has_ts else "NULL, NULL"
    result = con.execute(f"SELECT count(*), {ts_range}{firsts} FROM {view}").fetchall()[0]
    rows, min_ts, max_ts, *first_bad = result
    bad = [(row, i) for i, row in enumerate(first_bad) if row is not None]
    kwargs_for = (lambda row: {"line": row}) if item.position == "line" else (lambda row: {"row": row})
    if bad:
        row, i = min(bad)
        column, _, problem = checks[i]
        value = con.execute(
            f"SELECT CAST({quote_ident(column)} AS VARCHAR) FROM {view} WHERE {ROW_COLUMN} = ?", [row]
        ).fetchall()
        shown = value[0][0] if value else None
        raise InputError(problem, file=item.origin, column=column, value=shown, **kwargs_for(row))
    if item.table in UNIQUE_IN_BATCH:
        keys = NATURAL_KEYS[item.table]
        key_list = ", ".join(quote_ident(k) for k in keys)
        duplicate = con.execute(
            f"SELECT min(first_row), min(second_row) FROM (SELECT min({ROW_COLUMN}) AS first_row, "
            f"list_sort(list({ROW_COLUMN}))[2] AS second_row FROM {view} "
            f"GROUP BY {key_list} HAVING count(*) > 1)"
        ).fetchall()[0]
        if duplicate[1] is not None:
            where = "line" if item.position == "line" else "row"
            raise InputError(
                f"the same ({', '.join(keys)}) appears twice, first on {where} {duplicate[0]}",
                file=item.origin,
                column=keys[-1],
                hint="Each record may appear once in a batch; remove the repeated one and load again.",
                **kwargs_for(duplicate[1]),
            )
    return rows, min_ts, max_ts


def _merge(
    con: duckdb.DuckDBPyConnection, item: TableInput, view: str, rows: int, ts_range: tuple[Any, Any]
) -> int:
    """Insert the relation into its table by natural key; return the number of new rows."""
    table = quote_ident(item.table)
    columns = table_columns(con, item.table)
    present = set(con.sql(f"SELECT * FROM {view} LIMIT 0").columns)
    select = ", ".join(
        f"CAST({quote_ident(c.name)} AS {c.type}) AS {quote_ident(c.name)}"
        if c.name in present
        else f"CAST(NULL AS {c.type}) AS {quote_ident(c.name)}"
        for c in columns
    )
    keys = NATURAL_KEYS[item.table]
    match = " AND ".join(f"t.{quote_ident(k)} IS NOT DISTINCT FROM s.{quote_ident(k)}" for k in keys)
    key_list = ", ".join(quote_ident(k) for k in keys)
    typed = f"(SELECT {select}, {ROW_COLUMN} FROM {view})"
    names = ", ".join(quote_ident(c.name) for c in columns)
    if item.table in UPSERT_TABLES:
        # The newest record of a key wins: later rows in the batch, then this batch over the store.
        latest = f"(SELECT * FROM {typed} QUALIFY row_number() OVER (PARTITION BY {key_list} ORDER BY {ROW_COLUMN} DESC) = 1)"
        con.execute(f"CREATE OR REPLACE TEMP TABLE __stage AS SELECT {names} FROM {latest}")
        changed = con.execute(f"SELECT count(*) FROM (FROM __stage EXCEPT FROM {table})").fetchall()[0][0]
        con.execute(f"DELETE FROM {table} t WHERE EXISTS (SELECT 1 FROM __stage s WHERE {match})")
        con.execute(f"INSERT INTO {table} SELECT * FROM __stage")
        con.execute("DROP TABLE __stage")
        return changed
    window, params = "", None
    if "ts" in keys and ts_range[0] is not None:
        # Restricting the probe to the batch's time range lets zone maps skip old row groups.
        window = " AND t.ts BETWEEN $lo AND $hi"
        params = {"lo": ts_range[0], "hi": ts_range[1]}
    overlap = con.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} t WHERE true{window} LIMIT 1)", params
    ).fetchall()[0][0]
    if not overlap:
        # Nothing stored in the batch's time range (or nothing at all), so no key of the batch is
        # stored yet: skip the anti-join probe and the row counts (the common append case).
        con.execute(f"INSERT INTO {table} SELECT {names} FROM {typed}")
        return rows
    before = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    con.execute(
        f"INSERT INTO {table} SELECT {names} FROM {typed} s "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {match}{window})",
        params,
    )
    return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] - before


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, items: list[TableInput]) -> Iterator[list[str]]:
    views = []
    try:
        for i, item in enumerate(items):
            view = f"__input_{i}"
            con.register(view, item.relation)
            views.append(view)
        yield views
    finally:
        for view in views:
            con.unregister(view)


def load_batch(
    con: duckdb.DuckDBPyConnection,
    items: list[TableInput],
    source: str,
    in_transaction: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> list[LoadResult]:
    """Validate every input, then load them all in one transaction.

    `in_transaction(con)` runs inside that transaction after the data is merged,
    for bookkeeping that must commit or roll back with it (a source's watermark).
    Raises `InputError` (nothing written) when any cell breaks the contract.
    """
    for item in items:
        if item.table not in LANDING_TABLES:
            raise InputError(
                f"`{item.table}` is not a landing table",
                file=item.origin,
                hint=f"Landing tables: {', '.join(LANDING_TABLES)}.",
            )
    ensure_schema(con)
    with _registered(con, items) as views:
        checked = [_validate(con, item, view) for item, view in zip(items, views)]
        results: list[LoadResult] = []
        con.execute("BEGIN TRANSACTION")
        try:
            for item, view, (rows, lo, hi) in zip(items, views, checked):
                new = _merge(con, item, view, rows, (lo, hi))
                results.append(LoadResult(item.table, rows, new))
            if in_transaction is not None:
                in_transaction(con)
            con.execute(
                "INSERT INTO load_log SELECT coalesce(max(batch_id), 0) + 1, now(), $source, $tables, "
                "$rows_in, $rows_new FROM load_log",
                {
                    "source": source,
                    "tables": sorted({r.table for r in results}),
                    "rows_in": sum(r.rows_in for r in results),
                    "rows_new": sum(r.rows_new for r in results),
                },
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return results


def data_version(con: duckdb.DuckDBPyConnection) -> int:
    """The id of the last committed load batch (0 for an empty store)."""
    return con.execute("SELECT coalesce(max(batch_id), 0) FROM load_log").fetchall()[0][0]


def row_counts(
    con: duckdb.DuckDBPyConnection, tables: tuple[str, ...] = LANDING_TABLES
) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {quote_ident(t)}").fetchall()[0][0] for t in tables}
