"""`gpufleet prune --keep-raw 14d`: drop raw GPU samples older than the retention, once built.

Raw DCGM samples are most of the database. Once `gpufleet compute` has built what they feed,
those older than the retention (counted back from the newest data, cut at a UTC midnight) are
dropped, except the error counters the detectors re-read on every compute
(queries/store/prune_raw.sql). Everything else that read them survives: gpu_scrapes and
gpu_samples_15m are kept tables that never rebuild rows before the cut, gpu_inventory adds the
rows set aside for the dropped samples, and the other derived tables read those. So reports,
exports and dashboard pages of past weeks stay as they were, through later computes and
`compute --force`. A load of GPU samples older than the cut is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from pipelines.config import Settings
from pipelines.errors import ConfigError, GpufleetError
from pipelines.sql import execute, execute_script

_KEEP = re.compile(r"^(\d+)([dhw])$")
_UNIT_S = {"h": 3600, "d": 86400, "w": 604800}


def parse_keep(text: str) -> timedelta:
    """`14d`, `2w` or `36h`: how much raw history to keep."""
    match = _KEEP.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ConfigError(
            f"`{text}` is not a retention.",
            "Give a whole number of days, weeks or hours above zero: 14d, 2w, 36h.",
        )
    return timedelta(seconds=int(match.group(1)) * _UNIT_S[match.group(2)])


@dataclass(frozen=True)
class PruneResult:
    pruned_before: datetime | None
    """The cut: raw samples older than it are gone (None: nothing to prune yet)."""
    samples_dropped: int
    already_before: datetime | None
    """The cut of an earlier prune, when this one dropped nothing new."""


def prune_raw(con: duckdb.DuckDBPyConnection, settings: Settings, keep: timedelta) -> PruneResult:
    """Drop the raw GPU samples older than `keep` before the newest data, in one transaction.

    Refuses while the derived tables lag the loads: the samples would go before their rollups
    and findings were built.
    """
    from pipelines.compute import is_current

    if not is_current(con, settings):
        raise GpufleetError(
            "The derived tables are not up to date with the loads (or the settings): pruning now "
            "would drop raw samples whose rollups and findings are not built.",
            "Run `gpufleet compute` first, then prune.",
        )
    cut, already = execute(
        con, "store/prune_horizon", {"keep_raw_s": int(keep.total_seconds())}
    ).fetchall()[0]
    if cut is None:
        return PruneResult(None, 0, already)
    if already is not None and cut <= already:
        return PruneResult(cut, 0, already)
    con.execute("BEGIN TRANSACTION")
    try:
        params = {"pruned_before": cut, "keep_raw_s": int(keep.total_seconds())}
        execute_script(con, "store/prune_raw", params)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    dropped = execute(con, "store/pruned_at_cut", {"pruned_before": cut}).fetchall()[0][0]
    return PruneResult(cut, dropped, None)
