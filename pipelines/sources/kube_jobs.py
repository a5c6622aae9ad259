"""Kubernetes source: `kubectl get jobs -o json` and Kubeflow PyTorchJobs → `jobs`, `job_attempts`.

Input: the JSON of `kubectl get jobs,pytorchjobs -A -o json` (a `List` of objects), or of a
single object. The job id is `<namespace>/<name>`; `team` is the namespace; `queue` the
Kueue queue label `kueue.x-k8s.io/queue-name`; `user` the label named by `user_label`.

batch/v1 Job: condition `Complete` → succeeded; `Failed` with reason `DeadlineExceeded` →
timeout, `BackoffLimitExceeded` → failed (exit code of the job's last failed pod, when its pods are
given), `PodFailurePolicy` → failed (exit code taken from the message, `oom` when it names exit code
137 / OOMKilled). No terminal condition → running. One attempt per Job.

Nodes: a Job's status does not say where it ran; its pods do. Pods (`kubectl get pods -A -o json`,
in the same list or a second file) belong to a Job or PyTorchJob through their owner reference or
the labels `batch.kubernetes.io/job-name` / `job-name` / `training.kubeflow.org/job-name`; an
attempt's nodes are the `spec.nodeName` of its pods that ran during the attempt. Without pods, a pod
template pinned to one node (`spec.nodeName` or the `kubernetes.io/hostname` node selector) names it;
otherwise the node list stays empty and nothing can be attributed.

Kubeflow PyTorchJob (kubeflow.org/v1): conditions Created/Running/Restarting/Succeeded/Failed.
The status keeps only the last transition of each type, so a job that restarted shows two
attempts: up to its last `Restarting` transition (state failed) and from there to the end.
GPUs: replicas x the container limit `nvidia.com/gpu`, summed over replica types.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeGuard

import duckdb
import polars as pl

from pipelines.errors import InputError
from pipelines.sources.protocol import SourceReport, WholeFileSource
from pipelines.sources.scheduler_rows import ATTEMPT_SCHEMA, JOB_SCHEMA
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, load_batch

GPU_RESOURCE = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_NAME_LABELS = (
    "batch.kubernetes.io/job-name",
    "job-name",
    "training.kubeflow.org/job-name",
    "pytorch-job-name",
)
"""Pod labels naming the Job or PyTorchJob that created the pod (newest Kubernetes/Kubeflow first)."""
OWNER_KINDS = ("Job", "PyTorchJob")
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _ts(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text).astimezone(UTC)


def _pod_gpus(template: dict[str, Any]) -> int:
    total = 0
    for container in template.get("spec", {}).get("containers", []) or []:
        resources = container.get("resources", {}) or {}
        value = (resources.get("limits") or {}).get(GPU_RESOURCE) or (
            resources.get("requests") or {}
        ).get(GPU_RESOURCE)
        if value is not None:
            total += int(str(value))
    return total


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in status.get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def _true(c: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
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


class Pod:
    """What a job's pod tells: where it ran, when, and how its containers ended."""

    def __init__(self, obj: dict[str, Any]) -> None:
        meta, spec, status = (
            obj.get("metadata", {}),
            obj.get("spec", {}) or {},
            obj.get("status", {}) or {},
        )
        self.namespace = meta.get("namespace", "default")
        labels = meta.get("labels") or {}
        owners = [
            o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") in OWNER_KINDS
        ]
        self.job_name: str | None = (
            owners[0]
            if owners
            else next((labels[k] for k in JOB_NAME_LABELS if labels.get(k)), None)
        )
        self.node: str | None = spec.get("nodeName")
        self.start = _ts(status.get("startTime"))
        terminated = [
            s["state"]["terminated"]
            for s in status.get("containerStatuses") or []
            if (s.get("state") or {}).get("terminated")
        ]
        self.end = max(
            (t for t in (_ts(x.get("finishedAt")) for x in terminated) if t is not None),
            default=None,
        )
        failed = [x for x in terminated if x.get("exitCode") not in (None, 0)]
        # the container that failed last speaks for the pod
        last = max(failed, key=lambda x: x.get("finishedAt") or "", default=None)
        self.exit_code: int | None = int(last["exitCode"]) if last is not None else None

    @property
    def job_id(self) -> str | None:
        return f"{self.namespace}/{self.job_name}" if self.job_name else None

    def ran_during(self, start: datetime | None, end: datetime | None) -> bool:
        """Whether the pod overlaps [start, end) (unknown times overlap)."""
        if self.start is not None and end is not None and self.start >= end:
            return False
        return not (self.end is not None and start is not None and self.end <= start)


def _template_node(template: dict[str, Any]) -> list[str]:
    """The node a pod template is pinned to, if any."""
    spec = template.get("spec", {}) or {}
    node = spec.get("nodeName") or (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL)
    return [node] if node else []


def _attempt_nodes(
    pods: list[Pod], start: datetime | None, end: datetime | None, pinned: list[str]
) -> list[str]:
    nodes = sorted({p.node for p in pods if p.node and p.ran_during(start, end)})
    return nodes or pinned


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


def _batch_job(obj: dict[str, Any], user_label: str, pods: list[Pod]) -> tuple[dict, list[dict]]:
    spec, status = obj.get("spec", {}), obj.get("status", {}) or {}
    job = _base(obj, user_label)
    parallelism = int(spec.get("parallelism", 1) or 1)
    job["num_gpus"] = parallelism * _pod_gpus(spec.get("template", {}))
    complete, failed = _condition(status, "Complete"), _condition(status, "Failed")
    start = _ts(status.get("startTime"))
    exit_code, reason = None, None
    if _true(complete):
        state, end = (
            "succeeded",
            _ts(status.get("completionTime")) or _ts(complete.get("lastTransitionTime")),
        )
        exit_code = 0
    elif _true(failed):
        state, exit_code = _failure(failed.get("reason"), failed.get("message"))
        end, reason = _ts(failed.get("lastTransitionTime")), failed.get("reason")
        if exit_code is None:
            # BackoffLimitExceeded names no exit code: the last failed pod's is the job's
            failed_pods = [p for p in pods if p.exit_code is not None]
            last = max(
                failed_pods, key=lambda p: p.end or datetime.min.replace(tzinfo=UTC), default=None
            )
            exit_code = last.exit_code if last is not None else None
    else:
        state, end = "running", None
    job.update(start_ts=start, end_ts=end, state=state, exit_code=exit_code, reason=reason)
    attempts = []
    if start is not None:
        nodes = _attempt_nodes(pods, start, end, _template_node(spec.get("template", {})))
        attempts.append(
            {
                "job_id": job["job_id"],
                "attempt": 0,
                "start_ts": start,
                "end_ts": end,
                "state": state,
                "exit_code": exit_code,
                "reason": reason,
                "nodes": nodes,
            }
        )
    return job, attempts


def _pytorch_job(obj: dict[str, Any], user_label: str, pods: list[Pod]) -> tuple[dict, list[dict]]:
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
        end, reason = (
            _ts(status.get("completionTime")) or _ts(failed.get("lastTransitionTime")),
            failed.get("reason"),
        )
    else:
        state, end = "running", None
    job.update(start_ts=start, end_ts=end, state=state, exit_code=exit_code, reason=reason)
    attempts = []
    if start is not None:
        pinned = sorted(
            {n for r in replicas.values() for n in _template_node(r.get("template", {}))}
        )
        restart_ts = _ts(restarting.get("lastTransitionTime")) if restarting else None
        first_end = restart_ts if restart_ts is not None and restart_ts > start else None
        if first_end is not None:
            attempts.append(
                {
                    "job_id": job["job_id"],
                    "attempt": 0,
                    "start_ts": start,
                    "end_ts": first_end,
                    "state": "failed",
                    "exit_code": None,
                    "reason": restarting.get("reason") if restarting else None,
                    "nodes": _attempt_nodes(pods, start, first_end, pinned),
                }
            )
        attempts.append(
            {
                "job_id": job["job_id"],
                "attempt": len(attempts),
                "start_ts": first_end or start,
                "end_ts": end,
                "state": state,
                "exit_code": exit_code,
                "reason": reason,
                "nodes": _attempt_nodes(pods, first_end or start, end, pinned),
            }
        )
    return job, attempts


def _items(text: str, origin: str) -> list[Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"is not JSON: {e.msg}",
            file=origin,
            line=e.lineno,
            hint="Pass the output of `kubectl get jobs,pytorchjobs,pods -A -o json`.",
        ) from None
    items = (
        doc.get("items")
        if isinstance(doc, dict) and doc.get("kind", "").endswith("List")
        else [doc]
    )
    if not isinstance(items, list):
        raise InputError("has no `items` list", file=origin)
    for index, obj in enumerate(items, start=1):
        if not isinstance(obj, dict):
            raise InputError("is not a Kubernetes object", file=origin, row=index)
    return items


def parse_pods(items: list[Any], origin: str) -> dict[str, list[Pod]]:
    """The Pod objects among `items`, by the job id they belong to (pods of no job are left out)."""
    pods: dict[str, list[Pod]] = {}
    for index, obj in enumerate(items, start=1):
        if obj.get("kind") != "Pod":
            continue
        try:
            pod = Pod(obj)
        except (KeyError, ValueError, TypeError, AttributeError) as e:
            raise InputError(
                f"Pod cannot be read: {type(e).__name__} {e}",
                file=origin,
                row=index,
                hint="Pass unmodified `kubectl get pods -A -o json` output.",
            ) from None
        if pod.job_id is not None:
            pods.setdefault(pod.job_id, []).append(pod)
    return pods


def parse_kube_jobs(
    text: str,
    origin: str = "<kubectl>",
    user_label: str = "gpufleet.io/user",
    pods_text: str | None = None,
    pods_origin: str = "<pods>",
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """(jobs, job_attempts, objects skipped) from kubectl JSON. Row numbers are item indexes (1-based).

    Pods (in `text` itself or in `pods_text`, `kubectl get pods -A -o json`) give the nodes and the
    exit codes; a pod that belongs to none of the jobs counts as skipped."""
    items = _items(text, origin)
    pods = parse_pods(items, origin)
    if pods_text is not None:
        for job_id, more in parse_pods(_items(pods_text, pods_origin), pods_origin).items():
            pods.setdefault(job_id, []).extend(more)
    jobs: list[dict[str, Any]] = []
    attempts: list[dict[str, Any]] = []
    skipped = 0
    used: set[str] = set()
    for index, obj in enumerate(items, start=1):
        kind = obj.get("kind")
        try:
            if kind in ("Job", "PyTorchJob"):
                meta = obj.get("metadata", {})
                job_id = f"{meta.get('namespace', 'default')}/{meta['name']}"
                used.add(job_id)
                parse = _batch_job if kind == "Job" else _pytorch_job
                job, job_attempts = parse(obj, user_label, pods.get(job_id, []))
            elif kind == "Pod":
                continue
            else:
                skipped += 1
                continue
        except (KeyError, ValueError, TypeError, AttributeError) as e:
            raise InputError(
                f"{kind} cannot be read: {type(e).__name__} {e}",
                file=origin,
                row=index,
                hint="Pass unmodified `kubectl get ... -o json` output.",
            ) from None
        jobs.append({ROW_COLUMN: index, **job})
        attempts.extend({ROW_COLUMN: index, **a} for a in job_attempts)
    # pods of no job in the input (and pods naming no job at all) are not loaded
    skipped += sum(len(p) for job_id, p in pods.items() if job_id not in used)
    skipped += sum(1 for obj in items if obj.get("kind") == "Pod" and Pod(obj).job_id is None)
    jobs_frame = pl.DataFrame(jobs, schema=JOB_SCHEMA)
    attempts_frame = pl.DataFrame(attempts, schema=ATTEMPT_SCHEMA)
    return jobs_frame, attempts_frame, skipped


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the file: {e}", file=str(path)) from e


def ingest_kube_jobs(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    user_label: str = "gpufleet.io/user",
    pods: str | Path | None = None,
    cluster: str | None = None,
) -> tuple[list[LoadResult], int]:
    """Load one kubectl JSON file (plus an optional pods file) as one batch; also return how many
    objects were not jobs or their pods."""
    path = Path(path)
    text = _read(path)
    pods_text = _read(Path(pods)) if pods is not None else None
    jobs, attempts, skipped = parse_kube_jobs(text, str(path), user_label, pods_text, str(pods))
    items = [TableInput("jobs", jobs, str(path)), TableInput("job_attempts", attempts, str(path))]
    return load_batch(con, items, source=f"kube-jobs:{path.name}", cluster=cluster), skipped


@dataclass(frozen=True)
class KubeJobsSource(WholeFileSource):
    """`gpufleet ingest kube-jobs FILE [--pods FILE]`: one kubectl listing, one batch."""

    path: Path
    user_label: str = "gpufleet.io/user"
    pods: Path | None = None
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "kube-jobs"
    reads: ClassVar[str] = "`kubectl get jobs,pytorchjobs,pods -A -o json`"
    tables: ClassVar[tuple[str, ...]] = ("jobs", "job_attempts")

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        loads, skipped = ingest_kube_jobs(con, self.path, self.user_label, self.pods, self.cluster)
        warnings = (
            [
                f"{skipped} objects were neither a Job, a PyTorchJob nor one of their pods and were skipped."
            ]
            if skipped
            else []
        )
        return SourceReport(self.source_id, loads, warnings=warnings, detail=skipped)
