"""The landing files a fleet's sources would have delivered in one window of time.

A simulated fleet is written all at once, but a real one arrives in pieces: each run of
the pipeline brings the samples, conditions, events and step logs stamped in its window,
and the scheduler's view of the jobs that ran in it, as of the run (a job still running
has no end and no outcome yet; a later run brings them). `deliver` cuts such a piece out
of a simulated landing folder, so the benchmark can time an hourly update after a week of
history, and tests can load one fleet in batches (in order, late, overlapping) and compare
the result with loading it at once.

Windows are half-open, `[start, end)`. Every stamped row falls in exactly one window of a
partition of time, so the windows of a partition together deliver every row once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipelines.contract import LANDING_TABLES

STAMPED_BY: dict[str, pl.Expr] = {
    "node_conditions": pl.col("ts"),
    "gpu_samples": pl.col("ts"),
    "gpu_instance_samples": pl.col("ts"),
    "node_samples": pl.col("ts"),
    "gpu_events": pl.col("ts"),
    # A step is logged when it ends; a checkpoint when its save or restore completes.
    "rank_steps": pl.col("end_ts"),
    "checkpoints": pl.col("start_ts")
    + pl.duration(microseconds=(pl.col("duration_s") * 1e6).cast(pl.Int64)),
    # Maintenance is announced with its window: a run delivers the windows that begin in it.
    "maintenance": pl.col("start_ts"),
}
"""Landing tables whose rows carry the instant they were recorded, and that instant."""

SCHEDULER_TABLES = ("jobs", "job_attempts")
"""Tables a scheduler reports as a state: the jobs (attempts) that ran in a window, as of a time."""

OUTCOME_COLUMNS = ("end_ts", "exit_code", "reason")
"""What a job or attempt still running has not got yet."""


def deliver(
    source: Path, out: Path, start: datetime, end: datetime, *, as_of: datetime | None = None
) -> dict[str, int]:
    """Write to `out` the landing files a run covering `[start, end)` would have brought.

    Stamped rows: those recorded in the window. Jobs and attempts: those running at some
    instant of the window (or ending in it), as the scheduler saw them at `as_of` (default
    `end`): one that ends at or after `as_of` is `running`, with no end, exit code or reason.
    A run that fetches late telemetry for an old window passes a later `as_of`, since the
    scheduler answers with its current view. `nodes` is delivered whole every time. Returns
    the rows written per table.
    """
    as_of = as_of or end
    if end <= start or as_of < end:
        raise ValueError(f"window [{start}, {end}) with as_of {as_of}: need start < end <= as_of")
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    for table in LANDING_TABLES:
        path = source / f"{table}.parquet"
        if not path.is_file():
            continue
        rows = pl.scan_parquet(path)
        if table in STAMPED_BY:
            stamped = STAMPED_BY[table]
            rows = rows.filter((stamped >= start) & (stamped < end))
        elif table in SCHEDULER_TABLES:
            rows = _as_seen(rows, start, end, as_of)
        # Streamed: the history of a large fleet does not fit in memory at once.
        rows.sink_parquet(out / f"{table}.parquet", compression="zstd")
        written[table] = pq.ParquetFile(out / f"{table}.parquet").metadata.num_rows
    return written


def _as_seen(rows: pl.LazyFrame, start: datetime, end: datetime, as_of: datetime) -> pl.LazyFrame:
    began = pl.coalesce("start_ts", "end_ts")  # a job cancelled before it started has only an end
    ran_in_window = (began < end) & (pl.col("end_ts").is_null() | (pl.col("end_ts") >= start))
    still_running = pl.col("end_ts").is_null() | (pl.col("end_ts") >= as_of)
    columns = rows.collect_schema().names()
    return rows.filter(ran_in_window).with_columns(
        pl.when(still_running).then(pl.lit("running")).otherwise(pl.col("state")).alias("state"),
        *(
            pl.when(still_running).then(None).otherwise(pl.col(name)).alias(name)
            for name in OUTCOME_COLUMNS
            if name in columns
        ),
    )


def windows(start: datetime, end: datetime, step: timedelta) -> list[tuple[datetime, datetime]]:
    """`[start, end)` cut into consecutive windows of `step` (the last one may be shorter)."""
    cuts = []
    t = start
    while t < end:
        cuts.append((t, min(t + step, end)))
        t += step
    return cuts
