"""team_utilisation_weekly and mig_packing kept by ISO week between computes, and the telemetry
half of job_utilisation kept by job (job_activity), on a hand-made node whose loads hit each case
the update must see; every expected number is worked out below.

Node n1 (2 GPUs, NVIDIA A100 80GB PCIe), one sample a minute of GR_ENGINE_ACTIVE 0.1 and FB_USED
5,000 MiB:
- week 2026-W48: GPU 0 reports Sunday 2026-11-29 23:00-23:59; job j1 (name train-1, team t1,
  queue q) holds the node from 23:00 to Monday 00:00.
- week 2026-W49: GPU 1 reports Monday 2026-11-30 00:00-00:59; job j2 (train-2, t2, q) holds the
  node from 00:00 to 01:00.
Each of a GPU's 60 windows is 60 s (its last takes the gap before it), so a week has 1.0 measured
GPU-hour, 0.1 busy, none idle (0.1 >= util_idle_activity 0.05). Packing: p95 activity 0.1, peak
memory 5,000 / 1,024 = 4.8828125 GiB; the smallest A100 80GB profile with compute share >= 0.1 x
1.2 and memory >= 4.88 x 1.2 = 5.86 GB is 1g.10gb (1/7 of a GPU): 1/7 GPU-hour packed, 6/7 freed.
Per job: the same hour, measured on one GPU (the job holds both, mapped as a whole node, but only
one reports in its hour): 1 GPU mapped, 1 used.

Loads, each followed by a compute:
1. W48. Its rows are as above and equal `compute --force`.
2. W49, after W48's rows and j1's job_activity row were overwritten by hand: the compute sums W49
   and j2 and leaves W48 and j1 alone (the overwritten values stand: nothing of theirs changed).
3. j1's team becomes t1b, with no sample: W48 is summed again (its row names t1b).
4. n1's GPU model becomes NVIDIA H100 80GB HBM3: every week of mig_packing is built again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import open_store
from tests.kept_cases import computed_equals_a_rebuild, load, one_node

SUNDAY_23H = datetime(2026, 11, 29, 23, tzinfo=UTC)
MONDAY = datetime(2026, 11, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)

TEAMS = (
    "SELECT week, team, queue, measured_gpu_h, busy_gpu_h, busy_share, idle_gpu_h, jobs, "
    "top_idle_jobs FROM team_utilisation_weekly ORDER BY ALL"
)
JOBS = (
    "SELECT job_id, measured_gpu_h, busy_gpu_h, p95_activity, peak_memory_gib, idle_gpu_h, "
    "gpus_mapped, gpus_used, mapped_by FROM job_utilisation ORDER BY ALL"
)
PACKING = (
    "SELECT week, workload, gpu_model, jobs, job_ids, gpu_h, p95_activity, peak_memory_gib, "
    "profile, packed_gpu_h, freed_gpu_h FROM mig_packing ORDER BY ALL"
)


def _samples(gpu: int, start: datetime) -> list[dict]:
    return [
        {
            "ts": start + m * MINUTE,
            "node": "n1",
            "gpu": gpu,
            "uuid": f"GPU-{gpu}",
            "metric": metric,
            "value": value,
        }
        for m in range(60)
        for metric, value in (
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.1),
            ("DCGM_FI_DEV_FB_USED", 5000.0),
        )
    ]


def _job(job_id: str, team: str, start: datetime) -> dict[str, list[dict]]:
    ended = {"end_ts": start + HOUR, "state": "succeeded", "exit_code": 0, "reason": None}
    return {
        "jobs": [
            {
                "job_id": job_id,
                "name": f"train-{job_id[1:]}",
                "user": "u",
                "team": team,
                "queue": "q",
                "submit_ts": start,
                "start_ts": start,
                "num_gpus": 8,
                **ended,
            }
        ],
        "job_attempts": [
            {"job_id": job_id, "attempt": 0, "start_ts": start, "nodes": ["n1"], **ended}
        ],
    }


def _team_row(week: str, team: str) -> tuple:
    return (week, team, "q", 1.0, 0.1, 0.1, 0.0, 1, None)


def _job_row(job_id: str) -> tuple:
    return (job_id, 1.0, 0.1, 0.1, 5000 / 1024, 0.0, 1, 1, "whole_node")


def _packing_row(week: str, job_id: str, model: str) -> tuple:
    return (
        week,
        f"train-{job_id[1:]}",
        model,
        1,
        [job_id],
        1.0,
        0.1,
        5000 / 1024,
        "1g.10gb",
        1 / 7,
        6 / 7,
    )


def _close(rows: list[tuple], expected: list[tuple]) -> bool:
    """Equal, floats to 1e-9."""
    if len(rows) != len(expected):
        return False
    for row, want in zip(rows, expected):
        for value, wanted in zip(row, want, strict=True):
            if isinstance(wanted, float):
                if value is None or abs(value - wanted) > 1e-9:
                    return False
            elif value != wanted:
                return False
    return True


def _overwrite_w48_and_j1(con) -> None:
    """Rows overwritten: a compute that summed W48 or j1 again would put them back."""
    con.execute("UPDATE team_utilisation_weekly SET busy_gpu_h = 99 WHERE week = '2026-W48'")
    con.execute("UPDATE mig_packing SET gpu_h = 99 WHERE week = '2026-W48'")
    con.execute("UPDATE job_activity SET busy_gpu_h = 99 WHERE job_id = 'j1'")


A100 = "NVIDIA A100 80GB PCIe"
H100 = "NVIDIA H100 80GB HBM3"


def test_utilisation_keeps_untouched_weeks_and_jobs_and_sums_again_what_changed(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    nodes = one_node(2)
    load(
        con,
        {"nodes": nodes, **_job("j1", "t1", SUNDAY_23H), "gpu_samples": _samples(0, SUNDAY_23H)},
    )
    teams, packing, jobs = computed_equals_a_rebuild(con, TEAMS, PACKING, JOBS)
    assert _close(teams, [_team_row("2026-W48", "t1")]), teams
    assert _close(packing, [_packing_row("2026-W48", "j1", A100)]), packing
    assert _close(jobs, [_job_row("j1")]), jobs

    _overwrite_w48_and_j1(con)
    load(con, {**_job("j2", "t2", MONDAY), "gpu_samples": _samples(1, MONDAY)})
    compute(con, Settings())
    teams = con.execute(TEAMS).fetchall()
    packing = con.execute(PACKING).fetchall()
    jobs = con.execute(JOBS).fetchall()
    assert [r[4] for r in teams] == [99, 0.1] and [r[5] for r in packing] == [99, 1.0]
    assert [r[2] for r in jobs] == [99, 0.1]
    assert _close(teams[1:], [_team_row("2026-W49", "t2")]), teams
    assert _close(packing[1:], [_packing_row("2026-W49", "j2", A100)]), packing
    assert _close(jobs[1:], [_job_row("j2")]), jobs
    compute(con, Settings(), force=True)
    assert _close(
        con.execute(TEAMS).fetchall(),
        [_team_row("2026-W48", "t1"), _team_row("2026-W49", "t2")],
    )
    assert _close(con.execute(JOBS).fetchall(), [_job_row("j1"), _job_row("j2")])

    con.execute("UPDATE team_utilisation_weekly SET busy_gpu_h = 99 WHERE week = '2026-W48'")
    load(con, _job("j1", "t1b", SUNDAY_23H))
    teams, packing = computed_equals_a_rebuild(con, TEAMS, PACKING)
    assert _close(teams, [_team_row("2026-W48", "t1b"), _team_row("2026-W49", "t2")]), teams

    load(con, {"nodes": [{**nodes[0], "gpu_model": H100}]})
    teams, packing = computed_equals_a_rebuild(con, TEAMS, PACKING)
    assert _close(
        packing,
        [_packing_row("2026-W48", "j1", H100), _packing_row("2026-W49", "j2", H100)],
    ), packing


def test_a_week_whose_windows_come_back_unchanged_is_not_summed_again(tmp_path):
    """GPU 0 reports across the week boundary: W48 Sunday 23:00-23:59, then W49 Monday
    00:00-00:59. The W49 load finds GPU 0's 23:59 window again (its next sample is new), but it
    comes back as it was (60 s, 0.1): W48 and j1 are not summed again, so their overwritten rows
    stand. A late W48 sample at 23:59:30 (activity 0.5) does change W48: its 23:59 window is now
    30 s and the new one 30 s, so W48 is summed again, as a rebuild sums it:
    busy = (59 x 60 x 0.1 + 30 x 0.1 + 30 x 0.5) / 3,600 = 372 / 3,600 GPU-hours, measured 1.0."""
    con = open_store(tmp_path / "boundary.duckdb")
    load(
        con,
        {
            "nodes": one_node(1),
            **_job("j1", "t1", SUNDAY_23H),
            "gpu_samples": _samples(0, SUNDAY_23H),
        },
    )
    computed_equals_a_rebuild(con, TEAMS, PACKING, JOBS)
    _overwrite_w48_and_j1(con)

    load(con, {**_job("j2", "t2", MONDAY), "gpu_samples": _samples(0, MONDAY)})
    compute(con, Settings())
    teams = con.execute(TEAMS).fetchall()
    assert [r[4] for r in teams] == [99, 0.1], teams
    assert [r[5] for r in con.execute(PACKING).fetchall()] == [99, 1.0]
    assert [r[2] for r in con.execute(JOBS).fetchall()] == [99, 0.1]
    assert _close(teams[1:], [_team_row("2026-W49", "t2")]), teams

    late = {
        "ts": MONDAY - MINUTE / 2,
        "node": "n1",
        "gpu": 0,
        "uuid": "GPU-0",
        "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "value": 0.5,
    }
    load(con, {"gpu_samples": [late]})
    teams, jobs = computed_equals_a_rebuild(con, TEAMS, JOBS)
    busy = 372 / 3600
    assert _close(
        teams,
        [("2026-W48", "t1", "q", 1.0, busy, busy, 0.0, 1, None), _team_row("2026-W49", "t2")],
    ), teams
    # p95 of 61 windows with one at 0.5: still 0.1.
    assert _close(jobs[:1], [("j1", 1.0, busy, 0.1, 5000 / 1024, 0.0, 1, 1, "whole_node")]), jobs
