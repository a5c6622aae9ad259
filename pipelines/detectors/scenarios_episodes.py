"""Hard cases for straggler episodes and stalled jobs, injected into a simulated fleet's frames.

Straggler episodes (`inject_straggler_episodes`): each case is a training job of its own, 10 ranks
on two nodes (GPUs 0-4 of each), ~2 s steps with 1.2 % per-step noise per rank, placed on nodes
no fault touches. Its ground truth is one row per episode (start of its first slow step, end of
its last), the shapes real per-worker step logs show:

positive cases
- `straggler_spell`: one rank 1.3x slower for steps 1,400-1,599 of a 3,000-step run, then normal.
- `stragglers_trade_places`: two ranks 10 % slow for the first 90 % of a 2,300-step run; then they
  recover and ranks 6-9 run 7, 10, 13 and 17 % slow for the last 230 steps (4 of 10 slow at once).
- `straggler_two_spells`: one rank 5 % slow in two spells of 150 steps (700-849, 2,000-2,149).
- `straggler_sampled`: one rank 15 % slow for steps 1,200-1,399 of a 3,000-step run that logs
  every 10th step only (the episode is 20 rows).

negative cases (any straggler finding on them is a false positive)
- `all_ranks_slow`: every rank 1.3x slower for 300 steps at once (an input pipeline, not a rank).
- `noisy_ranks`: per-step noise of 3-5 % on every rank, no slow rank.

Stalled jobs (`inject_stalls`):
- `job_hang`: a 10-rank job (as above) stops logging steps 25 min before it fails (an NCCL
  watchdog).
- `job_hang_no_step_logs`: a whole-node job that logs no steps hangs for 25 min before it fails:
  every GPU of the attempt at ~100 % utilisation, ~80 W, no tensor activity meanwhile.
- negatives: `long_checkpoint_save` (a 10-rank job with a 15-min blocking save between two steps)
  and `data_wait` (a whole-node job without step logs waits 40 min on input at 25-35 %
  utilisation).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl

from pipelines.series import datetime_min

EPISODE_POSITIVE_CASES = (
    "straggler_spell",
    "stragglers_trade_places",
    "straggler_two_spells",
    "straggler_sampled",
)
EPISODE_NEGATIVE_CASES = ("all_ranks_slow", "noisy_ranks")
STALL_POSITIVE_CASES = ("job_hang", "job_hang_no_step_logs")
STALL_NEGATIVE_CASES = ("long_checkpoint_save", "data_wait")

RANKS = 10
BASE_S = 2.0
HANG_S = 25 * 60
UTIL, POWER, TENSOR = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
)


def _free_node_pairs(
    frames: dict[str, pl.DataFrame], rng: np.random.Generator
) -> list[tuple[str, str]]:
    """Pairs of nodes of one cluster, those no fault, hard case or maintenance touches first.

    The synthetic jobs' step times are generated here, so a fault elsewhere on a node cannot slow
    them: on a small fleet they may share nodes with other cases."""
    busy = set(frames["ground_truth"]["node"].drop_nulls().to_list())
    busy |= set(frames["maintenance"]["node"].to_list())
    pairs: list[tuple[str, str]] = []
    for free in (True, False):
        nodes = frames["nodes"].filter(pl.col("node").is_in(list(busy)) != free)
        for _, group in nodes.group_by("cluster", maintain_order=True):
            names = sorted(group["node"].to_list())
            names = [names[i] for i in rng.permutation(len(names))]
            chosen = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
            pairs += [chosen[i] for i in rng.permutation(len(chosen))]
    return pairs


def _truth(
    fault_id: str,
    kind: str,
    entity: str,
    node: str | None,
    gpu: int | None,
    job_id: str,
    rank: int | None,
    start: dt.datetime,
    end: dt.datetime,
    effect: str,
    negative: bool,
    klass: str = "straggler",
) -> dict[str, Any]:
    return {
        "fault_id": fault_id,
        "kind": kind,
        "class": klass,
        "entity_type": entity,
        "node": node,
        "gpu": gpu,
        "uuid": None,
        "job_id": job_id,
        "rank": rank,
        "start_ts": start,
        "end_ts": end,
        "expected_effect": ("no finding: " if negative else "") + effect,
    }


def _synthetic_job(
    job_id: str,
    nodes: tuple[str, str],
    start: dt.datetime,
    n_steps: int,
    factors: np.ndarray,
    noise: np.ndarray,
    rng: np.random.Generator,
    log_every: int = 1,
    pause: tuple[int, float] = (0, 0.0),
) -> tuple[dict[str, pl.DataFrame], np.ndarray, np.ndarray]:
    """Landing rows of a 10-rank job: `factors` (steps x ranks) slow its ranks' compute_s;
    `pause` = (step, seconds): nothing runs for that long after that step.

    Returns (rows per table, step end seconds after start, step seconds) for every step."""
    compute = BASE_S * factors * (1 + noise[None, :] * rng.standard_normal((n_steps, RANKS)))
    step_s = compute.max(axis=1) + 0.15
    init = 90.0
    end_s = init + np.cumsum(step_s) + np.where(np.arange(n_steps) > pause[0], pause[1], 0.0)
    logged = np.flatnonzero((np.arange(n_steps) + 1) % log_every == 0)
    rank = np.tile(np.arange(RANKS), logged.size)
    step_rows = pl.DataFrame(
        {
            "job_id": [job_id] * rank.size,
            "attempt": np.zeros(rank.size, np.int32),
            "step": np.repeat(logged, RANKS).astype(np.int32),
            "rank": rank.astype(np.int32),
            "node": [nodes[r // 5] for r in rank.tolist()],
            "gpu": (rank % 5).astype(np.int16),
            "end_ts": [
                start + dt.timedelta(seconds=float(s)) for s in np.repeat(end_s[logged], RANKS)
            ],
            "step_s": np.round(np.repeat(step_s[logged], RANKS), 4),
            "compute_s": np.round(compute[logged].reshape(-1), 4),
        }
    )
    end = start + dt.timedelta(seconds=float(end_s[-1] + 30.0))
    job = {
        "job_id": job_id,
        "name": job_id,
        "user": "trainer",
        "team": "llm-pretrain",
        "queue": "train",
        "submit_ts": start,
        "start_ts": start,
        "end_ts": end,
        "num_gpus": RANKS,
        "state": "succeeded",
        "exit_code": 0,
        "reason": None,
    }
    attempt = {
        "job_id": job_id,
        "attempt": 0,
        "start_ts": start,
        "end_ts": end,
        "state": "succeeded",
        "exit_code": 0,
        "reason": None,
        "nodes": list(nodes),
    }
    return (
        {
            "rank_steps": step_rows,
            "jobs": pl.DataFrame([job]),
            "job_attempts": pl.DataFrame([attempt]),
        },
        end_s,
        step_s,
    )


def _append(frames: dict[str, pl.DataFrame], name: str, rows: pl.DataFrame) -> None:
    base = frames[name]
    if "cluster" in base.columns and "cluster" not in rows.columns:
        # Injected rows name no cluster: the loader takes their nodes' (SPEC "Fleet-wide identity").
        rows = rows.with_columns(pl.lit(None, pl.String).alias("cluster"))
    frames[name] = pl.concat([base, rows.select(base.columns).cast(base.schema, strict=False)])


def inject_straggler_episodes(
    frames: dict[str, pl.DataFrame], seed: int
) -> dict[str, pl.DataFrame]:
    """Return new frames with the straggler-episode cases (module docstring) and their truth."""
    rng = np.random.default_rng([seed, 1212])
    frames = dict(frames)
    pairs = _free_node_pairs(frames, rng)
    t0 = datetime_min(frames["gpu_samples"]["ts"]) + dt.timedelta(hours=2)
    truth: list[dict[str, Any]] = []
    quiet = np.full(RANKS, 0.012)
    # (kind, steps, log_every, noise per rank, episodes: [(ranks, factors, first step, last step)])
    spell_rank, spells_rank, sampled_rank = (int(r) for r in rng.choice(RANKS, 3))
    early = [int(r) for r in rng.choice(6, 2, replace=False)]
    cases: list[tuple[str, int, int, np.ndarray, list[tuple[list[int], list[float], int, int]]]] = [
        ("straggler_spell", 3000, 1, quiet, [([spell_rank], [1.3], 1400, 1599)]),
        (
            "stragglers_trade_places",
            2300,
            1,
            quiet,
            [(early, [1.10, 1.10], 0, 2069), ([6, 7, 8, 9], [1.07, 1.10, 1.13, 1.17], 2070, 2299)],
        ),
        (
            "straggler_two_spells",
            3000,
            1,
            quiet,
            [([spells_rank], [1.05], 700, 849), ([spells_rank], [1.05], 2000, 2149)],
        ),
        ("straggler_sampled", 3000, 10, quiet, [([sampled_rank], [1.15], 1200, 1399)]),
        ("all_ranks_slow", 2000, 1, quiet, [(list(range(RANKS)), [1.3] * RANKS, 800, 1099)]),
        ("noisy_ranks", 3000, 1, rng.uniform(0.03, 0.05, RANKS), []),
    ]
    for i, (kind, n_steps, log_every, noise, episodes) in enumerate(cases):
        if i >= len(pairs):
            break
        nodes = pairs[i]
        job_id = f"{kind}-{seed}"
        factors = np.ones((n_steps, RANKS))
        for ranks, slow, first, last in episodes:
            factors[first : last + 1, ranks] *= np.array(slow)
        start = t0 + dt.timedelta(minutes=20 * i)
        rows, end_s, step_s = _synthetic_job(
            job_id, nodes, start, n_steps, factors, noise, rng, log_every
        )
        for name, table in rows.items():
            _append(frames, name, table)
        negative = kind in EPISODE_NEGATIVE_CASES
        if negative:
            truth.append(
                _truth(
                    f"{kind}-1",
                    kind,
                    "job",
                    None,
                    None,
                    job_id,
                    None,
                    start,
                    rows["jobs"]["end_ts"][0],
                    "no straggler",
                    negative=True,
                )
            )
            continue
        for e, (ranks, slow, first, last) in enumerate(episodes):
            for rank, factor in zip(ranks, slow, strict=True):
                truth.append(
                    _truth(
                        f"{kind}-{rank}-{e}",
                        kind,
                        "rank",
                        nodes[rank // 5],
                        rank % 5,
                        job_id,
                        rank,
                        start + dt.timedelta(seconds=float(end_s[first] - step_s[first])),
                        start + dt.timedelta(seconds=float(end_s[last])),
                        f"rank {rank} {factor:.2f}x slower for steps {first}-{last}",
                        negative=False,
                    )
                )
    if truth:
        _append(frames, "ground_truth", pl.DataFrame(truth, infer_schema_length=None))
    return frames


def _set_telemetry(
    samples: pl.DataFrame,
    nodes: list[str],
    t0: dt.datetime,
    t1: dt.datetime,
    levels: dict[str, tuple[float, float]],
    rng: np.random.Generator,
) -> pl.DataFrame:
    """Set metric -> (level, noise sd) on every GPU of `nodes` for samples in [t0, t1)."""
    inside = pl.col("node").is_in(nodes) & (pl.col("ts") >= t0) & (pl.col("ts") < t1)
    noise = pl.Series(rng.standard_normal(samples.height))
    value = pl.col("value")
    for metric, (level, sd) in levels.items():
        value = (
            pl.when(inside & (pl.col("metric") == metric))
            .then((level + sd * pl.col("_noise")).clip(lower_bound=0.0))
            .otherwise(value)
        )
    return (
        samples.with_columns(noise.alias("_noise"))
        .with_columns(value.alias("value"))
        .drop("_noise")
    )


HUNG = {UTIL: (100.0, 0.0), POWER: (80.0, 3.0), TENSOR: (0.0, 0.0)}
IDLE = {UTIL: (0.0, 0.0), POWER: (71.0, 2.0), TENSOR: (0.0, 0.0)}


def _whole_node_jobs(frames: dict[str, pl.DataFrame]) -> list[dict[str, Any]]:
    """Last attempts of whole-node jobs without step logs that succeeded and lasted >= 1 h, of
    jobs no other case names, on nodes no other case or maintenance touches during the attempt
    (1 h slack)."""
    truth = frames["ground_truth"]
    slack = dt.timedelta(hours=1)
    windows = [
        (r["node"], r["start_ts"] - slack, (r["end_ts"] or r["start_ts"]) + slack)
        for r in pl.concat(
            [
                truth.select("node", "start_ts", "end_ts"),
                frames["maintenance"].select("node", "start_ts", "end_ts"),
            ]
        )
        .filter(pl.col("node").is_not_null())
        .iter_rows(named=True)
    ]
    busy_jobs = set(truth["job_id"].drop_nulls().to_list())
    logged = frames["rank_steps"].select("job_id", "attempt").unique()
    attempts = (
        frames["job_attempts"]
        .join(frames["jobs"].select("job_id", "num_gpus"), on="job_id")
        .join(logged, on=["job_id", "attempt"], how="anti")
        .filter(
            (pl.col("attempt") == pl.col("attempt").max().over("job_id"))
            & (pl.col("state") == "succeeded")
            & pl.col("end_ts").is_not_null()
            & ((pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds() >= 3600)
            & (pl.col("num_gpus") >= 8 * pl.col("nodes").list.len())
        )
        .sort("job_id")
    )
    return [
        r
        for r in attempts.iter_rows(named=True)
        if r["job_id"] not in busy_jobs
        and not any(
            n in r["nodes"] and w0 < r["end_ts"] and w1 > r["start_ts"] for n, w0, w1 in windows
        )
    ]


def _fail_attempt(
    frames: dict[str, pl.DataFrame], job_id: str, attempt: int, end: dt.datetime
) -> None:
    """End an attempt (and its job) at `end` as failed by a watchdog; drop its later steps and saves."""
    mine = (pl.col("job_id") == job_id) & (pl.col("attempt") == attempt)
    frames["rank_steps"] = frames["rank_steps"].filter(~(mine & (pl.col("end_ts") > end)))
    frames["checkpoints"] = frames["checkpoints"].filter(~(mine & (pl.col("start_ts") >= end)))
    fail = {"end_ts": end, "state": "failed", "exit_code": 134, "reason": "NCCL watchdog timeout"}
    for table, where in (("job_attempts", mine), ("jobs", pl.col("job_id") == job_id)):
        frames[table] = frames[table].with_columns(
            [pl.when(where).then(pl.lit(v)).otherwise(pl.col(k)).alias(k) for k, v in fail.items()]
        )


def inject_stalls(frames: dict[str, pl.DataFrame], seed: int) -> dict[str, pl.DataFrame]:
    """Return new frames with the stalled-job cases (module docstring) and their truth."""
    rng = np.random.default_rng([seed, 2525])
    frames = dict(frames)
    samples = frames["gpu_samples"]
    truth: list[dict[str, Any]] = []
    without = _whole_node_jobs(frames)
    without = [without[i] for i in rng.permutation(len(without))]
    hang = dt.timedelta(seconds=HANG_S)

    def fraction(a: dict[str, Any], share: float) -> dt.datetime:
        return a["start_ts"] + (a["end_ts"] - a["start_ts"]) * share

    pairs = _free_node_pairs(frames, rng)
    t0 = datetime_min(frames["gpu_samples"]["ts"]) + dt.timedelta(hours=4)
    quiet = np.full(RANKS, 0.012)
    if pairs:  # job_hang: a 10-rank job logs no step after step 999, fails 25 min later
        job_id = f"job_hang-{seed}"
        rows, end_s, _ = _synthetic_job(
            job_id, pairs[0], t0, 1000, np.ones((1000, RANKS)), quiet, rng
        )
        for name, table in rows.items():
            _append(frames, name, table)
        cut = t0 + dt.timedelta(seconds=float(end_s[-1]))
        _fail_attempt(frames, job_id, 0, cut + hang)
        truth.append(
            _truth(
                "job_hang-1",
                "job_hang",
                "job",
                None,
                None,
                job_id,
                None,
                cut,
                cut + hang,
                "no step ends for 25 min, then the attempt fails",
                negative=False,
                klass="software",
            )
        )
    if len(pairs) > 1:  # long_checkpoint_save: a 15-min blocking save after step 700
        job_id = f"long_checkpoint_save-{seed}"
        start = t0 + dt.timedelta(minutes=30)
        rows, end_s, _ = _synthetic_job(
            job_id, pairs[1], start, 1500, np.ones((1500, RANKS)), quiet, rng, pause=(700, 900.0)
        )
        for name, table in rows.items():
            _append(frames, name, table)
        save_start = start + dt.timedelta(seconds=float(end_s[700]))
        _append(
            frames,
            "checkpoints",
            pl.DataFrame(
                [
                    {
                        "job_id": job_id,
                        "attempt": 0,
                        "step": 700,
                        "kind": "save",
                        "start_ts": save_start,
                        "duration_s": 900.0,
                    }
                ]
            ),
        )
        truth.append(
            _truth(
                "long_checkpoint_save-1",
                "long_checkpoint_save",
                "job",
                None,
                None,
                job_id,
                None,
                save_start,
                save_start + dt.timedelta(seconds=900),
                "a 15-min blocking checkpoint save",
                negative=True,
                klass="software",
            )
        )
    if without:  # job_hang_no_step_logs: the same, seen only in GPU telemetry
        a = without.pop()
        start = fraction(a, 0.4).replace(second=0, microsecond=0)
        end = start + hang
        _fail_attempt(frames, a["job_id"], a["attempt"], end)
        samples = _set_telemetry(samples, a["nodes"], start, end, HUNG, rng)
        samples = _set_telemetry(samples, a["nodes"], end, a["end_ts"], IDLE, rng)
        truth.append(
            _truth(
                "job_hang_no_step_logs-1",
                "job_hang_no_step_logs",
                "job",
                None,
                None,
                a["job_id"],
                None,
                start,
                end,
                "every GPU busy but idle for 25 min, then the attempt fails",
                negative=False,
                klass="software",
            )
        )
    if without:  # data_wait: 40 min waiting on input at low utilisation
        a = without.pop()
        start = fraction(a, 0.3).replace(second=0, microsecond=0)
        end = start + dt.timedelta(minutes=40)
        samples = _set_telemetry(
            samples,
            a["nodes"],
            start,
            end,
            {UTIL: (30.0, 3.0), POWER: (160.0, 10.0), TENSOR: (0.02, 0.01)},
            rng,
        )
        truth.append(
            _truth(
                "data_wait-1",
                "data_wait",
                "job",
                None,
                None,
                a["job_id"],
                None,
                start,
                end,
                "40 min waiting on input at 25-35 % utilisation",
                negative=True,
                klass="software",
            )
        )
    frames["gpu_samples"] = samples
    if truth:
        _append(frames, "ground_truth", pl.DataFrame(truth, infer_schema_length=None))
    return frames
