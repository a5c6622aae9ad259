"""gpu_utilisation_daily kept between computes, by UTC day (queries/derived/gpu_utilisation_daily.sql):
a compute sums again only the days from the earliest activity window it deleted or added.

Node n1 (1 GPU), one GR_ENGINE_ACTIVE sample a minute (activity 0.5) from 2026-11-23 00:00 UTC
(minute m, 1,440 a day), so every window is 60 s. Loads, each followed by a compute whose rows
must equal `compute --force`:
1. day 1 (m 0-1439): sampled 24 h, busy 12 h, nothing allocated.
2. day 2 (m 1440-2879): day 1's last window (m 1439) is found again from the new samples, so
   day 1 is summed again (same numbers) and day 2 added: 24 h, 12 h.
3. one hour of day 3 (m 2880-2939): the windows change from day 2's last (m 2879) on, so day 1's
   row stands (same row id); day 3: 1 h sampled, 0.5 h busy.
4. a job that held n1 over m 600-719 of day 1, loaded late, no sample: the windows it now holds
   are re-attributed, so day 1 is summed again: 2 h allocated, 1 h of it busy, 1 job.
"""

from __future__ import annotations

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

GR = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
DAILY = (
    "SELECT day, sampled_h, allocated_h, busy_h, allocated_busy_h, jobs "
    "FROM gpu_utilisation_daily ORDER BY day"
)


def _samples(first: int, end: int) -> list[dict]:
    return [
        {"ts": at(m), "node": "n1", "gpu": 0, "uuid": "GPU-0", "metric": GR, "value": 0.5}
        for m in range(first, end)
    ]


def _late_job() -> dict[str, list[dict]]:
    span = {"start_ts": at(600), "end_ts": at(720), "state": "succeeded", "exit_code": 0}
    return {
        "jobs": [{"job_id": "j", "num_gpus": 1, "submit_ts": at(600), **span}],
        "job_attempts": [{"job_id": "j", "attempt": 0, "nodes": ["n1"], **span}],
    }


def _rounded(rows: list[tuple]) -> list[tuple]:
    return [(day, *(round(x, 9) for x in numbers)) for day, *numbers in rows]


def test_days_before_the_changed_windows_stand(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    day1, day2, day3 = (at(m).date() for m in (0, 1440, 2880))
    load(con, {"nodes": one_node(1), "gpu_samples": _samples(0, 1440)})
    (daily,) = computed_equals_a_rebuild(con, DAILY)
    assert _rounded(daily) == [(day1, 24.0, 0.0, 12.0, 0.0, 0)]

    load(con, {"gpu_samples": _samples(1440, 2880)})
    (daily,) = computed_equals_a_rebuild(con, DAILY)
    assert _rounded(daily) == [(day1, 24.0, 0.0, 12.0, 0.0, 0), (day2, 24.0, 0.0, 12.0, 0.0, 0)]

    day_1_row = "SELECT rowid FROM gpu_utilisation_daily WHERE day = ?"
    before = con.execute(day_1_row, [day1]).fetchall()
    load(con, {"gpu_samples": _samples(2880, 2940)})
    compute(con, Settings())
    assert con.execute(day_1_row, [day1]).fetchall() == before
    (daily,) = computed_equals_a_rebuild(con, DAILY)
    assert _rounded(daily)[2] == (day3, 1.0, 0.0, 0.5, 0.0, 0)

    load(con, _late_job())
    (daily,) = computed_equals_a_rebuild(con, DAILY)
    assert _rounded(daily) == [
        (day1, 24.0, 2.0, 12.0, 1.0, 1),
        (day2, 24.0, 0.0, 12.0, 0.0, 0),
        (day3, 1.0, 0.0, 0.5, 0.0, 0),
    ]
