"""The query plan: which queries a run sends (one per GPU field, XID, condition and node
metric), the half-open time chunks each is fetched in, and the PromQL of one chunk (a raw
range selector, or the `downsample_s` push-down)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pipelines.sources.prometheus.settings import PrometheusSettings

MAX_POINTS_PER_SERIES = 11_000
"""Prometheus refuses a query whose result has more points than this per series."""

_COUNTER_HINTS = ("_TOTAL", "VIOLATION", "COUNTER", "REMAPPED_ROWS", "_total")


def to_ms(t: datetime) -> int:
    return round(t.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def chunks(start_ms: int, end_ms: int, chunk_ms: int) -> list[tuple[int, int]]:
    """Half-open `[a, b)` chunks covering `[start_ms, end_ms)` exactly, none empty."""
    if chunk_ms <= 0:
        raise ValueError("chunk_ms must be positive")
    out = []
    a = start_ms
    while a < end_ms:
        b = min(a + chunk_ms, end_ms)
        out.append((a, b))
        a = b
    return out


@dataclass(frozen=True)
class Query:
    key: str
    selector: str
    kind: str  # gpu | xid_count | xid_last | condition | unschedulable | node
    name: str = ""  # canonical metric name for node metrics
    sample_sql: str = "value"
    promql: bool = False


def plan_queries(s: PrometheusSettings) -> list[Query]:
    m = f"{{{s.matchers}}}" if s.matchers else ""
    out = [Query(f"gpu:{name}", f"{name}{m}", "gpu") for name in dict.fromkeys(s.gpu_metrics)]
    if s.xid_count_metric:
        out.append(Query("xid:count", f"{s.xid_count_metric}{m}", "xid_count"))
    if s.xid_last_metric:
        out.append(Query("xid:last", f"{s.xid_last_metric}{m}", "xid_last"))
    if s.condition_metric:
        out.append(Query("kube:conditions", s.condition_metric, "condition"))
    if s.unschedulable_metric:
        out.append(Query("kube:unschedulable", s.unschedulable_metric, "unschedulable"))
    for name, spec in s.node_metrics.items():
        if "promql" in spec:
            out.append(Query(f"node:{name}", spec["promql"], "node", name, "value", promql=True))
        else:
            out.append(
                Query(
                    f"node:{name}", spec["selector"], "node", name, spec.get("sample_sql", "value")
                )
            )
    return out


def downsample_function(q: Query, s: PrometheusSettings) -> str:
    metric = q.name or q.selector.split("{")[0]
    if metric in s.downsample_functions:
        return s.downsample_functions[metric]
    if q.kind in ("condition", "unschedulable", "xid_last"):
        return "last"
    if (
        q.kind == "xid_count"
        or any(h in q.selector for h in _COUNTER_HINTS)
        or q.name.endswith("_total")
    ):
        return "max"
    return "avg"


def chunk_ms(s: PrometheusSettings, downsample_s: int | None) -> int:
    """One fetch's length, ms: `chunk_s`, capped so no series exceeds the server's point limit."""
    step = downsample_s or s.scrape_interval_s
    cap_s = MAX_POINTS_PER_SERIES * step
    return int(min(s.chunk_s, cap_s) * 1000)


def chunk_promql(
    q: Query, a_ms: int, b_ms: int, s: PrometheusSettings, downsample_s: int | None
) -> str:
    """The PromQL of `q` for the chunk `[a_ms, b_ms)`, evaluated at `b_ms - 1`."""
    d = b_ms - a_ms
    if q.promql:
        step = int(downsample_s or s.scrape_interval_s)
        return f"({q.selector})[{d}ms:{step}s]"
    if downsample_s:
        step = int(downsample_s)
        return f"{downsample_function(q, s)}_over_time({q.selector}[{step}s])[{d}ms:{step}s]"
    return f"{q.selector}[{d}ms]"
