"""`gpufleet evaluate`: detection quality against the simulator's ground truth.

For each seed: simulate a fleet (`faults="default"` adds the hard cases of
`pipelines.detectors.scenarios`), load it into a scratch DuckDB file, run `gpufleet compute`,
and match every finding to the ground truth:

- a finding matches a fault when it names the same entity (same GPU, or a node-level finding on
  the fault's node; same node; same job and rank) and its time span [start, end or horizon]
  overlaps the fault's [start, end + `MATCH_SLACK_S`] (rates need a window to fall back);
- a finding is a true positive when it matches a fault that is expected to produce its kind, or
  allowed to (an XID 79 GPU also has a telemetry gap; a throttled GPU's rank straggles); any
  other finding is a false positive, including every finding on a negative hard case;
- recall of a kind = faults expecting that kind with a matching finding of it / faults expecting it;
- a straggler episode's bounds: the finding overlapping a rank fault most has its first and last
  step within max(50 steps, 5 % of the fault's length) of the fault's (`bounds` column); steps to
  detect = its `detected_step` minus the fault's first step;
- findings on a negative hard case are counted apart (`on neg`): the target is zero;
- time to detect = the matching finding's `detected_at` (in its evidence) minus the fault's start
  (its end for an ECC fault's double-bit error and XID), floored at 0 (a change point may place an
  onset a few steps early);
- false positives per 1,000 GPU-days = false positives / (GPUs x days of telemetry) x 1,000.
Counts are summed over seeds before dividing (never an average of ratios).
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.config import Settings
from pipelines.contract import LANDING_TABLES
from pipelines.detectors import KIND_CLASSES
from pipelines.detectors.scenarios import NEGATIVE_CASES
from pipelines.sql import execute, query_pl

MATCH_SLACK_S = 3600

# truth kind -> (kinds it must produce (recall), kinds it may also produce (not false positives))
EXPECTATIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "xid79_fell_off_bus": (
        frozenset({"xid"}),
        frozenset({"telemetry_gap", "straggler", "repeat_offender"}),
    ),
    "ecc_dbe": (
        frozenset({"ecc_dbe", "xid", "ecc_sbe_rate"}),
        frozenset({"telemetry_gap", "straggler"}),
    ),
    "thermal_throttle": (
        frozenset({"throttling", "temp_above_peers"}),
        frozenset({"straggler", "repeat_offender"}),
    ),
    "nic_links_down": (frozenset({"nic_links_down"}), frozenset({"straggler", "repeat_offender"})),
    "telemetry_gap": (frozenset({"telemetry_gap"}), frozenset()),
    "condition_flap": (frozenset({"condition_flap"}), frozenset()),
    "flagged_gpu": (frozenset({"xid", "ecc_dbe"}), frozenset({"telemetry_gap", "straggler"})),
    "pcie_replay": (frozenset({"pcie_replay_rate"}), frozenset({"straggler"})),
    "nvlink_errors": (frozenset({"nvlink_error_rate"}), frozenset({"straggler"})),
    "row_remap_failure": (frozenset({"row_remap_failure"}), frozenset()),
    "straggler": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "straggler_midrun": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "two_stragglers": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "straggler_spell": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "stragglers_trade_places": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "straggler_two_spells": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "straggler_sampled": (frozenset({"straggler"}), frozenset({"repeat_offender"})),
    "job_hang": (frozenset({"job_stalled"}), frozenset()),
    "job_hang_no_step_logs": (frozenset({"job_stalled"}), frozenset()),
}
"""Faults not listed (crash_loop, preemption, the negative hard cases) expect no finding."""

TTD_FROM_END: frozenset[tuple[str, str]] = frozenset(
    {("ecc_dbe", "ecc_dbe"), ("ecc_dbe", "xid"), ("flagged_gpu", "ecc_dbe")}
)
"""(fault kind, finding kind) timed from the fault's end: an ECC fault's window starts when the
single-bit rate starts rising; its double-bit error (and XID 48) happens at the end."""

TARGET_PRECISION = 0.95
TARGET_RECALL = 0.95
BOUNDS_STEPS = 50
BOUNDS_SHARE = 0.05
"""A found straggler episode's first and last step must lie within max(50 steps, 5 % of the true
episode's length) of the truth's."""


@dataclass
class KindTally:
    findings: int = 0
    true_positives: int = 0
    truths: int = 0
    detected: int = 0
    ttd_s: list[float] = field(default_factory=list)
    steps_to_detect: list[int] = field(default_factory=list)
    bounds_checked: int = 0
    bounds_ok: int = 0
    on_negatives: int = 0


@dataclass
class SeedRun:
    seed: int
    anomalies: pl.DataFrame
    truth: pl.DataFrame
    gpu_days: float
    horizon: Any


def parse_seeds(text: str) -> list[int]:
    """`1..5` -> [1, 2, 3, 4, 5]; `1,3` -> [1, 3]; `7` -> [7]."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if ".." in part:
            lo, hi = part.split("..", 1)
            seeds.extend(range(int(lo), int(hi) + 1))
        elif part:
            seeds.append(int(part))
    return seeds


def run_seed(
    seed: int,
    *,
    nodes: int,
    days: int,
    faults: str,
    settings: Settings,
    hard_cases: bool = True,
    start: str = "2026-11-23",
) -> SeedRun:
    """Simulate, load into a scratch database, compute, and return findings and ground truth."""
    from pipelines.compute import compute
    from pipelines.detectors.scenarios import inject_hard_cases
    from pipelines.simulate import SimulationConfig, simulate
    from pipelines.store import TableInput, load_batch, open_store

    frames = simulate(
        SimulationConfig.create(nodes=nodes, days=days, seed=seed, start=start, faults=faults)
    )
    if faults != "none" and hard_cases:
        frames = inject_hard_cases(frames, seed)
    truth = truth_steps(frames["ground_truth"], frames["rank_steps"])
    with tempfile.TemporaryDirectory(prefix="gpufleet-eval-") as tmp:
        con = open_store(Path(tmp) / "eval.duckdb")
        try:
            load_batch(
                con,
                [
                    TableInput(t, frames[t].with_row_index("__row", offset=1), f"{t} (seed {seed})")
                    for t in LANDING_TABLES
                ],
                f"evaluate seed {seed}",
            )
            compute(con, settings, force=True)
            anomalies = query_pl(con, "evaluate/findings")
            gpus, first, last = execute(con, "evaluate/gpu_days").fetchall()[0]
            gpus = gpus or 0
        finally:
            con.close()
    days_covered = (last - first).total_seconds() / 86400 if first is not None else 0.0
    return SeedRun(seed, anomalies, truth, gpus * days_covered, last)


def truth_steps(truth: pl.DataFrame, rank_steps: pl.DataFrame) -> pl.DataFrame:
    """Ground truth plus, for rank faults, the first and last logged step of the rank inside the
    fault's [start, end] (a step is inside when it started at or after the start and ended by the end)."""
    ranks = truth.filter(pl.col("entity_type") == "rank").select(
        "fault_id",
        "job_id",
        "rank",
        pl.col("start_ts").alias("t_start"),
        pl.col("end_ts").alias("t_end"),
    )
    slack = dt.timedelta(milliseconds=1)
    started = pl.col("end_ts") - pl.duration(
        microseconds=(pl.col("step_s") * 1e6).round().cast(pl.Int64)
    )
    steps = (
        rank_steps.select("job_id", "rank", "step", "end_ts", "step_s")
        .join(ranks, on=["job_id", "rank"])
        .filter(
            (started >= pl.col("t_start") - slack) & (pl.col("end_ts") <= pl.col("t_end") + slack)
        )
        .group_by("fault_id")
        .agg(
            pl.col("step").min().cast(pl.Int64).alias("first_step"),
            pl.col("step").max().cast(pl.Int64).alias("last_step"),
        )
    )
    return truth.join(steps, on="fault_id", how="left")


def _entity_matches(f: dict[str, Any], t: dict[str, Any]) -> bool:
    kind = t["entity_type"]
    if kind == "gpu":
        return f["node"] == t["node"] and (f["gpu"] is None or f["gpu"] == t["gpu"])
    if kind == "node":
        return f["node"] == t["node"]
    if kind == "rank":
        return (f["job_id"] == t["job_id"] and f["rank"] == t["rank"]) or (
            f["kind"] == "repeat_offender" and f["node"] == t["node"]
        )
    if kind == "job":
        return f["job_id"] is not None and f["job_id"] == t["job_id"]
    return False


def _time_matches(f: dict[str, Any], t: dict[str, Any], horizon: Any) -> bool:
    import datetime as dt

    f_end = f["end_ts"] or horizon
    t_end = (t["end_ts"] or horizon) + dt.timedelta(seconds=MATCH_SLACK_S)
    return f["start_ts"] <= t_end and f_end >= t["start_ts"]


def _detected_at(f: dict[str, Any]) -> Any:
    import datetime as dt

    raw = json.loads(f["evidence"] or "{}").get("detected_at")
    return f["start_ts"] if raw is None else dt.datetime.fromisoformat(raw)


def _steps_of(f: dict[str, Any]) -> tuple[int, int] | None:
    evidence = json.loads(f["evidence"] or "{}")
    if evidence.get("first_step") is None or evidence.get("last_step") is None:
        return None
    return int(evidence["first_step"]), int(evidence["last_step"])


def bounds_match(hits: list[dict[str, Any]], t: dict[str, Any]) -> bool:
    """The finding that overlaps the true episode most has its first and last step within
    max(`BOUNDS_STEPS`, `BOUNDS_SHARE` x the episode's length) of the truth's."""
    first, last = int(t["first_step"]), int(t["last_step"])
    tolerance = max(BOUNDS_STEPS, BOUNDS_SHARE * (last - first + 1))
    spans = [s for s in (_steps_of(f) for f in hits) if s is not None]
    if not spans:
        return False
    best = max(spans, key=lambda s: min(s[1], last) - max(s[0], first))
    return abs(best[0] - first) <= tolerance and abs(best[1] - last) <= tolerance


def tally(runs: list[SeedRun]) -> dict[str, KindTally]:
    tallies: dict[str, KindTally] = {}
    for run in runs:
        findings = run.anomalies.to_dicts()
        truths = run.truth.to_dicts()
        for f in findings:
            t_kind = tallies.setdefault(f["kind"], KindTally())
            t_kind.findings += 1
            explained = any(
                f["kind"]
                in (
                    EXPECTATIONS.get(t["kind"], (frozenset(), frozenset()))[0]
                    | EXPECTATIONS.get(t["kind"], (frozenset(), frozenset()))[1]
                )
                and _entity_matches(f, t)
                and _time_matches(f, t, run.horizon)
                for t in truths
            )
            t_kind.true_positives += int(explained)
            t_kind.on_negatives += int(
                any(
                    t["kind"] in NEGATIVE_CASES
                    and _entity_matches(f, t)
                    and _time_matches(f, t, run.horizon)
                    for t in truths
                )
            )
        for t in truths:
            expected, _ = EXPECTATIONS.get(t["kind"], (frozenset(), frozenset()))
            for kind in expected:
                t_kind = tallies.setdefault(kind, KindTally())
                t_kind.truths += 1
                hits = [
                    f
                    for f in findings
                    if f["kind"] == kind
                    and _entity_matches(f, t)
                    and _time_matches(f, t, run.horizon)
                ]
                if hits:
                    t_kind.detected += 1
                    first = min(_detected_at(f) for f in hits)
                    onset = t["end_ts"] if (t["kind"], kind) in TTD_FROM_END else t["start_ts"]
                    t_kind.ttd_s.append(max(0.0, (first - onset).total_seconds()))
                    if kind == "straggler" and t.get("first_step") is not None:
                        t_kind.bounds_checked += 1
                        t_kind.bounds_ok += int(bounds_match(hits, t))
                        detected = [
                            json.loads(f["evidence"] or "{}").get("detected_step") for f in hits
                        ]
                        if any(d is not None for d in detected):
                            t_kind.steps_to_detect.append(
                                max(
                                    0,
                                    min(d for d in detected if d is not None)
                                    - int(t["first_step"]),
                                )
                            )
    return tallies


def summarise(runs: list[SeedRun]) -> dict[str, dict[str, Any]]:
    """Per kind: precision, recall, median_ttd_s, fp_per_1k_gpu_days, class, and the counts."""
    gpu_days = sum(r.gpu_days for r in runs)
    out: dict[str, dict[str, Any]] = {}
    for kind, t in sorted(tally(runs).items()):
        fp = t.findings - t.true_positives
        out[kind] = {
            "class": KIND_CLASSES.get(kind, "hardware"),
            "precision": None if t.findings == 0 else round(t.true_positives / t.findings, 4),
            "recall": None if t.truths == 0 else round(t.detected / t.truths, 4),
            "median_ttd_s": None if not t.ttd_s else round(statistics.median(t.ttd_s), 1),
            "median_steps_to_detect": None
            if not t.steps_to_detect
            else statistics.median(t.steps_to_detect),
            "fp_per_1k_gpu_days": None if gpu_days == 0 else round(fp / gpu_days * 1000, 3),
            "findings": t.findings,
            "false_positives": fp,
            "faults": t.truths,
            "detected": t.detected,
            "bounds_ok": t.bounds_ok,
            "bounds_checked": t.bounds_checked,
            "on_negatives": t.on_negatives,
        }
    return out


def failures(summary: dict[str, dict[str, Any]], *, fault_free: bool = False) -> list[str]:
    """Targets missed: precision and recall >= 0.95 per kind; no finding at all on a fault-free fleet."""
    missed: list[str] = []
    for kind, row in summary.items():
        if fault_free and row["findings"]:
            missed.append(f"{kind}: {row['findings']} findings on a fault-free fleet")
        if row["precision"] is not None and row["precision"] < TARGET_PRECISION:
            missed.append(f"{kind}: precision {row['precision']}")
        if row["recall"] is not None and row["recall"] < TARGET_RECALL:
            missed.append(f"{kind}: recall {row['recall']}")
        if row.get("bounds_ok", 0) < row.get("bounds_checked", 0):
            missed.append(
                f"{kind}: {row['bounds_checked'] - row['bounds_ok']} episodes with first/last step "
                f"off by more than max({BOUNDS_STEPS}, {BOUNDS_SHARE:.0%} of the length)"
            )
        if row.get("on_negatives", 0):
            missed.append(f"{kind}: {row['on_negatives']} findings on negative cases")
    return missed


def evaluate(
    seeds: list[int],
    *,
    nodes: int,
    days: int,
    faults: str = "default",
    settings: Settings | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, dict[str, Any]], float]:
    """Run every seed; return the per-kind summary and the GPU-days evaluated."""
    runs = []
    for seed in seeds:
        if progress:
            progress(f"seed {seed}")
        runs.append(
            run_seed(seed, nodes=nodes, days=days, faults=faults, settings=settings or Settings())
        )
    return summarise(runs), sum(r.gpu_days for r in runs)


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    def fmt(value: Any, pattern: str) -> str:
        return "-" if value is None else format(value, pattern)

    header = (
        f"{'kind':<20} {'class':<15} {'precision':>9} {'recall':>7} {'median TTD':>11} "
        f"{'FP/1k GPU-d':>11} {'findings':>8} {'faults':>6} {'bounds':>7} {'on neg':>6} {'TTD steps':>9}"
    )
    lines = [header, "-" * len(header)]
    for kind, row in summary.items():
        ttd = row["median_ttd_s"]
        lines.append(
            f"{kind:<20} {row['class']:<15} {fmt(row['precision'], '.3f'):>9} {fmt(row['recall'], '.3f'):>7} "
            f"{'-' if ttd is None else f'{ttd / 60:.1f} min':>11} {fmt(row['fp_per_1k_gpu_days'], '.2f'):>11} "
            f"{row['findings']:>8} {row['faults']:>6} "
            f"{(str(row.get('bounds_ok', 0)) + '/' + str(row.get('bounds_checked', 0))) if row.get('bounds_checked') else '-':>7} "
            f"{row.get('on_negatives', 0):>6} {fmt(row.get('median_steps_to_detect'), '.0f'):>9}"
        )
    return "\n".join(lines)
