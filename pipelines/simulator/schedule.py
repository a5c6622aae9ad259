"""A small batch scheduler and the synchronous-training step model.

Requests (first attempts at submit, restarts after a recovery gap) are placed in
ready-time order on the earliest free resources: multi-node and 8-GPU jobs take
whole nodes, 1-GPU jobs one GPU. MIG inference nodes take no scheduler jobs. Planned maintenance is avoided; a node under
repair takes no new work. A hard fault (XID 79, ECC DBE) ends every attempt
running where it strikes, at the instant it strikes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from pipelines.simulator.model import (
    GPUS_PER_NODE,
    MAX_RESTARTS,
    Effects,
    Fleet,
    Job,
    SimulationConfig,
)

CRASH_REASON = "Process exited with code 1: KeyError: 'input_ids' in data collator"
REASONS = {
    "succeeded": (0, None),
    "failed": (1, "Process exited with code 1"),
    "oom": (137, "OOMKilled: CUDA out of memory"),
    "cancelled": (None, "Cancelled by user"),
    "timeout": (None, "Time limit reached"),
    "preempted": (None, "Preempted by a higher-priority job; requeued"),
}


@dataclass
class Attempt:
    """One run of a job on a set of nodes, [start_s, end_s); end_s is None while running."""

    job: Job
    attempt: int
    start_s: float
    end_s: float | None
    state: str
    exit_code: int | None
    reason: str | None
    nodes: list[int]
    gpus: list[int]  # global GPU indices
    resume_step: int = 0  # first step this attempt runs (multi-node jobs)
    restored_step: int | None = None  # checkpoint step restored at start


@dataclass
class Timeline:
    """Synchronous steps of one attempt: step k ends at `end_s[k]` on every rank."""

    steps: np.ndarray  # (K,) global step numbers
    end_s: np.ndarray  # (K,)
    step_s: np.ndarray  # (K,)
    compute_s: np.ndarray  # (K, R)
    save_s: np.ndarray  # (K,) blocking checkpoint save inside the step, 0 when none
    restore: tuple[float, float] | None  # (start, duration) of the restore at attempt start
    tail_s: float  # teardown after the last step of a finished run


def step_timeline(
    cfg: SimulationConfig,
    effects: Effects,
    job: Job,
    attempt: int,
    start: float,
    resume: int,
    nodes: list[int],
    restored: bool,
) -> Timeline:
    """The steps an attempt would run from `resume` to the job's last step if nothing stopped it.

    Rank r runs on node nodes[r // 8], GPU r % 8. compute_s is a rank's busy time; step_s
    = slowest rank's compute + collective time + blocking checkpoint save, the same on every rank.
    Deterministic per (seed, job, attempt), so the output pass can rebuild it.
    """
    rng = np.random.default_rng([cfg.seed, int(cfg.start.timestamp()), 7, job.index, attempt])
    n_ranks = len(nodes) * GPUS_PER_NODE
    steps = np.arange(resume, job.n_steps)
    k = len(steps)
    restore = None
    init = float(rng.uniform(120, 300))
    if restored:
        restore = (start + 30.0, float(rng.uniform(30, 90)))
        init += restore[1]
    warmup = float(rng.uniform(60, 240))  # compilation / warm-up in the first step
    noise = 1 + 0.012 * rng.standard_normal((k, n_ranks))
    coll_noise = 0.08 * (1 + 0.1 * np.abs(rng.standard_normal(k)))
    save = np.where((steps + 1) % job.save_every == 0, np.round(job.save_s, 6), 0.0)
    tail = float(rng.uniform(20, 60))
    # A fault slows the steps that start inside its window; step starts depend on the
    # slowdowns, so refine from a nominal timeline (fixed point, 3 rounds are plenty).
    step_start = start + init + np.arange(k) * job.base_s * 1.1
    for _ in range(3):
        factor = np.ones((k, n_ranks))
        coll_factor = np.ones(k)
        for node, gpu, t0, t1 in effects.throttles:
            if node in nodes:
                r = nodes.index(node) * GPUS_PER_NODE + gpu
                factor[(step_start >= t0) & (step_start < t1), r] *= 1.12
        for node, t0, t1, _down in effects.nic_down:
            if node in nodes:
                i = nodes.index(node)
                inside = (step_start >= t0) & (step_start < t1)
                factor[inside, i * GPUS_PER_NODE : (i + 1) * GPUS_PER_NODE] *= 1.07
                coll_factor[inside] *= 1.3
        compute = job.base_s * factor * noise
        if k:
            compute[0] += warmup
        step_s = compute.max(axis=1) + job.base_s * coll_noise * coll_factor + save
        end = start + init + np.cumsum(step_s)
        step_start = end - step_s
    return Timeline(steps, end, step_s, compute, save, restore, tail)


class Scheduler:
    def __init__(
        self, cfg: SimulationConfig, fleet: Fleet, jobs: list[Job], effects: Effects
    ) -> None:
        self.cfg, self.fleet, self.jobs, self.effects = cfg, fleet, jobs, effects
        self.horizon = float(cfg.horizon_s)
        self.free_at = np.zeros((fleet.n, GPUS_PER_NODE))
        self.rng = np.random.default_rng([cfg.seed, int(cfg.start.timestamp()), 5])
        self.blocks_of: dict[int, list[tuple[float, float, bool]]] = {}
        for node, b0, b1, planned in sorted(effects.blocks, key=lambda b: b[1]):
            self.blocks_of.setdefault(node, []).append((b0, b1, planned))
        self.has_block = np.zeros(fleet.n, dtype=bool)
        self.has_block[list(self.blocks_of)] = True
        self._gpu1_slots: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _unblock(self, nodes: np.ndarray, e: np.ndarray, d: float) -> np.ndarray:
        """Push each node's earliest start past maintenance it would overlap and repairs it would start in."""
        hit_rows = np.flatnonzero(self.has_block[nodes])
        if len(hit_rows) == 0:
            return e
        e = e.copy()
        for i in hit_rows:
            t = float(e[i])
            for _ in range(3):
                for b0, b1, planned in self.blocks_of[int(nodes[i])]:
                    if t < b1 and ((t + d > b0) if planned else (t >= b0)):
                        t = b1
            e[i] = t
        return e

    def _place(self, job: Job, ready: float, d: float) -> tuple[float, list[int], list[int]]:
        fl = self.fleet
        if job.kind == "gpu1":
            if job.cluster not in self._gpu1_slots:
                cand_nodes = np.flatnonzero(fl.batch & (fl.cluster == job.cluster))
                if len(cand_nodes) == 0:
                    cand_nodes = np.flatnonzero(~fl.mig & (fl.cluster == job.cluster))
                self._gpu1_slots[job.cluster] = (
                    np.repeat(cand_nodes, GPUS_PER_NODE),
                    np.tile(np.arange(GPUS_PER_NODE), len(cand_nodes)),
                )
            g_nodes, g_idx = self._gpu1_slots[job.cluster]
            e = np.maximum(ready, self.free_at[g_nodes, g_idx])
            e = self._unblock(g_nodes, e, d)
            i = int(np.argmin(e))
            node, gpu = int(g_nodes[i]), int(g_idx[i])
            return float(e[i]), [node], [node * GPUS_PER_NODE + gpu]
        pool = fl.train if job.kind == "multi" else fl.batch
        cand = np.flatnonzero(pool & (fl.cluster == job.cluster))
        if len(cand) < job.n_nodes:
            cand = np.flatnonzero(~fl.mig & (fl.cluster == job.cluster))
        e = np.maximum(ready, self.free_at[cand].max(axis=1))
        e = self._unblock(cand, e, d)
        for _ in range(10):
            chosen = np.argsort(e, kind="stable")[: job.n_nodes]
            start = float(e[chosen].max())
            pushed = self._unblock(cand[chosen], np.full(len(chosen), start), d)
            if np.all(pushed == start):
                break
            e[chosen] = np.maximum(e[chosen], pushed)
        nodes = sorted(int(n) for n in cand[chosen])
        gpus = [n * GPUS_PER_NODE + g for n in nodes for g in range(GPUS_PER_NODE)]
        return start, nodes, gpus

    def _first_kill(self, start: float, end: float, nodes: list[int], gpus: list[int]):
        best = None
        for t, node, gpu, kind in self.effects.kills:
            on_it = node in nodes and (gpu is None or node * GPUS_PER_NODE + gpu in gpus)
            if on_it and start <= t < end and (best is None or t < best[0]):
                best = (t, node, gpu, kind)
        return best

    def run(self) -> list[Attempt]:
        attempts: list[Attempt] = []
        # Requests by priority (submit time, as a requeued job keeps its age), each not before its ready time.
        heap: list[tuple[float, int, int, int, int, float]] = [
            (j.submit_s, j.index, j.index, 0, 0, j.submit_s) for j in self.jobs
        ]
        heapq.heapify(heap)
        seq = len(self.jobs)
        while heap:
            _, _, ji, a, resume, ready = heapq.heappop(heap)
            job = self.jobs[ji]
            if ready >= self.horizon:
                continue
            if job.kind == "multi":
                d = (
                    600
                    + (job.n_steps - resume) * job.base_s * 1.3
                    + job.save_s * (job.n_steps - resume) / job.save_every
                )
            else:
                d = job.duration_s
            start, nodes, gpus = self._place(job, ready, d)
            if start >= self.horizon:
                continue
            restored = resume > 0
            timeline = None
            if job.kind == "multi":
                timeline = step_timeline(
                    self.cfg, self.effects, job, a, start, resume, nodes, restored
                )
                natural_end = (
                    float(timeline.end_s[-1]) + timeline.tail_s
                    if len(timeline.end_s)
                    else start + 300
                )
            else:
                natural_end = start + d
            # Candidate endings, earliest wins.
            endings: list[tuple[float, str, int | None, str | None]] = []
            kill = self._first_kill(start, natural_end, nodes, gpus)
            if kill is not None:
                t, node, _gpu, kind = kill
                if kind == "xid79_fell_off_bus":
                    endings.append(
                        (
                            t,
                            "node_fail",
                            None,
                            f"NODE_FAIL: {self.fleet.names[node]} lost GPU {self._xid_gpu(t, node)} (XID 79)",
                        )
                    )
                elif kind == "drain":
                    drained = f"NODE_FAIL: {self.fleet.names[node]} drained for a reboot"
                    endings.append((t, "node_fail", None, drained))
                else:
                    endings.append(
                        (t, "failed", 1, "CUDA error: uncorrectable ECC error encountered")
                    )
            if job.crash_loop:
                if timeline is not None and len(timeline.end_s) > 5:
                    t_crash = float(timeline.end_s[4]) + 7.0
                else:
                    t_crash = start + min(d * 0.5, 420.0)
                endings.append((t_crash, "failed", 1, CRASH_REASON))
            if a in job.preempt_fracs:
                endings.append(
                    (
                        start + job.preempt_fracs[a] * (natural_end - start),
                        "preempted",
                        *REASONS["preempted"],
                    )
                )
            if job.kind != "multi" and job.outcome != "succeeded":
                code, reason = REASONS[job.outcome]
                endings.append((start + job.outcome_frac * d, job.outcome, code, reason))
            endings.append((natural_end, "succeeded", 0, None))
            ending_s, state, code, reason = min(endings, key=lambda x: x[0])
            end: float | None = ending_s
            if ending_s >= self.horizon:
                end, state, code, reason = None, "running", None, None
            att = Attempt(
                job,
                a,
                start,
                end,
                state,
                code,
                reason,
                nodes,
                gpus,
                resume,
                (resume - 1) if restored else None,
            )
            attempts.append(att)
            node_idx = np.array(gpus) // GPUS_PER_NODE
            self.free_at[node_idx, np.array(gpus) % GPUS_PER_NODE] = (
                self.horizon * 2 if end is None else end
            )
            retry = job.kind == "multi" or job.crash_loop
            if retry and state in ("node_fail", "failed", "preempted") and a < MAX_RESTARTS:
                next_resume = resume
                if timeline is not None:
                    kept = (timeline.end_s <= end) & (timeline.save_s > 0)
                    if kept.any():
                        next_resume = int(timeline.steps[kept][-1]) + 1
                gap = float(
                    self.rng.uniform(120, 300) if job.crash_loop else self.rng.uniform(300, 1200)
                )
                heapq.heappush(heap, (job.submit_s, seq, ji, a + 1, next_resume, ending_s + gap))
                seq += 1
        attempts.sort(key=lambda x: (x.job.index, x.attempt))
        return attempts

    def _xid_gpu(self, t: float, node: int) -> int:
        for tx, n, g, code in self.effects.xids:
            if n == node and tx == t and code == 79:
                return g
        return 0
