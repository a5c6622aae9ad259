"""Straggler episodes: the spells in which one rank runs slower than its attempt's other ranks.

Most real stragglers are spells, not life sentences (thermal throttling that comes and goes, a
congested switch port at busy hours, a noisy neighbour). Per attempt this module:

1. pivots the step times into a step x rank matrix and divides every row by a per-step
   reference (first the step's median over its ranks, as `rank_step_times` gives it);
2. screens every rank at once (numpy over the whole matrix): a rank is a candidate when some
   window of `min_segment` rows has a mean ratio above the straggler ratio and more than
   `episode_screen_z` noise standard errors above 1 (noise = robust sd of the rank's
   step-to-step differences / sqrt 2, floored at `episode_min_noise`);
3. splits each candidate's ratio series at its change points by binary segmentation
   (`changepoint.binary_segmentation`, penalty `episode_penalty` x noise variance x ln n per
   change point), so a spell that starts and ends gives two change points;
4. keeps the segments in which the rank is slow (median ratio above the straggler ratio) and an
   outlier among its peers over those same steps: robust z >= `straggler_peer_z` against the
   median and MAD (floored at `straggler_min_mad`) of the other ranks that are not slow there
   (median ratio at most the straggler ratio; the lower half of the others when fewer than three
   are left), so 4 slow ranks of 10 and fast ranks that differ among themselves neither pull the
   centre up nor widen the scale; adjacent slow segments are one episode;
5. where at least half of a step's ranks are in an episode (there the plain median sits among
   the slow ranks), takes the median of the ranks NOT in an episode as that step's reference
   and repeats 2-4; with fewer slow ranks the plain median stays among the others and is kept
   (dropping the slowest of ranks that differ a few percent would pull it below the bulk).

Each episode: first and last step, its median ratio and peer z, its drag and whether it runs
to the attempt's last logged step (then the straggler finding stays open with the attempt).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from pipelines.config import DetectionSettings, StragglerSettings
from pipelines.detectors.changepoint import binary_segmentation

EPISODE_COLUMNS: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "attempt": pl.Int32(),
    "rank": pl.Int32(),
    "episode": pl.Int32(),
    "node": pl.String(),
    "gpu": pl.Int16(),
    "first_step": pl.Int64(),
    "last_step": pl.Int64(),
    "rows": pl.Int64(),
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "detected_at": pl.Datetime("us", "UTC"),
    "detected_step": pl.Int64(),
    "reaches_end": pl.Boolean(),
    "median_ratio": pl.Float64(),
    "peer_z": pl.Float64(),
    "drag_s": pl.Float64(),
}


_DETECTION = DetectionSettings()
_STRAGGLERS = StragglerSettings()


@dataclass(frozen=True)
class EpisodeParams:
    """The episode search's settings under short names; each is a setting of `[stragglers]` or
    `[detection]` (defaults and meaning there, docs/detection.md explains them)."""

    ratio_threshold: float = _STRAGGLERS.median_ratio_threshold
    """stragglers.median_ratio_threshold: a rank is slow in a segment whose median ratio exceeds it."""
    peer_z: float = _DETECTION.straggler_peer_z
    """detection.straggler_peer_z."""
    min_mad: float = _DETECTION.straggler_min_mad
    """detection.straggler_min_mad."""
    min_segment: int = _DETECTION.changepoint_min_segment
    """detection.changepoint_min_segment: fewest logged rows of a segment (and of an episode)."""
    penalty: float = _DETECTION.episode_penalty
    """detection.episode_penalty."""
    screen_z: float = _DETECTION.episode_screen_z
    """detection.episode_screen_z."""
    min_noise: float = _DETECTION.episode_min_noise
    """detection.episode_min_noise."""

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> EpisodeParams:
        """From `Settings.sql_params()`."""
        return cls(
            ratio_threshold=float(params["straggler_ratio"]),
            peer_z=float(params["det_straggler_peer_z"]),
            min_mad=float(params["det_straggler_min_mad"]),
            min_segment=int(params["det_changepoint_min_segment"]),
            penalty=float(params["det_episode_penalty"]),
            screen_z=float(params["det_episode_screen_z"]),
            min_noise=float(params["det_episode_min_noise"]),
        )


@dataclass(frozen=True)
class Episode:
    column: int  # rank column of the matrix
    first_row: int  # matrix rows (steps), inclusive
    last_row: int
    rows: int  # logged rows of the rank inside
    first_index: int  # positions in the rank's own series (rows with a ratio)
    last_index: int
    median_ratio: float
    peer_z: float


def _column_medians(matrix: np.ndarray) -> np.ndarray:
    """Median of each column ignoring NaN (NaN for an all-NaN column); np.median when there is no
    NaN, which is the usual case and several times faster than np.nanmedian."""
    if not np.isnan(matrix).any():
        return np.median(matrix, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a rank without a row there: NaN
        return np.nanmedian(matrix, axis=0)


def _robust_z(
    window: np.ndarray, column: int, min_mad: float, ratio_threshold: float
) -> tuple[float, float]:
    """(median ratio of `column`, its robust z among its peers' medians) over `window` rows.

    The peers are the other ranks that are not slow over those rows (median ratio at most
    `ratio_threshold`), so several ranks slow at once neither pull the centre up nor widen the
    scale; when fewer than three such ranks are left, the lower half of the other ranks.
    """
    medians = _column_medians(window)
    mine = float(medians[column])
    others = np.delete(medians, column)
    others = others[~np.isnan(others)]
    if others.size < 2 or math.isnan(mine):
        return mine, float("nan")
    peers = others[others <= ratio_threshold]
    if peers.size < 3:
        peers = np.sort(others)[: max(2, (others.size + 1) // 2)]
    center = float(np.median(peers))
    mad = float(np.median(np.abs(peers - center)))
    return mine, (mine - center) / (1.4826 * max(mad, min_mad))


def detect_episodes(ratio: np.ndarray, p: EpisodeParams) -> list[Episode]:
    """Episodes of a step x rank ratio matrix (NaN where a rank logged no step)."""
    n_rows, n_ranks = ratio.shape
    if n_ranks < 3 or n_rows < p.min_segment:
        return []
    valid = ~np.isnan(ratio)
    filled = np.where(valid, ratio, 1.0)
    # Per-rank noise: robust sd of step-to-step differences / sqrt(2) (a spell moves it little).
    if n_rows > 1:
        sigma = 1.4826 * np.median(np.abs(np.diff(filled, axis=0)), axis=0) / math.sqrt(2.0)
    else:
        sigma = np.zeros(n_ranks)
    sigma = np.maximum(sigma, p.min_noise)
    w = p.min_segment
    cumsum = np.vstack([np.zeros((1, n_ranks)), np.cumsum(filled, axis=0)])
    peak = ((cumsum[w:] - cumsum[:-w]) / w).max(axis=0)
    candidates = np.flatnonzero(
        (peak > p.ratio_threshold) & (peak - 1.0 > p.screen_z * sigma / math.sqrt(w))
    )
    out: list[Episode] = []
    for c in candidates.tolist():
        index = np.flatnonzero(valid[:, c])
        x = ratio[index, c]
        n = x.size
        if n < p.min_segment:
            continue
        cuts = binary_segmentation(
            x, penalty=p.penalty * sigma[c] ** 2 * math.log(max(n, 3)), min_segment=p.min_segment
        )
        bounds = [0, *cuts, n]
        slow = []
        for a, b in itertools.pairwise(bounds):
            m, z = _robust_z(ratio[index[a] : index[b - 1] + 1], c, p.min_mad, p.ratio_threshold)
            slow.append(m > p.ratio_threshold and z >= p.peer_z)
        i = 0
        while i < len(slow):
            if not slow[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(slow) and slow[j + 1]:
                j += 1
            a, b = bounds[i], bounds[j + 1]
            # merged: joint statistics
            m, z = _robust_z(ratio[index[a] : index[b - 1] + 1], c, p.min_mad, p.ratio_threshold)
            if b - a >= p.min_segment:
                out.append(Episode(c, int(index[a]), int(index[b - 1]), b - a, a, b - 1, m, z))
            i = j + 1
    return out


def _reference_without_episodes(times: np.ndarray, episodes: list[Episode]) -> np.ndarray | None:
    """Per step: the median time of the ranks not in an episode where at least half of the step's
    ranks are in one (there the plain median sits among the slow ranks), the plain median
    elsewhere; None when no step has that many ranks in an episode."""
    masked = times.copy()
    for e in episodes:
        masked[e.first_row : e.last_row + 1, e.column] = np.nan
    present = (~np.isnan(times)).sum(axis=1)
    in_episode = present - (~np.isnan(masked)).sum(axis=1)
    crowded = (2 * in_episode >= present) & (in_episode > 0)
    if not crowded.any():
        return None
    reference = _column_medians(masked.T)
    plain = _column_medians(times.T)
    return np.where(crowded & ~np.isnan(reference), reference, plain)


def attempt_episodes(times: pl.DataFrame, p: EpisodeParams) -> pl.DataFrame | None:
    """Episodes of one attempt from its `rank_step_times` rows (job_id, attempt, step, rank, node,
    gpu, time_s, ratio, drag_s, end_ts, step_s), sorted by rank then step; None when it has none."""
    steps, ranks = times["step"].to_numpy(), times["rank"].to_numpy()
    # Rows are sorted by rank, then step: the rank ids are where the rank changes, and when every
    # rank logged the same steps the first rank's steps are all of them (no hashing of 30 M rows).
    starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
    rank_ids = ranks[starts]
    first_block = steps[: starts[1] if starts.size > 1 else steps.size]
    if steps.size == first_block.size * starts.size and np.array_equal(
        steps.reshape(starts.size, first_block.size),
        np.broadcast_to(first_block, (starts.size, first_block.size)),
    ):
        step_ids = first_block
    else:
        step_ids = np.unique(steps)
    row = np.searchsorted(step_ids, steps)
    col = np.searchsorted(rank_ids, ranks)
    shape = (step_ids.size, rank_ids.size)
    position = np.full(shape, -1, dtype=np.int64)
    position[row, col] = np.arange(times.height)
    time_s = np.full(shape, np.nan)
    time_s[row, col] = times["time_s"].cast(pl.Float64).to_numpy()  # null -> NaN
    ratio = np.full(shape, np.nan)
    ratio[row, col] = times["ratio"].cast(pl.Float64).to_numpy()
    episodes = detect_episodes(ratio, p)
    reference = _reference_without_episodes(time_s, episodes) if episodes else None
    if reference is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = time_s / np.where(reference > 0, reference, np.nan)[:, None]
        episodes = detect_episodes(ratio, p)
    if not episodes:
        return None
    end_ts = times["end_ts"]
    step_s = times["step_s"].to_numpy().astype(np.float64)
    drag = np.nan_to_num(times["drag_s"].cast(pl.Float64).to_numpy())
    last_row = step_ids.size - 1
    records = []
    counts: dict[int, int] = {}
    for e in sorted(episodes, key=lambda e: (e.column, e.first_row)):
        index = np.flatnonzero(position[:, e.column] >= 0)
        inside = position[index[e.first_index : e.last_index + 1], e.column]
        first, last = int(inside[0]), int(inside[-1])
        detected = int(inside[min(p.min_segment, inside.size) - 1])
        first_step, last_step = int(step_ids[e.first_row]), int(step_ids[e.last_row])
        number = counts.get(e.column, 0)
        counts[e.column] = number + 1
        records.append(
            {
                "job_id": times["job_id"][0],
                "attempt": times["attempt"][0],
                "rank": int(rank_ids[e.column]),
                "episode": number,
                "node": times["node"][last],
                "gpu": times["gpu"][last],
                "first_step": first_step,
                "last_step": last_step,
                "rows": e.rows,
                "start_ts": end_ts[first] - _duration(step_s[first]),
                "end_ts": end_ts[last],
                "detected_at": end_ts[detected],
                "detected_step": int(times["step"][detected]),
                "reaches_end": e.last_row == last_row,
                "median_ratio": e.median_ratio,
                "peer_z": e.peer_z,
                # drag of the logged rows, scaled up when only every N-th step is logged
                "drag_s": float(drag[inside].sum()) * (last_step - first_step + 1) / inside.size,
            }
        )
    return pl.DataFrame(records, schema=EPISODE_COLUMNS)


def _duration(seconds: float) -> dt.timedelta:
    return dt.timedelta(seconds=float(seconds))
