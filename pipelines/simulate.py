"""The fleet simulator: a realistic GPU fleet with injected faults and a ground-truth table.

It is the demo's embedded source and the oracle for detection quality, so it lands
exactly the landing tables of `queries/schema/landing.sql` (plus `ground_truth`):

- `nodes`: `gpu-000`, `gpu-001`, ... in two clusters: `train-use1-a` (p5.48xlarge,
  `NVIDIA H100 80GB HBM3`, 32 EFA links) and `train-use1-b` (p5en.48xlarge, `NVIDIA H200`,
  16 EFA links), 8 GPUs each. 60 % of each cluster is the training partition (whole
  nodes, multi-node jobs), the rest runs 1-GPU (`dev`) and 8-GPU (`batch`) jobs.
- `gpu_samples`: one scrape a minute per GPU of 14 dcgm-exporter fields
  (DCGM_FI_DEV_GPU_UTIL %, SM_CLOCK / MEM_CLOCK MHz, GPU_TEMP / MEMORY_TEMP C,
  POWER_USAGE W, FB_USED MiB, the counters PCIE_REPLAY_COUNTER, NVLINK_BANDWIDTH_TOTAL,
  ECC_SBE_VOL_TOTAL, ECC_DBE_VOL_TOTAL, the gauges ROW_REMAP_FAILURE, XID_ERRORS (last
  XID, 0 if none) and DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (ratio 0-1)). Values follow load;
  counters only grow and restart from 0 when the node reboots.
- `node_samples`: one scrape a minute per node of the canonical node metrics
  `nic_links_up` (network links up across the node's adapters, to compare with
  `nodes.nic_expected`; what node-exporter's `node_infiniband_*` or the EFA exporter's
  `node_amazonefa_*` link states sum to) and `nic_link_errors_total` (a counter of link
  errors across the node's adapters).
- `node_conditions`: one sample a minute per node of `Ready`, `MemoryPressure`,
  `AcceleratedHardwareReady`, `NetworkingReady` (EKS node monitoring agent reasons)
  and `Unschedulable` (True while cordoned, as kube_node_spec_unschedulable says).
- `jobs`, `job_attempts`, `rank_steps` (one rank per GPU of multi-node jobs),
  `checkpoints` (blocking saves inside steps; a restore at the start of every resumed
  attempt), `gpu_events` (XIDs), `maintenance` (planned windows).
- `ground_truth`: one row per injected fault (fault_id, kind, class, entity_type, node,
  gpu, uuid, job_id, rank, start_ts, end_ts, expected_effect). Kinds of the default
  plan (`pipelines.simulator.model.DEFAULT_FAULT_PLAN`): xid79_fell_off_bus, ecc_dbe,
  thermal_throttle, nic_links_down, telemetry_gap, condition_flap, crash_loop, preemption.
- With `SimulationConfig.inference`: `gpu_instance_samples` of one MIG-partitioned inference
  node per cluster, a few whole-node jobs that under-use their GPUs, and `utilisation_truth`
  (per workload and ISO week: GPU-hours, idle allocated GPU-hours, the MIG profile packing
  should recommend and the GPUs it frees; `pipelines.simulator.inference`).

Deterministic per (seed, start, nodes, days).
"""

from __future__ import annotations

from pipelines.simulator.model import DEFAULT_FAULT_PLAN, SimulationConfig, last_full_iso_week_start
from pipelines.simulator.output import OUTPUT_TABLES, SCHEMAS, run, simulate, simulate_to_dir
from pipelines.simulator.telemetry import CONDITIONS, GPU_METRICS, NODE_METRICS

__all__ = [
    "CONDITIONS",
    "DEFAULT_FAULT_PLAN",
    "GPU_METRICS",
    "NODE_METRICS",
    "OUTPUT_TABLES",
    "SCHEMAS",
    "SimulationConfig",
    "last_full_iso_week_start",
    "run",
    "simulate",
    "simulate_to_dir",
]
