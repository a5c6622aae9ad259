"""Kubernetes source: `kubectl get jobs -o json` and Kubeflow PyTorchJobs → `jobs`, `job_attempts`.

Input: the JSON of `kubectl get jobs,pytorchjobs -A -o json` (a `List` of objects), or of a
single object. The job id is `<namespace>/<name>`; `team` is the namespace; `queue` the
Kueue queue label `kueue.x-k8s.io/queue-name`; `user` the label named by `user_label`.

batch/v1 Job: condition `Complete` → succeeded; `Failed` with reason `DeadlineExceeded` →
timeout, `BackoffLimitExceeded` → failed, `PodFailurePolicy` → failed (exit code taken from
the message, `oom` when it names exit code 137 / OOMKilled). No terminal condition → running.
One attempt per Job: its pods' retries are not in the Job status.

Kubeflow PyTorchJob (kubeflow.org/v1): conditions Created/Running/Restarting/Succeeded/Failed.
The status keeps only the last transition of each type, so a job that restarted shows two
attempts: up to its last `Restarting` transition (state failed) and from there to the end.
GPUs: replicas x the container limit `nvidia.com/gpu`, summed over replica types.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.errors import InputError
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, load_batch

GPU_RESOURCE = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _ts(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text).astimezone(UTC)


def _pod_gpus(template: dict[str, Any]) -> int:
    total = 0
    for container in template.get("spec", {}).get("containers", []) or []:
        resources = container.get("resources", {}) or {}
        value = (resources.get("limits") or {}).get(GPU_RESOURCE) or (resources.get("requests") or {}).get(GPU_RESOURCE)
        if value is not None:
            total += int(str(value))
    return total


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in status.get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def _true(c: dict[str, Any] | None) -> bool:
    return c is not None and str(c.get("status")) == "True"


_EXIT = re.compile(r"exit code (\d+)")


def _failure(reason: str | None, message: str | None) -> tuple[str, int | None]:
    text = f"{reason or ''} {message or ''}"
    match = _EXIT.search(message or "")
    code = int(match.group(1)) if match else None
    if reason == "DeadlineExceeded" or "DeadlineExceeded" in text:
        return "timeout", code
    if "OOMKilled" in text or code == 137 and "OOM" in text.upper():
        return "oom", code
    if reason == "Evicted" or "Evicted" in text or "Preempted" in text:
        return "preempted", code
    return "failed", code


def _base(obj: dict[str, Any], user_label: str) -> dict[str, Any]:
    meta = obj.get("metadata", {})
    labels = meta.get("labels") or {}
    return {
        "job_id": f"{meta.get('namespace', 'default')}/{meta['name']}",
        "name": meta["name"],
        "user": labels.get(user_label),
        "team": meta.get("namespace"),
        "queue": labels.get(QUEUE_LABEL),
        "submit_ts": _ts(meta.get("creationTimestamp")),
    }


def _batch_job(obj: dict[str, Any], user_label: str) -> tuple[dict, list[dict]]:
    spec, status = obj.get("spec", {}), obj.get("status", {}) or {}
    job = _base(obj, user_label)
    parallelism = int(spec.get("parallelism", 1) or 1)
    job["num_gpus"] = parallelism * _pod_gpus(spec.get("template", {}))
    complete, failed = _condition(status, "Complete"), _condition(status, "Failed")
    start = _ts(status.get("startTime"))
    exit_code, reason = None, None
    if _true(complete):
        state, end = "succeeded", _ts(status.get("completionTime")) or _ts(complete.get("lastTransitionTime"))
        exit_code = 0
    elif _true(failed):
        state, exit_code = _failure(failed.get("reason"), failed.get("message"))
        end, reason = _ts(failed.get("lastTransitionTime")), failed.get("reason")
    else:
        state, end = "running", None
    job.update(start_ts=start, end_ts=end, state=state, exit_code=exit_code, reason=reason)
    attempts = []
    if start is not None:
        attempts.append(
            {"job_id": job["job_id"], "attempt": 0, "start_ts": start, "end_ts": end, "state": state,
             "exit_code": exit_code, "reason": reason, "nodes": []}
        )
    return job, attempts


def _pytorch_job(obj: dict[str, Any], user_label: str) -> tuple[dict, list[dict]]:
    spec, status = obj.get("spec", {}), obj.get("status", {}) or {}
    job = _base(obj, user_label)
    replicas = spec.get("pytorchReplicaSpecs", {}) or {}
    job["num_gpus"] = sum(
        int(r.get("replicas", 1) or 1) * _pod_gpus(r.get("template", {})) for r in replicas.values()
    )
    start = _ts(status.get("startTime"))
    succeeded, failed = _condition(status, "Succeeded"), _condition(status, "Failed")
    restarting = _condition(status, "Restarting")
    exit_code, reason = None, None
    if _true(succeeded):
        state, exit_code = "succeeded", 0
        end = _ts(status.get("completionTime")) or _ts(succeeded.get("lastTransitionTime"))
    elif _true(failed):
        state, exit_code = _failure(failed.get("reason"), failed.get("message"))
        end, reason = _ts(status.get("completionTime")) or _ts(failed.get("lastTransitionTime")), failed.get("reason")
    else:
        state, end = "running", None
    job.update(start_ts=start, end_ts=end, state=state, exit_code=exit_code, reason=reason)
    attempts = []
    if start is not None:
        restart_ts = _ts(restarting.get("lastTransitionTime")) if restarting else None
        first_end = restart_ts if restart_ts is not None and restart_ts > start else None
        if first_end is not None:
            attempts.append(
                {"job_id": job["job_id"], "attempt": 0, "start_ts": start, "end_ts": first_end,
                 "state": "failed", "exit_code": None, "reason": restarting.get("reason"), "nodes": []}
            )
        attempts.append(
            {"job_id": job["job_id"], "attempt": len(attempts), "start_ts": first_end or start, "end_ts": end,
             "state": state, "exit_code": exit_code, "reason": reason, "nodes": []}
        )
    return job, attempts


def parse_kube_jobs(text: str, origin: str = "<kubectl>", user_label: str = "gpufleet.io/user") -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """(jobs, job_attempts, objects skipped) from kubectl JSON. Row numbers are item indexes (1-based)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"is not JSON: {e.msg}", file=origin, line=e.lineno,
                         hint="Pass the output of `kubectl get jobs,pytorchjobs -A -o json`.") from None
    items = doc.get("items") if isinstance(doc, dict) and doc.get("kind", "").endswith("List") else [doc]
    if not isinstance(items, list):
        raise InputError("has no `items` list", file=origin)
    jobs, attempts, skipped = [], [], 0
    for index, obj in enumerate(items, start=1):
        if not isinstance(obj, dict):
            raise InputError("is not a Kubernetes object", file=origin, row=index)
        kind = obj.get("kind")
        try:
            if kind == "Job":
                job, job_attempts = _batch_job(obj, user_label)
            elif kind == "PyTorchJob":
                job, job_attempts = _pytorch_job(obj, user_label)
            else:
                skipped += 1
                continue
        except (KeyError, ValueError, TypeError, AttributeError) as e:
            raise InputError(f"{kind} cannot be read: {type(e).__name__} {e}", file=origin, row=index,
                             hint="Pass unmodified `kubectl get ... -o json` output.") from None
        jobs.append({ROW_COLUMN: index, **job})
        attempts.extend({ROW_COLUMN: index, **a} for a in job_attempts)
    ts = pl.Datetime("us", "UTC")
    jobs_frame = pl.DataFrame(
        jobs,
        schema={ROW_COLUMN: pl.Int64, "job_id": pl.String, "name": pl.String, "user": pl.String, "team": pl.String,
                "queue": pl.String, "submit_ts": ts, "num_gpus": pl.Int64, "start_ts": ts, "end_ts": ts,
                "state": pl.String, "exit_code": pl.Int64, "reason": pl.String},
    )
    attempts_frame = pl.DataFrame(
        attempts,
        schema={ROW_COLUMN: pl.Int64, "job_id": pl.String, "attempt": pl.Int64, "start_ts": ts, "end_ts": ts,
                "state": pl.String, "exit_code": pl.Int64, "reason": pl.String, "nodes": pl.List(pl.String)},
    )
    return jobs_frame, attempts_frame, skipped


def ingest_kube_jobs(con: duckdb.DuckDBPyConnection, path: str | Path, user_label: str = "gpufleet.io/user") -> tuple[list[LoadResult], int]:
    """Load one kubectl JSON file as one batch; also return how many objects were not jobs."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the file: {e}", file=str(path)) from e
    jobs, attempts, skipped = parse_kube_jobs(text, str(path), user_label)
    items = [TableInput("jobs", jobs, str(path)), TableInput("job_attempts", attempts, str(path))]
    return load_batch(con, items, source=f"kube-jobs:{path.name}"), skipped
