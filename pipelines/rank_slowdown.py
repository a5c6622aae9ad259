"""Per-rank slowdown statistics and the straggler verdict (the `rank_slowdown` table).

SQL (`queries/derived/rank_step_times.sql`) gives every rank's step time, its ratio to the
step's median rank and the step's drag charged to the slowest rank. This module adds what
SQL cannot do well: per-rank quantiles of the ratios, a one-sided Mann-Whitney U test of each
rank's ratios against all other ranks' ratios of the same attempt, Holm's correction across the
job's ranks, and nvidia-resiliency-ext's relative score for comparison.

Per rank it also counts the straggler episodes (`pipelines.episodes`: spells in which the rank
was slow, found by change-point segmentation) and the share of its steps spent in one; the
episodes themselves become the `rank_episodes` table, one row per episode.

The U test is computed for every rank of an attempt from one ranking of all its ratios
(`scipy.stats.rankdata`), so a 512-rank x 2,000-step attempt costs one sort, not 512 tests.

A job's rows depend on its own steps alone, so a compute recomputes only the jobs whose steps (or
step drags) changed since the last compute, and keeps the last compute's rows of the others
(`queries/derived/rank_slowdown_jobs.sql`): an hourly update costs the running jobs, not the
history. New settings or new code recompute every job, as does `compute --force`.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import duckdb
import numpy as np
import polars as pl
from scipy import stats

from pipelines.config import Settings
from pipelines.episodes import EPISODE_COLUMNS, EpisodeParams, attempt_episodes
from pipelines.kept_rows import SET_ASIDE_PREFIX, code_basis, drop_set_aside, set_aside
from pipelines.sql import bind, execute, execute_script, load_sql, queries_dir

RANK_SLOWDOWN_COLUMNS: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "attempt": pl.Int32(),
    "rank": pl.Int32(),
    "node": pl.String(),
    "gpu": pl.Int16(),
    "steps": pl.Int64(),
    "median_ratio": pl.Float64(),
    "p95_ratio": pl.Float64(),
    "slowest_share": pl.Float64(),
    "drag_s": pl.Decimal(18, 6),
    "median_time_s": pl.Float64(),
    "relative_score": pl.Float64(),
    "relative_flagged": pl.Boolean(),
    "u_statistic": pl.Float64(),
    "p_value_raw": pl.Float64(),
    "p_value": pl.Float64(),
    "is_straggler": pl.Boolean(),
    "episodes": pl.Int32(),
    "episode_share": pl.Float64(),
}


def mann_whitney_greater(
    values: np.ndarray, groups: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Mann-Whitney U test of each group's values against all other values.

    `groups[i]` in 0..n_groups-1 names the group of `values[i]`. Returns (U, p) per group,
    where U counts pairs (group value > other value, ties half) and p is the normal
    approximation with tie correction and continuity correction, as
    `scipy.stats.mannwhitneyu(x, rest, alternative="greater", method="asymptotic")` gives.
    A group that is empty or holds every value gets U = NaN, p = NaN.
    """
    total = values.size
    ranks = stats.rankdata(values)  # average ranks for ties
    n1 = np.bincount(groups, minlength=n_groups).astype(np.float64)
    rank_sums = np.bincount(groups, weights=ranks, minlength=n_groups)
    n2 = total - n1
    u = rank_sums - n1 * (n1 + 1) / 2
    _, tie_counts = np.unique(values, return_counts=True)
    tie_term = (
        float(np.sum(tie_counts.astype(np.float64) ** 3 - tie_counts)) / (total * (total - 1))
        if total > 1
        else 0.0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(n1 * n2 / 12 * ((total + 1) - tie_term))
        z = (u - n1 * n2 / 2 - 0.5) / sd
        p = stats.norm.sf(z)
    u = np.where((n1 > 0) & (n2 > 0), u, np.nan)
    p = np.where((n1 > 0) & (n2 > 0), np.where(sd > 0, p, 1.0), np.nan)
    return u, p


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN and does not count as a test)."""
    adjusted = np.full(p_values.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p_values))
    m = present.size
    if m == 0:
        return adjusted
    order = present[np.argsort(p_values[present], kind="stable")]
    scaled = p_values[order] * (m - np.arange(m))
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def lower_median(values: np.ndarray) -> float:
    """The lower of the two middle values for an even count (torch.median's convention)."""
    ordered = np.sort(values)
    return float(ordered[(ordered.size - 1) // 2])


def _attempt_stats(times: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """Per-rank statistics of one attempt's rows (sorted by rank, step) and its episodes."""
    per_rank = times.group_by("rank", maintain_order=True).agg(
        pl.col("node").last(),
        pl.col("gpu").last(),
        pl.col("ratio").drop_nulls().len().alias("steps"),
        pl.col("ratio").median().alias("median_ratio"),
        pl.col("ratio").quantile(0.95, interpolation="linear").alias("p95_ratio"),
        pl.col("is_slowest").mean().alias("slowest_share"),
        pl.col("drag_s").sum().alias("drag_s"),
        pl.col("time_s").sort().get((pl.col("time_s").len() - 1) // 2).alias("median_time_s"),
    )
    valid = times.filter(pl.col("ratio").is_not_null())
    rank_ids = per_rank["rank"].to_numpy()
    index = {int(r): i for i, r in enumerate(rank_ids)}
    groups = np.array([index[int(r)] for r in valid["rank"].to_numpy()], dtype=np.int64)
    u, p = mann_whitney_greater(valid["ratio"].to_numpy().astype(np.float64), groups, len(rank_ids))
    fastest = per_rank["median_time_s"].min()
    stats_ = per_rank.with_columns(
        (pl.lit(fastest) / pl.col("median_time_s")).alias("relative_score"),
        pl.Series("u_statistic", u),
        pl.Series("p_value_raw", p),
    )
    if episodes.is_empty():  # the usual case: skip the join
        return stats_.with_columns(
            pl.lit(0, pl.Int32).alias("episodes"), pl.lit(0.0).alias("episode_share")
        )
    in_episodes = episodes.group_by("rank").agg(
        pl.len().cast(pl.Int32).alias("episodes"), pl.col("rows").sum().alias("episode_rows")
    )
    return (
        stats_.join(in_episodes, on="rank", how="left", coalesce=True)
        .with_columns(
            pl.col("episodes").fill_null(0),
            (pl.col("episode_rows").fill_null(0) / pl.col("steps")).alias("episode_share"),
        )
        .drop("episode_rows")
    )


def rank_slowdown_frame(times: pl.DataFrame, settings: Settings) -> pl.DataFrame:
    """`rank_slowdown` rows from `rank_step_times` rows (see the module docstring)."""
    return rank_tables_frame(times, settings)[0]


def rank_tables_frame(times: pl.DataFrame, settings: Settings) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(`rank_slowdown` rows, `rank_episodes` rows) from `rank_step_times` rows."""
    s = settings.stragglers
    params = EpisodeParams.from_params(settings.sql_params())
    parts = []
    episode_parts = [pl.DataFrame(schema=EPISODE_COLUMNS)]
    no_episodes = episode_parts[0]
    for (job_id, attempt), group in times.group_by(["job_id", "attempt"], maintain_order=True):
        episodes = attempt_episodes(group, params)
        if episodes is not None:
            episode_parts.append(episodes)
        parts.append(
            _attempt_stats(group, no_episodes if episodes is None else episodes).with_columns(
                pl.lit(job_id).alias("job_id"), pl.lit(attempt).alias("attempt")
            )
        )
    all_episodes = pl.concat(episode_parts, how="vertical")
    if not parts:
        return pl.DataFrame(schema=RANK_SLOWDOWN_COLUMNS), all_episodes
    frame = pl.concat(parts, how="diagonal_relaxed")
    adjusted = []
    for _, group in frame.group_by("job_id", maintain_order=True):
        adjusted.append(
            group.with_columns(
                pl.Series("p_value", holm(group["p_value_raw"].to_numpy().astype(np.float64)))
            )
        )
    frame = pl.concat(adjusted)
    frame = frame.with_columns(
        (pl.col("relative_score") < s.relative_score_threshold).alias("relative_flagged"),
        (
            (pl.col("median_ratio") > s.median_ratio_threshold)
            & (pl.col("steps") >= s.min_steps)
            & (pl.col("p_value") < s.alpha).fill_null(False)
        ).alias("is_straggler"),
    )
    # a statistic that cannot be computed (one rank alone, all times equal) is unknown: NULL, not NaN
    floats = [name for name, dtype in RANK_SLOWDOWN_COLUMNS.items() if dtype == pl.Float64()]
    frame = frame.with_columns(pl.col(floats).fill_nan(None))
    frame = frame.select(
        [pl.col(name).cast(dtype) for name, dtype in RANK_SLOWDOWN_COLUMNS.items()]
    ).sort(["job_id", "attempt", "rank"])
    return frame, all_episodes


STREAM_BATCH_ROWS = 1_000_000


def stream_rank_slowdown(con: duckdb.DuckDBPyConnection, settings: Settings) -> pl.DataFrame:
    """`rank_slowdown` rows (see `stream_rank_tables`)."""
    return stream_rank_tables(con, settings)[0]


def stream_rank_tables(
    con: duckdb.DuckDBPyConnection, settings: Settings, jobs: list[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(`rank_slowdown`, `rank_episodes`) rows of `jobs` (None: every job), reading
    `rank_step_times` in batches, one whole job at a time.

    The rows arrive sorted by job, so every job before the last one of a batch is complete; its
    statistics (Holm's correction is per job) are computed and its rows dropped. Memory holds one
    batch plus one job's rows, not the 30 M rank rows of a 512-node week.
    """
    sql = load_sql("derived/rank_step_times")
    params = bind(sql, {**settings.sql_params(), "jobs": jobs})
    reader = con.sql(sql, params=params).to_arrow_reader(STREAM_BATCH_ROWS)
    parts: list[pl.DataFrame] = []
    episodes: list[pl.DataFrame] = []
    # A table or a record batch converts to a DataFrame (polars types it as frame or series).
    pending = cast(pl.DataFrame, pl.from_arrow(reader.schema.empty_table()))
    for batch in reader:
        pending = pl.concat([pending, cast(pl.DataFrame, pl.from_arrow(batch))], how="vertical")
        last_job = pending["job_id"][-1]
        complete = pending.filter(pl.col("job_id") != last_job)
        pending = pending.filter(pl.col("job_id") == last_job)
        if complete.height:
            frame, found = rank_tables_frame(complete, settings)
            parts.append(frame)
            episodes.append(found)
    if pending.height or not parts:
        frame, found = rank_tables_frame(pending, settings)
        parts.append(frame)
        episodes.append(found)
    return (
        pl.concat(parts, how="vertical").sort(["job_id", "attempt", "rank"]),
        pl.concat(episodes, how="vertical").sort(["job_id", "attempt", "rank", "episode"]),
    )


# The code a job's rows come from: a change to any of it recomputes every job.
_CODE = (
    Path(__file__),
    Path(__file__).with_name("episodes.py"),
    queries_dir() / "derived" / "rank_step_times.sql",
)


def basis(settings: Settings) -> str:
    """What besides a job's own steps its rows depend on: the settings and the code."""
    return code_basis(settings, _CODE)


_KEPT = ("rank_slowdown", "rank_episodes")
_PREVIOUS = SET_ASIDE_PREFIX


def keep_previous(con: duckdb.DuckDBPyConnection, *, rebuild: bool) -> None:
    """Before a compute's passes: set the last compute's rank tables aside (temporary tables
    `previous_rank_slowdown`, `previous_rank_episodes`; the first pass replaces the tables), or,
    with `rebuild` or without them, forget every job's digest so every job is recomputed."""
    first, second = _KEPT
    present = {
        r[0]
        for r in execute(
            con, "compute/rank_kept_present", {"first": first, "second": second}
        ).fetchall()
    }
    keep = not rebuild and present == set(_KEPT)
    set_aside(con, _KEPT, keep=keep)
    if not keep:
        execute(con, "compute/rank_inputs_forget")


def drop_previous(con: duckdb.DuckDBPyConnection) -> None:
    """After the passes: the set-aside tables are no longer needed."""
    drop_set_aside(con, _KEPT)


def build_rank_slowdown(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Compute step: `rank_slowdown` and `rank_episodes` of the pass's cluster. The jobs whose
    inputs are unchanged keep the last compute's rows (`keep_previous`); the others are computed
    from `rank_step_times`."""
    job_basis = basis(settings)
    execute(con, "derived/rank_slowdown_jobs", {"basis": job_basis})
    kept = execute(con, "compute/rank_jobs_kept").fetchall()
    recompute = None
    if kept[0][0]:
        recompute = [r[0] for r in execute(con, "compute/rank_jobs_to_compute").fetchall()]
    slowdown, episodes = stream_rank_tables(con, settings, recompute)
    # No try/finally: after a failed statement the transaction is aborted, and an unregister
    # would fail too and hide the real error.
    con.register("rank_slowdown_rows", slowdown)
    con.register("rank_episode_rows", episodes)
    for table, rows, order in (
        ("rank_slowdown", "rank_slowdown_rows", "job_id, attempt, rank"),
        ("rank_episodes", "rank_episode_rows", "job_id, attempt, rank, episode"),
    ):
        kept_rows = (
            f" UNION ALL BY NAME SELECT * EXCLUDE (cluster) FROM temp.main.{_PREVIOUS}{table} "
            "WHERE cluster = getvariable('pass_cluster') "
            "AND job_id IN (SELECT job_id FROM rank_slowdown_jobs WHERE kept)"
            if kept[0][0]
            else ""
        )
        con.execute(
            f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {rows}{kept_rows} ORDER BY {order}"
        )
    con.unregister("rank_slowdown_rows")
    con.unregister("rank_episode_rows")
    execute_script(con, "compute/rank_inputs_note", {"basis": job_basis})
