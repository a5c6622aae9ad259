"""Prometheus source: dcgm-exporter, kube-state-metrics and node-exporter series from any
Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics).

Raw samples, not evaluations: every query is a range selector `selector[<d>ms]` evaluated
once at the end of a time chunk through the instant query API (as prometheus-api-client's
`get_metric_range_data` does). `query_range` would evaluate at each step and fill a
telemetry gap with the last sample for up to the lookback delta, hiding the very gaps that
make a node `unknown`.

Time chunks are half-open `[a, b)`: the selector is evaluated at `b - 1 ms` over `b - a`
and samples outside `[a, b)` are dropped, which is exact whether the server treats range
selectors as left-open (Prometheus 3) or closed (Prometheus 2). A stored watermark per
query (table `ingest_watermarks`) is the end of the last chunk loaded, so a re-run fetches
only what is new. A run is one transaction: fetched chunks are staged in temporary tables
and loaded, with the new watermarks, all at once or not at all.

A partial answer (API `warnings` from Thanos, Mimir or Cortex when a store is down,
VictoriaMetrics' `"isPartial": true`) is never loaded as complete: it is retried, and if it
stays partial its query stops there (the watermark stays at the chunk's start), or, with
`allow_partial`, what came is loaded and the window recorded in `ingest_incomplete` until a
later run gets it complete. Non-finite samples are skipped and counted.

`downsample_s` is the explicit push-down for fleets whose raw samples do not fit one
machine: each selector becomes a subquery `<fn>_over_time(selector[step])[d:step]`
(`max` for counters, `avg` for gauges, `last` for states), computed by the server.

The package, in the order of the data: `settings` (the `[prometheus]` section), `plan` (queries,
chunks, PromQL), `client` (HTTP, retries, partial answers), `parse` (answers to columns, labels
to nodes, GPUs and jobs), `landing` (series to landing rows), `stage` (staging, spilled to disk
past a size), `fetch` (one query's window chunk by chunk, partial chunks stopped at or kept),
`inventory` (nodes and GPU devices), `bookkeeping` (watermarks and incomplete windows),
`report` (what a run reports), `ingest` (one run) and `PrometheusSource` below (the `Source`
the CLI runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

import duckdb

from pipelines.sources.prometheus.bookkeeping import read_incomplete, read_watermarks
from pipelines.sources.prometheus.client import (
    Answer,
    PrometheusClient,
    read_credentials,
    redact_url,
)
from pipelines.sources.prometheus.ingest import ingest_prometheus
from pipelines.sources.prometheus.parse import (
    Chunk,
    job_of_labels,
    mig_instance,
    node_of,
    parse_matrix,
)
from pipelines.sources.prometheus.plan import MAX_POINTS_PER_SERIES, chunks
from pipelines.sources.prometheus.report import (
    IngestReport,
    PartialChunk,
    QueryReport,
    count,
    partial_summary,
)
from pipelines.sources.prometheus.settings import (
    DEFAULT_GPU_METRICS,
    DEFAULT_NODE_METRICS,
    PrometheusSettings,
)
from pipelines.sources.prometheus.stage import Stage
from pipelines.sources.protocol import Source, SourceReport

__all__ = [
    "DEFAULT_GPU_METRICS",
    "DEFAULT_NODE_METRICS",
    "MAX_POINTS_PER_SERIES",
    "Answer",
    "Chunk",
    "IngestReport",
    "PartialChunk",
    "PrometheusClient",
    "PrometheusSettings",
    "PrometheusSource",
    "QueryReport",
    "Stage",
    "chunks",
    "count",
    "ingest_prometheus",
    "job_of_labels",
    "mig_instance",
    "node_of",
    "parse_matrix",
    "partial_summary",
    "read_credentials",
    "read_incomplete",
    "read_watermarks",
    "redact_url",
]


@dataclass(frozen=True)
class PrometheusSource(Source):
    """`gpufleet ingest prometheus`: the window `[start, end)` of a Prometheus-compatible API,
    from each query's watermark on (see `ingest_prometheus`)."""

    url: str
    start: datetime
    end: datetime
    settings: PrometheusSettings = field(default_factory=PrometheusSettings)
    insecure: bool = False
    downsample_s: int | None = None
    full: bool = False
    allow_partial: bool = False
    env: dict[str, str] | None = None
    progress: Callable[[str], None] | None = None
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "prometheus"
    reads: ClassVar[str] = (
        "a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics)"
    )
    tables: ClassVar[tuple[str, ...]] = (
        "gpu_samples",
        "gpu_instance_samples",
        "gpu_events",
        "node_conditions",
        "node_samples",
        "nodes",
    )
    settings_section: ClassVar[str | None] = "prometheus"

    @property
    def source_id(self) -> str:
        # As `ingest_prometheus` names its run: the URL without credentials, and the push-down step.
        downsample = f":downsample={self.downsample_s}s" if self.downsample_s else ""
        return f"prometheus:{redact_url(self.url)}{downsample}"

    def watermark(self, con: duckdb.DuckDBPyConnection) -> datetime | None:
        try:
            marks = read_watermarks(con, self.source_id)
        except duckdb.CatalogException:  # no ingest has created the bookkeeping tables yet
            return None
        return min(marks.values()) if marks else None

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        report = ingest_prometheus(
            con,
            self.url,
            self.start,
            self.end,
            self.settings,
            insecure=self.insecure,
            downsample_s=self.downsample_s,
            full=self.full,
            allow_partial=self.allow_partial,
            env=self.env,
            progress=self.progress,
            cluster=self.cluster,
        )
        return SourceReport(
            self.source_id, report.loads, warnings=list(report.warnings), detail=report
        )
