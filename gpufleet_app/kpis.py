"""The KPI row: which weekly_summary columns, how each reads, which direction is better."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpufleet_app import fmt


@dataclass(frozen=True)
class Kpi:
    column: str
    label: str
    value: Callable[[float | None], str]
    change: Callable[[float | None, float | None], str | None]
    higher_is_better: bool
    help: str


KPIS: tuple[Kpi, ...] = (
    Kpi(
        "node_availability",
        "Node availability",
        fmt.pct,
        fmt.delta_pp,
        True,
        "(available + degraded) / (in fleet − maintenance). Unknown counts as down (fail closed).",
    ),
    Kpi(
        "job_success_rate",
        "Job success rate",
        fmt.pct,
        fmt.delta_pp,
        True,
        "Succeeded / (succeeded + failed + node_fail + timeout + oom), jobs that ended this week.",
    ),
    Kpi(
        "job_success_rate_gpu_h",
        "Job success (GPU-h weighted)",
        fmt.pct,
        fmt.delta_pp,
        True,
        "The same success rate with each job weighted by its GPU-hours.",
    ),
    Kpi(
        "goodput",
        "Goodput",
        fmt.pct,
        fmt.delta_pp,
        True,
        "Productive GPU-hours / allocated GPU-hours (work kept, net of init, checkpoints, lost work).",
    ),
    Kpi(
        "ettr",
        "ETTR",
        fmt.pct,
        fmt.delta_pp,
        True,
        "Effective training time ratio: productive time / (job end − submit), queueing included.",
    ),
    Kpi(
        "mtbf_h",
        "MTBF",
        fmt.hours,
        lambda c, p: fmt.delta(c, p, "h"),
        True,
        "Mean time between failures: node up-time / transitions from up to unavailable or unknown.",
    ),
    Kpi(
        "mttr_h",
        "MTTR",
        fmt.hours,
        lambda c, p: fmt.delta(c, p, "h"),
        False,
        "Mean time to repair: mean length of merged unavailable/unknown episodes.",
    ),
    Kpi(
        "interruptions_per_1k_gpu_days",
        "Interruptions / 1,000 GPU-days",
        fmt.number,
        lambda c, p: fmt.delta(c, p),
        False,
        "Attempts that ended failed, node_fail, timeout, oom or preempted, per 1,000 GPU-days allocated.",
    ),
)

ESCAPE_KPIS: tuple[Kpi, ...] = (
    Kpi(
        "escape_rate",
        "Escape rate",
        fmt.pct,
        fmt.delta_pp,
        False,
        "Fleet failures (hardware or infrastructure, failed or node_fail) that no finding or bad "
        "condition saw coming / all fleet failures that ended this week.",
    ),
    Kpi(
        "jobs_placed_on_flagged",
        "Jobs placed on flagged nodes",
        lambda v: fmt.number(v, 0),
        lambda c, p: fmt.delta(c, p, digits=0),
        False,
        "Jobs whose failed attempt started on a node with a finding or bad condition already open: "
        "remediation came too late.",
    ),
    Kpi(
        "median_lead_time_s",
        "Median lead time",
        fmt.duration_s,
        lambda c, p: fmt.delta(
            None if c is None else c / 60, None if p is None else p / 60, " min"
        ),
        True,
        "Median time from the first signal to the failure, over the fleet failures the checks saw coming.",
    ),
)
"""The overview's Escapes section: weekly_summary columns from failure_escapes."""
