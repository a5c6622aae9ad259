"""Scrapes: DCGM GPU samples, node conditions and node NIC samples, one scrape a minute.

Per-minute state lives in (minutes x GPUs) or (minutes x nodes) arrays built once
from the schedule and the fault effects; rows are produced in time chunks so a
512-node week never needs all ~580 M GPU samples in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipelines.simulator.model import (
    CLUSTERS,
    GPUS_PER_NODE,
    SCRAPE_S,
    Effects,
    Fleet,
    SimulationConfig,
)
from pipelines.simulator.schedule import Attempt

GPU_METRICS: tuple[str, ...] = (
    "DCGM_FI_DEV_GPU_UTIL",  # %
    "DCGM_FI_DEV_SM_CLOCK",  # MHz
    "DCGM_FI_DEV_MEM_CLOCK",  # MHz
    "DCGM_FI_DEV_GPU_TEMP",  # C
    "DCGM_FI_DEV_MEMORY_TEMP",  # C
    "DCGM_FI_DEV_POWER_USAGE",  # W
    "DCGM_FI_DEV_FB_USED",  # MiB
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",  # counter
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",  # counter (MiB moved over NVLink)
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",  # counter
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",  # counter
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",  # 0/1
    "DCGM_FI_DEV_XID_ERRORS",  # last XID, 0 if none
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",  # ratio 0..1
)
NODE_METRICS: tuple[str, ...] = ("nic_links_up", "nic_link_errors_total")
CONDITIONS: tuple[str, ...] = (
    "Ready",
    "MemoryPressure",
    "AcceleratedHardwareReady",
    "NetworkingReady",
    "Unschedulable",
)
COUNTERS = (7, 8, 9, 10)  # indices of GPU_METRICS that only grow (reset on reboot)
# A MIG-partitioned GPU reports these per instance (gpu_instance_samples), not for the device.
PER_INSTANCE_ON_MIG = tuple(
    GPU_METRICS.index(m)
    for m in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
)
FB_TOTAL_MIB = 81559
MEM_CLOCK_MHZ = (2619, 3201)  # per cluster (H100, H200)
PEAK_POWER_W = (690.0, 695.0)
UNKNOWN_REASON = ("NodeStatusUnknown", "Kubelet stopped posting node status.")


def minute_range(t0: float, t1: float, minutes: int) -> slice:
    """Scrape minutes m with t0 <= m * 60 < t1."""
    return slice(
        min(minutes, max(0, int(np.ceil(t0 / SCRAPE_S)))),
        min(minutes, max(0, int(np.ceil(t1 / SCRAPE_S)))),
    )


def chunk_minutes(cfg: SimulationConfig) -> int:
    """Scrape minutes per output chunk: ~6 M GPU-sample rows."""
    return int(
        max(1, min(cfg.minutes, 6_000_000 // (cfg.nodes * GPUS_PER_NODE * len(GPU_METRICS))))
    )


@dataclass
class State:
    """Per-minute fleet state the scrapes read."""

    util: np.ndarray  # (T, G) uint8, 0 = idle
    fb_pct: np.ndarray  # (T, G) uint8
    present: np.ndarray  # (T, G) bool: the GPU's DCGM series has a sample
    node_present: np.ndarray  # (T, N) bool: the node's NIC exporter has a sample
    xid: np.ndarray  # (T, G) int16: last XID
    throttled: np.ndarray  # (T, G) bool
    sbe_rise: list[tuple[int, int, np.ndarray]]  # (gpu, first minute, extra SBE errors per minute)
    dbe: list[tuple[int, int]]  # (minute, gpu)
    resets: list[tuple[int, int]]  # (minute, node): counters restart from 0
    links: np.ndarray  # (T, N) int16
    link_err_rate: np.ndarray  # (T, N) float32
    cond: np.ndarray  # (C, T, N) int16 index into `states`
    states: list[tuple[str, str, str | None, str | None]]


def build_state(
    cfg: SimulationConfig, fleet: Fleet, attempts: list[Attempt], effects: Effects
) -> State:
    T, N = cfg.minutes, fleet.n
    G = N * GPUS_PER_NODE
    util = np.zeros((T, G), dtype=np.uint8)
    fb = np.zeros((T, G), dtype=np.uint8)
    for a in attempts:
        sl = minute_range(a.start_s, cfg.horizon_s if a.end_s is None else a.end_s, T)
        util[sl, a.gpus] = a.job.util if a.job.gpu_util is None else a.job.gpu_util
        fb[sl, a.gpus] = a.job.fb_pct
    present = np.ones((T, G), dtype=bool)
    node_present = np.ones((T, N), dtype=bool)
    for node, gpu, a0, a1 in effects.gpu_absent:
        g0 = node * GPUS_PER_NODE
        cols = slice(g0, g0 + GPUS_PER_NODE) if gpu is None else slice(g0 + gpu, g0 + gpu + 1)
        present[minute_range(a0, a1, T), cols] = False
    resets: list[tuple[int, int]] = []
    for node, r0, r1 in effects.reboots:
        sl = minute_range(r0, r1, T)
        present[sl, node * GPUS_PER_NODE : (node + 1) * GPUS_PER_NODE] = False
        node_present[sl, node] = False
        resets.append((sl.stop, node))
    resets.sort()
    xid = np.zeros((T, G), dtype=np.int16)
    for t, node, gpu, code in effects.xids:
        until = min(
            [r1 for n, _r0, r1 in effects.reboots if n == node and r1 > t], default=cfg.horizon_s
        )
        xid[minute_range(t, until, T), node * GPUS_PER_NODE + gpu] = code
    throttled = np.zeros((T, G), dtype=bool)
    for node, gpu, t0, t1 in effects.throttles:
        throttled[minute_range(t0, t1, T), node * GPUS_PER_NODE + gpu] = True
    sbe: list[tuple[int, int, np.ndarray]] = []
    for node, gpu, t0, t1 in effects.sbe_rise:
        sl = minute_range(t0, t1, T)
        n = sl.stop - sl.start
        # Rising from ~0.05 to ~15 errors a minute before the double-bit error.
        rate = 0.05 * np.exp(np.log(300) * np.arange(n) / max(1, n))
        sbe.append((node * GPUS_PER_NODE + gpu, sl.start, rate))
    dbe = [
        (int(t // SCRAPE_S), node * GPUS_PER_NODE + gpu)
        for node, gpu, t in effects.dbe
        if t < cfg.horizon_s
    ]
    nic_expected = np.array([CLUSTERS[c][3] for c in fleet.cluster], dtype=np.int16)
    links = np.broadcast_to(nic_expected, (T, N)).copy()
    err = np.full((T, N), 0.002, dtype=np.float32)
    for node, t0, t1, down in effects.nic_down:
        sl = minute_range(t0, t1, T)
        links[sl, node] -= down
        err[sl, node] = 4.0

    states: list[tuple[str, str, str | None, str | None]] = []
    index: dict[tuple, int] = {}

    def state_code(entry: tuple[str, str, str | None, str | None]) -> int:
        if entry not in index:
            index[entry] = len(states)
            states.append(entry)
        return index[entry]

    good = [
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        (
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (
            "AcceleratedHardwareReady",
            "True",
            "AcceleratedHardwareIsReady",
            "Monitoring for the AcceleratedHardware system is active",
        ),
        (
            "NetworkingReady",
            "True",
            "NetworkingIsReady",
            "Monitoring for the Networking system is active",
        ),
        ("Unschedulable", "False", None, None),
    ]
    cond = np.empty((len(CONDITIONS), T, N), dtype=np.int16)
    for c, entry in enumerate(good):
        cond[c] = state_code(entry)
    for node, t0, t1, xid_code, gpu in effects.ahr_bad:
        what = "GPU has fallen off the bus" if xid_code == 79 else "Double Bit ECC Error"
        cond[2, minute_range(t0, t1, T), node] = state_code(
            (
                "AcceleratedHardwareReady",
                "False",
                f"NvidiaXID{xid_code}Error",
                f"XID {xid_code} on GPU {gpu}: {what}",
            )
        )
    for node, t0, t1 in effects.flaps:
        sl = minute_range(t0, t1, T)
        down = state_code(
            ("NetworkingReady", "False", "InterfaceNotRunning", "Interface efa0 is not running")
        )
        # Three minutes down, three up, for the flap's hour.
        minutes = np.arange(sl.start, sl.stop)
        cond[3, minutes[((minutes - sl.start) // 3) % 2 == 0], node] = down
    for node, t0, t1, msg in effects.cordons:
        cond[4, minute_range(t0, t1, T), node] = state_code(
            ("Unschedulable", "True", "Cordoned", msg)
        )
    for node, r0, r1 in effects.reboots:
        sl = minute_range(r0, r1, T)
        for c, name in enumerate(CONDITIONS[:4]):
            cond[c, sl, node] = state_code((name, "Unknown", *UNKNOWN_REASON))
    return State(
        util, fb, present, node_present, xid, throttled, sbe, dbe, resets, links, err, cond, states
    )


def _dict(indices: np.ndarray, dictionary: list[str] | tuple[str, ...]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(
        pa.array(indices.astype(np.int32, copy=False)), pa.array(list(dictionary))
    )


def _ts(cfg: SimulationConfig, minutes: np.ndarray) -> pa.Array:
    start_us = int(cfg.start.timestamp()) * 1_000_000
    return pa.array(
        start_us + minutes.astype(np.int64) * SCRAPE_S * 1_000_000,
        type=pa.timestamp("us", tz="UTC"),
    )


def _apply_resets(
    values: np.ndarray, carry: np.ndarray, m0: int, resets: list[tuple[int, int]], cols_of
) -> None:
    """values: (M, X) running totals; restart them from 0 at each reset minute inside the chunk."""
    for minute, node in resets:
        i = minute - m0
        if 0 <= i < values.shape[0]:
            cols = cols_of(node)
            before = values[i - 1, cols] if i > 0 else carry[cols]
            values[i:, cols] -= before


def _pick(values: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The rows a scrape saw: all of them, or those where `mask` holds."""
    return values.reshape(-1) if mask is None else values[mask]


def gpu_sample_chunks(cfg: SimulationConfig, fleet: Fleet, st: State) -> Iterator[pa.Table]:
    """DCGM samples, sorted by (ts, node, gpu, metric), ~6 M rows a chunk."""
    T, N = cfg.minutes, fleet.n
    G, K = N * GPUS_PER_NODE, len(GPU_METRICS)
    step = chunk_minutes(cfg)
    gpu_cluster = np.repeat(fleet.cluster, GPUS_PER_NODE)
    mem_clock = np.array(MEM_CLOCK_MHZ, dtype=np.float64)[gpu_cluster]
    peak = np.array(PEAK_POWER_W)[gpu_cluster]
    carry = np.zeros((len(COUNTERS), G))
    # Counters start at a plausible lifetime total, not 0.
    carry[0] = rng0 = np.random.default_rng([cfg.seed, 11]).integers(0, 40, G)
    carry[1] = rng0 * 1e7
    gpu_cols = lambda node: slice(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)
    mig_fields = None  # (1, G, K): the device fields a MIG-partitioned GPU does not report
    if fleet.mig.any():
        mig_fields = np.zeros((1, G, K), dtype=bool)
        mig_fields[0, np.repeat(fleet.mig, GPUS_PER_NODE)] = np.isin(
            np.arange(K), PER_INSTANCE_ON_MIG
        )
    for ci, m0 in enumerate(range(0, T, step)):
        m1 = min(T, m0 + step)
        M = m1 - m0
        rng = np.random.default_rng([cfg.seed, int(cfg.start.timestamp()), 13, ci])
        u = st.util[m0:m1].astype(np.float64)
        busy = u > 0
        thr = st.throttled[m0:m1] & busy
        n1, n2, n3 = (rng.standard_normal((M, G), dtype=np.float32) for _ in range(3))
        vals = np.empty((M, G, K))
        vals[:, :, 0] = np.where(busy, np.clip(np.rint(u + 2.0 * n1), 0, 100), 0.0)
        sm = np.where(busy, 1980.0 - 15.0 * (np.abs(n2) > 1.5), 345.0)
        vals[:, :, 1] = np.where(thr, np.rint(1650.0 + 25.0 * n2), sm)
        vals[:, :, 2] = np.where(busy, mem_clock, 1593.0)
        temp = np.where(busy, 34.0 + 0.37 * u, 33.0) + 1.5 * n3 + 16.0 * thr
        vals[:, :, 3] = np.rint(temp)
        vals[:, :, 4] = np.rint(temp + 6.0 + 0.5 * n1)
        power = np.where(
            busy, 72.0 + (peak - 72.0) * u / 100.0 * (1 - 0.16 * thr) + 12.0 * n2, 71.0 + 2.0 * n3
        )
        vals[:, :, 5] = np.round(power, 3)
        vals[:, :, 6] = np.where(busy, np.rint(st.fb_pct[m0:m1] / 100.0 * FB_TOTAL_MIB), 1.0)
        inc = np.empty((len(COUNTERS), M, G))
        inc[0] = rng.poisson(0.0005, (M, G))
        inc[1] = np.rint(busy * u / 100.0 * 60 * 150_000 * (1 + 0.05 * n3))
        inc[2] = rng.poisson(0.00002, (M, G))
        for g, first, rate in st.sbe_rise:
            lo, hi = max(m0, first), min(m1, first + len(rate))
            if lo < hi:
                inc[2, lo - m0 : hi - m0, g] += rng.poisson(rate[lo - first : hi - first])
        inc[3] = 0.0
        for minute, g in st.dbe:
            if m0 <= minute < m1:
                inc[3, minute - m0, g] += 1
        for j, col in enumerate(COUNTERS):
            total = carry[j] + np.cumsum(inc[j], axis=0)
            _apply_resets(total, carry[j], m0, st.resets, gpu_cols)
            vals[:, :, col] = total
            carry[j] = total[-1]
        vals[:, :, 11] = 0.0
        vals[:, :, 12] = st.xid[m0:m1]
        vals[:, :, 13] = np.where(
            busy, np.clip(np.round(u / 100.0 * 0.55 + 0.03 * n1, 3), 0, 1), 0.0
        )
        present = st.present[m0:m1]
        minute_idx = np.broadcast_to(np.arange(m0, m1)[:, None, None], (M, G, K))
        gpu_idx = np.broadcast_to(np.arange(G)[None, :, None], (M, G, K))
        metric_idx = np.broadcast_to(np.arange(K)[None, None, :], (M, G, K))
        mask = None if present.all() else np.broadcast_to(present[:, :, None], (M, G, K))
        if mig_fields is not None:
            mask = present[:, :, None] & ~mig_fields
        gpus = _pick(gpu_idx, mask)
        yield pa.table(
            {
                "ts": _ts(cfg, _pick(minute_idx, mask)),
                "node": _dict(gpus // GPUS_PER_NODE, fleet.names),
                "gpu": pa.array((gpus % GPUS_PER_NODE).astype(np.int16)),
                "uuid": _dict(gpus, fleet.uuids),
                "metric": _dict(_pick(metric_idx, mask), GPU_METRICS),
                "value": pa.array(_pick(vals, mask)),
            }
        )


def node_sample_chunks(cfg: SimulationConfig, fleet: Fleet, st: State) -> Iterator[pa.Table]:
    """nic_links_up and nic_link_errors_total per node and minute, sorted by (ts, node, metric)."""
    T, N = cfg.minutes, fleet.n
    step = max(chunk_minutes(cfg), 1)
    rng = np.random.default_rng([cfg.seed, int(cfg.start.timestamp()), 17])
    carry = rng.integers(0, 500, N).astype(np.float64)
    for m0 in range(0, T, step):
        m1 = min(T, m0 + step)
        M = m1 - m0
        total = carry + np.cumsum(rng.poisson(st.link_err_rate[m0:m1]), axis=0)
        _apply_resets(total, carry, m0, st.resets, lambda node: node)
        carry = total[-1].copy()
        vals = np.stack([st.links[m0:m1].astype(np.float64), total], axis=-1)
        mask = np.broadcast_to(st.node_present[m0:m1, :, None], (M, N, 2))
        minute_idx = np.broadcast_to(np.arange(m0, m1)[:, None, None], (M, N, 2))
        node_idx = np.broadcast_to(np.arange(N)[None, :, None], (M, N, 2))
        metric_idx = np.broadcast_to(np.arange(2)[None, None, :], (M, N, 2))
        yield pa.table(
            {
                "ts": _ts(cfg, minute_idx[mask]),
                "node": _dict(node_idx[mask], fleet.names),
                "metric": _dict(metric_idx[mask], NODE_METRICS),
                "value": pa.array(vals[mask]),
            }
        )


def condition_chunks(cfg: SimulationConfig, fleet: Fleet, st: State) -> Iterator[pa.Table]:
    """One sample per node, condition and minute, sorted by (ts, node, condition)."""
    T, N, C = cfg.minutes, fleet.n, len(CONDITIONS)
    step = max(chunk_minutes(cfg), 1)
    cond_name = [s[0] for s in st.states]
    status = [s[1] for s in st.states]
    reasons = sorted({s[2] for s in st.states if s[2] is not None})
    messages = sorted({s[3] for s in st.states if s[3] is not None})
    reason_idx = np.array([reasons.index(s[2]) if s[2] is not None else -1 for s in st.states])
    message_idx = np.array([messages.index(s[3]) if s[3] is not None else -1 for s in st.states])
    status_names = ["True", "False", "Unknown"]
    status_idx = np.array([status_names.index(s) for s in status])
    cond_idx = np.array([CONDITIONS.index(c) for c in cond_name])
    for m0 in range(0, T, step):
        m1 = min(T, m0 + step)
        M = m1 - m0
        codes = np.transpose(st.cond[:, m0:m1, :], (1, 2, 0)).reshape(-1)
        minutes = np.repeat(np.arange(m0, m1), N * C)
        nodes = np.tile(np.repeat(np.arange(N), C), M)
        r, msg = reason_idx[codes], message_idx[codes]
        yield pa.table(
            {
                "ts": _ts(cfg, minutes),
                "node": _dict(nodes, fleet.names),
                "condition": _dict(cond_idx[codes], CONDITIONS),
                "status": _dict(status_idx[codes], status_names),
                "reason": pa.DictionaryArray.from_arrays(
                    pa.array(np.maximum(r, 0).astype(np.int32), mask=r < 0),
                    pa.array(reasons, pa.string()),
                ),
                "message": pa.DictionaryArray.from_arrays(
                    pa.array(np.maximum(msg, 0).astype(np.int32), mask=msg < 0),
                    pa.array(messages, pa.string()),
                ),
            }
        )
