"""The landing contract's rules beyond column types (types live in queries/schema/landing.sql).

Natural keys make loads idempotent. Records that a source may update later
(a running job that ends) are upserted; immutable facts (samples, events,
steps) are only inserted when their key is new.
"""

from __future__ import annotations

LANDING_TABLES: tuple[str, ...] = (
    "nodes",
    "node_conditions",
    "gpu_samples",
    "node_samples",
    "gpu_events",
    "jobs",
    "job_attempts",
    "rank_steps",
    "checkpoints",
    "maintenance",
)

NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "nodes": ("node",),
    "node_conditions": ("node", "condition", "ts"),
    "gpu_samples": ("node", "gpu", "metric", "ts"),
    "node_samples": ("node", "metric", "ts"),
    "gpu_events": ("node", "gpu", "ts", "kind", "code"),
    "jobs": ("job_id",),
    "job_attempts": ("job_id", "attempt"),
    "rank_steps": ("job_id", "attempt", "step", "rank"),
    "checkpoints": ("job_id", "attempt", "step", "kind"),
    "maintenance": ("node", "start_ts"),
}

# Tables whose rows a later load may correct (state changes): newest load wins.
UPSERT_TABLES: frozenset[str] = frozenset({"nodes", "jobs", "job_attempts", "maintenance"})

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

# Immutable records a batch must not repeat (a repeated step would skew the rank statistics).
# The scrape tables (samples, conditions) are left out: checking hundreds of millions of keys
# would cost more than the load itself, and a repeated scrape does not change a metric.
UNIQUE_IN_BATCH: frozenset[str] = frozenset({"rank_steps", "checkpoints", "gpu_events"})
