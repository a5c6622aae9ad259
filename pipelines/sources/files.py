"""File source: `<table>.csv|.jsonl|.parquet` files in the landing contract.

The universal adapter for scheduler exports and log pipelines. Every file in a
folder whose stem is a landing table is read; the whole folder is one batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import polars as pl

from pipelines.contract import LANDING_TABLES
from pipelines.errors import InputError
from pipelines.sources.protocol import SourceReport, WholeFileSource
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, load_batch

SUFFIXES = (".csv", ".jsonl", ".parquet")


def read_table_file(con: duckdb.DuckDBPyConnection, path: Path) -> TableInput:
    """Read one landing file as text-typed or native columns, with its line/row numbers.

    CSV and JSONL are read as strings so that the store's validation, not the
    reader's type inference, decides what is valid and can name the bad cell.
    """
    table = path.stem
    try:
        if path.suffix == ".csv":
            frame = pl.read_csv(path, infer_schema=False)
            # Line 1 is the header, so the first record is on line 2.
            frame = frame.with_row_index(ROW_COLUMN, offset=2)
            return TableInput(table, frame, str(path), position="line")
        if path.suffix == ".jsonl":
            return TableInput(table, read_jsonl_as_text(path), str(path), position="line")
        relation = con.sql(
            f"SELECT * EXCLUDE (file_row_number), file_row_number + 1 AS {ROW_COLUMN} "
            "FROM read_parquet($path, file_row_number = true)",
            params={"path": str(path)},
        )
        return TableInput(table, relation, str(path), position="row")
    except (pl.exceptions.PolarsError, duckdb.Error, OSError) as e:
        raise InputError(f"cannot read the file: {e}", file=str(path)) from e


def _as_text(value: Any) -> Any:
    """A JSON value as the text the store casts from; lists stay lists of text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def read_jsonl_as_text(path: Path) -> pl.DataFrame:
    """Read JSON Lines keeping each record's real line number (blank lines are skipped).

    Scalars become text and lists lists of text, so validation reports type errors
    with the line and column rather than the reader failing on mixed types.
    """
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"not valid JSON: {e.msg}", file=str(path), line=number) from e
            if not isinstance(record, dict):
                raise InputError("a line must hold one JSON object", file=str(path), line=number)
            records.append({k: _as_text(v) for k, v in record.items()})
            lines.append(number)
    columns = list(dict.fromkeys(k for record in records for k in record))
    data: dict[str, list[Any]] = {c: [r.get(c) for r in records] for c in columns}
    schema: dict[str, pl.DataType] = {}
    for column, values in data.items():
        kinds = {type(v) for v in values if v is not None}
        if kinds == {list}:
            schema[column] = pl.List(pl.String)
        else:
            if list in kinds:  # mixed: let validation name the line of the odd one out
                data[column] = [json.dumps(v) if isinstance(v, list) else v for v in values]
            schema[column] = pl.String()
    frame = pl.DataFrame(data, schema=schema) if columns else pl.DataFrame()
    return frame.with_columns(pl.Series(ROW_COLUMN, lines, dtype=pl.UInt32))


def landing_files(folder: Path) -> list[Path]:
    """The landing files in `folder`, in contract order; an error when there are none."""
    if not folder.is_dir():
        raise InputError(
            "is not a folder", file=str(folder), hint="Pass a folder of landing files."
        )
    found = [
        folder / f"{table}{suffix}"
        for table in LANDING_TABLES
        for suffix in SUFFIXES
        if (folder / f"{table}{suffix}").is_file()
    ]
    if not found:
        raise InputError(
            "holds no landing files",
            file=str(folder),
            hint=f"Name files after a landing table ({', '.join(LANDING_TABLES)}) "
            f"with one of {', '.join(SUFFIXES)}.",
        )
    return found


def ingest_files(
    con: duckdb.DuckDBPyConnection, folder: str | Path, cluster: str | None = None
) -> list[LoadResult]:
    """Load every landing file of `folder` as one batch (`cluster`: the ingest's --cluster)."""
    items = [read_table_file(con, path) for path in landing_files(Path(folder))]
    return load_batch(con, items, source=f"files:{Path(folder).name}", cluster=cluster)


@dataclass(frozen=True)
class FilesSource(WholeFileSource):
    """`gpufleet ingest files DIR`: every landing file of a folder, one batch."""

    path: Path
    """The folder of landing files."""
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "files"
    reads: ClassVar[str] = "`<table>.csv/.jsonl/.parquet` in the landing contract"
    tables: ClassVar[tuple[str, ...]] = LANDING_TABLES

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        return SourceReport(self.source_id, ingest_files(con, self.path, self.cluster))
