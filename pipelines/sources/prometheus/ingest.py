"""One run: each query fetched from its watermark (windows left incomplete by earlier runs
first), the node inventory read, and everything loaded, with the bookkeeping, in one
transaction."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import duckdb

from pipelines.errors import ConfigError, SourceError
from pipelines.sources.prometheus.bookkeeping import (
    Bookkeeping,
    read_incomplete,
    read_watermarks,
)
from pipelines.sources.prometheus.client import PrometheusClient
from pipelines.sources.prometheus.fetch import Fetcher
from pipelines.sources.prometheus.inventory import read_inventory, write_devices
from pipelines.sources.prometheus.landing import Landing
from pipelines.sources.prometheus.plan import Query, from_ms, plan_queries, to_ms
from pipelines.sources.prometheus.report import IngestReport, QueryReport
from pipelines.sources.prometheus.settings import PrometheusSettings
from pipelines.sources.prometheus.stage import Stage
from pipelines.store import ROW_COLUMN, TableInput, ensure_schema, load_batch


def ingest_prometheus(
    con: duckdb.DuckDBPyConnection,
    url: str,
    start: datetime,
    end: datetime,
    settings: PrometheusSettings | None = None,
    *,
    insecure: bool = False,
    downsample_s: int | None = None,
    full: bool = False,
    allow_partial: bool = False,
    env: dict[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    after_chunk: Callable[[int], None] | None = None,
    cluster: str | None = None,
) -> IngestReport:
    """Fetch `[start, end)` (from each query's watermark on, unless `full`) and load it.

    One transaction: the data and the new watermarks commit together, or nothing does.
    Windows recorded as incomplete by earlier runs are fetched again first.
    A chunk the store keeps answering only in part (`report.partial`) is, without
    `allow_partial`, not loaded: its query's watermark stays at the chunk's start (the other
    queries load). With `allow_partial` what came is loaded and the window recorded in
    `ingest_incomplete` until a later run gets it complete.
    `after_chunk(n)` is called after the n-th chunk is fetched (progress, tests).
    Raises `SourceError` when the server fails or returns nothing at all.
    """
    settings = settings or PrometheusSettings()
    end = _settled_end(start, end, downsample_s, settings)
    began = time.perf_counter()
    client = PrometheusClient(url, settings, insecure=insecure, env=env)
    source = f"prometheus:{client.shown_url}" + (
        f":downsample={downsample_s}s" if downsample_s else ""
    )
    ensure_schema(con)
    marks = {} if full else read_watermarks(con, source)
    incomplete = read_incomplete(con, source)
    report = IngestReport()
    stage = Stage(con, cluster)
    landing = Landing(con, settings, stage)
    fetcher = Fetcher(
        client,
        settings,
        landing,
        report,
        downsample_s=downsample_s,
        allow_partial=allow_partial,
        progress=progress,
        after_chunk=after_chunk,
    )
    book = Bookkeeping(source)
    if insecure and urlsplit(url).scheme == "https":
        report.warnings.append(
            f"The TLS certificate of {client.shown_url} was not verified (--insecure)."
        )
    start_ms, end_ms = to_ms(start), to_ms(end)
    empty_gpu_metrics: list[str] = []
    try:
        for q in plan_queries(settings):
            for a, b in incomplete.get(q.key, []):
                redo = QueryReport(q.key, a, b)
                report.queries.append(redo)
                _reached, partial = fetcher.fetch(q, to_ms(a), to_ms(b), redo)
                book.refetched(q.key, a, b, partial)
            mark = marks.get(q.key)
            q_start = max(start_ms, to_ms(mark)) if mark is not None else start_ms
            if q_start >= end_ms:
                continue
            qr = QueryReport(q.key, from_ms(q_start), end)
            report.queries.append(qr)
            reached, partial = fetcher.fetch(q, q_start, end_ms, qr)
            book.fetched(q.key, q_start, reached, partial, allow_partial)
            if partial:
                continue
            if qr.samples == 0 and q.kind == "gpu":
                empty_gpu_metrics.append(q.selector.split("{")[0])
            elif qr.samples == 0 and q.kind in ("node", "condition"):
                report.warnings.append(_empty_warning(q))
        if empty_gpu_metrics:
            report.warnings.append(
                f"No series in the window for {', '.join(f'`{m}`' for m in empty_gpu_metrics)}: if the GPUs "
                "have these fields, enable them in dcgm-exporter's counters file (docs/sources.md)."
            )
        nodes, devices = read_inventory(
            fetcher.ask, settings, landing, report, end_ms, end_ms - start_ms, cluster
        )
        report.refilled = len(book.refilled)
        report.warnings.extend(fetcher.warnings())
        if report.queries and report.samples_fetched == 0 and nodes is None and not report.partial:
            raise SourceError(
                f"Prometheus at {client.shown_url} returned no samples between "
                f"{start:%Y-%m-%dT%H:%M:%SZ} and {end:%Y-%m-%dT%H:%M:%SZ}.",
                "Check the time range and that dcgm-exporter and kube-state-metrics are scraped "
                "(or set `prometheus.matchers`).",
            )
        if nodes is None:
            report.warnings.append(
                "No kube-state-metrics node series (kube_node_info, kube_node_labels) and no DCGM GPUs: "
                "the `nodes` table was not updated."
            )
        if landing.unnamed_series:
            report.warnings.append(
                f"{landing.unnamed_series} series had no node or GPU label "
                f"(looked for {', '.join(settings.node_labels)}) and were skipped."
            )
        items = stage.inputs(f"prometheus {client.shown_url}")
        if nodes is not None:
            items.append(
                TableInput(
                    "nodes",
                    nodes.with_row_index(ROW_COLUMN, offset=1),
                    f"prometheus {client.shown_url}",
                )
            )

        def in_transaction(c: duckdb.DuckDBPyConnection) -> None:
            book.write(c, report)
            if devices is not None:
                write_devices(c, devices, seen=end)

        report.loads = load_batch(
            con, items, source=source, in_transaction=in_transaction, cluster=cluster
        )
        report.requests_made = client.requests_made
        report.history = client.history
        report.seconds = time.perf_counter() - began
        return report
    finally:
        stage.drop()
        client.close()


def _settled_end(
    start: datetime, end: datetime, downsample_s: int | None, settings: PrometheusSettings
) -> datetime:
    """`end`, or the settled time (`prometheus.settle_s` before now) if that is earlier;
    a `ConfigError` for a window that is empty or not settled yet."""
    if end <= start:
        raise ConfigError(
            f"The end ({end:%Y-%m-%dT%H:%M:%SZ}) is not after the start ({start:%Y-%m-%dT%H:%M:%SZ}).",
            "Pass --start before --end.",
        )
    if downsample_s is not None and downsample_s <= 0:
        raise ConfigError("--downsample must be a positive number of seconds.")
    settled = datetime.now(UTC) - timedelta(seconds=settings.settle_s)
    if end > settled:
        end = settled
        if end <= start:
            raise ConfigError(
                f"The window ends within `prometheus.settle_s` ({settings.settle_s} s) of now: nothing is settled yet.",
                "Pass an earlier --start, or wait.",
            )
    return end


def _empty_warning(q: Query) -> str:
    name = q.name or q.selector
    if q.kind == "node":
        return f"No samples for node metric `{name}` (`{q.selector}`): set `prometheus.node_metrics.{name}`."
    return f"No `{name}` series in the window: is kube-state-metrics scraped?"
