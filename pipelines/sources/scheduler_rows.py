"""The rows a scheduler source (Slurm's sacct, Kubernetes Jobs) builds for the `jobs` and
`job_attempts` landing tables, as polars schemas: one definition both sources fill in."""

from __future__ import annotations

import polars as pl

from pipelines.store import ROW_COLUMN

_TS = pl.Datetime("us", "UTC")

JOB_SCHEMA: dict[str, pl.DataType] = {
    ROW_COLUMN: pl.Int64(),
    "job_id": pl.String(),
    "name": pl.String(),
    "user": pl.String(),
    "team": pl.String(),
    "queue": pl.String(),
    "submit_ts": _TS,
    "start_ts": _TS,
    "end_ts": _TS,
    "num_gpus": pl.Int64(),
    "state": pl.String(),
    "exit_code": pl.Int64(),
    "reason": pl.String(),
}
"""A `jobs` row, with the input row (`ROW_COLUMN`) an error names."""

ATTEMPT_SCHEMA: dict[str, pl.DataType] = {
    ROW_COLUMN: pl.Int64(),
    "job_id": pl.String(),
    "attempt": pl.Int64(),
    "start_ts": _TS,
    "end_ts": _TS,
    "state": pl.String(),
    "exit_code": pl.Int64(),
    "reason": pl.String(),
    "nodes": pl.List(pl.String()),
}
"""A `job_attempts` row, with the input row (`ROW_COLUMN`) an error names."""


def with_cluster(schema: dict[str, pl.DataType]) -> dict[str, pl.DataType]:
    """`schema` for rows that carry their own `cluster` (after the input row, as the contract's
    natural keys put it first)."""
    row, *rest = schema.items()
    return dict([row, ("cluster", pl.String()), *rest])
