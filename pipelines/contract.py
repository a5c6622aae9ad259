"""The landing contract's rules beyond column types (types live in queries/schema/landing.sql).

Natural keys make loads idempotent. Records that a source may update later
(a running job that ends) are upserted; immutable facts (samples, events,
steps) are only inserted when their key is new.
"""

from __future__ import annotations

from typing import Literal

LANDING_TABLES: tuple[str, ...] = (
    "nodes",
    "node_conditions",
    "gpu_samples",
    "gpu_instance_samples",
    "node_samples",
    "gpu_events",
    "jobs",
    "job_attempts",
    "rank_steps",
    "checkpoints",
    "maintenance",
)

# How a landing record finds its cluster when it names none: by its job, or by its node.
JOB_KEYED_TABLES: frozenset[str] = frozenset({"jobs", "job_attempts", "rank_steps", "checkpoints"})
NODE_KEYED_TABLES: frozenset[str] = frozenset(LANDING_TABLES) - JOB_KEYED_TABLES

NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "nodes": ("cluster", "node"),
    "node_conditions": ("cluster", "node", "condition", "ts"),
    "gpu_samples": ("cluster", "node", "gpu", "metric", "ts"),
    "gpu_instance_samples": ("cluster", "node", "gpu", "gpu_i_id", "metric", "ts"),
    "node_samples": ("cluster", "node", "metric", "ts"),
    "gpu_events": ("cluster", "node", "gpu", "ts", "kind", "code"),
    "jobs": ("cluster", "job_id"),
    "job_attempts": ("cluster", "job_id", "attempt"),
    "rank_steps": ("cluster", "job_id", "attempt", "step", "rank"),
    "checkpoints": ("cluster", "job_id", "attempt", "step", "kind"),
    "maintenance": ("cluster", "node", "start_ts"),
}

# Landing tables kept as a view over compact storage tables (queries/schema/landing.sql): the
# contract's columns are the view's; NOT NULL comes from the storage tables' columns.
COMPACT_STORAGE: dict[str, tuple[str, ...]] = {
    "gpu_samples": ("gpu_series", "gpu_sample_values"),
}
STORAGE_TABLES: frozenset[str] = frozenset(t for ts in COMPACT_STORAGE.values() for t in ts)

# Tables whose rows a later load may correct (state changes): newest load wins.
UPSERT_TABLES: frozenset[str] = frozenset({"nodes", "jobs", "job_attempts", "maintenance"})

# What a load narrows its probe for already-stored keys to (pipelines/store.py), so the probe
# follows the batch, not the history: the batch's time range, or the batch's jobs (tables keyed by
# job and step, with no time in the key). Upsert tables compare the whole batch instead.
PROBE_WINDOW: dict[str, Literal["ts", "job_id"]] = {
    "node_conditions": "ts",
    "gpu_samples": "ts",
    "gpu_instance_samples": "ts",
    "node_samples": "ts",
    "gpu_events": "ts",
    "rank_steps": "job_id",
    "checkpoints": "job_id",
}

JOB_STATES: tuple[str, ...] = (
    "succeeded",
    "failed",
    "node_fail",
    "timeout",
    "oom",
    "cancelled",
    "preempted",
    "running",
)

ALLOWED_VALUES: dict[tuple[str, str], tuple[str, ...]] = {
    ("node_conditions", "status"): ("True", "False", "Unknown"),
    ("jobs", "state"): JOB_STATES,
    ("job_attempts", "state"): JOB_STATES,
    ("checkpoints", "kind"): ("save", "restore"),
}


# Records whose start and end bound an interval: the end may not come before the start.
INTERVAL_COLUMNS: dict[str, tuple[str, str]] = {
    "maintenance": ("start_ts", "end_ts"),
    "jobs": ("start_ts", "end_ts"),
    "job_attempts": ("start_ts", "end_ts"),
}

# One rule for repeats, every table: a record repeated exactly within a batch (logs shipped at
# least once repeat lines) is loaded once and counted; two records of one natural key with
# different values are refused, naming both lines.

# Values that cannot be negative (seconds, GPU counts).
NON_NEGATIVE: dict[str, tuple[str, ...]] = {
    "nodes": ("gpu_count",),
    "jobs": ("num_gpus",),
    "rank_steps": ("step_s", "compute_s"),
    "checkpoints": ("duration_s",),
}

# Sample values must be finite: NaN or infinity is refused.
FINITE_COLUMNS: dict[str, tuple[str, ...]] = {
    "gpu_samples": ("value",),
    "gpu_instance_samples": ("value",),
    "node_samples": ("value",),
}

# A step's busy time cannot exceed its wall time. Up to this much above (two values logged to
# the millisecond, each rounded) is rounding: `compute_s` is clipped to `step_s` and counted;
# more is refused.
COMPUTE_ROUNDING_S = 0.001

# Columns that fix a job's identity once it has ended: a later batch that changes them is a
# different job reusing the id (a reset id counter, another cluster), not an update.
IDENTITY_WHEN_ENDED: dict[str, tuple[str, ...]] = {
    "jobs": ("submit_ts", "num_gpus"),
}
