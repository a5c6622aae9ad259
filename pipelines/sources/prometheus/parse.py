"""Response parsing and label mapping: an answer's series as columns, and which node, GPU,
MIG instance and job a series' labels name."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl


def node_of(labels: dict[str, str], node_labels: Iterable[str]) -> str | None:
    """The node a series belongs to: the first non-empty label of `node_labels`."""
    for name in node_labels:
        value = labels.get(name)
        if value:
            if name == "instance":
                value = re.sub(r":\d+$", "", value).strip("[]")
            return value
    return None


@dataclass
class Chunk:
    """One query's answer for one chunk, columnar: series `i` owns `counts[i]` consecutive samples."""

    labels: list[dict[str, str]]
    counts: np.ndarray  # int64, one per series, all > 0
    ts: np.ndarray  # int64 ms
    values: np.ndarray  # float64

    @property
    def samples(self) -> int:
        return int(self.ts.size)

    def series_ids(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.labels)), self.counts)

    def series(self) -> Iterable[tuple[dict[str, str], list[int], list[float]]]:
        """(labels, ts_ms, values) per series, for consumers that walk samples in order."""
        bounds = np.concatenate(([0], np.cumsum(self.counts)))
        for i, labels in enumerate(self.labels):
            lo, hi = bounds[i], bounds[i + 1]
            yield labels, self.ts[lo:hi].tolist(), self.values[lo:hi].tolist()


def parse_matrix(result: list[dict[str, Any]], a_ms: int, b_ms: int) -> tuple[Chunk, int]:
    """The series of a range-selector answer, samples kept only in `[a_ms, b_ms)`, and the
    number of non-finite samples (`+Inf`, `-Inf`, `NaN`) left out: no landing table takes
    them (a sample that is not a number is not a reading), so they count as missing."""
    labels: list[dict[str, str]] = []
    counts: list[int] = []
    flat_ts: list[float] = []
    flat_v: list[str] = []
    for series in result:
        values = series.get("values")
        if not values:
            continue
        raw_ts, raw_v = zip(*values, strict=True)
        flat_ts.extend(raw_ts)
        flat_v.extend(raw_v)
        counts.append(len(raw_ts))
        labels.append(series["metric"])
    ts = np.rint(np.asarray(flat_ts, dtype=np.float64) * 1000).astype(np.int64)
    vals = np.asarray(flat_v, dtype=np.float64)  # parses "NaN", "+Inf" as Prometheus writes them
    count_arr = np.asarray(counts, dtype=np.int64)
    in_window = (ts >= a_ms) & (ts < b_ms)
    keep = in_window & np.isfinite(vals)
    non_finite = int((in_window & ~np.isfinite(vals)).sum())
    if not keep.all():
        ids = np.repeat(np.arange(len(labels)), count_arr)[keep]
        count_arr = np.bincount(ids, minlength=len(labels)).astype(np.int64)
        ts, vals = ts[keep], vals[keep]
        nonempty = count_arr > 0
        labels = [lab for lab, ok in zip(labels, nonempty, strict=True) if ok]
        count_arr = count_arr[nonempty]
    return Chunk(labels, count_arr, ts, vals), non_finite


# Kubernetes pod names end in the controller's suffix: Kubeflow replicas `-worker-0`, a batch
# Job's pods five random characters. What is left is the job's name (kube_jobs' job_id is
# `namespace/name`).
_REPLICA_SUFFIX = re.compile(r"-(?:master|worker|launcher|chief|ps|evaluator)-\d+$")
_JOB_POD_SUFFIX = re.compile(r"-[a-z0-9]{5}$")


def job_of_labels(labels: dict[str, str]) -> str | None:
    """The job a dcgm-exporter series names: Slurm `hpc_job`, else the pod's job
    (`namespace/<job>`, from `pod`/`namespace` or the 1.x `pod_name`/`pod_namespace`)."""
    if labels.get("hpc_job"):
        return labels["hpc_job"]
    pod = labels.get("pod") or labels.get("pod_name")
    if not pod:
        return None
    namespace = labels.get("namespace") or labels.get("pod_namespace") or "default"
    name, replaced = _REPLICA_SUFFIX.subn("", pod)
    if not replaced:
        name = _JOB_POD_SUFFIX.sub("", pod)
    return f"{namespace}/{name}"


def mig_instance(labels: dict[str, str]) -> tuple[int, str | None, str | None] | None:
    """(GPU_I_ID, GPU_I_PROFILE, job) of a MIG instance series; None for a whole-device series."""
    gi = labels.get("GPU_I_ID", "")
    if not gi.isdigit():
        return None
    return int(gi), labels.get("GPU_I_PROFILE") or None, job_of_labels(labels)


def first_label(labels: dict[str, str], names: Iterable[str]) -> str | None:
    for name in names:
        if labels.get(name):
            return labels[name]
    return None


def first_int_label(labels: dict[str, str], names: Iterable[str]) -> int | None:
    value = first_label(labels, names)
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return int(number) if number is not None and math.isfinite(number) else None


def samples_frame(cols: dict[str, list]) -> pl.DataFrame:
    frame = pl.DataFrame(cols, strict=False)
    if "cluster" in frame.columns:
        frame = frame.with_columns(pl.col("cluster").cast(pl.String))
    if "ts" in frame.columns:
        frame = frame.with_columns(pl.col("ts").cast(pl.Int64).cast(pl.Datetime("ms", "UTC")))
    return frame
