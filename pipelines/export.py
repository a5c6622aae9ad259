"""`gpufleet export`: one ISO week of the documented views as Hive-partitioned Parquet or CSV.

Layout: `<out>/<table>/<col>=<value>/.../data_0.parquet` (or `.csv`), partition columns as in
`EXPORT_TABLES`; read it back with
`read_parquet('<out>/<table>/**/*.parquet', hive_partitioning = true)`.

Atomic and idempotent:
1. Every table of the week is first written (DuckDB `COPY ... PARTITION_BY`) into a staging folder
   inside `<out>` (same filesystem), under names ending in `.partial` that no `*.parquet` /
   `*.csv` glob matches. A crash or kill here leaves the previous export untouched.
2. Only when everything is staged, each file is renamed into place (`os.replace`, atomic), then
   partitions of the same week that the new export no longer has are removed. Other weeks'
   partitions are never touched. A reader sees each file either whole-old or whole-new.
An exclusive lock on `<out>/.export.lock` keeps two exports from writing the same folder at once;
leftover staging folders of killed runs are removed by the next run.

Safe next to other people's files: `<out>` must be a new or empty folder, or a lake an earlier
export made (it holds the marker `.gpufleet-lake`); `/` and an existing file are refused. Every
file and folder below `<out>` is opened without following links (relative to an open folder,
`O_NOFOLLOW`), the lock file is never truncated, and the staging folder has a random name, so a
link planted in a shared lake cannot make an export write, empty or delete a file elsewhere.

An export never replaces a week that has data with an empty one: a database with nothing
computed for the week (an empty or wrong `--db`) is refused unless `allow_empty`; so is one whose
raw data changed since the last compute (the derived tables would be out of date) unless
`stale_ok`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from pipelines.compute import derived, require_tables, stale_data
from pipelines.errors import GpufleetError
from pipelines.sql import bind, execute, load_sql, quote_literal
from pipelines.weeks import IsoWeek

FORMATS = ("parquet", "csv")

EXPORT_TABLES: dict[str, tuple[str, ...]] = {
    # table: Hive partition columns, outermost first (`week` is added where the view has none).
    "weekly_summary": ("cluster", "week"),
    "goodput_stack": ("cluster", "week"),
    "node_availability_daily": ("cluster", "day"),
    "fleet_availability_daily": ("cluster", "day"),
    "node_state_intervals": ("week",),
    "job_outcomes": ("week",),
    "attempt_outcomes": ("week",),
    "job_goodput": ("week",),
    "goodput_segments": ("week",),
    "rank_slowdown": ("week",),
    "anomalies": ("week",),
    "failure_escapes": ("week",),
    "checkpoint_advice": ("week",),
    "node_cost": ("week",),
    "gpu_utilisation_daily": ("cluster", "day"),
    "job_utilisation": ("week",),
    "team_utilisation_weekly": ("cluster", "week"),
    "mig_packing": ("cluster", "week"),
}
derived(*EXPORT_TABLES)  # each one a table `gpufleet compute` builds
STAGING_PREFIX = ".staging-"
PARTIAL_SUFFIX = ".partial"
LOCK_NAME = ".export.lock"
SCHEMA_NAME = "schema.json"
"""CSV exports: `<out>/<table>/schema.json` maps each column in the files to its DuckDB type."""
LAKE_MARKER = ".gpufleet-lake"
"""The file that says a folder is a gpufleet export lake (so a re-export may write into it)."""
_NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class ExportResult:
    table: str
    rows: int
    partitions: int
    removed_partitions: int


def _refuse(path: Path, problem: str, hint: str) -> GpufleetError:
    return GpufleetError(f"`{path}` {problem}.", hint)


def _check_out(out: Path) -> None:
    """Refuse `/`, an existing file, and a non-empty folder that is not a gpufleet lake."""
    if out.resolve() == Path("/"):
        raise _refuse(
            out, "is the root folder", "Pass --out a folder of its own, e.g. /srv/gpufleet-lake."
        )
    if out.exists() and not out.is_dir():
        raise _refuse(
            out,
            "is a file, not a folder",
            "Pass --out a new or empty folder, or an earlier export's.",
        )
    if not out.is_dir():
        return
    names = {entry.name for entry in os.scandir(out)}
    if not names or LAKE_MARKER in names:
        return
    # A lake an earlier version exported into, before the marker existed: only export tables.
    known = set(EXPORT_TABLES) | {LOCK_NAME}
    if all(name in known or name.startswith(STAGING_PREFIX) for name in names):
        return
    raise _refuse(
        out,
        "is a folder that holds other files and is not a gpufleet lake",
        f"Pass --out a new or empty folder (an export marks it with `{LAKE_MARKER}`).",
    )


def _open_dir(name: str, parent_fd: int, shown: Path, *, create: bool) -> int:
    """Open (or first create) a folder below `parent_fd` without following a link."""
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, _NOFOLLOW_DIR, dir_fd=parent_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(
                shown,
                "is a link or a file where the export keeps a folder",
                "Remove it (nothing was written through it) and export again.",
            ) from None
        raise


def _mark_lake(out_fd: int, out: Path) -> None:
    """Create the lake marker once; never write through a link in its place."""
    try:
        fd = os.open(
            LAKE_MARKER,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=out_fd,
        )
    except FileExistsError:
        if not stat.S_ISREG(os.stat(LAKE_MARKER, dir_fd=out_fd, follow_symlinks=False).st_mode):
            raise _refuse(
                out / LAKE_MARKER,
                "is not a regular file",
                "Remove it (nothing was written through it) and export again.",
            ) from None
        return
    with os.fdopen(fd, "w") as marker:
        marker.write(
            "A gpufleet export lake: `gpufleet export --out` writes here (docs/operations.md).\n"
        )


@contextmanager
def _export_lock(out_fd: int, out: Path) -> Iterator[None]:
    # Opened without truncating and without following a link: a planted link cannot empty a file.
    try:
        fd = os.open(
            LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=out_fd
        )
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _refuse(
                out / LOCK_NAME,
                "is a link, not the export's lock file",
                "Remove it (nothing was written through it) and export again.",
            ) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refuse(out / LOCK_NAME, "is not a regular file", "Remove it and export again.")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise GpufleetError(
                f"Another export is writing to `{out}`.",
                "Wait for it to finish (scheduled runs: use `flock`, see deploy/crontab).",
            ) from e
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _partition_in_week(relative: Path, week: IsoWeek) -> bool:
    """Whether a partition folder (relative to the table folder) belongs to `week`."""
    for part in relative.parts:
        key, _, value = part.partition("=")
        if key == "week":
            return value == week.label
        if key == "day":
            try:
                return IsoWeek.of(date.fromisoformat(value)) == week
            except ValueError:
                return False
    return False


def _partitions(out_fd: int, table: str, depth: int) -> set[Path]:
    """Partition folders `depth` levels below `<out>/<table>`, relative to it (links are not followed)."""
    found: set[Path] = set()

    def walk(fd: int, relative: Path, level: int) -> None:
        for entry in os.scandir(fd):
            if "=" not in entry.name or not entry.is_dir(follow_symlinks=False):
                continue
            if level == depth:
                found.add(relative / entry.name)
                continue
            child = os.open(entry.name, _NOFOLLOW_DIR, dir_fd=fd)
            try:
                walk(child, relative / entry.name, level + 1)
            finally:
                os.close(child)

    try:
        table_fd = os.open(table, _NOFOLLOW_DIR, dir_fd=out_fd)
    except FileNotFoundError:
        return found
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            return found  # not a folder of ours: _publish refuses it by name
        raise
    try:
        walk(table_fd, Path(), 1)
    finally:
        os.close(table_fd)
    return found


def _stage(
    con: duckdb.DuckDBPyConnection, table: str, week: IsoWeek, fmt: str, staging: Path
) -> int:
    """COPY the table's week into `staging/<table>/...`; return the number of rows written."""
    sql = load_sql(f"export/{table}")
    params = bind(
        sql, {"week": week.label, "week_start": week.monday}
    )  # the export queries take a DATE
    options = [
        f"FORMAT {fmt}",
        f"PARTITION_BY ({', '.join(EXPORT_TABLES[table])})",
        f"FILE_EXTENSION {quote_literal(fmt + PARTIAL_SUFFIX)}",
        "FILENAME_PATTERN 'data_{i}'",
    ]
    if fmt == "csv":
        options.append("HEADER true")
        columns = _file_columns(con, sql, params, table)
        text = [name for name, type_name in columns.items() if type_name == "VARCHAR"]
        if text:
            # Quoted, a text value such as job id `007` reads back as text, not as the number 7.
            options.append(f"FORCE_QUOTE ({', '.join(_sql_identifier(c) for c in text)})")
    target = quote_literal(str(staging / table))
    # The query text comes from queries/export/; values are bound parameters.
    rows = con.execute(
        f"COPY ({sql.rstrip().rstrip(';')}) TO {target} ({', '.join(options)})", params
    ).fetchall()
    if fmt == "csv":
        (staging / table).mkdir(parents=True, exist_ok=True)
        (staging / table / (SCHEMA_NAME + PARTIAL_SUFFIX)).write_text(
            json.dumps(columns, indent=1) + "\n"
        )
    return int(rows[0][0]) if rows else 0


def _file_columns(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict, table: str
) -> dict[str, str]:
    """The DuckDB type of each column a CSV file holds (the partition columns are in the folder names)."""
    described = con.execute(
        f"SELECT * FROM ({sql.rstrip().rstrip(';')}) AS q LIMIT 0", params
    ).description
    return {name: str(type_) for name, type_, *_ in described if name not in EXPORT_TABLES[table]}


def _sql_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _publish_schema(staging: Path, out_fd: int, out: Path, table: str) -> None:
    """Rename a CSV export's `schema.json` into `<out>/<table>/` (over a planted link, never through it)."""
    staged = staging / table / (SCHEMA_NAME + PARTIAL_SUFFIX)
    if not staged.exists():
        return
    table_fd = _open_dir(table, out_fd, out / table, create=True)
    try:
        os.replace(staged, SCHEMA_NAME, dst_dir_fd=table_fd)
    finally:
        os.close(table_fd)


def _publish(staging: Path, out_fd: int, out: Path, table: str, week: IsoWeek) -> tuple[int, int]:
    """Rename the staged files of `table` into place; drop the week's partitions that are gone.

    Every folder is opened relative to its parent without following links; a rename over a
    planted link replaces the link, never its target.
    """
    depth = len(EXPORT_TABLES[table])
    staged = {
        p.relative_to(staging / table) for p in (staging / table).glob("/".join(["*=*"] * depth))
    }
    for partition in sorted(staged):
        with ExitStack() as chain:
            fd, shown = out_fd, out
            for part in (table, *partition.parts):
                shown = shown / part
                fd = _open_dir(part, fd, shown, create=True)
                chain.callback(os.close, fd)
            new_names = set()
            for file in sorted((staging / table / partition).iterdir()):
                name = file.name.removesuffix(PARTIAL_SUFFIX)
                os.replace(file, name, dst_dir_fd=fd)
                new_names.add(name)
            for old in os.scandir(fd):
                if old.name not in new_names and old.is_file(follow_symlinks=False):
                    os.unlink(old.name, dir_fd=fd)
    stale = {p for p in _partitions(out_fd, table, depth) - staged if _partition_in_week(p, week)}
    for partition in stale:
        with ExitStack() as chain:
            fd = out_fd
            for part in (table, *partition.parts[:-1]):
                fd = os.open(part, _NOFOLLOW_DIR, dir_fd=fd)
                chain.callback(os.close, fd)
            shutil.rmtree(partition.parts[-1], dir_fd=fd)
    return len(staged), len(stale)


def _database_name(con: duckdb.DuckDBPyConnection) -> str:
    rows = execute(con, "export/database_path").fetchall()
    return rows[0][0] if rows and rows[0][0] else ":memory:"


def _week_has_data(con: duckdb.DuckDBPyConnection, week: IsoWeek) -> bool:
    """Whether the weekly summary holds the week (what `compute` writes for every week with data)."""
    if not execute(con, "export/summary_present").fetchall()[0][0]:
        return False
    return bool(execute(con, "export/week_has_data", {"week": week.label}).fetchall()[0][0])


def export_week(
    con: duckdb.DuckDBPyConnection,
    week: IsoWeek,
    out_dir: str | os.PathLike[str],
    fmt: str = "parquet",
    tables: list[str] | None = None,
    *,
    allow_empty: bool = False,
    stale_ok: bool = False,
    on_staged: Callable[[str], None] | None = None,
) -> list[ExportResult]:
    """Export one ISO week of `tables` (default: all of `EXPORT_TABLES`) to `out_dir`.

    `on_staged(table)` runs after each table is staged, before anything is published.
    """
    if fmt not in FORMATS:
        raise GpufleetError(f"Unknown export format `{fmt}`.", f"Use one of: {', '.join(FORMATS)}.")
    names = list(tables or EXPORT_TABLES)
    unknown = [t for t in names if t not in EXPORT_TABLES]
    if unknown:
        raise GpufleetError(
            f"`{unknown[0]}` is not an exportable table.",
            f"Exportable tables: {', '.join(EXPORT_TABLES)}.",
        )
    require_tables(con, names)
    if not stale_ok:
        stale = stale_data(con)
        if stale is not None:
            computed, current = stale
            raise GpufleetError(
                f"Raw data in `{_database_name(con)}` changed since the last compute (data version "
                f"{current}; the derived tables are from version {computed}).",
                "Run `gpufleet compute` first, or pass --stale-ok to export the derived tables as they are.",
            )
    out = Path(out_dir)
    _check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    out_fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _mark_lake(out_fd, out)
        with _export_lock(out_fd, out):
            return _export_locked(con, week, out_fd, out, fmt, names, allow_empty, on_staged)
    finally:
        os.close(out_fd)


def _export_locked(
    con: duckdb.DuckDBPyConnection,
    week: IsoWeek,
    out_fd: int,
    out: Path,
    fmt: str,
    names: list[str],
    allow_empty: bool,
    on_staged: Callable[[str], None] | None,
) -> list[ExportResult]:
    for leftover in os.scandir(out_fd):
        # Only real folders of earlier runs; a link with a staging name is left alone.
        if leftover.name.startswith(STAGING_PREFIX) and leftover.is_dir(follow_symlinks=False):
            shutil.rmtree(leftover.name, ignore_errors=True, dir_fd=out_fd)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    try:
        rows = {}
        for table in names:
            rows[table] = _stage(con, table, week, fmt, staging)
            if on_staged:
                on_staged(table)
        if not allow_empty and not sum(rows.values()) and not _week_has_data(con, week):
            raise GpufleetError(
                f"`{_database_name(con)}` has nothing computed for {week.label}: exporting it would "
                f"empty that week in `{out}`.",
                "Check --db and run `gpufleet compute`; pass --allow-empty to publish an empty week.",
            )
        results = []
        for table in names:
            written, removed = _publish(staging, out_fd, out, table, week)
            _publish_schema(staging, out_fd, out, table)
            results.append(ExportResult(table, rows[table], written, removed))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return results
