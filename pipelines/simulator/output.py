"""Landing tables from a simulated fleet: in memory (`simulate`) or as Parquet files (`simulate_to_dir`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.contract import LANDING_TABLES
from pipelines.errors import GpufleetError
from pipelines.simulator.inference import (
    TRUTH_SCHEMA,
    InferencePlan,
    instance_samples,
    mig_gpu_util,
    plan_inference,
    utilisation_truth,
)
from pipelines.simulator.model import (
    CLUSTERS,
    GPUS_PER_NODE,
    Effects,
    Fault,
    Fleet,
    SimulationConfig,
    build_fleet,
    build_jobs,
    plan_faults,
)
from pipelines.simulator.schedule import Attempt, Scheduler, step_timeline
from pipelines.simulator.telemetry import (
    State,
    build_state,
    condition_chunks,
    gpu_sample_chunks,
    node_sample_chunks,
)

TS = pa.timestamp("us", tz="UTC")
STR = pa.string()
_SCHEMAS: dict[str, pa.Schema] = {
    "nodes": pa.schema(
        [
            ("node", STR),
            ("cluster", STR),
            ("instance_type", STR),
            ("gpu_model", STR),
            ("gpu_count", pa.int32()),
            ("nic_expected", pa.int32()),
        ]
    ),
    "node_conditions": pa.schema(
        [
            ("ts", TS),
            ("node", STR),
            ("condition", STR),
            ("status", STR),
            ("reason", STR),
            ("message", STR),
        ]
    ),
    "gpu_samples": pa.schema(
        [
            ("ts", TS),
            ("node", STR),
            ("gpu", pa.int16()),
            ("uuid", STR),
            ("metric", STR),
            ("value", pa.float64()),
        ]
    ),
    "gpu_instance_samples": pa.schema(
        [
            ("ts", TS),
            ("node", STR),
            ("gpu", pa.int16()),
            ("uuid", STR),
            ("gpu_i_id", pa.int16()),
            ("gpu_i_profile", STR),
            ("job_id", STR),
            ("metric", STR),
            ("value", pa.float64()),
        ]
    ),
    "node_samples": pa.schema(
        [("ts", TS), ("node", STR), ("metric", STR), ("value", pa.float64())]
    ),
    "gpu_events": pa.schema(
        [
            ("ts", TS),
            ("node", STR),
            ("gpu", pa.int16()),
            ("uuid", STR),
            ("kind", STR),
            ("code", pa.int32()),
            ("message", STR),
            ("source", STR),
        ]
    ),
    "jobs": pa.schema(
        [
            ("job_id", STR),
            ("name", STR),
            ("user", STR),
            ("team", STR),
            ("queue", STR),
            ("submit_ts", TS),
            ("start_ts", TS),
            ("end_ts", TS),
            ("num_gpus", pa.int32()),
            ("state", STR),
            ("exit_code", pa.int32()),
            ("reason", STR),
        ]
    ),
    "job_attempts": pa.schema(
        [
            ("job_id", STR),
            ("attempt", pa.int32()),
            ("start_ts", TS),
            ("end_ts", TS),
            ("state", STR),
            ("exit_code", pa.int32()),
            ("reason", STR),
            ("nodes", pa.list_(STR)),
        ]
    ),
    "rank_steps": pa.schema(
        [
            ("job_id", STR),
            ("attempt", pa.int32()),
            ("step", pa.int32()),
            ("rank", pa.int32()),
            ("node", STR),
            ("gpu", pa.int16()),
            ("end_ts", TS),
            ("step_s", pa.float64()),
            ("compute_s", pa.float64()),
        ]
    ),
    "checkpoints": pa.schema(
        [
            ("job_id", STR),
            ("attempt", pa.int32()),
            ("step", pa.int32()),
            ("kind", STR),
            ("start_ts", TS),
            ("duration_s", pa.float64()),
        ]
    ),
    "maintenance": pa.schema([("node", STR), ("start_ts", TS), ("end_ts", TS), ("reason", STR)]),
    "ground_truth": pa.schema(
        [
            ("fault_id", STR),
            ("kind", STR),
            ("class", STR),
            ("entity_type", STR),
            ("node", STR),
            ("gpu", pa.int16()),
            ("uuid", STR),
            ("job_id", STR),
            ("rank", pa.int32()),
            ("start_ts", TS),
            ("end_ts", TS),
            ("expected_effect", STR),
        ]
    ),
    "utilisation_truth": TRUTH_SCHEMA,
}
OUTPUT_TABLES: tuple[str, ...] = (*LANDING_TABLES, "ground_truth", "utilisation_truth")
TRUTH_TABLES = ("ground_truth", "utilisation_truth")


@dataclass
class Simulation:
    cfg: SimulationConfig
    fleet: Fleet
    effects: Effects
    faults: list[Fault]
    attempts: list[Attempt]
    state: State
    inference: InferencePlan | None = None


def run(cfg: SimulationConfig) -> Simulation:
    """Plan the fleet, its jobs and faults, schedule every attempt, and build per-minute state."""
    fleet = build_fleet(cfg)
    jobs = build_jobs(cfg, fleet)
    effects, faults = plan_faults(cfg, fleet, jobs)
    attempts = Scheduler(cfg, fleet, jobs, effects).run()
    _attribute_faults(cfg, faults, attempts, effects)
    # After scheduling: the utilisation workloads change what jobs do on their GPUs, never where
    # or when they run.
    plan = plan_inference(cfg, fleet, attempts, effects, faults) if cfg.inference else None
    state = build_state(cfg, fleet, attempts, effects)
    if plan is not None and fleet.mig.any():
        state.util[:, np.repeat(fleet.mig, GPUS_PER_NODE)] = mig_gpu_util(cfg, fleet, plan)
    return Simulation(cfg, fleet, effects, faults, attempts, state, plan)


def _attribute_faults(
    cfg: SimulationConfig, faults: list[Fault], attempts: list[Attempt], effects: Effects
) -> None:
    """Name the job (and rank) a node/GPU fault hit, when one ran there; job faults span the job's attempts."""
    for f in faults:
        if f.entity_type == "job":
            runs = [a for a in attempts if a.job.job_id == f.job_id]
            if runs:
                f.start_s = runs[0].start_s
                f.end_s = cfg.horizon_s if runs[-1].end_s is None else runs[-1].end_s
            continue
        if f.node is None or f.job_id is not None:
            continue
        best: tuple[tuple[float, ...], Attempt] | None = None
        for a in attempts:
            if f.node not in a.nodes:
                continue
            if a.job.kind != "multi" and f.kind in ("thermal_throttle", "nic_links_down"):
                continue
            end = cfg.horizon_s if a.end_s is None else a.end_s
            on_gpu = f.gpu is not None and f.node * GPUS_PER_NODE + f.gpu in a.gpus
            if f.kind in ("xid79_fell_off_bus", "ecc_dbe"):
                # The attempt the fault ended, preferring the one on the faulty GPU.
                strike = f.end_s if f.kind == "ecc_dbe" else f.start_s
                if a.end_s != strike or (f.kind == "ecc_dbe" and not on_gpu):
                    continue
                score: tuple[float, ...] = (float(on_gpu), float(a.job.num_gpus))
            else:
                # The attempt that overlapped the fault the longest.
                if f.gpu is not None and not on_gpu:
                    continue
                overlap = min(end, f.end_s) - max(a.start_s, f.start_s)
                if overlap <= 0:
                    continue
                score = (overlap,)
            if best is None or score > best[0]:
                best = (score, a)
        if best is not None:
            a = best[1]
            f.job_id = a.job.job_id
            if a.job.kind == "multi" and f.gpu is not None:
                f.rank = a.nodes.index(f.node) * GPUS_PER_NODE + f.gpu


def _us(cfg: SimulationConfig, seconds) -> np.ndarray:
    start_us = int(cfg.start.timestamp()) * 1_000_000
    return start_us + np.rint(np.asarray(seconds, dtype=np.float64) * 1e6).astype(np.int64)


def _ts_list(cfg: SimulationConfig, values: Sequence[float | None]) -> pa.Array:
    mask = np.array([v is None for v in values], dtype=bool)
    arr = _us(cfg, [0.0 if v is None else v for v in values])
    return pa.array(arr, type=TS, mask=mask if mask.any() else None)


def _fault_uuid(fleet: Fleet, fault: Fault) -> str | None:
    """The faulted GPU's UUID; None for a fault that names no single GPU."""
    if fault.gpu is None:
        return None
    if fault.node is None:
        raise ValueError(f"fault {fault.fault_id} names GPU {fault.gpu} but no node")
    return fleet.uuids[fault.node * GPUS_PER_NODE + fault.gpu]


# Every table but ground truth carries the record's cluster first (SPEC "Fleet-wide identity").
SCHEMAS: dict[str, pa.Schema] = {
    name: schema
    if "cluster" in schema.names or name in TRUTH_TABLES
    else schema.insert(0, pa.field("cluster", STR))
    for name, schema in _SCHEMAS.items()
}


def _node_clusters(sim: Simulation) -> tuple[pa.Array, pa.Array]:
    """(node names, their cluster names), to label node-keyed chunks."""
    return pa.array(sim.fleet.names, STR), pa.array(
        [sim.cfg.cluster_name(c) for c in sim.fleet.cluster], STR
    )


def _with_cluster(table: pa.Table, clusters: pa.Array) -> pa.Table:
    return table.add_column(0, pa.field("cluster", STR), clusters)


def _by_node(sim: Simulation, table: pa.Table) -> pa.Table:
    """`table` with its rows' node's cluster (an index lookup on the small name list)."""
    names, clusters = _node_clusters(sim)
    index = pc.index_in(table.column("node").cast(STR), value_set=names)
    return _with_cluster(
        table, pc.take(clusters, index).combine_chunks() if table.num_rows else pa.array([], STR)
    )


def record_tables(sim: Simulation) -> dict[str, pa.Table]:
    """The tables that are records, not scrapes: nodes, events, jobs, attempts, maintenance, ground truth."""
    cfg, fleet, eff = sim.cfg, sim.fleet, sim.effects
    out: dict[str, pa.Table] = {}
    out["nodes"] = pa.table(
        {
            "node": fleet.names,
            "cluster": [cfg.cluster_name(c) for c in fleet.cluster],
            "instance_type": [CLUSTERS[c][1] for c in fleet.cluster],
            "gpu_model": [CLUSTERS[c][2] for c in fleet.cluster],
            "gpu_count": pa.array([GPUS_PER_NODE] * fleet.n, pa.int32()),
            "nic_expected": pa.array([CLUSTERS[c][3] for c in fleet.cluster], pa.int32()),
        },
        schema=_SCHEMAS["nodes"],
    )
    xids = sorted((t, n, g, c) for t, n, g, c in eff.xids if t < cfg.horizon_s)
    text = {
        79: "GPU has fallen off the bus.",
        48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 1.",
        94: "Contained: SM (0x1). RST: No, D-RST: No",
    }
    out["gpu_events"] = pa.table(
        {
            "ts": _ts_list(cfg, [t for t, *_ in xids]),
            "node": [fleet.names[n] for _, n, _, _ in xids],
            "gpu": pa.array([g for _, _, g, _ in xids], pa.int16()),
            "uuid": [fleet.uuids[n * GPUS_PER_NODE + g] for _, n, g, _ in xids],
            "kind": ["xid"] * len(xids),
            "code": pa.array([c for *_, c in xids], pa.int32()),
            "message": [
                f"NVRM: Xid (PCI:0000:{0x18 + 0x11 * g:02x}:00): {c}, pid=''<unknown>'', name=<unknown>, {text[c]}"
                for _, _, g, c in xids
            ],
            "source": ["dcgm"] * len(xids),
        },
        schema=_SCHEMAS["gpu_events"],
    )
    maint = sorted(eff.maintenance, key=lambda m: (m[1], m[0]))
    out["maintenance"] = pa.table(
        {
            "node": [fleet.names[n] for n, *_ in maint],
            "start_ts": _ts_list(cfg, [m[1] for m in maint]),
            "end_ts": _ts_list(cfg, [m[2] for m in maint]),
            "reason": [m[3] for m in maint],
        },
        schema=_SCHEMAS["maintenance"],
    )
    atts = sim.attempts
    out["job_attempts"] = pa.table(
        {
            "job_id": [a.job.job_id for a in atts],
            "attempt": pa.array([a.attempt for a in atts], pa.int32()),
            "start_ts": _ts_list(cfg, [a.start_s for a in atts]),
            "end_ts": _ts_list(cfg, [a.end_s for a in atts]),
            "state": [a.state for a in atts],
            "exit_code": pa.array([a.exit_code for a in atts], pa.int32()),
            "reason": [a.reason for a in atts],
            "nodes": [[fleet.names[n] for n in a.nodes] for a in atts],
        },
        schema=_SCHEMAS["job_attempts"],
    )
    by_job: dict[int, list[Attempt]] = {}
    for a in atts:
        by_job.setdefault(a.job.index, []).append(a)
    jobs = [(runs[0], runs[-1]) for _, runs in sorted(by_job.items())]
    out["jobs"] = pa.table(
        {
            "job_id": [f.job.job_id for f, _ in jobs],
            "name": [f.job.name for f, _ in jobs],
            "user": [f.job.user for f, _ in jobs],
            "team": [f.job.team for f, _ in jobs],
            "queue": [f.job.queue for f, _ in jobs],
            "submit_ts": _ts_list(cfg, [f.job.submit_s for f, _ in jobs]),
            "start_ts": _ts_list(cfg, [f.start_s for f, _ in jobs]),
            "end_ts": _ts_list(cfg, [last.end_s for _, last in jobs]),
            "num_gpus": pa.array([f.job.num_gpus for f, _ in jobs], pa.int32()),
            "state": [last.state for _, last in jobs],
            "exit_code": pa.array([last.exit_code for _, last in jobs], pa.int32()),
            "reason": [last.reason for _, last in jobs],
        },
        schema=_SCHEMAS["jobs"],
    )
    plan = sim.inference
    out["gpu_instance_samples"] = (
        _SCHEMAS["gpu_instance_samples"].empty_table()
        if plan is None or not plan.instances
        else instance_samples(cfg, fleet, plan, sim.state.present).cast(
            _SCHEMAS["gpu_instance_samples"]
        )
    )
    out["utilisation_truth"] = (
        TRUTH_SCHEMA.empty_table()
        if plan is None
        else utilisation_truth(cfg, fleet, plan, sim.state.present)
    )
    gt = sim.faults
    out["ground_truth"] = pa.table(
        {
            "fault_id": [f.fault_id for f in gt],
            "kind": [f.kind for f in gt],
            "class": [f.fault_class for f in gt],
            "entity_type": [f.entity_type for f in gt],
            "node": [None if f.node is None else fleet.names[f.node] for f in gt],
            "gpu": pa.array([f.gpu for f in gt], pa.int16()),
            "uuid": [_fault_uuid(fleet, f) for f in gt],
            "job_id": [f.job_id for f in gt],
            "rank": pa.array([f.rank for f in gt], pa.int32()),
            "start_ts": _ts_list(cfg, [f.start_s for f in gt]),
            "end_ts": _ts_list(cfg, [min(f.end_s, cfg.horizon_s) for f in gt]),
            "expected_effect": [f.expected_effect for f in gt],
        },
        schema=SCHEMAS["ground_truth"],
    )
    job_cluster = {a.job.job_id: cfg.cluster_name(a.job.cluster) for a in atts}
    for name, table in out.items():
        if name in (*TRUTH_TABLES, "nodes"):
            continue
        # A MIG instance's `job_id` is a label on its series: the instance takes its node's cluster.
        if "job_id" in table.column_names and name != "gpu_instance_samples":
            labels = pa.array([job_cluster[j] for j in table.column("job_id").to_pylist()], STR)
            out[name] = _with_cluster(table, labels)
        else:
            out[name] = _by_node(sim, table)
    return out


def _step_chunks(sim: Simulation) -> Iterator[tuple[pa.Table, pa.Table]]:
    """(rank_steps, checkpoints) per multi-node attempt, rebuilt from its deterministic timeline."""
    cfg, fleet = sim.cfg, sim.fleet
    for a in sim.attempts:
        if a.job.kind != "multi":
            continue
        tl = step_timeline(
            cfg,
            sim.effects,
            a.job,
            a.attempt,
            a.start_s,
            a.resume_step,
            a.nodes,
            a.restored_step is not None,
        )
        cut = cfg.horizon_s if a.end_s is None else a.end_s
        keep = tl.end_s <= cut if a.end_s is not None else tl.end_s < cut
        k = int(keep.sum())
        R = len(a.nodes) * GPUS_PER_NODE
        rng = np.random.default_rng([cfg.seed, 23, a.job.index, a.attempt])
        ranks = np.tile(np.arange(R), k)
        node_idx = np.array(a.nodes)[ranks // GPUS_PER_NODE]
        jitter = rng.uniform(0, 0.002, k * R)  # ranks leave the collective within ms of each other
        steps = pa.table(
            {
                "job_id": pa.array([a.job.job_id] * (k * R), STR),
                "attempt": pa.array(np.full(k * R, a.attempt, np.int32)),
                "step": pa.array(np.repeat(tl.steps[:k], R).astype(np.int32)),
                "rank": pa.array(ranks.astype(np.int32)),
                "node": pa.DictionaryArray.from_arrays(
                    pa.array(node_idx.astype(np.int32)), pa.array(fleet.names)
                ).cast(STR),
                "gpu": pa.array((ranks % GPUS_PER_NODE).astype(np.int16)),
                "end_ts": pa.array(_us(cfg, np.repeat(tl.end_s[:k], R)), TS),
                "step_s": pa.array(np.round(np.repeat(tl.step_s[:k], R) + jitter, 4)),
                "compute_s": pa.array(np.round(tl.compute_s[:k].reshape(-1), 4)),
            },
            schema=_SCHEMAS["rank_steps"],
        )
        saves = np.flatnonzero(tl.save_s[:k] > 0)
        rows_step = [int(tl.steps[i]) for i in saves]
        rows_kind = ["save"] * len(saves)
        rows_dur = [float(tl.save_s[i]) for i in saves]
        rows_start = [float(tl.end_s[i]) - d for i, d in zip(saves, rows_dur, strict=True)]
        if tl.restore is not None and a.restored_step is not None and tl.restore[0] < cut:
            rows_step.insert(0, a.restored_step)
            rows_kind.insert(0, "restore")
            rows_start.insert(0, tl.restore[0])
            rows_dur.insert(0, round(tl.restore[1], 6))
        ckpt = pa.table(
            {
                "job_id": [a.job.job_id] * len(rows_step),
                "attempt": pa.array([a.attempt] * len(rows_step), pa.int32()),
                "step": pa.array(rows_step, pa.int32()),
                "kind": rows_kind,
                "start_ts": _ts_list(cfg, rows_start),
                "duration_s": pa.array(rows_dur, pa.float64()),
            },
            schema=_SCHEMAS["checkpoints"],
        )
        cluster = cfg.cluster_name(a.job.cluster)
        yield (
            _with_cluster(steps, pa.array([cluster] * steps.num_rows, STR)),
            _with_cluster(ckpt, pa.array([cluster] * ckpt.num_rows, STR)),
        )


def _stream(sim: Simulation, table: str) -> Iterator[pa.Table]:
    chunks = {
        "gpu_samples": gpu_sample_chunks,
        "node_samples": node_sample_chunks,
        "node_conditions": condition_chunks,
    }[table]
    for chunk in chunks(sim.cfg, sim.fleet, sim.state):
        yield _by_node(sim, chunk)


STREAMED = ("node_conditions", "gpu_samples", "node_samples")


def _frame(table: pa.Table) -> pl.DataFrame:
    # `pl.from_arrow` is typed for arrays too; a table always converts to a DataFrame.
    return cast(pl.DataFrame, pl.from_arrow(table))


def _to_polars(tables: list[pa.Table], schema: pa.Schema) -> pl.DataFrame:
    if not tables:
        return _frame(schema.empty_table())
    return _frame(pa.concat_tables([t.cast(schema) for t in tables]))


def simulate(cfg: SimulationConfig) -> dict[str, pl.DataFrame]:
    """Every landing table and `ground_truth`, in memory (use for small fleets)."""
    sim = run(cfg)
    out = {name: _frame(t) for name, t in record_tables(sim).items()}
    for name in STREAMED:
        out[name] = _to_polars(list(_stream(sim, name)), SCHEMAS[name])
    steps, ckpts = [], []
    for s, c in _step_chunks(sim):
        steps.append(s)
        ckpts.append(c)
    out["rank_steps"] = _to_polars(steps, SCHEMAS["rank_steps"])
    out["checkpoints"] = _to_polars(ckpts, SCHEMAS["checkpoints"])
    return {name: out[name] for name in OUTPUT_TABLES}


def _writer(path: Path, table: str) -> pq.ParquetWriter:
    return pq.ParquetWriter(path, SCHEMAS[table], compression="zstd", compression_level=3)


def _write_stream(path: Path, table: str, chunks: Iterator[pa.Table]) -> int:
    """Write dictionary-encoded chunks as they come; returns the row count.

    Without the Arrow schema in the file, readers see the string columns as plain
    strings (VARCHAR), which is what the landing schema says; the dictionaries make
    the write several times faster than materialising the strings first.
    """
    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        for chunk in chunks:
            if writer is None:
                writer = pq.ParquetWriter(
                    path, chunk.schema, compression="zstd", compression_level=3, store_schema=False
                )
            writer.write_table(chunk, row_group_size=1_000_000)
            rows += chunk.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        pq.write_table(SCHEMAS[table].empty_table(), path, compression="zstd")
    return rows


def check_output_folder(out_dir: Path) -> None:
    """Refuse `/` and an existing file as the folder to write into."""
    if out_dir.resolve() == Path("/"):
        raise GpufleetError(
            f"`{out_dir}` is the root folder.", "Pass a folder of its own, e.g. demo-data."
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise GpufleetError(f"`{out_dir}` is a file, not a folder.", "Pass a new or empty folder.")


def simulate_to_dir(cfg: SimulationConfig, out_dir: str | Path) -> dict[str, int]:
    """Write `<table>.parquet` for every landing table plus `ground_truth.parquet`; returns row counts.

    Files are written to a temporary folder (random name) inside `out_dir` and renamed in at
    the end, so a crashed run never leaves a half-written landing file behind, and a link
    planted at a file's name is replaced, never written through.
    """
    out_dir = Path(out_dir)
    check_output_folder(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sim = run(cfg)
    counts: dict[str, int] = {}
    tmp = Path(tempfile.mkdtemp(prefix=".simulate-", dir=out_dir))
    try:
        for name, t in record_tables(sim).items():
            pq.write_table(t, tmp / f"{name}.parquet", compression="zstd")
            counts[name] = t.num_rows
        for name in STREAMED:
            counts[name] = _write_stream(tmp / f"{name}.parquet", name, _stream(sim, name))
        counts["rank_steps"] = counts["checkpoints"] = 0
        with (
            _writer(tmp / "rank_steps.parquet", "rank_steps") as ws,
            _writer(tmp / "checkpoints.parquet", "checkpoints") as wc,
        ):
            pending_steps: list[pa.Table] = []
            pending_ckpts: list[pa.Table] = []
            pending_rows = 0
            for s, c in _step_chunks(sim):
                pending_steps.append(s)
                pending_ckpts.append(c)
                pending_rows += s.num_rows
                counts["rank_steps"] += s.num_rows
                counts["checkpoints"] += c.num_rows
                if pending_rows >= 1_000_000:
                    ws.write_table(pa.concat_tables(pending_steps), row_group_size=1_000_000)
                    wc.write_table(pa.concat_tables(pending_ckpts))
                    pending_steps, pending_ckpts, pending_rows = [], [], 0
            if pending_steps:
                ws.write_table(pa.concat_tables(pending_steps), row_group_size=1_000_000)
                wc.write_table(pa.concat_tables(pending_ckpts))
        for name in OUTPUT_TABLES:
            os.replace(tmp / f"{name}.parquet", out_dir / f"{name}.parquet")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: counts[name] for name in OUTPUT_TABLES}
