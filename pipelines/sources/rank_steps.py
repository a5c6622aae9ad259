"""Rank step timings logged by training jobs (JSONL or CSV) → `rank_steps`.

One record per rank per step (see docs/sources.md for the format training code should log):

    {"job_id": "1001", "attempt": 0, "step": 120, "rank": 3, "node": "gpu-node-01", "gpu": 3,
     "end_ts": "2026-11-23T10:00:01.250Z", "step_s": 1.25, "compute_s": 1.02}

`end_ts` is RFC 3339 or Unix seconds (what `time.time()` returns); `attempt` defaults to 0;
`gpu` and `compute_s` may be left out. CSV files use the same names as header columns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import duckdb
import polars as pl

from pipelines.errors import InputError
from pipelines.sources.protocol import SourceReport, WholeFileSource
from pipelines.sql import bind, load_sql
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, load_batch

COLUMNS = ("job_id", "attempt", "step", "rank", "node", "gpu", "end_ts", "step_s", "compute_s")
REQUIRED = ("job_id", "step", "rank", "node", "end_ts", "step_s")

# Unix seconds (a number) become a timestamp; anything else is left for validation to judge.
_END_TS = (
    "CASE WHEN TRY_CAST(end_ts AS DOUBLE) IS NOT NULL "
    "THEN CAST(to_timestamp(CAST(end_ts AS DOUBLE)) AS VARCHAR) ELSE end_ts END"
)


def _read_jsonl(path: Path) -> pl.DataFrame:
    """Every record as text columns plus its line number; a bad line is an error naming it."""
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    lines: list[int] = []
    with open(path, errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(
                    f"is not JSON: {e.msg}",
                    file=str(path),
                    line=number,
                    hint="Write one JSON object per line (docs/sources.md).",
                ) from None
            if not isinstance(record, dict):
                raise InputError("is not a JSON object", file=str(path), line=number)
            lines.append(number)
            for c in COLUMNS:
                value = record.get(c)
                cols[c].append(None if value is None else str(value))
    return pl.DataFrame(
        {**cols, "__line": lines}, schema={**dict.fromkeys(COLUMNS, pl.String), "__line": pl.Int64}
    )


def read_rank_steps(con: duckdb.DuckDBPyConnection, path: str | Path) -> TableInput:
    """The file as a relation in the landing columns, with its line numbers."""
    path = Path(path)
    if not path.is_file():
        raise InputError("does not exist", file=str(path))
    if path.suffix == ".jsonl" or path.suffix == ".json":
        frame = _read_jsonl(path)
        present = set(COLUMNS)  # absent keys are NULL; validation names a missing required one
        con.register("__rank_raw", frame)
        source = "__rank_raw"
    elif path.suffix == ".csv":
        csv_sql = load_sql("ingest/rank_steps_csv")
        raw = con.sql(csv_sql, params=bind(csv_sql, {"path": str(path)}))
        present = set(raw.columns)
        source = "__rank_raw"
        con.register("__rank_raw", raw)
    else:
        raise InputError(
            "is not a .jsonl or .csv file", file=str(path), hint="Name the file *.jsonl or *.csv."
        )
    missing = [c for c in REQUIRED if c not in present]
    if missing:
        raise InputError(
            f"has no `{missing[0]}` column", file=str(path), hint=f"Columns: {', '.join(COLUMNS)}."
        )
    select = []
    for c in COLUMNS:
        if c == "end_ts":
            select.append(f"{_END_TS} AS end_ts")
        elif c == "attempt":
            select.append(
                "coalesce(attempt, '0') AS attempt" if "attempt" in present else "'0' AS attempt"
            )
        else:
            select.append(c if c in present else f"NULL AS {c}")
    relation = con.sql(f"SELECT {', '.join(select)}, __line AS {ROW_COLUMN} FROM {source}")
    return TableInput("rank_steps", relation, str(path), position="line")


def ingest_rank_steps(
    con: duckdb.DuckDBPyConnection, path: str | Path, cluster: str | None = None
) -> list[LoadResult]:
    """Load one rank-step file as one batch."""
    try:
        item = read_rank_steps(con, path)
        return load_batch(con, [item], source=f"rank-steps:{Path(path).name}", cluster=cluster)
    except duckdb.Error as e:
        raise InputError(f"cannot be read: {e}", file=str(path)) from e
    finally:
        try:
            con.unregister("__rank_raw")
        except duckdb.Error:
            pass


@dataclass(frozen=True)
class RankStepsSource(WholeFileSource):
    """`gpufleet ingest rank-steps FILE`: one file of per-rank step timings, one batch."""

    path: Path
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "rank-steps"
    reads: ClassVar[str] = "per-rank step timings, JSONL or CSV"
    tables: ClassVar[tuple[str, ...]] = ("rank_steps",)

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        return SourceReport(self.source_id, ingest_rank_steps(con, self.path, self.cluster))
