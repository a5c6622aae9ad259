"""Utilisation workloads and their ground truth (on with `SimulationConfig.inference`).

- MIG inference: each MIG node (`Fleet.mig`) has half its GPUs split into two `3g` instances and
  half into seven `1g` instances (the profiles of its GPU model in queries/data/mig_profiles.csv),
  one light inference job per instance for the whole window. The instances are scraped every
  `INSTANCE_SAMPLE_S` seconds into `gpu_instance_samples` with the labels dcgm-exporter gives
  (`GPU_I_ID`, `GPU_I_PROFILE`, and the pod's owner as `job_id`, Kubernetes style
  `inference/<deployment>`); the last `1g` instance of each node serves no traffic (idle).
  The device keeps its health fields in `gpu_samples`; utilisation, memory and tensor activity
  are per instance (`telemetry.PER_INSTANCE_ON_MIG`).
- Whole-node jobs that under-use their GPUs, chosen after scheduling among finished, fault-free
  8-GPU batch jobs (per cluster and ISO week, one of each): `light_inference` (the longest
  candidate) runs every GPU at ~12 % with 8 GiB of memory, which fits a `2g` profile;
  `one_of_eight` (any other) keeps one GPU busy and seven idle.
- `utilisation_truth`: per workload and ISO week, the GPU-hours telemetry measures, the idle
  allocated GPU-hours, the MIG profile `mig_packing` should recommend and the GPUs it frees.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import pyarrow as pa

from pipelines.simulator.model import (
    CLUSTERS,
    GPUS_PER_NODE,
    SCRAPE_S,
    Effects,
    Fault,
    Fleet,
    SimulationConfig,
    rng_for,
)
from pipelines.simulator.schedule import Attempt
from pipelines.simulator.telemetry import FB_TOTAL_MIB
from pipelines.sql import queries_dir

INSTANCE_SAMPLE_S = 300
"""Per-instance scrape interval: coarse (few rows) and within the default
`utilisation.window_max_s`, so every sample stands for its whole interval."""
INSTANCE_METRICS: tuple[str, ...] = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED")
HOURS_PER_WEEK = 168.0
# The defaults of pipelines.config.UtilisationSettings the truth is worked out for.
PACKING_MAX_ACTIVITY = 0.5
PACKING_HEADROOM = 0.2
# dcgm-exporter's GPU_I_ID of the first instance of a profile with this many compute slices
# (the placements NVIDIA's MIG user guide lists: 1g instances from 7, 3g instances from 1).
FIRST_GPU_I_ID = {1: 7, 3: 1}
# Per compute slices: deployment, nominal activity, memory used (share of the instance's).
SERVICES = {3: ("chat-8b", 0.45, 0.7), 1: ("embed-small", 0.3, 0.6)}
LIGHT_UTIL, LIGHT_FB_PCT = 12, 10  # light inference on a whole GPU: GPU_UTIL %, % of 80 GiB
BUSY_UTIL = 90  # the one GPU a one_of_eight job uses


@dataclass(frozen=True)
class Profile:
    name: str
    compute_slices: int
    gpu_slices: int
    memory_gb: float
    max_instances: int

    @property
    def gpu_share(self) -> float:
        """The share of a GPU gpu_activity_windows counts for one instance: compute slices / 7."""
        return self.compute_slices / self.gpu_slices


def mig_profiles(gpu_model: str) -> list[Profile]:
    """The MIG profiles of `gpu_model` from the bundled CSV, in file order."""
    with (queries_dir() / "data" / "mig_profiles.csv").open() as f:
        return [
            Profile(
                r["profile"],
                int(r["compute_slices"]),
                int(r["gpu_slices"]),
                float(r["memory_gb"]),
                int(r["max_instances"]),
            )
            for r in csv.DictReader(f)
            if re.search(r["model_pattern"], gpu_model)
        ]


def packing_profile(gpu_model: str, p95_activity: float, peak_memory_gib: float) -> Profile | None:
    """The profile `mig_packing` recommends (docs/metrics.md "MIG packing"), at the default settings."""
    if p95_activity > PACKING_MAX_ACTIVITY:
        return None
    fits = [
        p
        for p in mig_profiles(gpu_model)
        if p.compute_slices / p.gpu_slices >= p95_activity * (1 + PACKING_HEADROOM)
        and p.memory_gb >= peak_memory_gib * (1 + PACKING_HEADROOM)
        and p.max_instances > 1
    ]
    return min(
        fits, key=lambda p: (1 / p.max_instances, p.compute_slices, p.memory_gb), default=None
    )


@dataclass(frozen=True)
class Instance:
    node: int
    gpu: int
    gpu_i_id: int
    profile: Profile
    job_id: str
    idle: bool


@dataclass
class Underuse:
    """A whole-node job made to under-use its GPUs."""

    kind: str  # one_of_eight | light_inference
    attempt: Attempt


@dataclass
class InferencePlan:
    instances: list[Instance]
    activity: np.ndarray  # (S, I) GR_ENGINE_ACTIVE per instance sample
    memory_mib: np.ndarray  # (I,) FB_USED per instance
    underuse: list[Underuse]


def _layout(gpu_model: str) -> list[Profile]:
    """Per GPU of a MIG node: the profile it is split into (two 3g, or seven 1g)."""
    by_slices = {p.compute_slices: p for p in mig_profiles(gpu_model) if p.max_instances in (2, 7)}
    half = GPUS_PER_NODE // 2
    return [by_slices[3]] * half + [by_slices[1]] * (GPUS_PER_NODE - half)


def plan_inference(
    cfg: SimulationConfig,
    fleet: Fleet,
    attempts: list[Attempt],
    effects: Effects,
    faults: list[Fault],
) -> InferencePlan:
    """The MIG instances and their load, and the under-using jobs (their `Job`s are changed)."""
    instances: list[Instance] = []
    counters: dict[tuple[int, int], int] = {}
    for node in np.flatnonzero(fleet.mig):
        c = int(fleet.cluster[node])
        layout = _layout(CLUSTERS[c][2])
        for gpu, profile in enumerate(layout):
            for k in range(profile.max_instances):
                service = SERVICES[profile.compute_slices][0]
                n = counters.get((c, profile.compute_slices), 0)
                counters[(c, profile.compute_slices)] = n + 1
                last = gpu == len(layout) - 1 and k == profile.max_instances - 1
                instances.append(
                    Instance(
                        int(node),
                        gpu,
                        FIRST_GPU_I_ID[profile.compute_slices] + k,
                        profile,
                        f"inference/{service}-{n:02d}",
                        idle=last,
                    )
                )
    rng = rng_for(cfg, 31)
    steps = -(-cfg.horizon_s // INSTANCE_SAMPLE_S)
    hour = (np.arange(steps) * INSTANCE_SAMPLE_S / 3600.0 + cfg.start.hour) % 24
    diurnal = 0.7 + 0.3 * np.sin((hour - 9) / 24 * 2 * np.pi)
    nominal = np.array([SERVICES[i.profile.compute_slices][1] for i in instances])
    noise = rng.normal(0, 0.05, (steps, len(instances)))
    # Traffic never drops a serving instance below 8 % activity: only the idle one is idle.
    activity = np.clip(np.round(nominal * diurnal[:, None] + noise, 3), 0.08, 0.95)
    activity[:, [j for j, i in enumerate(instances) if i.idle]] = 0.0
    memory = np.array(
        [
            np.rint(
                i.profile.memory_gb
                * SERVICES[i.profile.compute_slices][2]
                * 1024
                * rng.uniform(0.95, 1.0)
            )
            for i in instances
        ]
    )
    return InferencePlan(
        instances, activity, memory, _plan_underuse(cfg, attempts, effects, faults)
    )


def _touched(node: int, t0: float, t1: float, effects: Effects) -> bool:
    """Whether any fault or maintenance effect reaches `node` during [t0, t1]."""
    spans: list[tuple[int, float, float]] = [
        *((n, a, b) for n, _g, a, b in effects.gpu_absent),
        *((n, a, b) for n, a, b in effects.reboots),
        *((n, a, b) for n, _g, a, b in effects.throttles),
        *((n, a, b) for n, a, b, _d in effects.nic_down),
        *((n, a, b) for n, a, b in effects.flaps),
        *((n, a, b) for n, a, b, _p in effects.blocks),
        *((n, a, b) for n, _g, a, b in effects.sbe_rise),
        *((n, t, t) for t, n, _g, _c in effects.xids),
        *((n, t, t) for n, _g, t in effects.dbe),
    ]
    return any(n == node and a <= t1 + SCRAPE_S and b >= t0 - SCRAPE_S for n, a, b in spans)


def _week(cfg: SimulationConfig, t: float) -> str:
    year, week, _ = (cfg.start + timedelta(seconds=t)).isocalendar()
    return f"{year}-W{week:02d}"


def _plan_underuse(
    cfg: SimulationConfig, attempts: list[Attempt], effects: Effects, faults: list[Fault]
) -> list[Underuse]:
    """Per cluster and ISO week, one `one_of_eight` and one `light_inference` job, when there are
    finished, single-attempt, fault-free 8-GPU batch jobs inside that week."""
    hit = {f.job_id for f in faults if f.job_id is not None}
    runs: dict[str, int] = {}
    for a in attempts:
        runs[a.job.job_id] = runs.get(a.job.job_id, 0) + 1
    candidates: dict[tuple[int, str], list[Attempt]] = {}
    for a in attempts:
        if (
            a.job.kind != "node"
            or a.state != "succeeded"
            or a.end_s is None
            or runs[a.job.job_id] != 1
            or a.job.job_id in hit
            or a.end_s - a.start_s < 1800
            or _week(cfg, a.start_s) != _week(cfg, a.end_s)
            or _touched(a.nodes[0], a.start_s, a.end_s, effects)
        ):
            continue
        candidates.setdefault((a.job.cluster, _week(cfg, a.start_s)), []).append(a)
    rng = rng_for(cfg, 32)
    chosen: list[Underuse] = []
    for key in sorted(candidates):
        # Light inference: the longest candidate (a serving job runs for hours); the job that
        # holds eight GPUs and uses one: any other.
        pool = sorted(candidates[key], key=lambda a: (a.start_s - (a.end_s or 0.0), a.job.index))
        picks = [0] + ([1 + int(rng.integers(len(pool) - 1))] if len(pool) > 1 else [])
        for kind, i in zip(("light_inference", "one_of_eight"), picks, strict=False):
            a = pool[i]
            job = a.job
            if kind == "one_of_eight":
                job.gpu_util = (BUSY_UTIL,) + (0,) * (GPUS_PER_NODE - 1)
            else:
                job.util, job.fb_pct = LIGHT_UTIL, LIGHT_FB_PCT
                job.name = job.name.replace("-node-", "-infer-")
            chosen.append(Underuse(kind, a))
    return chosen


def mig_gpu_util(cfg: SimulationConfig, fleet: Fleet, plan: InferencePlan) -> np.ndarray:
    """(minutes, MIG GPUs) device load: the instances' activity weighted by their slices, %.

    Drives the device's power and temperature; its GPU_UTIL is not reported (MIG mode)."""
    gpus = np.flatnonzero(np.repeat(fleet.mig, GPUS_PER_NODE))
    load = np.zeros((plan.activity.shape[0], len(gpus)))
    col = {int(g): k for k, g in enumerate(gpus)}
    for j, inst in enumerate(plan.instances):
        load[:, col[inst.node * GPUS_PER_NODE + inst.gpu]] += (
            plan.activity[:, j] * inst.profile.gpu_share
        )
    per_minute = np.repeat(load, INSTANCE_SAMPLE_S // SCRAPE_S, axis=0)[: cfg.minutes]
    return np.rint(100 * per_minute).astype(np.uint8)


def instance_samples(
    cfg: SimulationConfig, fleet: Fleet, plan: InferencePlan, present: np.ndarray
) -> pa.Table:
    """gpu_instance_samples (without cluster), sorted by (ts, node, gpu, gpu_i_id, metric);
    none while the physical GPU sends no samples (`present`, per minute and GPU)."""
    steps, n_inst = plan.activity.shape
    k = len(INSTANCE_METRICS)
    if n_inst == 0:
        return pa.table({})
    minute = np.arange(steps) * (INSTANCE_SAMPLE_S // SCRAPE_S)
    gpu_of = np.array([i.node * GPUS_PER_NODE + i.gpu for i in plan.instances])
    seen = present[minute][:, gpu_of]  # (S, I)
    values = np.stack([plan.activity, np.broadcast_to(plan.memory_mib, (steps, n_inst))], axis=-1)
    mask = np.broadcast_to(seen[:, :, None], (steps, n_inst, k))
    step_idx = np.broadcast_to(np.arange(steps)[:, None, None], mask.shape)[mask]
    inst_idx = np.broadcast_to(np.arange(n_inst)[None, :, None], mask.shape)[mask]
    metric_idx = np.broadcast_to(np.arange(k)[None, None, :], mask.shape)[mask]
    start_us = int(cfg.start.timestamp()) * 1_000_000
    inst = plan.instances

    def per_instance(values: list, type_: pa.DataType) -> pa.Array:
        """A column that repeats one value per instance: dictionary-encoded, then plain."""
        return pa.DictionaryArray.from_arrays(
            pa.array(inst_idx.astype(np.int32)), pa.array(values, type_)
        ).cast(type_)

    return pa.table(
        {
            "ts": pa.array(
                start_us + step_idx.astype(np.int64) * INSTANCE_SAMPLE_S * 1_000_000,
                pa.timestamp("us", tz="UTC"),
            ),
            "node": per_instance([fleet.names[i.node] for i in inst], pa.string()),
            "gpu": pa.array(np.array([i.gpu for i in inst], np.int16)[inst_idx]),
            "uuid": per_instance([fleet.uuids[g] for g in gpu_of], pa.string()),
            "gpu_i_id": pa.array(np.array([i.gpu_i_id for i in inst], np.int16)[inst_idx]),
            "gpu_i_profile": per_instance([i.profile.name for i in inst], pa.string()),
            "job_id": per_instance([i.job_id for i in inst], pa.string()),
            "metric": pa.DictionaryArray.from_arrays(
                pa.array(metric_idx.astype(np.int32)), pa.array(INSTANCE_METRICS)
            ).cast(pa.string()),
            "value": pa.array(values[mask], pa.float64()),
        }
    )


TRUTH_SCHEMA = pa.schema(
    [
        ("cluster", pa.string()),
        ("week", pa.string()),
        ("kind", pa.string()),
        ("workload", pa.string()),
        ("job_id", pa.string()),
        ("node", pa.string()),
        ("gpu", pa.int16()),
        ("gpu_i_id", pa.int16()),
        ("gpu_i_profile", pa.string()),
        ("gpus", pa.int32()),
        ("gpu_h", pa.float64()),
        ("idle_gpu_h", pa.float64()),
        ("idle_exact", pa.bool_()),
        ("fits_profile", pa.string()),
        ("packed_share", pa.float64()),
        ("freed_gpu_h", pa.float64()),
        ("gpus_freed", pa.float64()),
        ("expected_effect", pa.string()),
    ]
)


def utilisation_truth(
    cfg: SimulationConfig, fleet: Fleet, plan: InferencePlan, present: np.ndarray
) -> pa.Table:
    """One row per workload and ISO week (see the module docstring); `idle_exact` False where
    telemetry noise may put a few windows under the idle threshold (light inference at ~12 %)."""
    rows: list[dict] = []
    steps = plan.activity.shape[0]
    # A sample counts in the ISO week it starts in: the week changes at most once every 2016 steps.
    week_of_step = np.array([_week(cfg, s * INSTANCE_SAMPLE_S) for s in range(steps)])
    weeks = sorted(set(week_of_step.tolist()))
    minute = np.arange(steps) * (INSTANCE_SAMPLE_S // SCRAPE_S)
    window_h = INSTANCE_SAMPLE_S / 3600.0
    for j, inst in enumerate(plan.instances):
        seen = present[minute, inst.node * GPUS_PER_NODE + inst.gpu]
        share = inst.profile.gpu_share
        for week in weeks:
            in_week = seen & (week_of_step == week)
            gpu_h = float(in_week.sum()) * window_h * share
            idle_h = float((in_week & (plan.activity[:, j] < 0.05)).sum()) * window_h * share
            rows.append(
                {
                    "cluster": cfg.cluster_name(int(fleet.cluster[inst.node])),
                    "week": week,
                    "kind": "mig_inference_idle" if inst.idle else "mig_inference",
                    "workload": inst.job_id,
                    "job_id": inst.job_id,
                    "node": fleet.names[inst.node],
                    "gpu": inst.gpu,
                    "gpu_i_id": inst.gpu_i_id,
                    "gpu_i_profile": inst.profile.name,
                    "gpus": None,
                    "gpu_h": gpu_h,
                    "idle_gpu_h": idle_h,
                    "idle_exact": True,
                    "fits_profile": None,
                    "packed_share": None,
                    "freed_gpu_h": 0.0,
                    "gpus_freed": 0.0,
                    "expected_effect": "already on a MIG instance: no packing advice"
                    + ("; every window idle (no traffic)" if inst.idle else ""),
                }
            )
    for u in plan.underuse:
        a = u.attempt
        node = a.nodes[0]
        end_s = cfg.horizon_s if a.end_s is None else a.end_s  # chosen jobs have ended
        sl = slice(int(np.ceil(a.start_s / SCRAPE_S)), int(np.ceil(end_s / SCRAPE_S)))
        gpus = [g % GPUS_PER_NODE for g in a.gpus]
        seen = present[sl, [node * GPUS_PER_NODE + g for g in gpus]]
        gpu_h = float(seen.sum()) * SCRAPE_S / 3600.0
        gpu_model = CLUSTERS[a.job.cluster][2]
        if u.kind == "one_of_eight":
            idle_h = float(seen[:, 1:].sum()) * SCRAPE_S / 3600.0
            fit, effect = (
                None,
                "7 of 8 GPUs idle all run; p95 activity is the busy GPU's: no MIG fit",
            )
        else:
            idle_h = 0.0
            # GPU_UTIL 12 % with noise of sd 2 points: p95 15-16 %. Any p95 from 12 % to 23 % gives
            # the same profile (a 1g is too small from 11.9 %, a 2g fits up to 23.8 %).
            peak_gib = np.rint(LIGHT_FB_PCT / 100 * FB_TOTAL_MIB) / 1024
            fit = packing_profile(gpu_model, (LIGHT_UTIL + 4) / 100, float(peak_gib))
            effect = f"every GPU ~{LIGHT_UTIL} % busy with 8 GiB used: fits {fit and fit.name}"
        packed_share = None if fit is None else 1.0 / fit.max_instances
        freed = 0.0 if fit is None else gpu_h * (1 - 1.0 / fit.max_instances)
        rows.append(
            {
                "cluster": cfg.cluster_name(a.job.cluster),
                "week": _week(cfg, a.start_s),
                "kind": u.kind,
                "workload": a.job.name,
                "job_id": a.job.job_id,
                "node": fleet.names[node],
                "gpu": None,
                "gpu_i_id": None,
                "gpu_i_profile": None,
                "gpus": len(gpus),
                "gpu_h": gpu_h,
                "idle_gpu_h": idle_h,
                "idle_exact": u.kind == "one_of_eight",
                "fits_profile": None if fit is None else fit.name,
                "packed_share": packed_share,
                "freed_gpu_h": freed,
                "gpus_freed": freed / HOURS_PER_WEEK,
                "expected_effect": effect,
            }
        )
    return pa.Table.from_pylist(rows, schema=TRUTH_SCHEMA)
