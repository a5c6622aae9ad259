"""Landing rows: each answer's series mapped to the rows of the landing tables (gpu_samples,
gpu_instance_samples, gpu_events, node_conditions, node_samples) and staged for the load."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl

from pipelines.errors import ConfigError
from pipelines.sources.prometheus.parse import Chunk, mig_instance, node_of, samples_frame
from pipelines.sources.prometheus.plan import Query
from pipelines.sources.prometheus.settings import PrometheusSettings
from pipelines.sources.prometheus.stage import Stage


class Landing:
    """Maps one query's answer to landing rows and stages them; counts the series it could not
    place (no node or GPU label)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, settings: PrometheusSettings, stage: Stage
    ) -> None:
        self.con, self.s, self.stage = con, settings, stage
        self.unnamed_series = 0
        # Each last-XID gauge series' latest sample time (ms) in the current fetch, and before
        # its first one the earliest time the seed looked back to (see `start_xid_fetch`).
        self.xid_gauge_seen_ms: dict[tuple, int] = {}
        self.xid_gauge_since_ms = 0

    def start_xid_fetch(self, start_ms: int, seen_ms: dict[tuple, int]) -> None:
        """An XID query is read from `start_ms` on; `seen_ms`: each series' last sample in the
        seed's lookback (a series without one: the XID may be as old as the lookback)."""
        self.xid_gauge_seen_ms = dict(seen_ms)
        self.xid_gauge_since_ms = start_ms - int(self.s.xid_seed_lookback_s * 1000)

    def gpu_identity(
        self, labels: dict[str, str], count: bool = True
    ) -> tuple[str, int, str | None] | None:
        """(node, physical GPU index, UUID) of a dcgm-exporter series, MIG instance series
        included (an instance belongs to its GPU); None (counted) for unnamed series."""
        node = node_of(labels, self.s.node_labels)
        gpu = labels.get("gpu")
        if node is None or gpu is None or not gpu.isdigit():
            self.unnamed_series += count
            return None
        return node, int(gpu), labels.get("UUID") or labels.get("uuid")

    def xid_key(self, labels: dict[str, str], count: bool = True) -> tuple | None:
        ident = self.gpu_identity(labels, count)
        if ident is None:
            return None
        return (*ident, labels.get("xid", ""))

    def land(self, q: Query, chunk: Chunk, previous: dict) -> None:
        if not chunk.labels:
            return
        if q.kind == "gpu":
            self.land_gpu(chunk, q.key.removeprefix("gpu:"))
            return
        series = list(chunk.series())
        if q.kind in ("xid_count", "xid_last"):
            self.land_xid(q, series, previous)
        elif q.kind == "condition":
            self.land_conditions(series)
        elif q.kind == "unschedulable":
            self.land_unschedulable(series)
        else:
            self.land_node_metric(q, series)

    def land_gpu(self, chunk: Chunk, queried: str) -> None:
        """`queried` names the field when the answer has no `__name__` (`max_over_time` drops it).

        Whole-device series land in gpu_samples, MIG instance series (label `GPU_I_ID`) in
        gpu_instance_samples, so device health never reads a per-instance value."""
        idents = [self.gpu_identity(labels) for labels in chunk.labels]
        instances = [
            mig_instance(labels) if ident else None
            for ident, labels in zip(idents, chunk.labels, strict=True)
        ]
        device = np.array(
            [i is not None and m is None for i, m in zip(idents, instances, strict=True)],
            dtype=bool,
        )
        mig = np.array([m is not None for m in instances], dtype=bool)
        ids = chunk.series_ids()
        per_series = pl.DataFrame(
            {
                "cluster": [labels.get(self.s.cluster_label) or None for labels in chunk.labels],
                "node": [i[0] if i else None for i in idents],
                "gpu": [i[1] if i else None for i in idents],
                "uuid": [i[2] if i else None for i in idents],
                "gpu_i_id": [m[0] if m else None for m in instances],
                "gpu_i_profile": [m[1] if m else None for m in instances],
                "job_id": [m[2] if m else None for m in instances],
                "metric": [labels.get("__name__") or queried for labels in chunk.labels],
            },
            schema={
                "cluster": pl.String,
                "node": pl.String,
                "gpu": pl.Int16,
                "uuid": pl.String,
                "gpu_i_id": pl.Int16,
                "gpu_i_profile": pl.String,
                "job_id": pl.String,
                "metric": pl.String,
            },
        )
        # `cluster`: the series' label (an external label that Thanos and Mimir keep); NULL is resolved
        # from --cluster or the node's cluster when loaded.
        for table, wanted, columns, key in (
            (
                "gpu_samples",
                device,
                ["cluster", "ts", "node", "gpu", "uuid", "metric", "value"],
                ["ts", "cluster", "node", "gpu", "metric"],
            ),
            (
                "gpu_instance_samples",
                mig,
                [
                    "cluster",
                    "ts",
                    "node",
                    "gpu",
                    "uuid",
                    "gpu_i_id",
                    "gpu_i_profile",
                    "job_id",
                    "metric",
                    "value",
                ],
                ["ts", "cluster", "node", "gpu", "gpu_i_id", "metric"],
            ),
        ):
            keep = wanted[ids]
            if not keep.any():
                continue
            frame = pl.DataFrame({"ts": chunk.ts[keep], "value": chunk.values[keep]}).with_columns(
                pl.col("ts").cast(pl.Datetime("ms", "UTC"))
            )
            gathered = per_series[ids[keep]]  # one row per sample, in sample order
            frame = pl.concat([frame, gathered], how="horizontal").select(columns)
            series_keys = per_series.filter(pl.Series(wanted)).select(key[1:])
            if series_keys.height > series_keys.unique().height:
                # Two series for one GPU (or instance) and field (e.g. the exporter scraped by
                # two jobs): keep the first.
                frame = frame.unique(subset=key, keep="first", maintain_order=True)
            self.stage.add(table, frame)

    def land_xid(self, q: Query, series: list, previous: dict) -> None:
        """One event per rise of a per-code count, or change of the last-XID gauge to a new
        non-zero value. A gauge event carries `since`, the gauge's previous sample (ms), or when
        none was seen in this fetch, where the seed's lookback began: the XID happened in
        (since, ts]."""
        cols: dict[str, list] = {
            k: []
            for k in (
                "cluster",
                "ts",
                "node",
                "gpu",
                "uuid",
                "kind",
                "code",
                "message",
                "source",
                "since",
            )
        }
        gauge = q.kind == "xid_last"
        for labels, ts, vs in series:
            key = self.xid_key(labels)
            if key is None:
                continue
            node, gpu, uuid, xid = key
            prev = previous.get(key)
            seen = self.xid_gauge_seen_ms.get(key)
            for t, v in zip(ts, vs, strict=True):
                if gauge:
                    event = v != 0 and v != prev and not math.isnan(v)
                    code = None if math.isnan(v) else int(v)
                else:
                    event = v > (prev or 0.0) and xid.isdigit()
                    code = int(xid) if xid.isdigit() else None
                if event:
                    cols["cluster"].append(labels.get(self.s.cluster_label) or None)
                    cols["ts"].append(t)
                    cols["node"].append(node)
                    cols["gpu"].append(gpu)
                    cols["uuid"].append(uuid)
                    cols["kind"].append("xid")
                    cols["code"].append(code)
                    cols["message"].append(labels.get("err_msg") or None)
                    cols["source"].append("dcgm")
                    cols["since"].append(
                        (self.xid_gauge_since_ms if seen is None else seen) if gauge else None
                    )
                prev = v
                seen = t
            previous[key] = prev
            if gauge and seen is not None:
                self.xid_gauge_seen_ms[key] = seen
        frame = samples_frame(cols).with_columns(
            pl.col("since").cast(pl.Int64).cast(pl.Datetime("ms", "UTC"))
        )
        self.stage.add("gpu_events", frame)

    def land_conditions(self, series: list) -> None:
        cols: dict[str, list] = {
            "cluster": [],
            "ts": [],
            "node": [],
            "condition": [],
            "status": [],
            "value": [],
        }
        for labels, ts, vs in series:
            node = labels.get("node") or node_of(labels, self.s.node_labels)
            if not node or not labels.get("condition"):
                self.unnamed_series += 1
                continue
            n = len(ts)
            cols["cluster"].extend([labels.get(self.s.cluster_label) or None] * n)
            cols["ts"].extend(ts)
            cols["value"].extend(vs)
            cols["node"].extend([node] * n)
            cols["condition"].extend([labels["condition"]] * n)
            cols["status"].extend([labels.get("status", "").lower()] * n)
        if not cols["ts"]:
            return
        frame = samples_frame(cols)
        # One-hot: the status whose series is 1 is the status; none at 1 means nobody knows.
        status = (
            frame.group_by("cluster", "ts", "node", "condition")
            .agg(pl.col("status").filter(pl.col("value") == 1).first().alias("hot"))
            .with_columns(
                pl.col("hot")
                .replace_strict(
                    {"true": "True", "false": "False", "unknown": "Unknown"}, default="Unknown"
                )
                .fill_null("Unknown")
                .alias("status"),
                pl.lit(None, pl.String).alias("reason"),
                pl.lit(None, pl.String).alias("message"),
            )
            .select("cluster", "ts", "node", "condition", "status", "reason", "message")
            .sort("node", "condition", "ts")
        )
        self.stage.add("node_conditions", status)

    def land_unschedulable(self, series: list) -> None:
        cols: dict[str, list] = {"cluster": [], "ts": [], "node": [], "condition": [], "status": []}
        for labels, ts, vs in series:
            node = labels.get("node") or node_of(labels, self.s.node_labels)
            if not node:
                self.unnamed_series += 1
                continue
            cols["cluster"].extend([labels.get(self.s.cluster_label) or None] * len(ts))
            cols["ts"].extend(ts)
            cols["node"].extend([node] * len(ts))
            cols["condition"].extend(["Unschedulable"] * len(ts))
            cols["status"].extend(["True" if v == 1 else "False" for v in vs])
        self.stage.add("node_conditions", samples_frame(cols))

    def land_node_metric(self, q: Query, series: list) -> None:
        cols: dict[str, list] = {"cluster": [], "ts": [], "node": [], "value": []}
        for labels, ts, vs in series:
            node = node_of(labels, self.s.node_labels)
            if not node:
                self.unnamed_series += 1
                continue
            cols["cluster"].extend([labels.get(self.s.cluster_label) or None] * len(ts))
            cols["ts"].extend(ts)
            cols["value"].extend(vs)
            cols["node"].extend([node] * len(ts))
        if not cols["ts"]:
            return
        self.con.register("__raw", samples_frame(cols))
        try:
            frame = self.con.sql(
                f"SELECT cluster, ts, node, $metric AS metric, sum({q.sample_sql})::DOUBLE AS value "
                "FROM __raw GROUP BY cluster, ts, node ORDER BY cluster, node, ts",
                params={"metric": q.name},
            ).pl()
        except duckdb.Error as e:
            raise ConfigError(
                f"`prometheus.node_metrics.{q.name}.sample_sql` is not valid SQL over `value`: {e}"
            ) from e
        finally:
            self.con.unregister("__raw")
        self.stage.add("node_samples", frame)
