"""Landing frames → OpenMetrics text, as dcgm-exporter, kube-state-metrics and node-exporter expose them.

The inverse of the Prometheus ingest: `promtool tsdb create-blocks-from openmetrics`
turns the text into TSDB blocks, so a real Prometheus server can serve landing data
(tests, benchmarks, demos against a real server). Series use the exporters' real
label sets (see /work/shared/reference/dcgm-exporter_sample_exposition.txt):

- `gpu_samples`      → `DCGM_FI_*{gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION}`
- `gpu_events` (xid) → `DCGM_EXP_XID_ERRORS_COUNT{..., window_size_in_ms, xid}`: XIDs of that code in the
  last window, written at every scrape of the GPU and at each event
- `node_conditions`  → `kube_node_status_condition{node, condition, status}` (one-hot over
  true/false/unknown); condition `Unschedulable` → `kube_node_spec_unschedulable{node}`
- `node_samples`     → node-exporter `node_infiniband_state_id{device, port, instance}` (4 = ACTIVE,
  1 = DOWN; one port per expected link) for `nic_links_up`, `node_infiniband_symbol_error_total` for
  `nic_link_errors_total`
- `nodes`            → `kube_node_labels{node, label_nvidia_com_gpu_product, label_nvidia_com_gpu_count,
  label_node_kubernetes_io_instance_type, label_gpufleet_io_nic_expected}` and `kube_node_info{node}`

Every family is typed `gauge`: OpenMetrics requires counter samples to end in `_total`,
which most DCGM counter names do not; Prometheus stores both the same way.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, cast

import polars as pl

DRIVER_VERSION = "550.54.15"
XID_WINDOW_MS = 300_000


def synthetic_pci_bus_id(gpu: int) -> str:
    """A plausible dcgm-exporter `pci_bus_id` for GPU index `gpu` (8 GPUs per node layout)."""
    return f"00000000:{0x18 + 0x10 * gpu:02X}:00.0"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs) + "}"


def _seconds(ts: datetime) -> str:
    return f"{ts.timestamp():.3f}"


def _value(v: float) -> str:
    return "NaN" if math.isnan(v) else repr(float(v))


def _models(nodes: pl.DataFrame | None) -> dict[str, str]:
    if nodes is None or nodes.is_empty():
        return {}
    return {n: m for n, m in nodes.select("node", "gpu_model").iter_rows() if m is not None}


def _gpu_labels(
    node: str, gpu: int, uuid: str | None, model: str, host_label: str
) -> list[tuple[str, str]]:
    return [
        ("gpu", str(gpu)),
        ("UUID", uuid or ""),
        ("pci_bus_id", synthetic_pci_bus_id(gpu)),
        ("device", f"nvidia{gpu}"),
        ("modelName", model),
        (host_label, node),
        ("DCGM_FI_DRIVER_VERSION", DRIVER_VERSION),
    ]


GPU_CHUNK_ROWS = 1_000_000
"""GPU sample lines are formatted and written this many at a time (bounded memory)."""


def _write_gpu_families(frames: dict[str, pl.DataFrame], host_label: str, out: BinaryIO) -> int:
    """Write every DCGM family, one metric at a time, formatted by polars (72 M lines in minutes)."""
    samples = frames.get("gpu_samples")
    if samples is None or samples.is_empty():
        return 0
    models = _models(frames.get("nodes"))
    # Label sets are formatted once per series (a few thousand), not once per sample.
    series = samples.select("node", "gpu", "uuid").unique()
    series = series.with_columns(
        pl.Series(
            "labels",
            [
                _labels(_gpu_labels(node, gpu, uuid, models.get(node, ""), host_label))
                for node, gpu, uuid in series.iter_rows()
            ],
            dtype=pl.String,
        )
    )
    epoch_ms = pl.col("ts").dt.epoch("ms")
    seconds = pl.concat_str(
        (epoch_ms // 1000).cast(pl.String),
        pl.lit("."),
        (epoch_ms % 1000).cast(pl.String).str.zfill(3),
    )
    written = 0
    for metric in sorted(samples["metric"].unique().to_list()):
        out.write(f"# TYPE {metric} gauge\n".encode())
        # One series' samples must be contiguous and in time order.
        family = (
            samples.filter(pl.col("metric") == metric)
            .join(series, on=["node", "gpu", "uuid"], nulls_equal=True)
            .sort("node", "gpu", "uuid", "ts", nulls_last=True)
        )
        for offset in range(0, family.height, GPU_CHUNK_ROWS):
            family.slice(offset, GPU_CHUNK_ROWS).select(
                pl.concat_str(
                    pl.lit(metric),
                    "labels",
                    pl.lit(" "),
                    pl.col("value").cast(pl.String),
                    pl.lit(" "),
                    seconds,
                )
            ).write_csv(out, include_header=False, quote_style="never")
        written += family.height
    return written


def _xid_family(frames: dict[str, pl.DataFrame], host_label: str) -> Iterator[str]:
    events = frames.get("gpu_events")
    if events is None or events.is_empty():
        return
    events = events.filter((pl.col("kind") == "xid") & pl.col("gpu").is_not_null())
    if events.is_empty():
        return
    models = _models(frames.get("nodes"))
    samples = frames.get("gpu_samples")
    scrapes: dict[tuple[str, int], list[datetime]] = defaultdict(list)
    uuids: dict[tuple[str, int], str] = {}
    if samples is not None and not samples.is_empty():
        # Only the GPUs with XIDs get a series: their scrapes alone are read.
        samples = samples.join(
            events.select("node", "gpu").unique(), on=["node", "gpu"], how="semi"
        )
        distinct = samples.select("node", "gpu", "ts").unique().sort("node", "gpu", "ts")
        for node, gpu, ts in distinct.iter_rows():
            scrapes[(node, gpu)].append(ts)
        for node, gpu, uuid in samples.select("node", "gpu", "uuid").unique().iter_rows():
            uuids[(node, gpu)] = uuid
    window_s = XID_WINDOW_MS / 1000
    yield "# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge"
    for (node, gpu, code), group in events.sort("ts").group_by(
        "node", "gpu", "code", maintain_order=True
    ):
        event_ts = group["ts"].to_list()
        points = sorted(set(scrapes.get((node, gpu), [])) | set(event_ts))
        uuid = uuids.get((node, gpu)) or (group["uuid"][0] if "uuid" in group.columns else None)
        labels = _labels(
            _gpu_labels(node, gpu, uuid, models.get(node, ""), host_label)
            + [("window_size_in_ms", str(XID_WINDOW_MS)), ("xid", str(code))]
        )
        for t in points:
            count = sum(1 for e in event_ts if 0 <= (t - e).total_seconds() < window_s)
            yield f"DCGM_EXP_XID_ERRORS_COUNT{labels} {count} {_seconds(t)}"


def _condition_families(frames: dict[str, pl.DataFrame]) -> Iterator[str]:
    conditions = frames.get("node_conditions")
    if conditions is None or conditions.is_empty():
        return
    conditions = conditions.sort("node", "condition", "ts")
    regular = conditions.filter(pl.col("condition") != "Unschedulable")
    if not regular.is_empty():
        yield "# TYPE kube_node_status_condition gauge"
        for status in ("false", "true", "unknown"):
            for (node, condition), series in regular.group_by(
                "node", "condition", maintain_order=True
            ):
                labels = _labels([("condition", condition), ("node", node), ("status", status)])
                for ts, value in series.select("ts", "status").iter_rows():
                    yield f"kube_node_status_condition{labels} {int(value.lower() == status)} {_seconds(ts)}"
    cordons = conditions.filter(pl.col("condition") == "Unschedulable")
    if not cordons.is_empty():
        yield "# TYPE kube_node_spec_unschedulable gauge"
        for (node,), series in cordons.group_by("node", maintain_order=True):
            for ts, value in series.select("ts", "status").iter_rows():
                yield f'kube_node_spec_unschedulable{{node="{_escape(node)}"}} {int(value == "True")} {_seconds(ts)}'


def _node_sample_families(frames: dict[str, pl.DataFrame]) -> Iterator[str]:
    samples = frames.get("node_samples")
    if samples is None or samples.is_empty():
        return
    nodes = frames.get("nodes")
    expected = {}
    if nodes is not None and not nodes.is_empty():
        expected = {
            n: e for n, e in nodes.select("node", "nic_expected").iter_rows() if e is not None
        }
    links = samples.filter(pl.col("metric") == "nic_links_up").sort("node", "ts")
    if not links.is_empty():
        ports_per_node = links.group_by("node").agg(pl.col("value").max())
        ports = {n: max(int(v), int(expected.get(n, 0))) for n, v in ports_per_node.iter_rows()}
        yield "# TYPE node_infiniband_state_id gauge"
        for (node,), series in links.group_by("node", maintain_order=True):
            rows = series.select("ts", "value").rows()
            for port in range(ports[node]):
                labels = _labels(
                    [("device", f"mlx5_{port}"), ("instance", f"{node}:9100"), ("port", "1")]
                )
                for ts, up in rows:
                    yield f"node_infiniband_state_id{labels} {4 if port < up else 1} {_seconds(ts)}"
    errors = samples.filter(pl.col("metric") == "nic_link_errors_total").sort("node", "ts")
    if not errors.is_empty():
        yield "# TYPE node_infiniband_symbol_error_total gauge"
        for (node,), series in errors.group_by("node", maintain_order=True):
            labels = _labels([("device", "mlx5_0"), ("instance", f"{node}:9100"), ("port", "1")])
            for ts, value in series.select("ts", "value").iter_rows():
                yield f"node_infiniband_symbol_error_total{labels} {_value(value)} {_seconds(ts)}"


def _inventory_families(frames: dict[str, pl.DataFrame]) -> Iterator[str]:
    nodes = frames.get("nodes")
    if nodes is None or nodes.is_empty():
        return
    instants = [
        frames[t]["ts"]
        for t in ("node_conditions", "gpu_samples", "node_samples")
        if frames.get(t) is not None and not frames[t].is_empty()
    ]
    if not instants:
        return
    all_ts = pl.concat(instants)
    # A Datetime column's min and max are datetimes (polars types them as any Python value).
    points = sorted({cast(datetime, all_ts.min()), cast(datetime, all_ts.max())})
    yield "# TYPE kube_node_info gauge"
    for row in nodes.iter_rows(named=True):
        labels = _labels([("cluster", row["cluster"]), ("node", row["node"])])
        for t in points:
            yield f"kube_node_info{labels} 1 {_seconds(t)}"
    yield "# TYPE kube_node_labels gauge"
    for row in nodes.iter_rows(named=True):
        pairs = [("node", row["node"]), ("label_nvidia_com_gpu_count", str(row["gpu_count"]))]
        if row.get("gpu_model"):
            pairs.append(("label_nvidia_com_gpu_product", row["gpu_model"].replace(" ", "-")))
        if row.get("instance_type"):
            pairs.append(("label_node_kubernetes_io_instance_type", row["instance_type"]))
        if row.get("nic_expected") is not None:
            pairs.append(("label_gpufleet_io_nic_expected", str(row["nic_expected"])))
        labels = _labels(pairs)
        for t in points:
            yield f"kube_node_labels{labels} 1 {_seconds(t)}"


def _other_lines(frames: dict[str, pl.DataFrame], host_label: str) -> Iterator[str]:
    """The exposition lines of every family but the DCGM fields, ending with `# EOF`."""
    yield from _xid_family(frames, host_label)
    yield from _condition_families(frames)
    yield from _node_sample_families(frames)
    yield from _inventory_families(frames)
    yield "# EOF"


def write_openmetrics(
    frames: dict[str, pl.DataFrame], path: str | Path, host_label: str = "Hostname"
) -> int:
    """Write the exposition text for `frames` (landing table name → frame) to `path`; return the
    number of sample lines. `host_label` is `Hostname` (dcgm-exporter up to 4.8) or `hostname`
    (newer releases)."""
    with open(path, "wb") as out:
        count = _write_gpu_families(frames, host_label, out)
        for line in _other_lines(frames, host_label):
            out.write(line.encode())
            out.write(b"\n")
            count += not line.startswith("#")
    return count
