"""The `[prometheus]` section of `gpufleet.toml`: which series are read, and how."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, field_validator
from pydantic.dataclasses import dataclass as settings_dataclass

from pipelines.settings_model import SECTION, build_section

DEFAULT_GPU_METRICS: tuple[str, ...] = (
    # In dcgm-exporter's default counters file:
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    # Off in the default counters file; enable them (docs/sources.md):
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
)

DEFAULT_NODE_METRICS: dict[str, dict[str, str]] = {
    # node-exporter's infiniband collector: state_id 4 is ACTIVE; one series per device and port.
    "nic_links_up": {
        "selector": "node_infiniband_state_id",
        "sample_sql": "CAST(value = 4 AS DOUBLE)",
    },
    "nic_link_errors_total": {
        "selector": '{__name__=~"node_infiniband_(symbol_error|link_error_recovery|link_downed'
        '|port_errors_received)_total"}',
        "sample_sql": "value",
    },
}


@settings_dataclass(frozen=True, config=SECTION)
class PrometheusSettings:
    """The `[prometheus]` section of `gpufleet.toml`: which series land where, and how to fetch."""

    chunk_s: PositiveInt = 21600
    """Length of one range fetch, seconds (capped so no series exceeds 11,000 points). Longer
    chunks mean fewer requests (faster) but bigger responses: 6 h of a 512-GPU fleet scraped
    every 30 s is ~370k samples per response."""
    scrape_interval_s: PositiveFloat = 30.0
    """The exporters' scrape interval, seconds; bounds the chunk and is the promql step."""
    timeout_s: PositiveFloat = 60.0
    """Deadline of one request, seconds, from connecting to the last byte of the answer."""
    settle_s: NonNegativeInt = 120
    """Never read closer than this to now: samples still in flight (a scrape being appended,
    remote-write lag in Mimir or Thanos receive) would otherwise fall behind the watermark."""
    compress: bool = True
    """Ask for gzip responses: less network, more CPU on both ends. Off for a server on the same host or LAN."""
    retries: NonNegativeInt = 4
    """Retries of a request that timed out, could not connect, got HTTP 429/5xx, or whose answer
    was cut off or partial (a store of Thanos or VictoriaMetrics did not answer)."""
    backoff_s: NonNegativeFloat = 1.0
    """First retry delay, seconds; doubles each retry."""
    node_labels: list[str] = field(
        default_factory=lambda: ["node", "Hostname", "hostname", "instance"]
    )
    """Labels naming the node, first present wins (`instance` loses its `:port`)."""
    matchers: str = ""
    """Extra label matchers for the dcgm-exporter selectors, e.g. `job="dcgm-exporter"`."""
    gpu_metrics: list[str] = field(default_factory=lambda: list(DEFAULT_GPU_METRICS))
    xid_count_metric: str = "DCGM_EXP_XID_ERRORS_COUNT"
    """XIDs per code in a sliding window (label `xid`): a rise is an XID event. Empty: off."""
    xid_last_metric: str = "DCGM_FI_DEV_XID_ERRORS"
    """The last XID of a GPU: a change to a non-zero value is an XID event. Empty: off."""
    xid_seed_lookback_s: NonNegativeInt = 900
    """How far before a chunk to look for the previous XID value (to detect a change)."""
    condition_metric: str = "kube_node_status_condition"
    unschedulable_metric: str = "kube_node_spec_unschedulable"
    cluster: str = "default"
    """Cluster name for nodes whose series carry no `cluster` label."""
    cluster_label: str = "cluster"
    gpu_count_labels: list[str] = field(default_factory=lambda: ["label_nvidia_com_gpu_count"])
    gpu_model_labels: list[str] = field(default_factory=lambda: ["label_nvidia_com_gpu_product"])
    instance_type_labels: list[str] = field(
        default_factory=lambda: [
            "label_node_kubernetes_io_instance_type",
            "label_beta_kubernetes_io_instance_type",
        ]
    )
    nic_expected_label: str = "label_gpufleet_io_nic_expected"
    nic_expected_by_instance_type: dict[str, NonNegativeInt] = field(default_factory=dict)
    """Links each instance type should have up. Empty by default (no type is checked); an example
    to fill in, not a default: `{"p5.48xlarge" = 32}` (EFA adapters of a p5)."""
    inventory_lookback_s: PositiveInt = 3600
    """The node inventory is the newest label set seen this long before the end."""
    node_metrics: dict[str, dict[str, str]] = field(
        default_factory=lambda: dict(DEFAULT_NODE_METRICS)
    )
    """Canonical node metric → `{selector, sample_sql}` (raw samples, `sample_sql` per sample,
    summed per node and timestamp) or `{promql}` (evaluated at the scrape interval)."""
    downsample_functions: dict[str, str] = field(default_factory=dict)
    """Per-metric `_over_time` function for `--downsample`, overriding max/avg/last."""

    @field_validator("node_metrics")
    @classmethod
    def _node_metric_specs(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for name, spec in value.items():
            if not ({"selector", "promql"} & set(spec)):
                raise ValueError(
                    f"`{name}` needs a `selector` or a `promql` key, e.g. nic_links_up = "
                    '{ selector = "node_infiniband_state_id", sample_sql = "CAST(value = 4 AS DOUBLE)" }'
                )
        return value

    @classmethod
    def from_extra(
        cls, extra: dict[str, Any], origin: str = "settings", origins: dict[str, str] | None = None
    ) -> PrometheusSettings:
        """The `[prometheus]` table of `extra`, validated; `node_metrics` adds to the defaults."""
        values = extra.get("prometheus", {})
        if isinstance(values, dict) and isinstance(values.get("node_metrics"), dict):
            values = values | {"node_metrics": DEFAULT_NODE_METRICS | values["node_metrics"]}
        return build_section(cls, "prometheus", values, origin, origins)
