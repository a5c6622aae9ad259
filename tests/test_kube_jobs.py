"""kubectl JSON parsing: batch/v1 Job conditions and Kubeflow PyTorchJob status."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from pipelines.errors import InputError
from pipelines.sources.kube_jobs import ingest_kube_jobs, parse_kube_jobs
from pipelines.store import row_counts


def batch_job(
    name: str,
    conditions: list[dict],
    *,
    gpus: int = 8,
    parallelism: int = 2,
    completion: str | None = None,
    start: str | None = "2026-11-23T00:01:00Z",
) -> dict:
    status: dict = {"conditions": conditions}
    if start:
        status["startTime"] = start
    if completion:
        status["completionTime"] = completion
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ml-research",
            "creationTimestamp": "2026-11-23T00:00:00Z",
            "labels": {"kueue.x-k8s.io/queue-name": "h100-queue", "gpufleet.io/user": "alice"},
        },
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "backoffLimit": 3,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus), "cpu": "32"}},
                        },
                    ]
                }
            },
        },
        "status": status,
    }


def cond(
    kind: str,
    reason: str | None = None,
    message: str | None = None,
    at: str = "2026-11-23T02:00:00Z",
) -> dict:
    c = {"type": kind, "status": "True", "lastProbeTime": at, "lastTransitionTime": at}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


PYTORCH_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {
        "name": "llama-ft",
        "namespace": "llm",
        "creationTimestamp": "2026-11-23T00:00:00Z",
    },
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": 8}}}
                        ]
                    }
                },
            },
            "Worker": {
                "replicas": 3,
                "restartPolicy": "OnFailure",
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": 8}}}
                        ]
                    }
                },
            },
        }
    },
    "status": {
        "startTime": "2026-11-23T00:02:00Z",
        "completionTime": "2026-11-23T06:00:00Z",
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "lastTransitionTime": "2026-11-23T00:00:00Z",
            },
            {
                "type": "Running",
                "status": "False",
                "reason": "PyTorchJobRunning",
                "lastTransitionTime": "2026-11-23T03:00:30Z",
            },
            {
                "type": "Restarting",
                "status": "False",
                "reason": "PyTorchJobRestarting",
                "message": "PyTorchJob llm/llama-ft is restarting because 1 Worker replica(s) failed.",
                "lastTransitionTime": "2026-11-23T03:00:00Z",
            },
            {
                "type": "Succeeded",
                "status": "True",
                "reason": "PyTorchJobSucceeded",
                "lastTransitionTime": "2026-11-23T06:00:00Z",
            },
        ],
        "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 3}},
    },
}


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (
            batch_job(
                "ok",
                [cond("SuccessCriteriaMet"), cond("Complete")],
                completion="2026-11-23T02:00:00Z",
            ),
            ("succeeded", 16, 0, None),
        ),  # parallelism 2 x 8 GPUs
        (
            batch_job(
                "backoff",
                [
                    cond("FailureTarget", "BackoffLimitExceeded"),
                    cond(
                        "Failed",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                    ),
                ],
            ),
            ("failed", 16, None, "BackoffLimitExceeded"),
        ),
        (
            batch_job(
                "deadline",
                [
                    cond(
                        "Failed",
                        "DeadlineExceeded",
                        "Job was active longer than specified deadline",
                    )
                ],
            ),
            ("timeout", 16, None, "DeadlineExceeded"),
        ),
        (
            batch_job(
                "policy",
                [
                    cond(
                        "Failed",
                        "PodFailurePolicy",
                        "Container trainer for pod ml-research/policy-x7k failed with exit code 3 matching FailJob rule at index 0",
                    )
                ],
            ),
            ("failed", 16, 3, "PodFailurePolicy"),
        ),
        (
            batch_job(
                "oom",
                [
                    cond(
                        "Failed",
                        "PodFailurePolicy",
                        "Container trainer for pod ml-research/oom-x failed with exit code 137 matching FailJob rule at index 0 (OOMKilled)",
                    )
                ],
            ),
            ("oom", 16, 137, "PodFailurePolicy"),
        ),
        (batch_job("active", []), ("running", 16, None, None)),
    ],
)
def test_batch_job_outcomes(job, expected):
    jobs, attempts, _ = parse_kube_jobs(json.dumps({"kind": "List", "items": [job]}), "jobs.json")
    row = jobs.row(0, named=True)
    assert (row["state"], row["num_gpus"], row["exit_code"], row["reason"]) == expected
    assert row["job_id"] == f"ml-research/{job['metadata']['name']}"
    assert (row["team"], row["queue"], row["user"]) == ("ml-research", "h100-queue", "alice")
    assert attempts.height == 1 and attempts.row(0, named=True)["state"] == expected[0]


def test_pytorchjob_with_a_restart_has_two_attempts():
    jobs, attempts, skipped = parse_kube_jobs(json.dumps(PYTORCH_JOB), "pj.json")
    row = jobs.row(0, named=True)
    assert (row["state"], row["num_gpus"]) == ("succeeded", 32)  # (1 master + 3 workers) x 8
    assert attempts.select("attempt", "start_ts", "end_ts", "state").rows() == [
        (
            0,
            datetime(2026, 11, 23, 0, 2, tzinfo=UTC),
            datetime(2026, 11, 23, 3, tzinfo=UTC),
            "failed",
        ),
        (
            1,
            datetime(2026, 11, 23, 3, tzinfo=UTC),
            datetime(2026, 11, 23, 6, tzinfo=UTC),
            "succeeded",
        ),
    ]
    assert skipped == 0


def test_other_kinds_are_counted_not_loaded(con, tmp_path):
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "x"}}
    path = tmp_path / "jobs.json"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    PYTORCH_JOB,
                    pod,
                    batch_job("ok", [cond("Complete")], completion="2026-11-23T02:00:00Z"),
                ],
            }
        )
    )
    _results, skipped = ingest_kube_jobs(con, path)
    assert skipped == 1
    assert row_counts(con, ("jobs", "job_attempts")) == {"jobs": 2, "job_attempts": 3}
    ingest_kube_jobs(con, path)  # idempotent
    assert row_counts(con, ("jobs", "job_attempts")) == {"jobs": 2, "job_attempts": 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"kind": "List", "items": [', "jobs.json, line 1: is not JSON"),
        (
            '{"kind": "List", "items": [{"kind": "Job", "metadata": {}}]}',
            "jobs.json, row 1: Job cannot be read",
        ),
        ('{"kind": "List", "items": [42]}', "jobs.json, row 1: is not a Kubernetes object"),
        (
            '{"kind": "List", "items": [{"kind": "Job", "metadata": {"name": "x"}, "status": {"startTime": "soon"}}]}',
            "jobs.json, row 1: Job cannot be read",
        ),
    ],
)
def test_malformed_json_names_file_and_position(text, message):
    with pytest.raises(InputError) as err:
        parse_kube_jobs(text, "jobs.json")
    assert message in str(err.value)


def pod(
    name: str,
    job: str,
    node: str,
    *,
    exit_code: int | None,
    finished: str,
    started: str = "2026-11-23T00:01:00Z",
    namespace: str = "ml-research",
    owner_kind: str | None = "Job",
    labels: dict | None = None,
) -> dict:
    terminated = {
        "exitCode": exit_code,
        "reason": "Error" if exit_code else "Completed",
        "startedAt": started,
        "finishedAt": finished,
    }
    meta: dict = {
        "name": name,
        "namespace": namespace,
        "labels": labels if labels is not None else {"job-name": job},
    }
    if owner_kind:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": owner_kind, "name": job, "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {
            "phase": "Failed" if exit_code else "Succeeded",
            "startTime": started,
            "containerStatuses": [{"name": "trainer", "state": {"terminated": terminated}}],
        },
    }


BACKOFF_JOB = batch_job(
    "backoff",
    [cond("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")],
)
# Its failed pods (backoffLimit retries): exit 1 at 01:00 on gpu-001, then exit 3 at 01:50 on gpu-002
# (the last one: the job's exit code is 3); a pod of another job and a pod of no job at all.
BACKOFF_PODS = [
    pod("backoff-a1", "backoff", "gpu-001", exit_code=1, finished="2026-11-23T01:00:00Z"),
    pod(
        "backoff-b2",
        "backoff",
        "gpu-002",
        exit_code=3,
        finished="2026-11-23T01:50:00Z",
        owner_kind=None,
        labels={"batch.kubernetes.io/job-name": "backoff"},
    ),
    pod("other-x", "other", "gpu-009", exit_code=0, finished="2026-11-23T01:00:00Z"),
    {
        "kind": "Pod",
        "metadata": {"name": "lonely", "namespace": "ml-research"},
        "spec": {"nodeName": "gpu-007"},
    },
]


def test_backoff_limit_takes_the_last_failed_pods_exit_code_and_the_pods_nodes():
    jobs, attempts, skipped = parse_kube_jobs(
        json.dumps({"kind": "List", "items": [BACKOFF_JOB, *BACKOFF_PODS]}), "all.json"
    )
    assert jobs.select("state", "exit_code", "reason").row(0) == (
        "failed",
        3,
        "BackoffLimitExceeded",
    )
    assert attempts.select("state", "exit_code", "nodes").row(0) == (
        "failed",
        3,
        ["gpu-001", "gpu-002"],
    )
    assert skipped == 2  # the other job's pod and the pod of no job


def test_pods_from_their_own_file_attribute_the_attempt(con, tmp_path):
    jobs_path, pods_path = tmp_path / "jobs.json", tmp_path / "pods.json"
    jobs_path.write_text(json.dumps({"kind": "List", "items": [BACKOFF_JOB]}))
    pods_path.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": BACKOFF_PODS[:2]})
    )
    ingest_kube_jobs(con, jobs_path, pods=pods_path)
    assert con.execute("SELECT state, exit_code, nodes FROM job_attempts").fetchall() == [
        ("failed", 3, ["gpu-001", "gpu-002"])
    ]


def test_pytorchjob_pods_go_to_the_attempt_they_ran_in():
    # attempt 0: 00:02-03:00 (restart), attempt 1: 03:00-06:00. The worker that failed ran on gpu-011
    # until 02:59; its replacement on gpu-012 from 03:01; the master on gpu-010 all along.
    owner = {
        "owner_kind": "PyTorchJob",
        "namespace": "llm",
        "labels": {"training.kubeflow.org/job-name": "llama-ft"},
    }
    pods = [
        pod(
            "llama-ft-master-0",
            "llama-ft",
            "gpu-010",
            exit_code=0,
            started="2026-11-23T00:02:00Z",
            finished="2026-11-23T06:00:00Z",
            **owner,
        ),
        pod(
            "llama-ft-worker-0-old",
            "llama-ft",
            "gpu-011",
            exit_code=1,
            started="2026-11-23T00:02:00Z",
            finished="2026-11-23T02:59:00Z",
            **owner,
        ),
        pod(
            "llama-ft-worker-0",
            "llama-ft",
            "gpu-012",
            exit_code=0,
            started="2026-11-23T03:01:00Z",
            finished="2026-11-23T06:00:00Z",
            **owner,
        ),
    ]
    _jobs, attempts, _ = parse_kube_jobs(
        json.dumps({"kind": "List", "items": [PYTORCH_JOB, *pods]}), "pj.json"
    )
    assert attempts.select("attempt", "nodes").rows() == [
        (0, ["gpu-010", "gpu-011"]),
        (1, ["gpu-010", "gpu-012"]),
    ]


def test_without_pods_a_template_pinned_to_a_node_names_it():
    job = batch_job("pinned", [cond("Complete")], completion="2026-11-23T02:00:00Z")
    job["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-005"}
    _jobs, attempts, _ = parse_kube_jobs(json.dumps(job), "pinned.json")
    assert attempts["nodes"].to_list() == [["gpu-005"]]
