"""One run: each query fetched chunk by chunk from its watermark, the answers mapped to
landing rows, the node inventory read, and everything loaded in one transaction."""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import duckdb
import polars as pl

from pipelines.errors import ConfigError, SourceError
from pipelines.sources.pci import normalise_pci_bus_id
from pipelines.sources.prometheus.client import Answer, PrometheusClient
from pipelines.sources.prometheus.landing import Landing
from pipelines.sources.prometheus.load import Stage, read_incomplete, read_watermarks
from pipelines.sources.prometheus.parse import (
    first_int_label,
    first_label,
    parse_matrix,
)
from pipelines.sources.prometheus.plan import (
    Query,
    chunk_ms,
    chunk_promql,
    chunks,
    from_ms,
    plan_queries,
    to_ms,
)
from pipelines.sources.prometheus.settings import PrometheusSettings
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, ensure_schema, load_batch


@dataclass
class QueryReport:
    key: str
    start: datetime
    end: datetime
    samples: int = 0
    series: int = 0


@dataclass(frozen=True)
class PartialChunk:
    """A chunk `[start, end)` of one query the store kept answering only in part."""

    query_key: str
    start: datetime
    end: datetime
    warning: str
    """What the store said (its first `warnings` entry, or `isPartial: true`)."""
    loaded: bool
    """True when what came was loaded and the window recorded as incomplete (--allow-partial)."""


@dataclass
class IngestReport:
    """What one run fetched and loaded; `warnings` are plain sentences for the operator."""

    loads: list[LoadResult] = field(default_factory=list)
    queries: list[QueryReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    partial: list[PartialChunk] = field(default_factory=list)
    """Chunks still partial after the retries: loaded as incomplete, or left for the next run."""
    refilled: int = 0
    """Windows recorded as incomplete by an earlier run that came back complete this run."""
    samples_fetched: int = 0
    requests_made: int = 0
    seconds: float = 0.0
    history: list[tuple[str, int]] = field(default_factory=list)
    """(PromQL, evaluation time in ms) of every query sent."""

    @property
    def partial_refused(self) -> list[PartialChunk]:
        return [p for p in self.partial if not p.loaded]

    @property
    def partial_loaded(self) -> list[PartialChunk]:
        return [p for p in self.partial if p.loaded]


class _Ingest:
    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        client: PrometheusClient,
        settings: PrometheusSettings,
        downsample_s: int | None,
        progress: Callable[[str], None] | None,
        after_chunk: Callable[[int], None] | None,
        allow_partial: bool = False,
        given_cluster: str | None = None,
    ) -> None:
        self.con, self.client, self.s = con, client, settings
        self.allow_partial = allow_partial
        self.given_cluster = given_cluster
        self.notes: dict[str, None] = {}
        self.downsample_s = downsample_s
        self.progress = progress or (lambda _msg: None)
        self.after_chunk = after_chunk
        self.report = IngestReport()
        self.stage = Stage(con)
        self.landing = Landing(con, settings, self.stage)
        self.non_finite = 0
        self.chunks_done = 0

    def ask(self, promql: str, at_ms: int) -> Answer:
        answer = self.client.query(promql, at_ms)
        for note in answer.notes:
            self.notes.setdefault(note)
        return answer

    def fetch(
        self, q: Query, start_ms: int, end_ms: int, qr: QueryReport
    ) -> tuple[int, list[tuple[int, int, str]]]:
        """Fetch and stage `[start_ms, end_ms)` of `q` chunk by chunk.

        Returns (how far the answers were complete or loaded, the chunks that stayed partial).
        Without `allow_partial` the query stops at its first chunk that stays partial: the
        chunks before it are staged, nothing of it or after it is.
        """
        previous: dict[tuple, float] = {}
        seed_partial: str | None = None
        if q.kind in ("xid_count", "xid_last"):
            previous, seed_partial = self.seed_previous(q, start_ms)
        partial: list[tuple[int, int, str]] = []
        for a, b in chunks(start_ms, end_ms, chunk_ms(self.s, self.downsample_s)):
            self.progress(f"{q.key} {from_ms(a):%Y-%m-%d %H:%M}")
            answer = self.ask(chunk_promql(q, a, b, self.s, self.downsample_s), b - 1)
            said = answer.partial[0] if answer.partial else seed_partial
            seed_partial = None  # it spoils the first chunk's events only
            if said is not None:
                partial.append((a, b, said))
                if not self.allow_partial:
                    return a, partial
            chunk, non_finite = parse_matrix(answer.result, a, b)
            del answer
            self.non_finite += non_finite
            qr.series += len(chunk.labels)
            qr.samples += chunk.samples
            self.report.samples_fetched += chunk.samples
            if said is None or q.kind == "gpu":
                # Of a partial answer only raw GPU samples land: every sample that came is
                # exact. Conditions (one-hot series), node metrics (summed over series) and
                # XID events (changes) would be wrong with a series missing; they land when
                # the window is re-fetched complete.
                self.landing.land(q, chunk, previous)
            elif q.kind in ("xid_count", "xid_last") and b < end_ms:
                # The next chunk's XID changes must not be read against a state this one left out.
                previous, seed_partial = self.seed_previous(q, b)
            self.chunks_done += 1
            if self.after_chunk is not None:
                self.after_chunk(self.chunks_done)
        return end_ms, partial

    def seed_previous(self, q: Query, start_ms: int) -> tuple[dict[tuple, float], str | None]:
        lookback = int(self.s.xid_seed_lookback_s)
        answer = self.ask(f"last_over_time({q.selector}[{lookback}s])", start_ms - 1)
        seeded = {}
        for series in answer.result:
            key = self.landing.xid_key(series["metric"])
            if key is not None:
                seeded[key] = float(series["value"][1])
        return seeded, (answer.partial[0] if answer.partial else None)

    def record_partial(self, q: Query, partial: list[tuple[int, int, str]]) -> None:
        for a, b, said in partial:
            self.report.partial.append(
                PartialChunk(q.key, from_ms(a), from_ms(b), said, self.allow_partial)
            )

    # -------------------------------------------------------------- node inventory

    def inventory_answer(self, promql: str, at_ms: int) -> list[dict[str, Any]]:
        answer = self.ask(promql, at_ms)
        if answer.partial:
            raise _PartialInventory(answer.partial[0])
        return answer.result

    def inventory(
        self, end_ms: int, window_ms: int
    ) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        """(nodes, gpu_devices) as of `end_ms`, from kube-state-metrics and dcgm-exporter labels.

        A partial answer is never used (a node or GPU missing from it would change the counts):
        then both are None, and the partial chunk is recorded under the key `inventory`.
        """
        try:
            return self._inventory(end_ms, window_ms)
        except _PartialInventory as e:
            self.report.partial.append(
                PartialChunk(
                    "inventory", from_ms(end_ms - window_ms), from_ms(end_ms), e.warning, False
                )
            )
            return None, None

    def _inventory(
        self, end_ms: int, window_ms: int
    ) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        s = self.s
        lookback = f"{max(1, min(window_ms, s.inventory_lookback_s * 1000))}ms"
        at = end_ms - 1
        kube: dict[str, dict[str, str]] = defaultdict(dict)
        for metric in ("kube_node_info", "kube_node_labels"):
            for series in self.inventory_answer(f"last_over_time({metric}[{lookback}])", at):
                labels = series["metric"]
                if labels.get("node"):
                    kube[labels["node"]].update({k: v for k, v in labels.items() if v})
        capacity = {}
        for series in self.inventory_answer(
            f'last_over_time(kube_node_status_capacity{{resource="nvidia_com_gpu"}}[{lookback}])',
            at,
        ):
            value = float(series["value"][1])
            if series["metric"].get("node") and math.isfinite(value):
                capacity[series["metric"]["node"]] = int(value)
        gpus: dict[str, dict[int, tuple]] = defaultdict(dict)
        series_cluster: dict[str, str] = {}  # a node's cluster as its DCGM series' label says
        if s.gpu_metrics:
            names = "|".join(re.escape(name) for name in s.gpu_metrics)
            probe = f'{{__name__=~"{names}"{"," + s.matchers if s.matchers else ""}}}'
            by = ", ".join(
                dict.fromkeys(
                    [
                        *s.node_labels,
                        "gpu",
                        "UUID",
                        "uuid",
                        "pci_bus_id",
                        "modelName",
                        "GPU_I_ID",
                        s.cluster_label,
                    ]
                )
            )
            query = f"group by ({by}) (last_over_time({probe}[{lookback}]))"
            for series in self.inventory_answer(query, at):
                labels = series["metric"]
                ident = self.landing.gpu_identity(labels, count=False)
                if ident is None:
                    continue
                node, gpu, uuid = ident
                if labels.get(s.cluster_label):
                    series_cluster.setdefault(node, labels[s.cluster_label])
                gpus[node][gpu] = (
                    uuid,
                    normalise_pci_bus_id(labels.get("pci_bus_id", "")),
                    labels.get("modelName"),
                )
        nodes_rows = []
        for node in sorted(set(kube) | set(gpus)):
            labels = kube.get(node, {})
            count = first_int_label(labels, s.gpu_count_labels)
            if count is None:
                count = capacity.get(node)
            if count is None and node in gpus:
                count = len(gpus[node])
            if count is None:
                self.report.warnings.append(
                    f"Node `{node}` has no GPU count (label {', '.join(s.gpu_count_labels)}, GPU capacity "
                    "or DCGM series); it was left out of `nodes`."
                )
                continue
            models = [m for _, _, m in gpus.get(node, {}).values() if m]
            model = models[0] if models else first_label(labels, s.gpu_model_labels)
            instance_type = first_label(labels, s.instance_type_labels)
            nic = first_int_label(labels, [s.nic_expected_label]) if s.nic_expected_label else None
            if nic is None and instance_type in s.nic_expected_by_instance_type:
                nic = int(s.nic_expected_by_instance_type[instance_type])
            nodes_rows.append(
                {
                    "node": node,
                    # No label: NULL, so the loader takes the cluster the node's other series name
                    # (or its stored one); `prometheus.cluster` set to a name is the last resort.
                    "cluster": (
                        labels.get(s.cluster_label)
                        or series_cluster.get(node)
                        or self.given_cluster
                        or (s.cluster if s.cluster != "default" else None)
                    ),
                    "instance_type": instance_type,
                    "gpu_model": model,
                    "gpu_count": count,
                    "nic_expected": nic,
                }
            )
        nodes = pl.DataFrame(
            nodes_rows,
            schema={
                "node": pl.String,
                "cluster": pl.String,
                "instance_type": pl.String,
                "gpu_model": pl.String,
                "gpu_count": pl.Int64,
                "nic_expected": pl.Int64,
            },
        )
        devices = pl.DataFrame(
            [
                {"node": n, "gpu": g, "uuid": u, "pci_bus_id": p}
                for n, per_gpu in gpus.items()
                for g, (u, p, _m) in per_gpu.items()
            ],
            schema={"node": pl.String, "gpu": pl.Int64, "uuid": pl.String, "pci_bus_id": pl.String},
        )
        return (nodes if not nodes.is_empty() else None), (
            devices if not devices.is_empty() else None
        )


class _PartialInventory(Exception):
    def __init__(self, warning: str) -> None:
        super().__init__(warning)
        self.warning = warning


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
    began = time.perf_counter()
    client = PrometheusClient(url, settings, insecure=insecure, env=env)
    source = f"prometheus:{client.shown_url}" + (
        f":downsample={downsample_s}s" if downsample_s else ""
    )
    ensure_schema(con)
    marks = {} if full else read_watermarks(con, source)
    incomplete = read_incomplete(con, source)
    run = _Ingest(
        con, client, settings, downsample_s, progress, after_chunk, allow_partial, cluster
    )
    if insecure and urlsplit(url).scheme == "https":
        run.report.warnings.append(
            f"The TLS certificate of {client.shown_url} was not verified (--insecure)."
        )
    start_ms, end_ms = to_ms(start), to_ms(end)
    new_marks: dict[str, datetime] = {}
    empty_gpu_metrics: list[str] = []
    # (query key, start) of recorded windows to delete / to (re)record as incomplete.
    refilled: list[tuple[str, datetime]] = []
    still_incomplete: list[tuple[str, datetime, datetime, str]] = []
    try:
        for q in plan_queries(settings):
            for a, b in incomplete.get(q.key, []):
                redo = QueryReport(q.key, a, b)
                run.report.queries.append(redo)
                reached, partial = run.fetch(q, to_ms(a), to_ms(b), redo)
                run.record_partial(q, partial)
                if partial:
                    still_incomplete.extend((q.key, a, b, p[2]) for p in partial[:1])
                else:
                    refilled.append((q.key, a))
                del reached
            mark = marks.get(q.key)
            q_start = max(start_ms, to_ms(mark)) if mark is not None else start_ms
            if q_start >= end_ms:
                continue
            qr = QueryReport(q.key, from_ms(q_start), end)
            run.report.queries.append(qr)
            reached, partial = run.fetch(q, q_start, end_ms, qr)
            run.record_partial(q, partial)
            if run.allow_partial:
                still_incomplete.extend(
                    (q.key, from_ms(a), from_ms(b), said) for a, b, said in partial
                )
            if reached > q_start:
                new_marks[q.key] = from_ms(reached)
            if partial:
                continue
            if qr.samples == 0 and q.kind == "gpu":
                empty_gpu_metrics.append(q.selector.split("{")[0])
            elif qr.samples == 0 and q.kind in ("node", "condition"):
                run.report.warnings.append(_empty_warning(q))
        if empty_gpu_metrics:
            run.report.warnings.append(
                f"No series in the window for {', '.join(f'`{m}`' for m in empty_gpu_metrics)}: if the GPUs "
                "have these fields, enable them in dcgm-exporter's counters file (docs/sources.md)."
            )
        nodes, devices = run.inventory(end_ms, end_ms - start_ms)
        report = run.report
        report.refilled = len(refilled)
        if run.notes:
            report.warnings.extend(f"The store said: {note}" for note in run.notes)
        if run.non_finite:
            report.warnings.append(
                f"{run.non_finite:,} samples were not finite numbers (+Inf, -Inf, NaN) and were skipped "
                "(they count as missing telemetry)."
            )
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
        if run.landing.unnamed_series:
            report.warnings.append(
                f"{run.landing.unnamed_series} series had no node or GPU label "
                f"(looked for {', '.join(settings.node_labels)}) and were skipped."
            )
        items = run.stage.inputs(f"prometheus {client.shown_url}")
        if nodes is not None:
            items.append(
                TableInput(
                    "nodes",
                    nodes.with_row_index(ROW_COLUMN, offset=1),
                    f"prometheus {client.shown_url}",
                )
            )

        def bookkeeping(c: duckdb.DuckDBPyConnection) -> None:
            for key, a in refilled:
                c.execute(
                    "DELETE FROM ingest_incomplete WHERE source = $source AND query_key = $key AND start_ts = $a",
                    {"source": source, "key": key, "a": a},
                )
            for key, a, b, said in still_incomplete:
                c.execute(
                    "DELETE FROM ingest_incomplete WHERE source = $source AND query_key = $key AND start_ts = $a",
                    {"source": source, "key": key, "a": a},
                )
                c.execute(
                    "INSERT INTO ingest_incomplete VALUES ($source, $key, $a, $b, $said, now())",
                    {"source": source, "key": key, "a": a, "b": b, "said": said},
                )
            if report.partial:
                # Kept with the load_log batch this transaction adds (the same id).
                c.execute(
                    "INSERT INTO ingest_partial_log SELECT coalesce(max(batch_id), 0) + 1, $source, $partial, "
                    "$loaded, $said FROM load_log",
                    {
                        "source": source,
                        "partial": len(report.partial),
                        "loaded": len(report.partial_loaded),
                        "said": report.partial[0].warning,
                    },
                )
            for key, mark in new_marks.items():
                c.execute(
                    "DELETE FROM ingest_watermarks WHERE source = $source AND query_key = $key",
                    {"source": source, "key": key},
                )
                c.execute(
                    "INSERT INTO ingest_watermarks VALUES ($source, $key, $mark)",
                    {"source": source, "key": key, "mark": mark},
                )
            if devices is not None:
                c.register("__devices", devices)
                try:
                    c.execute(
                        "DELETE FROM gpu_devices d WHERE EXISTS "
                        "(SELECT 1 FROM __devices n WHERE n.node = d.node AND n.gpu = d.gpu)"
                    )
                    c.execute(
                        "INSERT INTO gpu_devices SELECT node, gpu, uuid, pci_bus_id, $seen FROM __devices",
                        {"seen": end},
                    )
                finally:
                    c.unregister("__devices")

        report.loads = load_batch(
            con, items, source=source, in_transaction=bookkeeping, cluster=cluster
        )
        report.requests_made = client.requests_made
        report.history = client.history
        report.seconds = time.perf_counter() - began
        return report
    finally:
        run.stage.drop()
        client.close()


def partial_summary(report: IngestReport) -> tuple[str, str]:
    """(title, hint) of the one message that ends a run with partial answers."""
    said = report.partial[0].warning
    keys = list(dict.fromkeys(p.query_key for p in report.partial))
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    refused, loaded = report.partial_refused, report.partial_loaded
    parts = []
    if loaded:
        parts.append(
            f"{len(loaded):,} {_were(len(loaded))} loaded as incomplete (--allow-partial) and will be "
            "fetched again"
        )
    if refused:
        parts.append(
            f"{len(refused):,} {_were(len(refused))} not loaded and will be fetched again by the next run"
        )
    title = (
        f"The store answered {count(len(report.partial), 'chunk')} only in part after the retries ({shown}): "
        f'it said "{said}". {"; ".join(parts)}.'
    )
    if refused:
        hint = (
            "Everything else was loaded. Run again when the store is healthy (the next run fetches those "
            "windows), or pass --allow-partial to load what it answers and fill it later."
        )
    else:
        hint = "The dashboard's data status and the report list the incomplete windows until a run fills them."
    return title, hint


def count(n: int, noun: str) -> str:
    """`1 chunk`, `2 chunks`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def _empty_warning(q: Query) -> str:
    name = q.name or q.selector
    if q.kind == "node":
        return f"No samples for node metric `{name}` (`{q.selector}`): set `prometheus.node_metrics.{name}`."
    return f"No `{name}` series in the window: is kube-state-metrics scraped?"
