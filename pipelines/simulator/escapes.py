"""Scenarios for failure escapes and checkpoint advice, and their ground truth.

- `inject_flagged_gpu`: a GPU logs a contained ECC error (XID 94, a warn-level finding) and keeps
  taking work, because the scheduler does not see gpufleet's findings; 45 min to 3 h later it
  fails for good (XID 48, double-bit error) and kills the job on it. A job placed on it after the warning
  was placed on a flagged node; one already running when the warning came was seen ahead.
- `recurring_checkpoint_jobs`: two recurring training jobs (same name and team, several runs in
  one cluster; one ground-truth row each),
  one saving every ~2 minutes (too often for any realistic failure rate), one saving only twice
  per run, hours apart (too rarely).
- `failure_escape_truth`: for every attempt a fault killed, whether a signal of the fault plan was
  already open on its node when it started, opened before it failed, or neither.

They run after the default plan and planned maintenance, with their own random stream, so the
rest of the plan draws the same faults as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from pipelines.simulator.model import (
    GPUS_PER_NODE,
    SCRAPE_S,
    Fault,
    FaultContext,
    Job,
    _repair,
    rng_for,
)

if TYPE_CHECKING:
    from pipelines.simulator.schedule import Attempt

ESCAPE_FAULT_KINDS = ("flagged_gpu", "checkpoint_too_frequent", "checkpoint_too_rare")
"""Ground-truth kinds of this module, in the default plan besides DEFAULT_FAULT_PLAN's."""
CONTAINED_ECC_XID = 94  # warn, action watch: the GPU keeps taking work
FREQUENT_SAVE_S = 120.0
RECURRING_NAMES = {
    "checkpoint_too_frequent": ("pretrain-nightly", "llm-pretrain"),
    "checkpoint_too_rare": ("distill-weekly", "research-infra"),
}
XID_CLEAR_S = 21600.0
"""How long an XID finding stays open after its last event (detection.xid_clear_s, the default)."""
SLOW_ONSET_S = 3 * 3600.0
"""Findings that need a trend (a rising ECC rate, throttling) open within this long of the fault's
onset; an attempt that starts inside that window may have been placed before or after the finding."""


def inject_flagged_gpu(ctx: FaultContext, fid: str) -> Fault:
    rng = rng_for(ctx.cfg, 11, int(fid.rsplit("-", 1)[-1]))
    # A batch node: short jobs come and go, so some start after the warning. (Training nodes are
    # left to the detection suite's rank cases, which avoid nodes with a fault.)
    node, gpu = ctx.node(train=False), int(rng.integers(GPUS_PER_NODE))
    warned = float(np.floor(rng.uniform(0.1, 0.6) * ctx.horizon / SCRAPE_S) * SCRAPE_S)
    failed = warned + float(np.floor(rng.uniform(0.75, 3.0) * 3600 / SCRAPE_S) * SCRAPE_S)
    e = ctx.effects
    e.xids.append((warned, node, gpu, CONTAINED_ECC_XID))
    e.xids.append((failed, node, gpu, 48))
    e.dbe.append((node, gpu, failed))
    e.kills.append((failed, node, gpu, "ecc_dbe"))
    _repair(
        ctx,
        node,
        failed,
        2 * 3600,
        48,
        gpu,
        "cordoned by remediation: XID 48 (double-bit ECC error) after XID 94, GPU reset",
    )
    return Fault(
        fid,
        "flagged_gpu",
        "hardware",
        "gpu",
        node,
        gpu,
        warned,
        failed,
        "XID 94 (contained ECC error, warn) opens a finding; the node keeps taking work; 45 min to 3 h later "
        "XID 48 and a double-bit error kill the job on the GPU; node cordoned for a GPU reset",
    )


def _in_one_cluster(jobs: list[Job]) -> list[Job]:
    """`jobs`, in their order, of one cluster: the simulated fleet's last cluster holding at least
    two of them (else the first job's).

    A recurring job's runs share a name and team within one cluster; in another cluster the same
    name is another job (and checkpoint advice is per cluster). Both recurring jobs prefer the
    same cluster, so a fleet with enough long training runs there keeps them together."""
    if not jobs:
        return []
    counts: dict[int, int] = {}
    for job in jobs:
        counts[job.cluster] = counts.get(job.cluster, 0) + 1
    eligible = [c for c, n in counts.items() if n >= 2]
    cluster = max(eligible) if eligible else jobs[0].cluster
    return [j for j in jobs if j.cluster == cluster]


def recurring_checkpoint_jobs(ctx: FaultContext) -> list[Fault]:
    """Rename runs of two recurring jobs and set their save interval; one truth row per recurring job."""
    rng = rng_for(ctx.cfg, 12)
    multi = [j for j in ctx.jobs if j.kind == "multi" and not j.crash_loop and not j.preempt_fracs]
    faults: list[Fault] = []
    # Too frequent: any multi-node run, a save every ~2 minutes of steps.
    frequent = [j for j in multi if j.n_steps * j.base_s >= 3600]
    # Too rare: the longest runs, a save at half way and at the end.
    rare = sorted(
        (j for j in multi if j.n_steps * j.base_s >= 4 * 3600), key=lambda j: -j.n_steps * j.base_s
    )
    chosen_rare = _in_one_cluster(rare)[:3]
    pool = [j for j in frequent if j not in chosen_rare]
    order: list[int] = [int(i) for i in rng.permutation(len(pool))] if pool else []
    chosen_frequent = _in_one_cluster([pool[i] for i in order])[:3]
    for kind, jobs in (
        ("checkpoint_too_frequent", chosen_frequent),
        ("checkpoint_too_rare", chosen_rare),
    ):
        if not jobs:
            continue
        name, team = RECURRING_NAMES[kind]
        runs = sorted(jobs, key=lambda j: j.index)
        for job in runs:
            job.name, job.team = name, team
            if kind == "checkpoint_too_frequent":
                job.save_every = max(1, round(FREQUENT_SAVE_S / job.base_s))
            else:
                job.save_every = max(1, job.n_steps // 2)
        how = (
            "every ~2 min of steps"
            if kind.endswith("frequent")
            else "at half way and at the end of each run"
        )
        # One row for the recurring job, naming no single job: its runs stay free for the
        # detection suite's rank cases (which avoid jobs the ground truth names).
        faults.append(
            Fault(
                f"{kind}-1",
                kind,
                "software",
                "job",
                None,
                None,
                runs[0].submit_s,
                runs[-1].submit_s,
                f"recurring job {team}/{name} (runs {', '.join(j.job_id for j in runs)}) saves a checkpoint "
                f"{how}: {'too often' if kind.endswith('frequent') else 'too rarely'} for the fleet's "
                "interruption rate",
            )
        )
    return faults


OUTCOMES = ("escaped", "seen_before_failure", "placed_on_flagged")  # by precedence


@dataclass(frozen=True)
class EscapeTruth:
    job_id: str
    attempt: int
    node: str
    outcome: str
    """placed_on_flagged | seen_before_failure | escaped."""
    possible: tuple[str, ...]
    """Every outcome that is right: more than one when a slow finding's onset decides between them."""


def _signals(effects, horizon: float) -> dict[int, list[tuple[float, float, bool]]]:
    """Per node: (start, end, exact) of every signal the fault plan makes visible on it."""
    out: dict[int, list[tuple[float, float, bool]]] = {}

    def add(node: int, t0: float, t1: float, exact: bool = True) -> None:
        out.setdefault(node, []).append((t0, t1, exact))

    last_xid: dict[tuple[int, int, int], list[float]] = {}
    for t, node, gpu, code in effects.xids:
        last_xid.setdefault((node, gpu, code), []).append(t)
    for (node, _gpu, _code), times in last_xid.items():
        times.sort()
        start = times[0]
        for prev, t in pairwise(times):
            if t - prev >= XID_CLEAR_S:
                add(node, start, prev + XID_CLEAR_S)
                start = t
        add(node, start, times[-1] + XID_CLEAR_S)
    for node, t0, t1, _xid, _gpu in effects.ahr_bad:
        add(node, t0, t1)
    planned = {(n, t0) for n, t0, _t1, _r in effects.maintenance}
    for node, t0, t1, _msg in effects.cordons:
        if (node, t0) not in planned:
            add(node, t0, t1)
    for node, t0, t1 in effects.flaps:
        add(node, t0, t1)
    for node, _gpu, t in effects.dbe:
        add(node, t, horizon)
    for node, t0, t1, _down in effects.nic_down:
        add(node, t0, t1, exact=False)
    for node, _gpu, t0, t1 in effects.sbe_rise:
        add(node, t0, t1, exact=False)
    for node, _gpu, t0, t1 in effects.throttles:
        add(node, t0, t1, exact=False)
    for node, _gpu, t0, t1 in effects.gpu_absent:
        add(node, t0, t1, exact=False)
    return out


def _outcomes(start: float, end: float, t0: float, t1: float, exact: bool) -> set[int]:
    """Possible outcomes (indexes into OUTCOMES) one signal gives an attempt [start, end).

    An exact signal opens at t0; a slow one at some instant of [t0, min(t0 + SLOW_ONSET_S, t1)].
    """
    if t1 <= start or t0 >= end:
        return {0}
    latest = t0 if exact else min(t0 + SLOW_ONSET_S, t1)
    possible = set()
    if t0 <= start:
        possible.add(2)
    if latest > start and t0 < end:
        possible.add(1)
    if latest >= end:
        possible.add(0)
    return possible


def failure_escape_truth(
    effects, attempts: list[Attempt], names: list[str], horizon: float
) -> list[EscapeTruth]:
    """The outcome failure_escapes should give every attempt a fault killed (a `kills` effect at
    its end), from the signals on the node the fault struck."""
    signals = _signals(effects, horizon)
    truths = []
    for a in attempts:
        if a.end_s is None or a.state not in ("failed", "node_fail"):
            continue
        struck = sorted(
            {node for t, node, _gpu, _kind in effects.kills if t == a.end_s and node in a.nodes}
        )
        if not struck:
            continue
        lo = hi = 0
        for node in struck:
            for t0, t1, exact in signals.get(node, []):
                possible = _outcomes(a.start_s, a.end_s, t0, t1, exact)
                lo, hi = max(lo, min(possible)), max(hi, max(possible))
        truths.append(
            EscapeTruth(
                a.job.job_id,
                a.attempt,
                names[struck[0]],
                OUTCOMES[hi],
                tuple(OUTCOMES[i] for i in range(lo, hi + 1)),
            )
        )
    return truths


MIN_NODES = 16
"""Smaller fleets get none of these scenarios: their few training jobs are the detection suite's
rank cases (pipelines/detectors/scenarios.py), which need jobs and nodes no fault touched."""


def plan_escape_scenarios(ctx: FaultContext) -> list[Fault]:
    """The scenarios of this module for the default plan on fleets of MIN_NODES or more: one
    flagged GPU per 32 nodes (at least two) and the two recurring checkpointing jobs."""
    if ctx.cfg.nodes < MIN_NODES:
        return []
    faults = [
        inject_flagged_gpu(ctx, f"flagged_gpu-{i + 1}")
        for i in range(max(2, round(ctx.cfg.nodes / 32)))
    ]
    return faults + recurring_checkpoint_jobs(ctx)
