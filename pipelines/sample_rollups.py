"""Tables of GPU samples kept between computes: an update reads the new samples, not the history.

`gpu_scrapes` (one row per GPU and scrape) and `gpu_samples_15m` (the 15-minute rollup) are
kept. Every load that stores GPU samples records the earliest one (`gpu_samples_loaded`, in the
load's transaction). `gpufleet compute` then rebuilds, cluster by cluster, each kept table's rows
from the start of that sample's 15-minute bucket on and keeps every earlier row (each table's
SQL says why the rows equal a build from all history): gpu_scrapes before the derived steps,
which read it, and gpu_samples_15m after them, which then clears the record. A late batch, older
than the last compute, moves the start back: it costs the rows from its own time on. `--force`,
an older database, or a table missing its `kept_tables` row rebuild it all; after `gpufleet
prune --keep-raw` they rebuild from the prune's cut on and keep the rows before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import duckdb

from pipelines.errors import PrunedDataError
from pipelines.sql import execute, execute_script, load_sql, statements
from pipelines.times import FAR_FUTURE

ROLLUP = "gpu_samples_15m"
SCRAPES = "gpu_scrapes"


def record_loaded_samples(con: duckdb.DuckDBPyConnection, earliest: datetime | Any) -> None:
    """Note, in the load's transaction, that GPU samples from `earliest` on were stored."""
    execute(con, "store/gpu_samples_loaded_add", {"from_ts": earliest})


def _is_kept(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(execute(con, "compute/kept_table_present", {"name": table}).fetchall()[0][0])


def pruned_before(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """The cut of the latest `gpufleet prune --keep-raw` (None: never pruned)."""
    return execute(con, "store/pruned_before").fetchall()[0][0]


WINDOW = timedelta(days=1)
"""A kept sample table is rebuilt a day of samples at a time: a statement's memory follows a
day's samples, not the span being rebuilt (a week at 4,096 GPUs did not fit in 5 GB at once)."""


def windows(from_ts: datetime, newest: datetime | None) -> Iterator[tuple[datetime, datetime]]:
    """[start, end) windows of one day from `from_ts` (a bucket start, so every 15-minute bucket
    falls in one window) through `newest`; the last one is open-ended."""
    start = from_ts
    while newest is not None and start + WINDOW <= newest:
        yield start, start + WINDOW
        start += WINDOW
    yield start, FAR_FUTURE


def _update(con: duckdb.DuckDBPyConnection, table: str, *, rebuild: bool) -> None:
    """Rebuild `table`'s rows from the earliest sample loaded since the last compute on."""
    kept = _is_kept(con, table)
    rebuild = rebuild or not kept
    cut = pruned_before(con)
    if cut is not None and not kept:
        raise PrunedDataError(
            f"`{table}` cannot be rebuilt: the raw GPU samples before {cut:%Y-%m-%d} were pruned "
            "(`gpufleet prune --keep-raw`), and it is not in kept_tables.",
            "Restore the database from a backup taken before the prune.",
        )
    from_ts = execute(con, "derived/kept_samples_from", {"rebuild": rebuild}).fetchall()[0][0]
    if rebuild and cut is None:
        # After a prune the rows before the cut stay: the raw samples could not rebuild them, and
        # kept_samples_from starts the rebuild at the cut.
        con.execute(f"DROP TABLE IF EXISTS {table}")
    if from_ts is not None:
        newest = execute(con, "derived/kept_samples_to", {"from_ts": from_ts}).fetchall()[0][0]
        clusters = [r[0] for r in execute(con, "compute/series_clusters").fetchall()]
        for cluster in clusters:
            for start, end in windows(from_ts, newest):
                execute_script(
                    con, f"derived/{table}", {"cluster": cluster, "from_ts": start, "to_ts": end}
                )
    if rebuild:
        # The table's shape, even on a store without samples (its readers need it).
        con.execute(statements(load_sql(f"derived/{table}"))[0])
        execute_script(con, "compute/kept_table_note", {"name": table})


def update_gpu_scrapes(con: duckdb.DuckDBPyConnection, *, rebuild: bool = False) -> None:
    """Bring gpu_scrapes up to date with the samples loaded since the last compute, leaving the
    record of them for `update_gpu_samples_15m`. Runs in the caller's transaction."""
    _update(con, SCRAPES, rebuild=rebuild)


def update_gpu_samples_15m(con: duckdb.DuckDBPyConnection, *, rebuild: bool = False) -> None:
    """Bring gpu_samples_15m up to date with the samples loaded since the last compute, and clear
    the record of them: the last kept table a compute updates.

    Runs in the caller's transaction. `rebuild` (or a table not kept yet) builds it from all
    samples.
    """
    _update(con, ROLLUP, rebuild=rebuild)
    execute(con, "compute/samples_loaded_clear")
