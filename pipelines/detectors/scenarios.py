"""Hard cases for the detection evaluation, injected into a simulated fleet's landing frames.

The simulator's fault plan covers the common faults. These injectors add what a detector is most
likely to get wrong, each with a ground-truth row (same columns as the simulator's
`ground_truth`). They run on the frames `pipelines.simulate.simulate` returns, on nodes and jobs
no simulated fault touches, so every finding can be attributed:

positive cases (a finding is expected)
- `pcie_replay`: a GPU's PCIe replay counter climbs ~10 a minute for hours.
- `nvlink_errors`: a GPU's NVLink CRC flit error counter climbs ~3 a minute for hours.
- `row_remap_failure`: a GPU's row-remap failure gauge goes to 1 and stays.
- `straggler`: one rank of a multi-node job 5 % slower (compute_s) from its first step.
- `straggler_midrun`: one rank 5 % slower for only the last 200 steps of its attempt.
- `two_stragglers`: two ranks of one job, 5 % and 8 % slower from the first step.

negative cases (any finding on them is a false positive)
- `heterogeneous_ranks`: a job whose ranks run at evenly spread speeds (0.97x .. 1.03x): no single straggler.
- `noisy_gpu`: a healthy GPU whose clock, power and temperature readings are noisy (+-4 % / +-3 C).
- `counter_reset`: a node reboot resets a GPU's large ECC and PCIe counters to 0.

Straggler episodes (spells that start and end, ranks that trade places, sampled step logs) and
stalled jobs (hangs), with their negatives, are injected last by
`pipelines.detectors.scenarios_episodes`.

Rank injections scale the rank's compute_s; the synchronous step_s of every rank grows by how
much the new slowest rank exceeds the old one. end_ts is left as simulated (a few seconds per
hundred steps; the detectors read ratios, not end times).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from pipelines.detectors.scenarios_episodes import (
    EPISODE_NEGATIVE_CASES,
    EPISODE_POSITIVE_CASES,
    STALL_NEGATIVE_CASES,
    STALL_POSITIVE_CASES,
    inject_stalls,
    inject_straggler_episodes,
)
from pipelines.series import datetime_max, datetime_min, int_min

PCIE = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
NVLINK = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
REMAP = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
NOISY_METRICS = {"DCGM_FI_DEV_SM_CLOCK": 0.04, "DCGM_FI_DEV_POWER_USAGE": 0.04}

POSITIVE_CASES = (
    "pcie_replay",
    "nvlink_errors",
    "row_remap_failure",
    "straggler",
    "straggler_midrun",
    "two_stragglers",
    *EPISODE_POSITIVE_CASES,
    *STALL_POSITIVE_CASES,
)
NEGATIVE_CASES = (
    "heterogeneous_ranks",
    "noisy_gpu",
    "counter_reset",
    *EPISODE_NEGATIVE_CASES,
    *STALL_NEGATIVE_CASES,
)


@dataclass
class _Picker:
    """Free nodes and jobs (untouched by any simulated fault), in a seeded random order."""

    nodes: list[str]
    jobs: list[tuple[str, int, int]]  # (job_id, attempt, steps)

    gpus_taken: dict[str, set[int]] = field(default_factory=dict)

    def gpu(self, rng: np.random.Generator) -> tuple[str, int] | None:
        """A free GPU: first on a node no case uses yet, then another GPU of a used node."""
        for node in self.nodes:
            if node not in self.gpus_taken:
                self.gpus_taken[node] = set()
                break
        else:
            free = next((n for n, g in self.gpus_taken.items() if len(g) < 8), None)
            if free is None:
                return None
            node = free
        gpu = int(rng.choice(sorted(set(range(8)) - self.gpus_taken[node])))
        self.gpus_taken[node].add(gpu)
        return node, gpu

    def job(self, min_steps: int) -> tuple[str, int, int] | None:
        for i, job in enumerate(self.jobs):
            if job[2] >= min_steps:
                return self.jobs.pop(i)
        return None


def _picker(
    frames: dict[str, pl.DataFrame], truth: pl.DataFrame, rng: np.random.Generator, rank_cases: int
) -> _Picker:
    """GPU-case nodes no fault and no planned maintenance touch; jobs on no faulty node for the
    rank cases (their slowed ranks avoid the GPU-case nodes), longest first."""
    busy_nodes = set(truth["node"].drop_nulls().to_list())
    busy_nodes |= set(frames["maintenance"]["node"].to_list())
    busy_jobs = set(truth["job_id"].drop_nulls().to_list())
    attempts = frames["job_attempts"]
    # An attempt that overlaps (1 h slack) a fault or maintenance on one of its nodes is busy:
    # its ranks may straggle for a real reason.
    slack = dt.timedelta(hours=1)
    node_windows = [
        (r["node"], r["start_ts"] - slack, r["end_ts"] + slack)
        for r in truth.filter(pl.col("node").is_not_null()).iter_rows(named=True)
    ]
    node_windows += [
        (r["node"], r["start_ts"] - slack, r["end_ts"] + slack)
        for r in frames["maintenance"].iter_rows(named=True)
    ]
    horizon = frames["gpu_samples"]["ts"].max()
    for row in attempts.iter_rows(named=True):
        a0, a1 = row["start_ts"], row["end_ts"] or horizon
        if any(n in row["nodes"] and w0 < a1 and w1 > a0 for n, w0, w1 in node_windows):
            busy_jobs.add(row["job_id"])
    steps = (
        frames["rank_steps"]
        .group_by("job_id", "attempt")
        .agg(pl.col("step").n_unique().alias("steps"), pl.col("node").unique().alias("nodes"))
        .sort("job_id", "attempt")
    )
    candidates = [
        (r["job_id"], r["attempt"], r["steps"], r["nodes"])
        for r in steps.iter_rows(named=True)
        if r["job_id"] not in busy_jobs
    ]
    candidates = [candidates[i] for i in rng.permutation(len(candidates))] if candidates else []
    # The rank cases need 200-400 steps: the longest candidates first.
    chosen = sorted(candidates, key=lambda c: -c[2])[: rank_cases + 6]
    names = sorted(set(frames["nodes"]["node"].to_list()) - busy_nodes)
    nodes = [names[i] for i in rng.permutation(len(names))] if names else []
    return _Picker(nodes, [(c[0], c[1], c[2]) for c in chosen])


def _gpu_truth(
    kind: str,
    node: str,
    gpu: int,
    start: dt.datetime,
    end: dt.datetime,
    effect: str,
    frames: dict[str, pl.DataFrame],
) -> dict[str, Any]:
    uuid = (
        frames["gpu_samples"]
        .filter((pl.col("node") == node) & (pl.col("gpu") == gpu))
        .select(pl.col("uuid").drop_nulls().first())
        .item()
    )
    negative = kind in NEGATIVE_CASES
    return {
        "fault_id": f"{kind}-1",
        "kind": kind,
        "class": "hardware",
        "entity_type": "gpu",
        "node": node,
        "gpu": gpu,
        "uuid": uuid,
        "job_id": None,
        "rank": None,
        "start_ts": start,
        "end_ts": end,
        "expected_effect": ("no finding: " if negative else "") + effect,
    }


def _counter_ramp(
    samples: pl.DataFrame,
    node: str,
    gpu: int,
    metric: str,
    start: dt.datetime,
    end: dt.datetime,
    per_min: float,
    add_rows: bool,
) -> pl.DataFrame:
    """A counter for (node, gpu, metric) that climbs `per_min` a minute over [start, end)."""
    here = (pl.col("node") == node) & (pl.col("gpu") == gpu)
    minutes = (
        (pl.min_horizontal(pl.col("ts"), pl.lit(end)) - pl.lit(start)).dt.total_seconds() / 60.0
    ).clip(lower_bound=0.0)
    if add_rows:
        base = samples.filter(here & (pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL"))
        new = base.with_columns(
            pl.lit(metric).alias("metric"), (minutes * per_min).floor().alias("value")
        )
        return pl.concat([samples, new.select(samples.columns)])
    return samples.with_columns(
        pl.when(here & (pl.col("metric") == metric))
        .then(pl.col("value") + (minutes * per_min).floor())
        .otherwise(pl.col("value"))
        .alias("value")
    )


def _slow_ranks(
    steps: pl.DataFrame, job_id: str, attempt: int, factors: dict[int, float], from_step: int = 0
) -> pl.DataFrame:
    """Scale compute_s of ranks (rank -> factor) from `from_step`; step_s follows the slowest."""
    mine = (pl.col("job_id") == job_id) & (pl.col("attempt") == attempt)
    factor = pl.lit(1.0)
    for rank, f in factors.items():
        factor = (
            pl.when((pl.col("rank") == rank) & (pl.col("step") >= from_step))
            .then(f)
            .otherwise(factor)
        )
    out = steps.with_columns(
        pl.when(mine)
        .then(pl.col("compute_s") * factor)
        .otherwise(pl.col("compute_s"))
        .alias("new_compute")
    )
    grow = (pl.col("new_compute").max() - pl.col("compute_s").max()).over(
        "job_id", "attempt", "step"
    )
    return out.with_columns(
        pl.when(mine)
        .then(pl.col("step_s") + grow.clip(lower_bound=0.0))
        .otherwise(pl.col("step_s"))
        .alias("step_s"),
        pl.col("new_compute").alias("compute_s"),
    ).drop("new_compute")


def _rank_truth(
    kind: str,
    steps: pl.DataFrame,
    attempts: pl.DataFrame,
    job_id: str,
    attempt: int,
    rank: int,
    from_step: int,
    effect: str,
) -> dict[str, Any]:
    row = (
        steps.filter(
            (pl.col("job_id") == job_id)
            & (pl.col("attempt") == attempt)
            & (pl.col("rank") == rank)
            & (pl.col("step") >= from_step)
        )
        .sort("step")
        .row(0, named=True)
    )
    end = attempts.filter((pl.col("job_id") == job_id) & (pl.col("attempt") == attempt))[
        "end_ts"
    ].item()
    last = steps.filter((pl.col("job_id") == job_id) & (pl.col("attempt") == attempt))[
        "end_ts"
    ].max()
    return {
        "fault_id": f"{kind}-{rank}",
        "kind": kind,
        "class": "straggler",
        "entity_type": "rank",
        "node": row["node"],
        "gpu": row["gpu"],
        "uuid": None,
        "job_id": job_id,
        "rank": rank,
        "start_ts": row["end_ts"] - dt.timedelta(seconds=row["step_s"]),
        "end_ts": end if end is not None else last,
        "expected_effect": ("no finding: " if kind in NEGATIVE_CASES else "") + effect,
    }


def inject_hard_cases(frames: dict[str, pl.DataFrame], seed: int) -> dict[str, pl.DataFrame]:
    """Return new frames with the hard cases injected and their rows added to `ground_truth`."""
    rng = np.random.default_rng([seed, 4242])
    frames = dict(frames)
    truth = frames["ground_truth"]
    pick = _picker(frames, truth, rng, rank_cases=4)
    samples, steps, attempts = frames["gpu_samples"], frames["rank_steps"], frames["job_attempts"]
    t_first, t_last = datetime_min(samples["ts"]), datetime_max(samples["ts"])
    span = (t_last - t_first).total_seconds()
    rows: list[dict[str, Any]] = []

    def window(hours: float) -> tuple[dt.datetime, dt.datetime]:
        start = t_first + dt.timedelta(minutes=int(rng.uniform(0.1, 0.6) * span / 60))
        return start, min(t_last, start + dt.timedelta(hours=hours))

    if (chosen_gpu := pick.gpu(rng)) is not None:
        (node, gpu), (t0, t1) = chosen_gpu, window(6)
        samples = _counter_ramp(samples, node, gpu, PCIE, t0, t1, 10.0, add_rows=False)
        rows.append(_gpu_truth("pcie_replay", node, gpu, t0, t1, "PCIe replays ~600/h", frames))
    if (chosen_gpu := pick.gpu(rng)) is not None:
        (node, gpu), (t0, t1) = chosen_gpu, window(6)
        samples = _counter_ramp(samples, node, gpu, NVLINK, t0, t1, 3.0, add_rows=True)
        rows.append(
            _gpu_truth("nvlink_errors", node, gpu, t0, t1, "NVLink CRC errors ~180/h", frames)
        )
    if (chosen_gpu := pick.gpu(rng)) is not None:
        (node, gpu), (t0, _) = chosen_gpu, window(1)
        here = (pl.col("node") == node) & (pl.col("gpu") == gpu) & (pl.col("metric") == REMAP)
        samples = samples.with_columns(
            pl.when(here & (pl.col("ts") >= t0)).then(1.0).otherwise(pl.col("value")).alias("value")
        )
        rows.append(
            _gpu_truth("row_remap_failure", node, gpu, t0, t_last, "row remap failure = 1", frames)
        )
    if (chosen_gpu := pick.gpu(rng)) is not None:
        node, gpu = chosen_gpu
        here = (pl.col("node") == node) & (pl.col("gpu") == gpu)
        noise = pl.Series(rng.standard_normal(samples.height))
        samples = (
            samples.with_columns(noise.alias("_noise"))
            .with_columns(
                pl.when(here & (pl.col("metric") == "DCGM_FI_DEV_GPU_TEMP"))
                .then((pl.col("value") + 3.0 * pl.col("_noise")).round(0))
                .when(here & pl.col("metric").is_in(list(NOISY_METRICS)))
                .then(pl.col("value") * (1 + 0.04 * pl.col("_noise").clip(-2.5, 2.5)))
                .otherwise(pl.col("value"))
                .alias("value")
            )
            .drop("_noise")
        )
        rows.append(
            _gpu_truth(
                "noisy_gpu",
                node,
                gpu,
                t_first,
                t_last,
                "noisy clock/power (+-4 %) and temperature (+-3 C)",
                frames,
            )
        )
    if (chosen_gpu := pick.gpu(rng)) is not None:
        (node, gpu), (t0, _) = chosen_gpu, window(1)
        here = (pl.col("node") == node) & (pl.col("gpu") == gpu)
        minutes = (pl.col("ts") - pl.lit(t_first)).dt.total_seconds() / 60.0
        after = (pl.col("ts") - pl.lit(t0)).dt.total_seconds() / 60.0
        for metric, base in ((SBE, 4000.0), (PCIE, 900.0)):
            samples = samples.with_columns(
                pl.when(here & (pl.col("metric") == metric) & (pl.col("ts") < t0))
                .then(base + (minutes * 0.05).floor())
                .when(here & (pl.col("metric") == metric))
                .then((after * 0.05).floor())
                .otherwise(pl.col("value"))
                .alias("value")
            )
        rows.append(
            _gpu_truth(
                "counter_reset",
                node,
                gpu,
                t0,
                t0 + dt.timedelta(hours=1),
                "ECC SBE 4000 and PCIe replay 900 counters reset to 0 by a reboot",
                frames,
            )
        )

    rank_cases: list[tuple[str, dict[int, float], int, str]] = [
        ("straggler_midrun", {0: 1.05}, 300, "one rank 5 % slower for the last 200 steps"),
        ("straggler", {0: 1.05}, 200, "one rank 5 % slower from the first step"),
        ("two_stragglers", {0: 1.05, 1: 1.08}, 100, "two ranks 5 % and 8 % slower"),
        ("heterogeneous_ranks", {}, 100, "ranks spread evenly 0.97x .. 1.03x"),
    ]
    for kind, factors, min_steps, effect in rank_cases:
        found = None
        while found is None and (job := pick.job(min_steps)) is not None:
            job_id, attempt, n_steps = job
            ranks_on = steps.filter(
                (pl.col("job_id") == job_id) & (pl.col("attempt") == attempt)
            ).filter(pl.col("step") == pl.col("step").min())
            eligible = sorted(
                ranks_on.filter(~pl.col("node").is_in(list(pick.gpus_taken)))["rank"].to_list()
            )
            if len(eligible) >= max(1, len(factors)):
                found = (job_id, attempt, n_steps, sorted(ranks_on["rank"].to_list()), eligible)
        if found is None:
            continue
        job_id, attempt, n_steps, ranks, eligible = found
        chosen = (
            [int(r) for r in rng.choice(eligible, size=len(factors), replace=False)]
            if factors
            else []
        )
        first = int_min(
            steps.filter((pl.col("job_id") == job_id) & (pl.col("attempt") == attempt))["step"]
        )
        from_step = first + n_steps - 200 if kind == "straggler_midrun" else first
        if kind == "heterogeneous_ranks":
            spread = np.linspace(0.97, 1.03, len(ranks))[rng.permutation(len(ranks))]
            steps = _slow_ranks(steps, job_id, attempt, dict(zip(ranks, spread.tolist())))
            row = _rank_truth(kind, steps, attempts, job_id, attempt, ranks[0], first, effect)
            rows.append(
                row
                | {
                    "entity_type": "job",
                    "node": None,
                    "gpu": None,
                    "rank": None,
                    "fault_id": f"{kind}-1",
                }
            )
            continue
        steps = _slow_ranks(steps, job_id, attempt, dict(zip(chosen, factors.values())), from_step)
        for rank in chosen:
            rows.append(
                _rank_truth(kind, steps, attempts, job_id, attempt, rank, from_step, effect)
            )

    frames["gpu_samples"], frames["rank_steps"] = samples, steps
    if rows:
        extra = pl.DataFrame(rows).cast({c: t for c, t in truth.schema.items()}, strict=False)
        frames["ground_truth"] = pl.concat([truth, extra.select(truth.columns)])
    frames = inject_straggler_episodes(frames, seed)
    frames = inject_stalls(frames, seed)
    return frames
