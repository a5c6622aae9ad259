"""rank_step_summaries kept between computes (queries/derived/rank_step_summaries.sql): a compute
summarises again only the jobs whose rank steps were loaded since the last one.

Node n1 (2 GPUs) in cluster c1, from 2026-11-23 00:00 UTC (minute m). Job 1 and job 2 each run one
attempt on n1 over minutes 0-30 and succeed. Loads, each followed by a compute whose summaries and
goodput_steps must equal `compute --force`:
1. job 1, step 1 from ranks 0 and 1, step 2 from rank 0 only.
     step 1: ends at m1 + 2 s (rank 1's end), 2 ranks, compute_s logged by both, step_s 50 and 52:
             longest 52 s, median 51 s, the slowest rank 1.
     step 2: ends at m2, 1 rank, step_s 58.
2. rank 1's line of job 1's step 2, late (step_s 61, no compute_s), and job 2's step 1.
     job 1 step 2 is summarised again: ends at m2 + 3 s, 2 ranks, no longer every rank with
     compute_s, step_s 58 and 61: longest 61 s, median 59.5 s, the slowest rank 1.
3. job 2's step 2 only: job 1's summaries are not touched (same row ids), job 2's step 2 is added.
rank_gpus (the GPUs each attempt's ranks logged; gpu = rank here) is kept with them: job 1 on
GPUs 0 and 1 of n1 from the first load on, job 2 on GPU 0 from the second; job 1's rows are not
touched by the third.
4. job 1's step 3 written into rank_steps by another program (not noted as loaded), then job 2's
   step 3 loaded: the summaries would miss job 1's step 3, so the cluster is summarised again.
"""

from __future__ import annotations

from datetime import timedelta

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

SUMMARIES = (
    "SELECT cluster, job_id, attempt, step, end_us, ranks, uses_compute, longest_step_us, "
    "median_step_s, slowest_step_rank FROM rank_step_summaries ORDER BY job_id, attempt, step"
)
GOODPUT_STEPS = "SELECT * FROM goodput_steps ORDER BY job_id, attempt, step"
LOADED = "SELECT cluster, job_id FROM rank_steps_loaded ORDER BY ALL"
RANK_GPUS = "SELECT cluster, job_id, attempt, node, gpu FROM rank_gpus ORDER BY ALL"
JOB_1 = [("c1", "1", 0, "n1", 0), ("c1", "1", 0, "n1", 1)]


def _job(job_id: str) -> dict[str, list[dict]]:
    return {
        "jobs": [
            {
                "job_id": job_id,
                "start_ts": at(0),
                "end_ts": at(30),
                "num_gpus": 2,
                "state": "succeeded",
            }
        ],
        "job_attempts": [
            {
                "job_id": job_id,
                "attempt": 0,
                "start_ts": at(0),
                "end_ts": at(30),
                "state": "succeeded",
                "nodes": ["n1"],
            }
        ],
    }


def _step(job_id, step, rank, end, step_s, compute_s) -> dict:
    return {
        "job_id": job_id,
        "attempt": 0,
        "step": step,
        "rank": rank,
        "node": "n1",
        "gpu": rank,
        "end_ts": end,
        "step_s": step_s,
        "compute_s": compute_s,
    }


def _us(t) -> int:
    return int(t.timestamp() * 1_000_000)


def test_only_the_jobs_loaded_since_are_summarised_again(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    s = timedelta(seconds=1)
    load(
        con,
        {
            "nodes": one_node(2),
            **_job("1"),
            "rank_steps": [
                _step("1", 1, 0, at(1), 50.0, 40.0),
                _step("1", 1, 1, at(1) + 2 * s, 52.0, 45.0),
                _step("1", 2, 0, at(2), 58.0, 50.0),
            ],
        },
    )
    assert con.execute(LOADED).fetchall() == [("c1", "1")]
    summaries, steps, gpus = computed_equals_a_rebuild(con, SUMMARIES, GOODPUT_STEPS, RANK_GPUS)
    assert gpus == JOB_1
    assert summaries == [
        ("c1", "1", 0, 1, _us(at(1) + 2 * s), 2, True, 52_000_000, 51.0, 1),
        ("c1", "1", 0, 2, _us(at(2)), 1, True, 58_000_000, 58.0, 0),
    ]
    assert [row[2] for row in steps] == [1, 2]
    assert con.execute(LOADED).fetchall() == []

    load(
        con,
        {
            **_job("2"),
            "rank_steps": [
                _step("1", 2, 1, at(2) + 3 * s, 61.0, None),
                _step("2", 1, 0, at(5), 5.0, 4.0),
            ],
        },
    )
    assert con.execute(LOADED).fetchall() == [("c1", "1"), ("c1", "2")]
    summaries, _, gpus = computed_equals_a_rebuild(con, SUMMARIES, GOODPUT_STEPS, RANK_GPUS)
    assert gpus == [*JOB_1, ("c1", "2", 0, "n1", 0)]
    assert summaries == [
        ("c1", "1", 0, 1, _us(at(1) + 2 * s), 2, True, 52_000_000, 51.0, 1),
        ("c1", "1", 0, 2, _us(at(2) + 3 * s), 2, False, 61_000_000, 59.5, 1),
        ("c1", "2", 0, 1, _us(at(5)), 1, True, 5_000_000, 5.0, 0),
    ]

    job_1_rows = "SELECT rowid FROM rank_step_summaries WHERE job_id = '1' ORDER BY rowid"
    job_1_gpus = "SELECT rowid FROM rank_gpus WHERE job_id = '1' ORDER BY rowid"
    before = con.execute(job_1_rows).fetchall(), con.execute(job_1_gpus).fetchall()
    load(con, {"rank_steps": [_step("2", 2, 0, at(6), 60.0, 55.0)]})
    assert con.execute(LOADED).fetchall() == [("c1", "2")]
    compute(con, Settings())
    assert (con.execute(job_1_rows).fetchall(), con.execute(job_1_gpus).fetchall()) == before
    summaries, _ = computed_equals_a_rebuild(con, SUMMARIES, GOODPUT_STEPS)
    assert summaries[-1] == ("c1", "2", 0, 2, _us(at(6)), 1, True, 60_000_000, 60.0, 0)
    assert len(summaries) == 4

    con.execute(
        "INSERT INTO rank_steps VALUES ('c1', '1', 0, 3, 0, 'n1', 0, ?, 30.0, NULL)", [at(3)]
    )
    load(con, {"rank_steps": [_step("2", 3, 0, at(7), 60.0, 55.0)]})
    assert con.execute(LOADED).fetchall() == [("c1", "2")]
    summaries, _ = computed_equals_a_rebuild(con, SUMMARIES, GOODPUT_STEPS)
    assert ("c1", "1", 0, 3, _us(at(3)), 1, False, 30_000_000, 30.0, 0) in summaries
    assert len(summaries) == 6
