"""The node inventory as of a run's end: `nodes` from kube-state-metrics labels and GPU
capacity, `gpu_devices` from the labels of dcgm-exporter series.

A partial answer is never used (a node or GPU missing from it would change the counts): then
neither table is updated, and the partial chunk is recorded under the key `inventory`."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from pipelines.sources.pci import normalise_pci_bus_id
from pipelines.sources.prometheus.client import Answer
from pipelines.sources.prometheus.landing import Landing
from pipelines.sources.prometheus.parse import first_int_label, first_label
from pipelines.sources.prometheus.plan import from_ms
from pipelines.sources.prometheus.report import IngestReport, PartialChunk
from pipelines.sources.prometheus.settings import PrometheusSettings
from pipelines.sql import execute_script

GpusByNode = dict[str, dict[int, tuple[str | None, str | None, str | None]]]
"""node → GPU index → (UUID, PCI bus id, model)."""

_NODES_SCHEMA = {
    "node": pl.String,
    "cluster": pl.String,
    "instance_type": pl.String,
    "gpu_model": pl.String,
    "gpu_count": pl.Int64,
    "nic_expected": pl.Int64,
}
_DEVICES_SCHEMA = {"node": pl.String, "gpu": pl.Int64, "uuid": pl.String, "pci_bus_id": pl.String}


def read_inventory(
    ask: Callable[[str, int], Answer],
    settings: PrometheusSettings,
    landing: Landing,
    report: IngestReport,
    end_ms: int,
    window_ms: int,
    given_cluster: str | None,
) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """(nodes, gpu_devices) as of `end_ms`, each None when empty or answered only in part.

    A node without a GPU count is left out, with a warning in `report`.
    """
    lookback = f"{max(1, min(window_ms, settings.inventory_lookback_s * 1000))}ms"
    reader = _Reader(ask, settings, landing, lookback, end_ms - 1)
    try:
        kube = reader.kube_labels()
        capacity = reader.gpu_capacity()
        gpus, series_cluster = reader.dcgm_gpus()
    except _PartialInventory as e:
        report.partial.append(
            PartialChunk(
                "inventory", from_ms(end_ms - window_ms), from_ms(end_ms), e.warning, False
            )
        )
        return None, None
    rows = _node_rows(settings, kube, capacity, gpus, series_cluster, given_cluster, report)
    nodes = pl.DataFrame(rows, schema=_NODES_SCHEMA)
    devices = pl.DataFrame(
        [
            {"node": n, "gpu": g, "uuid": u, "pci_bus_id": p}
            for n, per_gpu in gpus.items()
            for g, (u, p, _m) in per_gpu.items()
        ],
        schema=_DEVICES_SCHEMA,
    )
    return (nodes if not nodes.is_empty() else None), (devices if not devices.is_empty() else None)


def write_devices(con: duckdb.DuckDBPyConnection, devices: pl.DataFrame, seen: datetime) -> None:
    """Replace the `gpu_devices` rows of the GPUs in `devices`, last seen at `seen`."""
    con.register("__devices", devices)
    try:
        execute_script(con, "ingest/gpu_devices_replace", {"seen": seen})
    finally:
        con.unregister("__devices")


class _PartialInventory(Exception):
    def __init__(self, warning: str) -> None:
        super().__init__(warning)
        self.warning = warning


class _Reader:
    """The inventory queries, each the last value over `lookback` evaluated at `at_ms`."""

    def __init__(
        self,
        ask: Callable[[str, int], Answer],
        settings: PrometheusSettings,
        landing: Landing,
        lookback: str,
        at_ms: int,
    ) -> None:
        self.ask, self.s, self.landing = ask, settings, landing
        self.lookback, self.at_ms = lookback, at_ms

    def answer(self, promql: str) -> list[dict[str, Any]]:
        answer = self.ask(promql, self.at_ms)
        if answer.partial:
            raise _PartialInventory(answer.partial[0])
        return answer.result

    def kube_labels(self) -> dict[str, dict[str, str]]:
        """Each node's non-empty kube-state-metrics labels (info and labels series merged)."""
        kube: dict[str, dict[str, str]] = defaultdict(dict)
        for metric in ("kube_node_info", "kube_node_labels"):
            for series in self.answer(f"last_over_time({metric}[{self.lookback}])"):
                labels = series["metric"]
                if labels.get("node"):
                    kube[labels["node"]].update({k: v for k, v in labels.items() if v})
        return kube

    def gpu_capacity(self) -> dict[str, int]:
        """Each node's `nvidia.com/gpu` capacity, where finite."""
        capacity = {}
        for series in self.answer(
            f'last_over_time(kube_node_status_capacity{{resource="nvidia_com_gpu"}}[{self.lookback}])'
        ):
            value = float(series["value"][1])
            if series["metric"].get("node") and math.isfinite(value):
                capacity[series["metric"]["node"]] = int(value)
        return capacity

    def dcgm_gpus(self) -> tuple[GpusByNode, dict[str, str]]:
        """The GPUs each node's DCGM series name, and a node's cluster as those series' label
        says."""
        s = self.s
        gpus: GpusByNode = defaultdict(dict)
        series_cluster: dict[str, str] = {}
        if not s.gpu_metrics:
            return gpus, series_cluster
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
        for series in self.answer(f"group by ({by}) (last_over_time({probe}[{self.lookback}]))"):
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
        return gpus, series_cluster


def _node_rows(
    s: PrometheusSettings,
    kube: dict[str, dict[str, str]],
    capacity: dict[str, int],
    gpus: GpusByNode,
    series_cluster: dict[str, str],
    given_cluster: str | None,
    report: IngestReport,
) -> list[dict[str, Any]]:
    """One `nodes` row per node kube-state-metrics or DCGM names, in node order."""
    rows = []
    for node in sorted(set(kube) | set(gpus)):
        labels = kube.get(node, {})
        count = first_int_label(labels, s.gpu_count_labels)
        if count is None:
            count = capacity.get(node)
        if count is None and node in gpus:
            count = len(gpus[node])
        if count is None:
            report.warnings.append(
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
        rows.append(
            {
                "node": node,
                # No label: NULL, so the loader takes the cluster the node's other series name
                # (or its stored one); `prometheus.cluster` set to a name is the last resort.
                "cluster": (
                    labels.get(s.cluster_label)
                    or series_cluster.get(node)
                    or given_cluster
                    or (s.cluster if s.cluster != "default" else None)
                ),
                "instance_type": instance_type,
                "gpu_model": model,
                "gpu_count": count,
                "nic_expected": nic,
            }
        )
    return rows
