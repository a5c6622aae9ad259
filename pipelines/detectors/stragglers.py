"""Straggler-rank findings: rank_slowdown's verdict, attributed to a node and GPU, with an onset.

The verdict (median ratio, Mann-Whitney U) is rank_slowdown's; `queries/detect/straggler_ranks.sql`
adds the peer-outlier test. Here each straggler's per-step ratio series gets its onset from
`mean_shift_onset`, so a rank that turns slow mid-run starts when it turned slow, not when the
job started.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import duckdb
import numpy as np
import polars as pl

from pipelines.detectors.changepoint import mean_shift_onset
from pipelines.sql import query_pl


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchall()
    return rows[0][0] > 0


def straggler_candidates(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> list[dict[str, Any]]:
    """One anomaly candidate per confirmed straggler rank of an attempt (none without rank_slowdown).

    Each candidate of `straggler_ranks.sql` gets its onset from its ratio series; it is confirmed
    when, over the steps from the onset on, it has >= `straggler_min_steps` steps, a median ratio
    above `straggler_ratio`, and is an outlier among its attempt's ranks over those same steps
    (robust z >= `det_straggler_peer_z`).
    """
    if not table_exists(con, "rank_slowdown"):
        return []
    ranks = query_pl(con, "detect/straggler_ranks", params)
    if ranks.is_empty():
        return []
    chosen = [
        {"job_id": r["job_id"], "attempt": r["attempt"], "rank": r["rank"]}
        for r in ranks.select("job_id", "attempt", "rank").to_dicts()
    ]
    # One query for every candidate's attempt: its ranks' ratio series.
    series = query_pl(con, "detect/rank_ratio_series", {"ranks": chosen})
    by_attempt = series.partition_by(["job_id", "attempt"], as_dict=True)
    by_rank = series.partition_by(["job_id", "attempt", "rank"], as_dict=True)
    min_segment = int(params["det_changepoint_min_segment"])
    min_steps = int(params["straggler_min_steps"])
    out: list[dict[str, Any]] = []
    for r in ranks.to_dicts():
        s = by_rank.get((r["job_id"], r["attempt"], r["rank"]))
        if s is None or s.is_empty():
            continue
        s = s.filter(pl.col("ratio").is_not_null() & pl.col("ratio").is_not_nan())
        ratios = s["ratio"].to_numpy()
        onset = mean_shift_onset(ratios, min_segment=min_segment,
                                 normal_below=float(params["straggler_ratio"]))
        onset_step = int(s["step"][onset])
        window = window_medians(by_attempt[(r["job_id"], r["attempt"])], onset_step)
        confirmed = confirm_outlier(
            window, r["rank"],
            ratio_threshold=float(params["straggler_ratio"]),
            min_steps=min_steps,
            peer_z=float(params["det_straggler_peer_z"]),
            min_mad=float(params["det_straggler_min_mad"]),
        )
        if confirmed is None:
            continue
        window_median, z = confirmed
        end_ts = s["end_ts"].to_list()
        step_s = s["step_s"].to_list()
        start_ts = end_ts[onset] - _seconds(step_s[onset])
        detected_at = end_ts[min(onset + min_steps - 1, len(end_ts) - 1)]
        drag_s = float(r["drag_s"] or 0.0)
        evidence = {
            "attempt": r["attempt"],
            "onset_step": onset_step,
            "steps": int(r["steps"]),
            "median_ratio": round(float(r["median_ratio"]), 4),
            "median_ratio_after_onset": round(window_median, 4),
            "peer_z_after_onset": round(z, 2),
            "p95_ratio": _round(r["p95_ratio"]),
            "p_value": _round(r["p_value"], 8),
            "relative_score": _round(r["relative_score"]),
            "drag_s": round(drag_s, 3),
            "goodput_lost_gpu_h": round(drag_s * int(r["num_gpus"]) / 3600.0, 4),
        }
        out.append(
            {
                "entity_type": "rank",
                "node": r["node"],
                "gpu": r["gpu"],
                "uuid": None,
                "job_id": r["job_id"],
                "rank": r["rank"],
                "kind": "straggler",
                "start_ts": start_ts,
                "end_ts": r["attempt_end_ts"],
                "detected_at": detected_at,
                "score": window_median,
                "severity": "warn",
                "evidence": json.dumps(evidence),
                "action": "watch",
            }
        )
    return out


def window_medians(attempt_series: pl.DataFrame, from_step: int) -> pl.DataFrame:
    """Median step-time ratio of every rank of one attempt over the steps from `from_step` on.

    `attempt_series` holds the attempt's (rank, step, ratio) rows. Returns (rank, median_ratio,
    steps): `steps` counts the rank's steps, `median_ratio` ignores steps without a ratio.
    Used to confirm a straggler over the steps after its onset, against its peers.
    """
    return (
        attempt_series.filter(pl.col("step") >= from_step)
        .group_by("rank")
        .agg(median_ratio=pl.col("ratio").median(), steps=pl.len())
        .sort("rank")
    )


def confirm_outlier(
    window: pl.DataFrame,
    rank: int,
    *,
    ratio_threshold: float,
    min_steps: int,
    peer_z: float,
    min_mad: float,
) -> tuple[float, float] | None:
    """(median ratio, robust z) of `rank` in `window` (rank, median_ratio, steps) if it straggles.

    Robust z = (m - median of the ranks' medians) / (1.4826 * max(MAD, min_mad)).
    """
    mine = window.filter(pl.col("rank") == rank)
    if mine.is_empty() or int(mine["steps"][0]) < min_steps:
        return None
    medians = window["median_ratio"].drop_nulls().to_numpy()
    m = float(mine["median_ratio"][0])
    center = float(np.median(medians))
    mad = float(np.median(np.abs(medians - center)))
    z = (m - center) / (1.4826 * max(mad, min_mad))
    if m > ratio_threshold and z >= peer_z:
        return m, z
    return None


def _seconds(value: float) -> dt.timedelta:
    return dt.timedelta(seconds=float(value))


def _round(value: Any, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)
