"""The node page's telemetry as an SRE reads it: error counters as rates per hour, NVLink
traffic and errors, the network links (InfiniBand / EFA) up and their errors, the clock-event
(throttle) reasons, and the GPUs' UUIDs for an RMA ticket. Each reads one
`queries/app/*.sql` file; the page calls `node_sections` once."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import polars as pl
import streamlit as st

from gpufleet_app import data, figures, fmt, ui

RATE_BUCKET_S = 3600
"""Counter rates are increases per UTC hour (a multiple of the rollup's 15 minutes)."""

REASON_FIELDS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")


NVLINK_COUNTERS = (
    "NVLink CRC flit errors",
    "NVLink CRC data errors",
    "NVLink replay errors",
    "NVLink recovery errors",
)
NIC_COUNTERS = ("NIC link errors",)
"""Counters of node_counter_rates.sql shown in the NVLink and network panels, not with ECC/PCIe."""


def node_sections(params: dict[str, Any]) -> None:
    """Counter rates, NVLink and network panels, clock-event reasons and GPU identities of the
    node in `params`."""
    rates = data.query("node_counter_rates", **_node_params(params), bucket_s=RATE_BUCKET_S)
    gpu_errors = rates.filter(~pl.col("counter").is_in([*NVLINK_COUNTERS, *NIC_COUNTERS]))
    gpu_counters(gpu_errors)
    nvlink(params, rates.filter(pl.col("counter").is_in(NVLINK_COUNTERS)))
    network(params, rates.filter(pl.col("counter").is_in(NIC_COUNTERS)))
    clock_reasons(params)
    gpu_identities(params)


def counter_rates(
    rates: pl.DataFrame, *, key: str = "counter", what: str = "ECC, PCIe replay"
) -> None:
    """The chart and table of the counters in `rates` (rows of node_counter_rates.sql)."""
    if rates.is_empty():
        st.info(f"This node reports none of these counters ({what}) this week.")
        return
    totals = rates.group_by("counter", "gpu", maintain_order=True).agg(
        increase=pl.col("increase").sum(), peak_per_hour=pl.col("per_hour").max()
    )
    moved = totals.filter(pl.col("increase") > 0)
    flat = sorted(set(totals["counter"]) - set(moved["counter"]))
    if moved.is_empty():
        st.success(f"No error counter went up this week ({', '.join(flat)}).")
        return
    st.plotly_chart(figures.counter_rates(rates, RATE_BUCKET_S), key=f"{key}_rates")
    ui.table(
        moved.select(
            "counter",
            pl.col("gpu").cast(pl.String).fill_null("node").alias("gpu"),
            "increase",
            "peak_per_hour",
        ),
        key=f"{key}_totals",
        column_config={
            "increase": st.column_config.NumberColumn("increase this week", format="%.0f"),
            "peak_per_hour": st.column_config.NumberColumn("peak per hour", format="%.1f"),
        },
    )
    if flat:
        st.caption(f"Flat all week: {', '.join(flat)}.")


RATE_NOTE = (
    "How fast each counter went up, per UTC hour, never its cumulative total. A drop is a "
    "counter reset (reboot, GPU reset) and counts as the new value, never as a negative rate."
)


def gpu_counters(rates: pl.DataFrame) -> None:
    st.subheader("Error counters (rate per hour)")
    st.caption(RATE_NOTE)
    counter_rates(rates)


def nvlink(params: dict[str, Any], errors: pl.DataFrame) -> None:
    """NVLink traffic per GPU (the bandwidth counter as MiB/s) and the NVLink error counters' rates."""
    st.subheader("NVLink")
    traffic = data.query("node_nvlink_traffic", **_node_params(params), bucket_s=RATE_BUCKET_S)
    if traffic.is_empty():
        st.caption("This node reports no `DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL` this week.")
    else:
        st.plotly_chart(figures.nvlink_traffic(traffic, RATE_BUCKET_S), key="nvlink_traffic")
        st.caption(
            "The bandwidth counter's increase per UTC hour as MiB/s (reset-safe). A GPU far "
            "below its peers while they exchange data points at a degraded link."
        )
    counter_rates(errors, key="nvlink", what="NVLink CRC, replay, recovery")


def network(params: dict[str, Any], errors: pl.DataFrame) -> None:
    """Network links (InfiniBand / EFA) up against the expected count, and the link errors' rate."""
    st.subheader("Network (InfiniBand / EFA)")
    links = data.query("node_nic_links", **_node_params(params), bucket_s=RATE_BUCKET_S)
    if links.is_empty():
        st.caption("This node reports no `nic_links_up` this week.")
    else:
        st.plotly_chart(figures.nic_links(links, RATE_BUCKET_S), key="nic_links")
        short = links.filter(pl.col("links_min") < pl.col("expected"))
        if short.height:
            st.warning(f"Fewer links up than expected in {short.height} hour(s) this week.")
        else:
            st.caption(
                "Links up per UTC hour (fewest and most in the hour's scrapes) against the "
                "node's expected count (`nodes.nic_expected`)."
            )
    counter_rates(errors, key="nic", what="NIC link errors")


def clock_reasons(params: dict[str, Any]) -> None:
    st.subheader("Clock-event (throttle) reasons")
    reasons = data.query("node_clock_reasons", **_node_params(params))
    if reasons.is_empty():
        st.caption(f"This node reports neither {' nor '.join(f'`{f}`' for f in REASON_FIELDS)}.")
        return
    active = reasons.filter(pl.col("active_h") > 0)
    if active.is_empty():
        st.success("No clock-event reason was active this week.")
        return
    st.plotly_chart(figures.clock_reasons(reasons), key="clock_reasons")
    st.caption(
        "The reasons bitmask decoded per NVIDIA's documented bits (gpu_idle 0x1, "
        "applications_clocks_setting 0x2, sw_power_cap 0x4, hw_slowdown 0x8, sync_boost 0x10, "
        "sw_thermal_slowdown 0x20, hw_thermal_slowdown 0x40, hw_power_brake_slowdown 0x80, "
        "display_clock_setting 0x100). Hours = share of the GPU's samples with the bit set x the "
        "hours it reported the field; an idle GPU is `gpu_idle`, not throttled."
    )
    grid = (
        active.with_columns(pl.format("gpu {}", "gpu").alias("gpu_label"))
        .pivot(on="reason", index="gpu_label", values="active_h", aggregate_function="sum")
        .fill_null(0.0)
    )
    ui.table(
        grid.rename({"gpu_label": "gpu"}),
        key="clock_reason_hours",
        column_config={
            c: st.column_config.NumberColumn(f"{c} (h)", format="%.2f")
            for c in grid.columns
            if c != "gpu_label"
        },
    )


def gpu_identities(params: dict[str, Any]) -> None:
    st.subheader("GPUs (for an RMA ticket)")
    if not ui.has_table("gpu_inventory"):
        st.caption("The GPU inventory is not computed yet: run `gpufleet compute`.")
        return
    gpus = data.query(
        "node_gpus", node=params["node"], cluster=params["cluster"], week_end=params["week_end"]
    )
    if gpus.is_empty():
        st.info("No DCGM sample from this node names its GPUs' UUIDs.")
        return
    swapped = gpus.filter(pl.len().over("gpu") > 1)["gpu"].unique().sort().to_list()
    ui.table(
        gpus,
        key="gpu_identities",
        column_config={
            "uuid": st.column_config.TextColumn("UUID"),
            "first_ts": st.column_config.DatetimeColumn(
                "first seen (UTC)", format="YYYY-MM-DD HH:mm"
            ),
            "last_ts": st.column_config.DatetimeColumn(
                "last seen (UTC)", format="YYYY-MM-DD HH:mm"
            ),
        },
    )
    notes = ["UUIDs from DCGM (`UUID` label); serial numbers are not in the landing data."]
    if swapped:
        notes.append(
            f"GPU {', '.join(map(str, swapped))}: more than one UUID, the GPU was swapped."
        )
    # `Series.max()` is typed as any Python value; on this Datetime column it is a datetime.
    last_sample = cast(datetime | None, gpus["last_ts"].max())
    st.caption(" ".join(notes) + f" Last sample {fmt.timestamp(last_sample)}.")


def _node_params(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "node": params["node"],
        "cluster": params["cluster"],
        "week_start": params["week_start"],
        "week_end": params["week_end"],
    }
