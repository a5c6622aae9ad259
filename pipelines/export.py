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
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from pipelines.errors import GpufleetError
from pipelines.report import require_tables
from pipelines.sql import bind, load_sql
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
}
STAGING_PREFIX = ".staging-"
PARTIAL_SUFFIX = ".partial"


@dataclass(frozen=True)
class ExportResult:
    table: str
    rows: int
    partitions: int
    removed_partitions: int


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextmanager
def _export_lock(out_dir: Path) -> Iterator[None]:
    with open(out_dir / ".export.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise GpufleetError(
                f"Another export is writing to `{out_dir}`.",
                "Wait for it to finish (scheduled runs: use `flock`, see deploy/crontab).",
            ) from e
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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


def _partitions(table_dir: Path, depth: int) -> set[Path]:
    """Partition folders `depth` levels below `table_dir`, relative to it."""
    if not table_dir.is_dir():
        return set()
    pattern = "/".join(["*=*"] * depth)
    return {p.relative_to(table_dir) for p in table_dir.glob(pattern) if p.is_dir()}


def _stage(
    con: duckdb.DuckDBPyConnection, table: str, week: IsoWeek, fmt: str, staging: Path
) -> int:
    """COPY the table's week into `staging/<table>/...`; return the number of rows written."""
    sql = load_sql(f"export/{table}")
    params = bind(sql, {"week": week.label, "week_start": week.monday})  # the export queries take a DATE
    options = [f"FORMAT {fmt}", f"PARTITION_BY ({', '.join(EXPORT_TABLES[table])})",
               f"FILE_EXTENSION {_sql_string(fmt + PARTIAL_SUFFIX)}",
               "FILENAME_PATTERN 'data_{i}'"]
    if fmt == "csv":
        options.append("HEADER true")
    target = _sql_string(str(staging / table))
    # The query text comes from queries/export/; values are bound parameters.
    rows = con.execute(f"COPY ({sql.rstrip().rstrip(';')}) TO {target} ({', '.join(options)})",
                       params).fetchall()
    return int(rows[0][0]) if rows else 0


def _publish(staging: Path, out_dir: Path, table: str, week: IsoWeek) -> tuple[int, int]:
    """Rename the staged files of `table` into place; drop the week's partitions that are gone."""
    depth = len(EXPORT_TABLES[table])
    staged = _partitions(staging / table, depth)
    for partition in sorted(staged):
        final_dir = out_dir / table / partition
        final_dir.mkdir(parents=True, exist_ok=True)
        new_names = set()
        for file in sorted((staging / table / partition).iterdir()):
            name = file.name.removesuffix(PARTIAL_SUFFIX)
            os.replace(file, final_dir / name)
            new_names.add(name)
        for old in final_dir.iterdir():
            if old.is_file() and old.name not in new_names:
                old.unlink()
    stale = {
        p for p in _partitions(out_dir / table, depth) - staged if _partition_in_week(p, week)
    }
    for partition in stale:
        shutil.rmtree(out_dir / table / partition)
    return len(staged), len(stale)


def export_week(
    con: duckdb.DuckDBPyConnection,
    week: IsoWeek,
    out_dir: str | os.PathLike[str],
    fmt: str = "parquet",
    tables: list[str] | None = None,
    *,
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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with _export_lock(out):
        for leftover in out.glob(STAGING_PREFIX + "*"):
            shutil.rmtree(leftover, ignore_errors=True)
        staging = out / f"{STAGING_PREFIX}{uuid.uuid4().hex}"
        staging.mkdir()
        try:
            rows = {}
            for table in names:
                rows[table] = _stage(con, table, week, fmt, staging)
                if on_staged:
                    on_staged(table)
            results = []
            for table in names:
                written, removed = _publish(staging, out, table, week)
                results.append(ExportResult(table, rows[table], written, removed))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return results
