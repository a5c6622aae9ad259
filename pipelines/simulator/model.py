"""The simulated fleet: configuration, nodes and GPUs, the job mix, and the fault plan.

All times inside the simulator are seconds since `SimulationConfig.start` (floats
for step timings, whole minutes for scrapes); the output layer turns them into UTC
timestamps. Everything random comes from generators seeded by the config's seed,
so the same (seed, start, nodes, days) always gives the same fleet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import numpy as np

from pipelines.errors import ConfigError

SCRAPE_S = 60
GPUS_PER_NODE = 8
MAX_RESTARTS = 3  # restart policy of training jobs: attempts 0..3

# (cluster, instance type, GPU model as dcgm-exporter's modelName says it, EFA links expected)
CLUSTERS: tuple[tuple[str, str, str, int], ...] = (
    ("train-use1-a", "p5.48xlarge", "NVIDIA H100 80GB HBM3", 32),
    ("train-use1-b", "p5en.48xlarge", "NVIDIA H200", 16),
)
TEAMS = ("llm-pretrain", "multimodal", "rl-research", "speech", "eval", "research-infra")
PROJECTS = ("llama-ft", "moe-7b", "vit-l", "rlhf-ppo", "asr-conformer", "sweep", "dpo", "distill")


def last_full_iso_week_start(today: date) -> datetime:
    """Monday 00:00 UTC of the last full ISO week before `today`."""
    monday_this_week = today - timedelta(days=today.weekday())
    return datetime.combine(monday_this_week - timedelta(days=7), datetime.min.time(), UTC)


def default_start(now: datetime, days: int) -> datetime:
    """A Monday 00:00 UTC from which `days` days end at or before `now`: the last full ISO week's
    Monday, moved back a week at a time until the window fits (a simulation never reaches into
    the future, where its data would be cut off by the data horizon)."""
    start = last_full_iso_week_start(now.astimezone(UTC).date())
    while start + timedelta(days=days) > now:
        start -= timedelta(days=7)
    return start


def _parse_start(start: str | None, days: int) -> datetime:
    if start is None:
        return default_start(datetime.now(UTC), days)
    try:
        parsed = datetime.fromisoformat(start)
    except ValueError as e:
        raise ConfigError(
            f"Cannot read the start `{start}` as an ISO date or date-time.",
            "Pass --start like 2026-11-23 or 2026-11-23T00:00:00Z (UTC).",
        ) from e
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    # Scrapes are whole minutes: truncate so every series lines up on the same grid.
    return parsed.astimezone(UTC).replace(second=0, microsecond=0)


@dataclass(frozen=True)
class SimulationConfig:
    """What to simulate: `nodes` 8-GPU nodes for `days` days from `start` (UTC)."""

    nodes: int
    days: int
    seed: int
    start: datetime
    faults: str = "default"
    # Share of the default offered work (see `build_jobs`); the demo runs below 1, where the
    # scheduler keeps up with the submissions.
    load: float = 1.0
    cluster_prefix: str = ""
    """Prefixed to every cluster name (`east` -> `east-train-use1-a`): the same fleet simulated
    as another cluster, with the same node names and job ids."""
    inference: bool = False
    """Add the utilisation workloads (`pipelines.simulator.inference`): one MIG-partitioned node
    per cluster serving light inference, and a few whole-node jobs that under-use their GPUs.
    Off, the fleet is the one every detection scenario was built on."""

    @classmethod
    def create(
        cls,
        nodes: int,
        days: int,
        seed: int,
        start: str | None = None,
        faults: str = "default",
        load: float = 1.0,
        cluster_prefix: str = "",
        inference: bool = False,
    ) -> SimulationConfig:
        if nodes < 1 or nodes > 4096:
            raise ConfigError(f"Cannot simulate {nodes} nodes.", "Pass --nodes between 1 and 4096.")
        if days < 1 or days > 62:
            raise ConfigError(f"Cannot simulate {days} days.", "Pass --days between 1 and 62.")
        if faults not in ("default", "none"):
            raise ConfigError(f"Unknown fault plan `{faults}`.", "Use `default` or `none`.")
        if not 0 < load <= 1:
            raise ConfigError(
                f"Cannot simulate a load of {load}.", "Pass a load above 0 and at most 1."
            )
        return cls(
            nodes=nodes,
            days=days,
            seed=seed,
            start=_parse_start(start, days),
            faults=faults,
            load=load,
            cluster_prefix=cluster_prefix,
            inference=inference,
        )

    def cluster_name(self, index: int) -> str:
        """The name of simulated cluster `index` (into CLUSTERS)."""
        name = CLUSTERS[index][0]
        return f"{self.cluster_prefix}-{name}" if self.cluster_prefix else name

    @property
    def horizon_s(self) -> int:
        return self.days * 86400

    @property
    def minutes(self) -> int:
        return self.days * 1440


def rng_for(cfg: SimulationConfig, *stream: int) -> np.random.Generator:
    """An independent generator per purpose, so adding draws in one place moves nothing else."""
    return np.random.default_rng(
        [cfg.seed, int(cfg.start.timestamp()), cfg.nodes, cfg.days, *stream]
    )


@dataclass
class Fleet:
    """Nodes (index n) and GPUs (index g = n * 8 + gpu)."""

    names: list[str]
    cluster: np.ndarray  # int index into CLUSTERS, per node
    train: np.ndarray  # bool per node: in the partition for multi-node training
    uuids: list[str]  # per GPU
    mig: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """bool per node: its GPUs are MIG-partitioned for inference (no scheduler jobs, no faults)."""

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def batch(self) -> np.ndarray:
        """bool per node: in the partition of 1-GPU and whole-node jobs."""
        return ~self.train & ~self.mig


def build_fleet(cfg: SimulationConfig) -> Fleet:
    rng = rng_for(cfg, 1)
    width = max(3, len(str(cfg.nodes - 1)))
    names = [f"gpu-{i:0{width}d}" for i in range(cfg.nodes)]
    half = (cfg.nodes + 1) // 2
    cluster = np.where(np.arange(cfg.nodes) < half, 0, 1)
    train = np.zeros(cfg.nodes, dtype=bool)
    for c in (0, 1):
        idx = np.flatnonzero(cluster == c)
        if len(idx) >= 3:
            # First 60 % of each cluster is the training partition (whole nodes, multi-node jobs).
            train[idx[: max(2, round(0.6 * len(idx)))]] = True
    raw = rng.integers(0, 256, size=(cfg.nodes * GPUS_PER_NODE, 16), dtype=np.uint8)
    uuids = []
    for row in raw:
        h = bytes(row).hex()
        uuids.append(f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}")
    mig = np.zeros(cfg.nodes, dtype=bool)
    if cfg.inference:
        for c in (0, 1):
            rest = np.flatnonzero((cluster == c) & ~train)
            if len(rest) >= 2:
                # The cluster's last node serves inference on MIG instances; the others keep batch work.
                mig[rest[-1]] = True
    return Fleet(names=names, cluster=cluster, train=train, uuids=uuids, mig=mig)


@dataclass
class Job:
    """A submitted job. Multi-node jobs run `n_steps` synchronous steps of ~`base_s` seconds."""

    index: int
    job_id: str
    name: str
    user: str
    team: str
    queue: str
    submit_s: float
    kind: str  # gpu1 | node | multi
    cluster: int
    n_nodes: int
    duration_s: float  # planned run time (gpu1/node jobs)
    util: int  # GPU_UTIL level while it runs
    fb_pct: int  # framebuffer used, percent of 80 GiB
    gpu_util: tuple[int, ...] | None = None  # per GPU of the job, when they differ (0 = unused)
    n_steps: int = 0
    base_s: float = 0.0
    save_every: int = 0
    save_s: float = 0.0
    outcome: str = "succeeded"  # background outcome of a single-attempt job
    outcome_frac: float = 1.0
    crash_loop: bool = False
    preempt_fracs: dict[int, float] = field(default_factory=dict)

    @property
    def num_gpus(self) -> int:
        return 1 if self.kind == "gpu1" else self.n_nodes * GPUS_PER_NODE


BACKGROUND_OUTCOMES = (
    ("succeeded", 0.93),
    ("failed", 0.03),
    ("oom", 0.015),
    ("cancelled", 0.015),
    ("timeout", 0.01),
)


def build_jobs(cfg: SimulationConfig, fleet: Fleet) -> list[Job]:
    """Work for each partition, submitted evenly over the window: planned run time of 72 % of
    the training partition's node-seconds and 85 % of the batch partition's GPU-seconds, times
    `cfg.load`.

    The scheduler places requests in submit order without backfill, so GPUs sit idle while a
    whole-node or multi-node job waits for its last node to drain: it serves only ~75 % of the
    capacity, and at load 1 its queues grow all window long (in 24 nodes x 21 days the `dev`
    first-attempt wait goes 0.7 -> 1.7 -> 14.4 h, week by week). Fine for a week of detection
    work; the demo's three weeks of trends (16 nodes) use load 0.5, where the queues stay short."""
    rng = rng_for(cfg, 2)
    horizon = cfg.horizon_s
    users = [f"{t.split('-')[0]}-user{u:02d}" for t in TEAMS for u in range(1, 8)]
    specs: list[dict] = []
    outcome_names = [o for o, _ in BACKGROUND_OUTCOMES]
    outcome_p = np.array([p for _, p in BACKGROUND_OUTCOMES])
    outcome_p /= outcome_p.sum()
    for c in (0, 1):
        train_nodes = int(np.sum((fleet.cluster == c) & fleet.train))
        batch_nodes = int(np.sum((fleet.cluster == c) & fleet.batch))
        if train_nodes >= 2:
            budget = (
                0.72 * cfg.load * train_nodes * horizon
            )  # node-seconds planned; steps run ~10 % longer
            # 128-node (1,024-rank) jobs only where the partition can hold them (512-node fleets);
            # a size that does not fit gets probability 0, so smaller fleets draw the same jobs.
            sizes = np.array([2, 4, 8, 16, 32, 64, 128])
            p = np.array([0.35, 0.25, 0.2, 0.1, 0.07, 0.03, 0.02])
            p = np.where(sizes <= train_nodes, p, 0)
            p /= p.sum()
            while budget > 0:
                k = int(rng.choice(sizes, p=p))
                base = float(rng.uniform(10, 60))
                dur = float(np.clip(rng.lognormal(np.log(4 * 3600), 0.6), 3600, 16 * 3600))
                # Bigger jobs run shorter here, keeping rank_steps bounded.
                dur = max(1800.0, dur * min(1.0, 8 / k))
                n_steps = max(20, int(dur / (base * 1.1)))
                specs.append(
                    {
                        "kind": "multi",
                        "cluster": c,
                        "n_nodes": k,
                        "duration_s": dur,
                        "n_steps": n_steps,
                        "base_s": base,
                        "save_every": max(5, round(1800 / base)),
                        "save_s": float(rng.uniform(20, 60)),
                        "queue": "train",
                    }
                )
                budget -= k * dur
        if batch_nodes >= 1:
            budget = 0.85 * cfg.load * batch_nodes * GPUS_PER_NODE * horizon  # GPU-seconds
            while budget > 0:
                if rng.random() < 0.7:
                    dur = float(np.clip(rng.lognormal(np.log(40 * 60), 1.0), 120, 12 * 3600))
                    specs.append(
                        {
                            "kind": "gpu1",
                            "cluster": c,
                            "n_nodes": 1,
                            "duration_s": dur,
                            "queue": "dev",
                        }
                    )
                    budget -= dur
                else:
                    dur = float(np.clip(rng.lognormal(np.log(2 * 3600), 0.8), 600, 24 * 3600))
                    specs.append(
                        {
                            "kind": "node",
                            "cluster": c,
                            "n_nodes": 1,
                            "duration_s": dur,
                            "queue": "batch",
                        }
                    )
                    budget -= 8 * dur
    submits = np.sort(rng.uniform(0, horizon * 0.97, size=len(specs)))
    order = rng.permutation(len(specs))
    jobs: list[Job] = []
    for i, (si, submit) in enumerate(zip(order, submits, strict=True)):
        s = specs[si]
        team_i = int(rng.integers(len(TEAMS)))
        user = users[team_i * 7 + int(rng.integers(7))]
        kind = s["kind"]
        outcome, frac = "succeeded", 1.0
        if kind != "multi":
            outcome = outcome_names[int(rng.choice(len(outcome_names), p=outcome_p))]
            frac = 1.0 if outcome in ("succeeded", "timeout") else float(rng.uniform(0.05, 0.9))
        jobs.append(
            Job(
                index=i,
                job_id=str(700000 + i),
                name=f"{PROJECTS[int(rng.integers(len(PROJECTS)))]}-{kind}-{i}",
                user=user,
                team=TEAMS[team_i],
                queue=s["queue"],
                submit_s=float(submit),
                kind=kind,
                cluster=s["cluster"],
                n_nodes=s["n_nodes"],
                duration_s=s["duration_s"],
                util=int(rng.integers(93, 100)) if kind == "multi" else int(rng.integers(35, 99)),
                fb_pct=int(rng.integers(50, 96)),
                n_steps=s.get("n_steps", 0),
                base_s=s.get("base_s", 0.0),
                save_every=s.get("save_every", 0),
                save_s=s.get("save_s", 0.0),
                outcome=outcome,
                outcome_frac=frac,
            )
        )
    return jobs


@dataclass
class Effects:
    """What the fault plan (and planned maintenance) does to the fleet, in simulator seconds."""

    kills: list[tuple[float, int, int | None, str]] = field(
        default_factory=list
    )  # t, node, gpu|None, fault kind
    blocks: list[tuple[int, float, float, bool]] = field(
        default_factory=list
    )  # node, b0, b1, planned
    reboots: list[tuple[int, float, float]] = field(
        default_factory=list
    )  # node, r0, r1 (counters reset at r1)
    gpu_absent: list[tuple[int, int | None, float, float]] = field(
        default_factory=list
    )  # node, gpu|None, a0, a1
    throttles: list[tuple[int, int, float, float]] = field(
        default_factory=list
    )  # node, gpu, t0, t1
    nic_down: list[tuple[int, float, float, int]] = field(
        default_factory=list
    )  # node, t0, t1, links down
    flaps: list[tuple[int, float, float]] = field(default_factory=list)  # node, t0, t1
    ahr_bad: list[tuple[int, float, float, int, int]] = field(
        default_factory=list
    )  # node, t0, t1, xid, gpu
    cordons: list[tuple[int, float, float, str]] = field(
        default_factory=list
    )  # node, t0, t1, message
    xids: list[tuple[float, int, int, int]] = field(default_factory=list)  # t, node, gpu, code
    sbe_rise: list[tuple[int, int, float, float]] = field(default_factory=list)  # node, gpu, t0, t1
    dbe: list[tuple[int, int, float]] = field(default_factory=list)  # node, gpu, t
    maintenance: list[tuple[int, float, float, str]] = field(
        default_factory=list
    )  # node, start, end, reason


@dataclass
class Fault:
    """One ground-truth row. `job`/`rank` are filled in once the schedule is known."""

    fault_id: str
    kind: str
    fault_class: str
    entity_type: str
    node: int | None
    gpu: int | None
    start_s: float
    end_s: float
    expected_effect: str
    job_id: str | None = None
    rank: int | None = None


class FaultContext:
    """What an injector may use: the fleet, the jobs, a shared RNG and a picker of untouched nodes."""

    def __init__(
        self, cfg: SimulationConfig, fleet: Fleet, jobs: list[Job], effects: Effects
    ) -> None:
        self.cfg, self.fleet, self.jobs, self.effects = cfg, fleet, jobs, effects
        self.rng = rng_for(cfg, 3)
        self.horizon = float(cfg.horizon_s)
        order = self.rng.permutation(fleet.n)
        self._train_free = [int(i) for i in order if fleet.train[i]]
        # MIG inference nodes take no faults: their ground truth is the utilisation truth alone.
        self._other_free = [int(i) for i in order if fleet.batch[i]]
        self._used_jobs: set[int] = set()

    def node(self, train: bool = True) -> int:
        """A node no other fault has touched (training partition first when `train`), reusing when exhausted."""
        pools = (
            (self._train_free, self._other_free) if train else (self._other_free, self._train_free)
        )
        for pool in pools:
            if pool:
                return pool.pop(0)
        if self.fleet.mig.any():
            others = np.flatnonzero(~self.fleet.mig)
            return int(others[self.rng.integers(len(others))])
        return int(self.rng.integers(self.fleet.n))

    def at(self, lo: float, hi: float) -> float:
        """A scrape-aligned instant between fractions `lo` and `hi` of the window."""
        t = self.rng.uniform(lo * self.horizon, hi * self.horizon)
        return float(np.floor(t / SCRAPE_S) * SCRAPE_S)

    def job(self, kinds: tuple[str, ...], max_nodes: int = 8) -> Job | None:
        cands = [
            j
            for j in self.jobs
            if j.kind in kinds
            and j.n_nodes <= max_nodes
            and j.index not in self._used_jobs
            and 0.05 * self.horizon < j.submit_s < 0.6 * self.horizon
        ]
        if not cands:
            return None
        chosen = cands[int(self.rng.integers(len(cands)))]
        self._used_jobs.add(chosen.index)
        return chosen


def _repair(
    ctx: FaultContext, node: int, t: float, repair_s: float, xid: int, gpu: int, msg: str
) -> float:
    """Cordon the node at `t`, hold it out until a reboot finishes at `t + repair_s`; returns that end."""
    end = min(t + repair_s, ctx.horizon + 86400)
    e = ctx.effects
    e.blocks.append((node, t, end, False))
    e.cordons.append((node, t + 2 * SCRAPE_S, end, msg))
    e.ahr_bad.append((node, t, end, xid, gpu))
    e.reboots.append((node, end - 10 * 60, end))
    # Whatever still runs on the node when it reboots is drained with it.
    e.kills.append((end - 10 * 60, node, None, "drain"))
    return end


def inject_xid79(ctx: FaultContext, fid: str) -> Fault:
    node, gpu = ctx.node(), int(ctx.rng.integers(GPUS_PER_NODE))
    t = ctx.at(0.1, 0.8)
    end = _repair(
        ctx,
        node,
        t,
        float(ctx.rng.uniform(4, 12)) * 3600,
        79,
        gpu,
        "cordoned by remediation: XID 79 (GPU fell off the bus), awaiting reboot",
    )
    ctx.effects.kills.append((t, node, None, "xid79_fell_off_bus"))
    ctx.effects.xids.append((t, node, gpu, 79))
    # The GPU is gone from the bus: no DCGM samples after the one that carried the XID.
    ctx.effects.gpu_absent.append((node, gpu, t + SCRAPE_S, end))
    return Fault(
        fid,
        "xid79_fell_off_bus",
        "hardware",
        "gpu",
        node,
        gpu,
        t,
        end,
        "XID 79 event and DCGM_FI_DEV_XID_ERRORS=79, then no samples from the GPU until the node "
        "reboots; jobs on the node end node_fail; AcceleratedHardwareReady False; node cordoned",
    )


def inject_ecc_dbe(ctx: FaultContext, fid: str) -> Fault:
    node, gpu = ctx.node(), int(ctx.rng.integers(GPUS_PER_NODE))
    t = ctx.at(0.3, 0.85)
    rise = max(0.0, t - float(ctx.rng.uniform(4, 8)) * 3600)
    ctx.effects.sbe_rise.append((node, gpu, rise, t))
    ctx.effects.dbe.append((node, gpu, t))
    ctx.effects.xids.append((t, node, gpu, 48))
    ctx.effects.kills.append((t, node, gpu, "ecc_dbe"))
    _repair(
        ctx,
        node,
        t,
        2 * 3600,
        48,
        gpu,
        "cordoned by remediation: XID 48 (double-bit ECC error), GPU reset",
    )
    return Fault(
        fid,
        "ecc_dbe",
        "hardware",
        "gpu",
        node,
        gpu,
        rise,
        t,
        "ECC single-bit error rate rising for hours, then DCGM_FI_DEV_ECC_DBE_VOL_TOTAL steps up with "
        "XID 48; the job on the GPU fails; node cordoned for a GPU reset",
    )


def inject_thermal_throttle(ctx: FaultContext, fid: str) -> Fault:
    node, gpu = ctx.node(), int(ctx.rng.integers(GPUS_PER_NODE))
    t0 = ctx.at(0.05, 0.45)
    t1 = min(ctx.horizon, t0 + float(ctx.rng.uniform(24, 48)) * 3600)
    ctx.effects.throttles.append((node, gpu, t0, t1))
    return Fault(
        fid,
        "thermal_throttle",
        "hardware",
        "gpu",
        node,
        gpu,
        t0,
        t1,
        "GPU temperature ~15 C above peers, SM clock and power ~15 % below peers under load; "
        "its rank in a multi-node job is a straggler (compute_s ~12 % higher)",
    )


def inject_nic_links_down(ctx: FaultContext, fid: str) -> Fault:
    node = ctx.node()
    t0 = ctx.at(0.1, 0.6)
    t1 = min(ctx.horizon, t0 + float(ctx.rng.uniform(8, 20)) * 3600)
    down = int(ctx.rng.integers(2, 5))
    ctx.effects.nic_down.append((node, t0, t1, down))
    return Fault(
        fid,
        "nic_links_down",
        "hardware",
        "node",
        node,
        None,
        t0,
        t1,
        f"nic_links_up {down} below nodes.nic_expected, NIC error counter climbing; the node's ranks "
        "are slower (compute_s ~7 % higher, collectives slower)",
    )


def inject_telemetry_gap(ctx: FaultContext, fid: str) -> Fault:
    # Alternate: odd gaps lose one GPU's series, even gaps the node's whole dcgm-exporter.
    whole_node = int(fid.rsplit("-", 1)[-1]) % 2 == 0
    node = ctx.node(train=False)
    gpu = None if whole_node else int(ctx.rng.integers(GPUS_PER_NODE))
    t0 = ctx.at(0.1, 0.9)
    t1 = t0 + float(np.floor(ctx.rng.uniform(20, 90))) * 60
    ctx.effects.gpu_absent.append((node, gpu, t0, t1))
    what = "the node's dcgm-exporter (all 8 GPUs)" if gpu is None else "one GPU's DCGM series"
    return Fault(
        fid,
        "telemetry_gap",
        "infrastructure",
        "node" if gpu is None else "gpu",
        node,
        gpu,
        t0,
        t1,
        f"hung health check: no samples from {what} while Ready stays True; the node's state is unknown",
    )


def inject_condition_flap(ctx: FaultContext, fid: str) -> Fault:
    node = ctx.node(train=False)
    t0 = ctx.at(0.1, 0.9)
    t1 = t0 + 3600
    ctx.effects.flaps.append((node, t0, t1))
    return Fault(
        fid,
        "condition_flap",
        "infrastructure",
        "node",
        node,
        None,
        t0,
        t1,
        "NetworkingReady alternates True/False every few minutes for an hour",
    )


def inject_crash_loop(ctx: FaultContext, fid: str) -> Fault | None:
    job = ctx.job(("multi", "node"), max_nodes=4)
    if job is None:
        return None
    job.crash_loop = True
    return Fault(
        fid,
        "crash_loop",
        "software",
        "job",
        None,
        None,
        job.submit_s,
        job.submit_s,
        f"{MAX_RESTARTS + 1} attempts each fail minutes after start with exit code 1 and no hardware "
        "signal: a bug, retrying will not help",
        job_id=job.job_id,
    )


def inject_preemption(ctx: FaultContext, fid: str) -> Fault | None:
    job = ctx.job(("multi",), max_nodes=8)
    if job is None:
        return None
    job.preempt_fracs = {0: float(ctx.rng.uniform(0.3, 0.6))}
    return Fault(
        fid,
        "preemption",
        "infrastructure",
        "job",
        None,
        None,
        job.submit_s,
        job.submit_s,
        "attempt 0 ends preempted, the job resumes from its last checkpoint in attempt 1",
        job_id=job.job_id,
    )


@dataclass(frozen=True)
class FaultSpec:
    """`per_64_nodes` faults of `kind` per 64 nodes (at least `minimum`) for the default plan."""

    kind: str
    per_64_nodes: float
    inject: Callable[[FaultContext, str], Fault | None]
    minimum: int = 1


DEFAULT_FAULT_PLAN: tuple[FaultSpec, ...] = (
    FaultSpec("xid79_fell_off_bus", 2, inject_xid79),
    FaultSpec("ecc_dbe", 1, inject_ecc_dbe),
    FaultSpec("thermal_throttle", 2, inject_thermal_throttle),
    FaultSpec("nic_links_down", 1, inject_nic_links_down),
    FaultSpec("telemetry_gap", 2, inject_telemetry_gap, minimum=2),  # one GPU, one whole node
    FaultSpec("condition_flap", 1, inject_condition_flap),
    FaultSpec("crash_loop", 1, inject_crash_loop),
    FaultSpec("preemption", 2, inject_preemption),
)


def plan_faults(
    cfg: SimulationConfig, fleet: Fleet, jobs: list[Job]
) -> tuple[Effects, list[Fault]]:
    """Planned maintenance plus the fault plan's effects and its ground-truth rows."""
    effects = Effects()
    ctx = FaultContext(cfg, fleet, jobs, effects)
    faults: list[Fault] = []
    if cfg.faults == "default":
        for spec in DEFAULT_FAULT_PLAN:
            count = max(spec.minimum, round(spec.per_64_nodes * cfg.nodes / 64))
            for i in range(count):
                fault = spec.inject(ctx, f"{spec.kind}-{i + 1}")
                if fault is not None:
                    faults.append(fault)
    # Planned maintenance: one window per ~32 nodes, on nodes the faults left alone.
    for _ in range(max(1, cfg.nodes // 32)):
        node = ctx.node(train=False)
        t0 = ctx.at(0.15, 0.85)
        t1 = t0 + 4 * 3600
        effects.maintenance.append((node, t0, t1, "Planned GPU driver and firmware upgrade"))
        effects.blocks.append((node, t0, t1, True))
        effects.cordons.append((node, t0, t1, "cordoned for planned maintenance"))
        mid = t0 + 2 * 3600
        effects.reboots.append((node, mid, mid + 10 * 60))
    if cfg.faults == "default":
        # After maintenance, with their own random stream: the draws above stay as they were.
        from pipelines.simulator.escapes import plan_escape_scenarios

        faults.extend(plan_escape_scenarios(ctx))
    return effects, faults
