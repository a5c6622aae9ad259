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
    Kpi("node_availability", "Node availability", fmt.pct, fmt.delta_pp, True,
        "(available + degraded) / (in fleet − maintenance). Unknown counts as down (fail closed)."),
    Kpi("job_success_rate", "Job success rate", fmt.pct, fmt.delta_pp, True,
        "Succeeded / (succeeded + failed + node_fail + timeout + oom), jobs that ended this week."),
    Kpi("job_success_rate_gpu_h", "Job success (GPU-h weighted)", fmt.pct, fmt.delta_pp, True,
        "The same success rate with each job weighted by its GPU-hours."),
    Kpi("goodput", "Goodput", fmt.pct, fmt.delta_pp, True,
        "Productive GPU-hours / allocated GPU-hours (work kept, net of init, checkpoints, lost work)."),
    Kpi("ettr", "ETTR", fmt.pct, fmt.delta_pp, True,
        "Effective training time ratio: productive time / (job end − submit), queueing included."),
    Kpi("mtbf_h", "MTBF", fmt.hours, lambda c, p: fmt.delta(c, p, "h"), True,
        "Mean time between failures: node up-time / transitions from up to unavailable or unknown."),
    Kpi("mttr_h", "MTTR", fmt.hours, lambda c, p: fmt.delta(c, p, "h"), False,
        "Mean time to repair: mean length of merged unavailable/unknown episodes."),
    Kpi("interruptions_per_1k_gpu_days", "Interruptions / 1,000 GPU-days", fmt.number,
        lambda c, p: fmt.delta(c, p), False,
        "Attempts that ended failed, node_fail, timeout, oom or preempted, per 1,000 GPU-days allocated."),
)
