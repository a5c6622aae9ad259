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
    COMPACT_STORAGE,
    COMPUTE_ROUNDING_S,
    FINITE_COLUMNS,
    IDENTITY_WHEN_ENDED,
    INTERVAL_COLUMNS,
    LANDING_TABLES,
    NATURAL_KEYS,
    NON_NEGATIVE,
    PROBE_WINDOW,
    UPSERT_TABLES,
)
from pipelines.errors import DatabaseMissingError, GpufleetError, InputError
from pipelines.sql import execute, execute_script, quote_ident, quote_literal

ROW_COLUMN = "__row"
"""Column a source relation carries with the 1-based line/row number of each record."""


def connect(
    path: str | Path, *, read_only: bool = False, retries: int = 0
) -> duckdb.DuckDBPyConnection:
    """Open this very file with UTC as the session time zone.

    gpufleet commands reach `--db` through `pipelines.serving` (writers publish a copy,
    readers open the newest published version); this is the plain open beneath it.
    `retries` waits (0.2 s, doubling) while another process holds DuckDB's write lock.
    """
    from pipelines.serving import (
        duckdb_writer_pid,
        explain,
        first_line,
        foreign_writer_error,
        no_progress_bar_on_stdout,
        refuse_truncated,
    )

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
                raise explain(e, path) or GpufleetError(
                    f"Cannot open database `{path}`: {first_line(e)}"
                ) from None
            if attempt == retries:
                raise foreign_writer_error(path, duckdb_writer_pid(path)) from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        except duckdb.Error as e:
            raise explain(e, path) or GpufleetError(
                f"Cannot open database `{path}`: {first_line(e)}"
            ) from None
    refuse_truncated(con, path)
    con.execute("SET TimeZone = 'UTC'")
    no_progress_bar_on_stdout(con)
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


def ensure_schema(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create the landing tables if they do not exist (idempotent); upgrade older ones in place.

    Returns the landing tables upgraded (none for a current database)."""
    from pipelines.migrate import migrate_landing

    execute_script(con, "schema/landing")
    return migrate_landing(con)


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
    """A landing table's columns; for one kept as a view, NOT NULL as its storage tables say."""
    columns = [
        Column(*row) for row in execute(con, "store/table_columns", {"table": table}).fetchall()
    ]
    if table not in COMPACT_STORAGE:
        return columns
    not_null = {
        c.name
        for storage in COMPACT_STORAGE[table]
        for c in table_columns(con, storage)
        if not c.nullable
    }
    return [Column(c.name, c.type, c.name not in not_null) for c in columns]


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
    """What one table's part of a batch did: every distinct record is new, updated or unchanged."""

    table: str
    rows_in: int
    rows_new: int
    rows_updated: int = 0
    rows_unchanged: int = 0
    repeats_skipped: int = 0
    """Exact repeats of a record within the batch, loaded once."""
    clipped: int = 0
    """`compute_s` values above `step_s` by rounding only, clipped to `step_s`."""

    @property
    def rows_changed(self) -> int:
        return self.rows_new + self.rows_updated


@dataclass(frozen=True)
class Checked:
    """What validation learnt about one input: its size, time range, repeats and clipped cells."""

    rows: int
    min_ts: Any
    max_ts: Any
    repeats: int
    clipped: int


def _typed(ref: str, source_type: str | None, target_type: str) -> str:
    """`ref` as the target type (no cast when the input already has it)."""
    return ref if source_type == target_type else f"TRY_CAST({ref} AS {target_type})"


def _validate(con: duckdb.DuckDBPyConnection, item: TableInput, view: str) -> Checked:
    """Check columns, types, nulls, allowed and possible values, and repeats of a natural key."""
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
            checks.append(
                (
                    c.name,
                    f"{ref} IS NOT NULL AND TRY_CAST({ref} AS {c.type}) IS NULL",
                    f"value is not a valid {c.type}",
                )
            )
        allowed = ALLOWED_VALUES.get((item.table, c.name))
        if allowed:
            values = ", ".join(quote_literal(v) for v in allowed)
            checks.append(
                (
                    c.name,
                    f"{ref} IS NOT NULL AND CAST({ref} AS VARCHAR) NOT IN ({values})",
                    f"value is not one of {', '.join(allowed)}",
                )
            )
    types = {c.name: c.type for c in columns}
    for name in NON_NEGATIVE.get(item.table, ()):
        if name in present:
            checks.append(
                (
                    name,
                    f"{_typed(quote_ident(name), source_types[name], types[name])} < 0",
                    "value cannot be negative",
                )
            )
    for name in FINITE_COLUMNS.get(item.table, ()):
        if name in present:
            checks.append(
                (
                    name,
                    f"NOT isfinite({_typed(quote_ident(name), source_types[name], 'DOUBLE')})",
                    "value is not a finite number (NaN or infinity)",
                )
            )
    clip = "0"
    if item.table == "rank_steps" and {"step_s", "compute_s"} <= set(present):
        step = _typed("step_s", source_types["step_s"], "DOUBLE")
        busy = _typed("compute_s", source_types["compute_s"], "DOUBLE")
        problem = (
            f"compute_s is more than {COMPUTE_ROUNDING_S * 1000:g} ms above step_s "
            "(busy time cannot exceed the step's wall time)"
        )
        checks.append(("compute_s", f"{busy} > {step} + {COMPUTE_ROUNDING_S}", problem))
        clip = f"count(*) FILTER (WHERE {busy} > {step})"
    interval = INTERVAL_COLUMNS.get(item.table)
    if interval and set(interval) <= set(present):
        start, end = (f"TRY_CAST({quote_ident(c)} AS TIMESTAMPTZ)" for c in interval)
        checks.append(
            (interval[1], f"{end} < {start}", f"the interval ends before its `{interval[0]}`")
        )
    firsts = "".join(f", min({ROW_COLUMN}) FILTER (WHERE {pred})" for _, pred, _ in checks)
    has_ts = "ts" in present
    ts = (
        "ts"
        if source_types.get("ts") == "TIMESTAMP WITH TIME ZONE"
        else "TRY_CAST(ts AS TIMESTAMPTZ)"
    )
    ts_range = f"min({ts}), max({ts})" if has_ts else "NULL, NULL"
    result = con.execute(f"SELECT count(*), {ts_range}, {clip}{firsts} FROM {view}").fetchall()[0]
    rows, min_ts, max_ts, clipped, *first_bad = result
    bad = [(row, i) for i, row in enumerate(first_bad) if row is not None]
    kwargs_for = (
        (lambda row: {"line": row}) if item.position == "line" else (lambda row: {"row": row})
    )
    if bad:
        row, i = min(bad)
        column, _, problem = checks[i]
        value = con.execute(
            f"SELECT CAST({quote_ident(column)} AS VARCHAR) FROM {view} WHERE {ROW_COLUMN} = ?",
            [row],
        ).fetchall()
        shown = value[0][0] if value else None
        raise InputError(problem, file=item.origin, column=column, value=shown, **kwargs_for(row))
    repeats = _repeats(con, item, view, columns, present, source_types, rows)
    return Checked(rows, min_ts, max_ts, repeats, clipped)


def _typed_select(columns: list[Column], present: set[str] | list[str]) -> str:
    """Every landing column cast to its type (NULL when the input lacks it)."""
    return ", ".join(
        f"CAST({quote_ident(c.name)} AS {c.type}) AS {quote_ident(c.name)}"
        if c.name in present
        else f"CAST(NULL AS {c.type}) AS {quote_ident(c.name)}"
        for c in columns
    )


HASHES_PER_PASS = 20_000_000
"""Key hashes sorted at once (8 bytes each), bounding the repeat check's memory on big batches."""


def _may_repeat_a_key(con: duckdb.DuckDBPyConnection, view: str, key_hash: str, rows: int) -> bool:
    """Whether two rows share a key hash (a repeated key, or, rarely, a hash collision)."""
    passes = max(1, -(-rows // HASHES_PER_PASS))
    for part in range(passes):
        # Equal keys have equal hashes, so splitting by hash value keeps every repeat in one pass.
        where = f" WHERE h % {passes} = {part}" if passes > 1 else ""
        hashes = con.execute(
            f"SELECT h FROM (SELECT {key_hash} AS h FROM {view}){where}"
        ).fetchnumpy()["h"]
        hashes.sort()
        if (hashes[1:] == hashes[:-1]).any():
            return True
    return False


def _repeats(
    con: duckdb.DuckDBPyConnection,
    item: TableInput,
    view: str,
    columns: list[Column],
    present: list[str],
    source_types: dict[str, str],
    rows: int,
) -> int:
    """The number of exact repeats in the batch; refuses one key with two different records.

    A sorted array of 64-bit hashes of the typed keys says whether any key may repeat (none
    in the common case, so a big scrape batch pays one scan and a sort, several times cheaper
    than a hash aggregate over millions of keys); only then are the candidate keys' rows
    compared column by column.
    """
    keys = NATURAL_KEYS[item.table]
    types = {c.name: c.type for c in columns}
    key_hash = (
        "hash("
        + ", ".join(
            _typed(quote_ident(k), source_types.get(k), types[k]) if k in present else "NULL"
            for k in keys
        )
        + ")"
    )
    if not _may_repeat_a_key(con, view, key_hash, rows):
        return 0
    names = ", ".join(quote_ident(c.name) for c in columns)
    key_list = ", ".join(quote_ident(k) for k in keys)
    typed = (
        f"(SELECT {_typed_select(columns, present)}, {ROW_COLUMN}, {key_hash} AS __key_hash FROM {view} "
        f"WHERE {key_hash} IN (SELECT {key_hash} FROM {view} GROUP BY ALL HAVING count(*) > 1))"
    )
    # Distinct records of the candidate keys, each with its first line and how often it came.
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE __records AS SELECT {names}, min({ROW_COLUMN}) AS first_row, "
        f"count(*) AS copies FROM {typed} GROUP BY ALL"
    )
    try:
        conflict = con.execute(
            f"SELECT list_sort(list(first_row))[1:2] FROM __records GROUP BY {key_list} "
            "HAVING count(*) > 1 ORDER BY 1 LIMIT 1"
        ).fetchall()
        if conflict:
            first, second = conflict[0][0]
            differ = execute(
                con, "store/conflicting_records", {"first": first, "second": second}
            ).fetchall()
            column_names = [c.name for c in columns]
            changed = [
                f"{name} `{a}` vs `{b}`"
                for name, a, b in zip(column_names, differ[0], differ[1], strict=True)
                if a != b
            ]
            where = "line" if item.position == "line" else "row"
            shown_key = ", ".join(
                f"{k} `{v}`" for k, v in zip(column_names, differ[0], strict=True) if k in keys
            )
            raise InputError(
                f"{where}s {first} and {second} are the same record ({shown_key}) with different values: "
                + "; ".join(changed),
                file=item.origin,
                hint="A record may repeat only exactly; keep the right one and load again. Nothing was loaded.",
            )
        return execute(con, "store/repeated_copies").fetchall()[0][0]
    finally:
        con.execute("DROP TABLE IF EXISTS __records")


def _check_identity(
    con: duckdb.DuckDBPyConnection, item: TableInput, keys: tuple[str, ...]
) -> None:
    """Refuse a batch that changes what identifies an ended record (a different job reusing the id)."""
    columns = IDENTITY_WHEN_ENDED.get(item.table)
    if not columns:
        return
    table = quote_ident(item.table)
    match = " AND ".join(
        f"t.{quote_ident(k)} IS NOT DISTINCT FROM s.{quote_ident(k)}" for k in keys
    )
    for name in columns:
        ref = quote_ident(name)
        found = con.execute(
            f"SELECT s.{ROW_COLUMN}, CAST(t.{ref} AS VARCHAR), CAST(s.{ref} AS VARCHAR), "
            f"{', '.join(f's.{quote_ident(k)}' for k in keys)} FROM __stage s JOIN {table} t ON {match} "
            f"WHERE t.end_ts IS NOT NULL AND t.{ref} IS NOT NULL AND s.{ref} IS NOT NULL "
            f"AND t.{ref} <> s.{ref} ORDER BY s.{ROW_COLUMN} LIMIT 1"
        ).fetchall()
        if found:
            row, stored, given, *key_values = found[0]
            shown = ", ".join(f"{k} `{v}`" for k, v in zip(keys, key_values, strict=True))
            where = {"line": row} if item.position == "line" else {"row": row}
            raise InputError(
                f"{item.table[:-1]} {shown} has ended with {name} `{stored}`; this batch gives `{given}`: "
                "a different job reusing the id, not an update",
                file=item.origin,
                column=name,
                hint="Load the other job under its own id (or cluster). Nothing was loaded.",
                **where,
            )


def _merge(
    con: duckdb.DuckDBPyConnection, item: TableInput, view: str, checked: Checked
) -> LoadResult:
    """Insert the relation into its table by natural key; count new, updated and unchanged rows."""
    table = quote_ident(item.table)
    columns = table_columns(con, item.table)
    present = set(con.sql(f"SELECT * FROM {view} LIMIT 0").columns)
    select = _typed_select(columns, present)
    keys = NATURAL_KEYS[item.table]
    match = " AND ".join(
        f"t.{quote_ident(k)} IS NOT DISTINCT FROM s.{quote_ident(k)}" for k in keys
    )
    key_list = ", ".join(quote_ident(k) for k in keys)
    typed = f"(SELECT {select}, {ROW_COLUMN} FROM {view})"
    if checked.repeats:
        # Every repeat is exact (a conflicting one was refused): keep each record's first line.
        typed = f"(FROM {typed} QUALIFY row_number() OVER (PARTITION BY {key_list} ORDER BY {ROW_COLUMN}) = 1)"
    names = ", ".join(quote_ident(c.name) for c in columns)
    distinct = checked.rows - checked.repeats

    def result(new: int, updated: int) -> LoadResult:
        return LoadResult(
            item.table,
            checked.rows,
            new,
            updated,
            distinct - new - updated,
            checked.repeats,
            checked.clipped,
        )

    if item.table == "rank_steps" and checked.clipped:
        names_clipped = names.replace(
            '"compute_s"', 'least("compute_s", "step_s") AS "compute_s"', 1
        )
    else:
        names_clipped = names
    if item.table == "gpu_samples":
        _refuse_pruned_samples(con, item, typed, checked)
    if item.table in UPSERT_TABLES:
        # Created inside the load's transaction: a failure rolls it back with everything else (no
        # cleanup statement may run in an aborted transaction, it would hide the real error).
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE __stage AS SELECT {names}, {ROW_COLUMN} FROM {typed}"
        )
        _check_identity(con, item, keys)
        new = con.execute(
            f"SELECT count(*) FROM __stage s WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {match})"
        ).fetchall()[0][0]
        changed = con.execute(
            f"SELECT count(*) FROM (SELECT {names} FROM __stage EXCEPT SELECT {names} FROM {table})"
        ).fetchall()[0][0]
        if changed:
            con.execute(
                f"DELETE FROM {table} t WHERE EXISTS (SELECT 1 FROM __stage s WHERE {match})"
            )
            con.execute(f"INSERT INTO {table} SELECT {names} FROM __stage")
        con.execute("DROP TABLE __stage")
        return result(new, changed - new)
    window = ""
    probe = PROBE_WINDOW[item.table]
    if probe == "ts" and checked.min_ts is not None:
        # Restricting the probe to the batch's time range lets zone maps skip old row groups.
        # Literals, not parameters: the query may become a view (gpu_samples' storage).
        window = (
            f" AND t.ts BETWEEN {_ts_literal(checked.min_ts)} AND {_ts_literal(checked.max_ts)}"
        )
    elif probe == "job_id":
        # The batch's jobs, read once: the probe, the anti-join and the note of jobs whose step
        # summaries change all use them. Rolled back with the load when it fails; dropped below.
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE __batch_jobs AS SELECT DISTINCT cluster, job_id FROM {typed}"
        )
        window = " AND t.job_id IN (SELECT job_id FROM __batch_jobs)"
    overlap = con.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} t WHERE true{window} LIMIT 1)"
    ).fetchall()[0][0]
    if not overlap:
        # Nothing stored in the batch's time range (or nothing at all), so no key of the batch is
        # stored yet: skip the anti-join probe and the row counts (the common append case).
        new_rows = f"SELECT {names_clipped} FROM {typed}"
    else:
        new_rows = (
            f"SELECT {names_clipped} FROM {typed} s "
            f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {match}{window})"
        )
    if item.table == "gpu_samples":
        return result(insert_gpu_samples(con, new_rows, checked.min_ts), 0)
    if not overlap:
        con.execute(f"INSERT INTO {table} {new_rows}")
        stored = distinct
    else:
        before = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        con.execute(f"INSERT INTO {table} {new_rows}")
        stored = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] - before
    if item.table == "node_conditions" and stored:
        execute(con, "store/node_conditions_loaded_add", {"from_ts": checked.min_ts})
    if item.table == "rank_steps" and stored:
        # The jobs whose step summaries the next compute builds again (pipelines/step_summaries.py);
        # every job of the batch, a superset of those with new rows.
        execute(con, "store/rank_steps_loaded_add")
    if probe == "job_id":
        con.execute("DROP TABLE temp.main.__batch_jobs")
    if item.table == "gpu_instance_samples" and stored:
        # MIG samples change gpu_activity_windows from their time on, as GPU samples do.
        from pipelines.sample_rollups import record_loaded_samples

        record_loaded_samples(con, checked.min_ts)
    return result(stored, 0)


def _refuse_pruned_samples(
    con: duckdb.DuckDBPyConnection, item: TableInput, typed: str, checked: Checked
) -> None:
    """Refuse GPU samples older than the cut of `gpufleet prune --keep-raw`: their rollups and
    findings are built and kept, and the raw rows they were built from are gone, so new ones
    could only be stored beside them, never counted."""
    from pipelines.sample_rollups import pruned_before

    cut = pruned_before(con)
    if cut is None or checked.min_ts is None or checked.min_ts >= cut:
        return
    row, ts = con.execute(
        f"SELECT {ROW_COLUMN}, CAST(ts AS VARCHAR) FROM {typed} WHERE ts < ? "
        f"ORDER BY {ROW_COLUMN} LIMIT 1",
        [cut],
    ).fetchall()[0]
    where = {"line": row} if item.position == "line" else {"row": row}
    raise InputError(
        f"GPU sample older than {cut:%Y-%m-%d %H:%M} UTC, where `gpufleet prune --keep-raw` cut the "
        "raw samples",
        file=item.origin,
        column="ts",
        value=ts,
        hint="Samples before the cut are summarised and pruned; load only newer ones. Nothing was loaded.",
        **where,
    )


def _ts_literal(ts: Any) -> str:
    return f"TIMESTAMPTZ '{ts.isoformat()}'" if ts is not None else "NULL"


def insert_gpu_samples(con: duckdb.DuckDBPyConnection, rows: str, earliest: Any = None) -> int:
    """Store new GPU samples (the query `rows`, in the contract's columns) as series and values.

    Keys must be new (the caller's anti-join); each series' strings are stored once
    (queries/schema/landing.sql). `earliest`: a time no later than the first sample (read from
    `rows` when not given), noted for the next compute (pipelines/sample_rollups.py). Returns the
    samples stored.
    """
    from pipelines.sample_rollups import record_loaded_samples

    # Dropped on success only: no statement may run in a transaction a failure aborted (it would
    # hide the real error), and the rollback removes the view with everything else.
    con.execute(f"CREATE OR REPLACE TEMP VIEW __gpu_samples_in AS {rows}")
    execute(con, "store/gpu_series_add")
    stored = execute(con, "store/gpu_samples_add").fetchall()[0][0]
    if stored:
        if earliest is None:
            earliest = execute(con, "store/gpu_samples_in_earliest").fetchall()[0][0]
        record_loaded_samples(con, earliest)
    con.execute("DROP VIEW temp.main.__gpu_samples_in")
    return stored


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


@contextmanager
def _resolved(
    con: duckdb.DuckDBPyConnection,
    items: list[TableInput],
    registered: list[str],
    cluster: str | None,
) -> Iterator[list[str]]:
    from pipelines.cluster_resolution import Item, drop_resolution, resolve_clusters

    views: list[str] = []
    try:
        views = resolve_clusters(
            con,
            [Item(i.table, i.origin, i.position, v) for i, v in zip(items, registered)],
            cluster,
        )
        yield views
    finally:
        drop_resolution(con, views or [f"__resolved_{i}" for i in range(len(items))])


def load_batch(
    con: duckdb.DuckDBPyConnection,
    items: list[TableInput],
    source: str,
    in_transaction: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    cluster: str | None = None,
) -> list[LoadResult]:
    """Validate every input, then load them all in one transaction.

    Every record's `cluster` is resolved first (`pipelines.cluster_resolution`): its own value,
    else `cluster` (the ingest's `--cluster`), else from `nodes` when unambiguous.

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
    with _registered(con, items) as registered, _resolved(con, items, registered, cluster) as views:
        checked = [_validate(con, item, view) for item, view in zip(items, views)]
        results: list[LoadResult] = []
        con.execute("BEGIN TRANSACTION")
        try:
            for item, view, check in zip(items, views, checked):
                results.append(_merge(con, item, view, check))
            if in_transaction is not None:
                in_transaction(con)
            if any(r.rows_changed for r in results):
                # A batch that adds or changes nothing leaves the data version alone, so a
                # re-ingest of an unchanged spool does not trigger a recompute.
                execute(
                    con,
                    "store/load_log_add",
                    {
                        "source": source,
                        "tables": sorted({r.table for r in results}),
                        "rows_in": sum(r.rows_in for r in results),
                        "rows_new": sum(r.rows_changed for r in results),
                    },
                )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return results


def data_version(con: duckdb.DuckDBPyConnection) -> int:
    """The id of the last committed load batch that changed data (0 for an empty store)."""
    return execute(con, "store/data_version").fetchall()[0][0]


def row_counts(
    con: duckdb.DuckDBPyConnection, tables: tuple[str, ...] = LANDING_TABLES
) -> dict[str, int]:
    return {
        t: con.execute(f"SELECT count(*) FROM {quote_ident(t)}").fetchall()[0][0] for t in tables
    }
