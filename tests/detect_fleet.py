"""A tiny hand-made fleet for the detector tests: one or more 8-GPU nodes, one sample a minute.

Every value is set explicitly by the test (healthy defaults, then the fault), so each expected
finding can be worked out by hand from sample indices: sample i is at T0 + i minutes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl

from pipelines.store import TableInput, load_batch

T0 = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)  # Monday of ISO week 2026-W48


def at(i: float) -> dt.datetime:
    """The instant of sample `i` (minutes after T0)."""
    return T0 + dt.timedelta(minutes=i)


HEALTHY = {
    "DCGM_FI_DEV_GPU_UTIL": 95.0,
    "DCGM_FI_DEV_SM_CLOCK": 1980.0,
    "DCGM_FI_DEV_POWER_USAGE": 650.0,
    "DCGM_FI_DEV_GPU_TEMP": 60.0,
}


@dataclass
class Fleet:
    minutes: int = 120
    nodes: list[str] = field(default_factory=lambda: ["n1"])
    gpus: int = 8
    nic_expected: int | None = 32
    # (node, gpu, metric) -> list of values per minute (None = no sample)
    series: dict[tuple[str, int, str], list[float | None]] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    node_samples: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    ready: dict[str, list[str | None]] = field(default_factory=dict)
    # (node, gpu) -> (minute, uuid): the GPU was swapped; from that minute it reports this UUID.
    swapped: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.nodes:
            for gpu in range(self.gpus):
                for metric, value in HEALTHY.items():
                    # A deterministic wobble so peers are never exactly identical.
                    self.series[(node, gpu, metric)] = [
                        value * (1 + 0.002 * (((i * 7 + gpu * 3) % 5) - 2))
                        for i in range(self.minutes)
                    ]
            self.ready[node] = ["True"] * self.minutes

    def set(self, node: str, gpu: int, metric: str, values: dict[int, float | None] | list) -> None:
        s = self.series.setdefault((node, gpu, metric), [0.0] * self.minutes)
        items = values.items() if isinstance(values, dict) else enumerate(values)
        for i, v in items:
            s[i] = v

    def drop(self, node: str, gpu: int, minutes: range) -> None:
        """The GPU reports nothing during these minutes."""
        for (n, g, _), s in self.series.items():
            if n == node and g == gpu:
                for i in minutes:
                    s[i] = None

    def uuid(self, node: str, gpu: int, minute: int) -> str:
        swap = self.swapped.get((node, gpu))
        if swap is not None and minute >= swap[0]:
            return swap[1]
        return f"GPU-{node}-{gpu}"

    def frames(self) -> dict[str, pl.DataFrame]:
        nodes = pl.DataFrame(
            {
                "node": self.nodes,
                "cluster": ["c1"] * len(self.nodes),
                "instance_type": ["p5.48xlarge"] * len(self.nodes),
                "gpu_model": ["NVIDIA H100 80GB HBM3"] * len(self.nodes),
                "gpu_count": [self.gpus] * len(self.nodes),
                "nic_expected": [self.nic_expected] * len(self.nodes),
            }
        )
        rows = [
            {"ts": at(i), "node": n, "gpu": g, "uuid": self.uuid(n, g, i), "metric": m, "value": v}
            for (n, g, m), s in self.series.items()
            for i, v in enumerate(s)
            if v is not None
        ]
        conditions = [
            {
                "ts": at(i),
                "node": n,
                "condition": "Ready",
                "status": st,
                "reason": None,
                "message": None,
            }
            for n, statuses in self.ready.items()
            for i, st in enumerate(statuses)
            if st is not None
        ] + self.conditions
        out = {
            "nodes": nodes,
            "gpu_samples": pl.DataFrame(rows),
            "node_conditions": pl.DataFrame(conditions),
        }
        if self.node_samples:
            out["node_samples"] = pl.DataFrame(self.node_samples)
        if self.events:
            out["gpu_events"] = pl.DataFrame(self.events)
        if self.jobs:
            out["jobs"] = pl.DataFrame(self.jobs)
            out["job_attempts"] = pl.DataFrame(self.attempts)
        if self.steps:
            out["rank_steps"] = pl.DataFrame(self.steps)
        if self.checkpoints:
            out["checkpoints"] = pl.DataFrame(self.checkpoints)
        return out

    def load(self, con: duckdb.DuckDBPyConnection) -> None:
        items = [
            TableInput(name, frame.with_row_index("__row", offset=1), f"{name} (test fleet)")
            for name, frame in self.frames().items()
        ]
        load_batch(con, items, "test")
