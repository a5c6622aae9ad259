"""Stalled jobs (`job_stalled`, `job_stalls`): hangs found from step logs and, for jobs without
step logs, from busy-but-idle GPU telemetry; a failed attempt's stall counts as wasted goodput."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import TableInput, load_batch
from tests.detect_fleet import T0, Fleet, at

HUNG = {
    "DCGM_FI_DEV_GPU_UTIL": 100.0,
    "DCGM_FI_DEV_POWER_USAGE": 80.0,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.0,
}


def add_job(
    fleet: Fleet,
    job_id: str,
    node: str,
    end_min: float,
    state: str,
    step_ends_s: list[float] | None = None,
) -> None:
    """An 8-GPU job on `node` from T0 to T0 + end_min; ranks 0-7 log a step ending at each of
    `step_ends_s` (seconds after T0, 10 s steps) when given."""
    end = at(end_min)
    fleet.jobs.append(
        {
            "job_id": job_id,
            "name": job_id,
            "user": "u",
            "team": "t",
            "queue": "q",
            "submit_ts": T0,
            "start_ts": T0,
            "end_ts": end,
            "num_gpus": 8,
            "state": state,
            "exit_code": 0 if state == "succeeded" else 134,
            "reason": None,
        }
    )
    fleet.attempts.append(
        {
            "job_id": job_id,
            "attempt": 0,
            "start_ts": T0,
            "end_ts": end,
            "state": state,
            "exit_code": 0 if state == "succeeded" else 134,
            "reason": None,
            "nodes": [node],
        }
    )
    for step, end_s in enumerate(step_ends_s or []):
        for rank in range(8):
            fleet.steps.append(
                {
                    "job_id": job_id,
                    "attempt": 0,
                    "step": step,
                    "rank": rank,
                    "node": node,
                    "gpu": rank,
                    "end_ts": T0 + dt.timedelta(seconds=end_s),
                    "step_s": 10.0,
                    "compute_s": 9.0,
                }
            )


def stalls(con, fleet: Fleet) -> list[dict]:
    fleet.load(con)
    compute(con, Settings(), force=True)
    rel = con.sql("SELECT * FROM anomalies WHERE kind = 'job_stalled' ORDER BY job_id, start_ts")
    return [dict(zip(rel.columns, row)) for row in rel.fetchall()]


def ends(first_s: float, count: int) -> list[float]:
    return [first_s + 10 * i for i in range(count)]


@pytest.mark.parametrize(
    "step_ends, state, end_min, checkpoint, expected",
    [
        # 300 steps end at 60 .. 3,050 s, then none; the attempt fails at 77 min (4,620 s): the tail
        # 3,050 .. 4,620 s = 1,570 s >= max(600 s, 20 x 10 s): one stall, open until the failure.
        # Wasted: 1,570 s x 8 GPUs / 3,600 = 3.4889 GPU-h.
        (ends(60, 300), "failed", 77, None, [(3050, 4620, 1570.0, 3.4889)]),
        # Same steps, but the job succeeded at 77 min: a succeeded attempt's tail is teardown.
        (ends(60, 300), "succeeded", 77, None, []),
        # A 12-min (720 s) gap mid-run: step 100 ends at 1,050 s, step 101 at 1,050 + 720 + 10 s.
        # Stall from 1,050 s to the next step's start (1,780 s - the 10 s median interval); net gap
        # 730 s >= 600 s. The attempt succeeded: nothing wasted.
        (ends(60, 100) + ends(1780, 100), "succeeded", 60, None, [(1050, 1770, 730.0, 0.0)]),
        # The same gap filled by a 12-min blocking checkpoint save: net 10 s, no stall.
        (ends(60, 100) + ends(1780, 100), "succeeded", 60, (1050, 720.0), []),
        # An 8-min gap: below 600 s, no stall.
        (ends(60, 100) + ends(1540, 100), "succeeded", 60, None, []),
    ],
)
def test_stall_from_step_logs(con, step_ends, state, end_min, checkpoint, expected):
    fleet = Fleet(minutes=2)
    add_job(fleet, "j1", "n1", end_min, state, step_ends)
    if checkpoint:
        fleet.checkpoints.append(
            {
                "job_id": "j1",
                "attempt": 0,
                "step": 99,
                "kind": "save",
                "start_ts": T0 + dt.timedelta(seconds=checkpoint[0]),
                "duration_s": checkpoint[1],
            }
        )
    rows = stalls(con, fleet)
    got = [
        (
            (r["start_ts"] - T0).total_seconds(),
            (r["end_ts"] - T0).total_seconds(),
            json.loads(r["evidence"])["stalled_s"],
            json.loads(r["evidence"])["wasted_gpu_h"],
        )
        for r in rows
    ]
    assert got == expected
    for r in rows:
        evidence = json.loads(r["evidence"])
        assert (r["entity_type"], evidence["source"], evidence["cause"]) == (
            "job",
            "step_logs",
            "software",
        )


def test_failed_stall_is_wasted_goodput(con):
    # The first case above: the 1,570 s stall of the failed attempt is `wasted`, and the categories
    # still sum exactly to the wall (4,620 s).
    fleet = Fleet(minutes=2)
    add_job(fleet, "j1", "n1", 77, "failed", ends(60, 300))
    stalls(con, fleet)
    # (no checkpoint: the steps before it are wasted too, so count the wasted time inside the stall)
    wasted_in_stall = con.execute(
        """
        SELECT sum(epoch(least(end_ts, $t1) - greatest(start_ts, $t0))) FROM goodput_segments
        WHERE category = 'wasted' AND start_ts < $t1 AND end_ts > $t0""",
        {"t0": T0 + dt.timedelta(seconds=3050), "t1": T0 + dt.timedelta(seconds=4620)},
    ).fetchall()[0][0]
    assert float(wasted_in_stall) == pytest.approx(1570.0)
    total, wall = con.execute(
        "SELECT sum(duration_s), 4620 FROM goodput_segments WHERE job_id = 'j1'"
    ).fetchall()[0]
    assert float(total) == wall
    assert (
        con.execute("SELECT count(*) FROM goodput_segments WHERE category = 'other'").fetchall()[0][
            0
        ]
        == 0
    )


@pytest.mark.parametrize(
    "levels, minutes, state, expected",
    [
        # Every GPU of n2 busy but idle from minute 30 to the failure at 60: stall [30, 60),
        # detected after 10 min (minute 40), 30 min = score 30.
        (HUNG, range(30, 60), "failed", [(30, 60, 40, 30.0)]),
        # Waiting on data: 30 % utilisation is not busy: no stall.
        ({**HUNG, "DCGM_FI_DEV_GPU_UTIL": 30.0}, range(30, 60), "failed", []),
        # Busy but drawing 650 W: working, not hung.
        ({**HUNG, "DCGM_FI_DEV_POWER_USAGE": 650.0}, range(30, 60), "failed", []),
        # Only 9 minutes (scrapes 30..38): shorter than 10 min.
        (HUNG, range(30, 39), "failed", []),
    ],
)
def test_stall_from_gpu_telemetry(con, levels, minutes, state, expected):
    fleet = Fleet(minutes=70, nodes=["n2"])
    add_job(fleet, "j2", "n2", 60, state)
    for gpu in range(8):
        for metric, value in levels.items():
            fleet.set("n2", gpu, metric, {i: value for i in minutes})
    rows = stalls(con, fleet)
    got = [
        (
            (r["start_ts"] - T0).total_seconds() / 60,
            (r["end_ts"] - T0).total_seconds() / 60,
            (json.loads(r["evidence"])["detected_at"]),
            r["score"],
        )
        for r in rows
    ]
    assert [(a, b, d) for a, b, _, d in got] == [(a, b, d) for a, b, _, d in expected]
    assert [dt.datetime.fromisoformat(x) for _, _, x, _ in got] == [
        at(c) for _, _, c, _ in expected
    ]


def test_stall_explained_by_hardware(con):
    # The same 30-min telemetry hang, with an XID 79 (GPU fell off the bus: hardware) on n2 at
    # minute 55, inside the stall: the finding stays `job_stalled`, its cause is hardware.
    fleet = Fleet(minutes=70, nodes=["n2"])
    add_job(fleet, "j2", "n2", 60, "failed")
    for gpu in range(8):
        for metric, value in HUNG.items():
            fleet.set("n2", gpu, metric, {i: value for i in range(30, 60)})
    fleet.events.append(
        {
            "ts": at(55),
            "node": "n2",
            "gpu": 3,
            "uuid": "GPU-n2-3",
            "kind": "xid",
            "code": 79,
            "message": "GPU has fallen off the bus",
            "source": "dcgm",
        }
    )
    rows = stalls(con, fleet)
    assert len(rows) == 1
    evidence = json.loads(rows[0]["evidence"])
    assert (evidence["cause"], evidence["hardware_findings"]) == ("hardware", ["xid"])


def test_telemetry_rule_is_for_jobs_without_step_logs_of_their_own_cluster(con):
    """Job ids repeat across clusters. In c1, j2 logs a step every 10 s to minute 59 and succeeds
    at 60: its step logs say it runs, whatever the GPUs look like, so no finding. In c2 a job also
    named j2 logs no step and its node n2 (also a name c1 uses) looks hung from minute 30 to the
    failure at 60: one stall [30, 60) in c2, as in the one-cluster case above."""
    logged, silent = Fleet(minutes=70, nodes=["n2"]), Fleet(minutes=70, nodes=["n2"])
    add_job(logged, "j2", "n2", 60, "succeeded", step_ends_s=ends(60, 354))
    add_job(silent, "j2", "n2", 60, "failed")
    for fleet in (logged, silent):
        for gpu in range(8):
            for metric, value in HUNG.items():
                fleet.set("n2", gpu, metric, {i: value for i in range(30, 60)})
    for cluster, fleet in (("c1", logged), ("c2", silent)):
        items = [
            TableInput(
                name,
                frame.with_columns(cluster=pl.lit(cluster)).with_row_index("__row", offset=1),
                f"{name} ({cluster})",
            )
            for name, frame in fleet.frames().items()
        ]
        load_batch(con, items, "test")
    compute(con, Settings(), force=True)
    found = con.execute(
        "SELECT cluster, job_id, epoch(start_ts - $t0) / 60, epoch(end_ts - $t0) / 60 "
        "FROM anomalies WHERE kind = 'job_stalled'",
        {"t0": T0},
    ).fetchall()
    assert found == [("c2", "j2", 30.0, 60.0)]
