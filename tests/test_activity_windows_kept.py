"""gpu_activity_windows kept between computes (pipelines/activity_windows.py), on a hand-made node
whose loads hit each case the update must see; every expected number is worked out below.

Node n1 (2 GPUs), one GR_ENGINE_ACTIVE sample a minute from 2026-11-23 00:00 UTC (minute m):
- GPU 0 reports minutes 0-59, is silent 60-179, reports 180-239;
- GPU 1 reports minutes 0-239.
Job j (both GPUs: mapped as a whole node) starts at minute 0.
Loads, each followed by a compute whose rows must equal `compute --force`:
1. the job as running, samples of minutes 0-119. The job ends at the horizon (minute 119), so
   minutes 0-118 are j's; GPU 0's last row (59) takes the gap before it: 60 s.
2. the job's end, minute 30, and no sample: the kept rows of minutes 30-118 are no longer j's,
   though no sample changed (the assignment's end moved back from 119 to 30).
3. samples of minutes 120-239. GPU 0 comes back at 180: its row at 59 now runs to the next sample,
   7,260 s, capped at util_window_max_s (300). Its last sample before the new ones is more than an
   hour before them, so the update must find it in all earlier samples.
4. MIG samples of GPU 1's instance 1 (3g.40gb) for minutes 200-239, alone: GPU 1's whole-device
   rows of those minutes go (the instance reports them), instance rows come, and GPU 1's row at
   199 becomes its last: 60 s from the one before.
"""

from __future__ import annotations

from datetime import datetime

from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

GR = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def _samples(first: int, end: int) -> list[dict]:
    return [
        {"ts": at(m), "node": "n1", "gpu": gpu, "uuid": f"GPU-{gpu}", "metric": GR, "value": 0.5}
        for m in range(first, end)
        for gpu in (0, 1)
        if gpu == 1 or not 60 <= m < 180
    ]


def _job(end: int | None) -> dict[str, list[dict]]:
    state: dict[str, datetime | int | str | None] = {
        "end_ts": at(end) if end is not None else None,
        "exit_code": 0 if end else None,
    }
    state["state"] = "succeeded" if end is not None else "running"
    return {
        "jobs": [
            {
                "job_id": "j",
                "name": "train",
                "user": "u",
                "team": "t",
                "queue": "q",
                "submit_ts": at(0),
                "start_ts": at(0),
                "num_gpus": 2,
                "reason": None,
                **state,
            }
        ],
        "job_attempts": [
            {
                "job_id": "j",
                "attempt": 0,
                "start_ts": at(0),
                "nodes": ["n1"],
                "reason": None,
                **state,
            }
        ],
    }


ROWS = (
    "SELECT gpu, gpu_i_id, gpu_i_profile, start_ts, window_s, activity, gpu_share, job_id, "
    "attempt, mapped_by FROM gpu_activity_windows ORDER BY ALL"
)


def _computed_equals_a_rebuild(con) -> list[tuple]:
    return computed_equals_a_rebuild(con, ROWS)[0]


def _row(rows: list[tuple], gpu: int, minute: int, gpu_i_id: int | None = None) -> tuple:
    (row,) = [r for r in rows if r[0] == gpu and r[1] == gpu_i_id and r[3] == at(minute)]
    return row


def test_kept_activity_windows_follow_late_job_ends_silent_gpus_and_mig_samples(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    nodes = one_node(2)
    load(con, {"nodes": nodes, **_job(None), "gpu_samples": _samples(0, 120)})
    rows = _computed_equals_a_rebuild(con)
    assert _row(rows, 0, 59)[4] == 60.0
    assert {r[7] for r in rows if r[3] < at(119)} == {"j"}

    load(con, _job(30))
    rows = _computed_equals_a_rebuild(con)
    assert {r[7] for r in rows if r[3] < at(30)} == {"j"}
    assert {r[7] for r in rows if r[3] >= at(30)} == {None}

    load(con, {"gpu_samples": _samples(120, 240)})
    rows = _computed_equals_a_rebuild(con)
    assert _row(rows, 0, 59)[4] == 300.0
    assert _row(rows, 0, 180)[4] == 60.0
    assert len([r for r in rows if r[0] == 0]) == 60 + 60

    instance = [
        {
            "ts": at(m),
            "node": "n1",
            "gpu": 1,
            "uuid": "GPU-1",
            "gpu_i_id": 1,
            "gpu_i_profile": "3g.40gb",
            "job_id": None,
            "metric": GR,
            "value": 0.25,
        }
        for m in range(200, 240)
    ]
    load(con, {"gpu_instance_samples": instance})
    rows = _computed_equals_a_rebuild(con)
    whole_gpu_1 = [r for r in rows if r[0] == 1 and r[1] is None]
    assert [r[3] for r in whole_gpu_1] == [at(m) for m in range(200)]
    assert _row(rows, 1, 199)[4] == 60.0
    mig = [r for r in rows if r[1] == 1]
    assert len(mig) == 40 and {r[6] for r in mig} == {3 / 7}
