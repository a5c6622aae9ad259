"""Goodput of a job: segments, job_goodput, worked out by hand on a tiny fleet."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import Settings
from pipelines.store import open_store
from tests.goodput_fleet import at, attempt, checkpoint, compute_with_node_states, job, load, steps

SECONDS = ["wall_s", "productive_s", "init_s", "checkpoint_s", "wasted_s", "recovery_s", "other_s"]


def fleet() -> dict[str, list[dict]]:
    """The hand-made fleet; each job's timeline is spelled out in the test table below."""
    return {
        "nodes": [
            {"node": "n1", "cluster": "c1", "gpu_count": 8},
            {"node": "n2", "cluster": "c1", "gpu_count": 8},
        ],
        "jobs": [
            job("restart", start=0, end=900, state="succeeded", submit=-100),
            job("nosteps", start=0, end=620, state="succeeded", gpus=4),
            job("recompute", start=0, end=400, state="succeeded"),
            job("straggler", start=0, end=400, state="succeeded", gpus=4),
            job("legacy", start=100, end=200, state="failed", gpus=1),
        ],
        "job_attempts": [
            attempt("restart", 0, start=0, end=400, state="node_fail"),
            attempt("restart", 1, start=500, end=900, state="succeeded"),
            attempt("nosteps", 0, start=0, end=300, state="failed", nodes=["n1", "n2"]),
            attempt("nosteps", 1, start=360, end=600, state="succeeded", nodes=["n1", "n2"]),
            attempt("recompute", 0, start=0, end=200, state="failed"),
            attempt("recompute", 1, start=250, end=400, state="succeeded"),
            attempt("straggler", 0, start=0, end=400, state="succeeded", nodes=["n2"]),
        ],
        "rank_steps": [
            # restart: attempt 0 steps 1..30 end at 60, 70, .., 350; attempt 1 steps 21..50,
            # the first logged as 30 s (program startup), ending at 560, 570, .., 850.
            *steps("restart", 0, first_end=60, step_s=10, count=30),
            *steps(
                "restart", 1, first_end=560, step_s=10, count=30, first_step=21, first_step_s=30
            ),
            # recompute: attempt 0 steps 1..10 end at 20..110; attempt 1 redoes 6..15, ending 270..360.
            *steps("recompute", 0, first_end=20, step_s=10, count=10),
            *steps("recompute", 1, first_end=270, step_s=10, count=10, first_step=6),
            # straggler: 4 ranks, steps 1..30 end at 20..310, rank 2's compute_s is 20 % longer.
            *steps(
                "straggler",
                0,
                first_end=20,
                step_s=10,
                count=30,
                ranks=4,
                compute=True,
                slow={2: 1.2},
                node="n2",
            ),
        ],
        "checkpoints": [
            checkpoint("restart", 0, 20, "save", start=250, duration=5),
            checkpoint("restart", 1, 20, "restore", start=510, duration=20),
            checkpoint("nosteps", 0, 5, "save", start=100, duration=10),
            checkpoint("recompute", 0, 5, "save", start=60, duration=2),
            checkpoint("recompute", 0, 8, "save", start=90, duration=2),
            checkpoint("recompute", 1, 5, "restore", start=250, duration=5),
        ],
    }


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    con = open_store(Path(tmp_path_factory.mktemp("goodput")) / "fleet.duckdb")
    load(con, fleet())
    compute_with_node_states(con, Settings())
    yield con
    con.close()


EXPECTED = [
    # job, wall, productive, init, checkpoint, wasted, recovery, other
    # restart: attempt 0 [0,400): init [0,50) = 50; steps 1..20 kept [50,250) = 200 productive;
    #   step 21 [250,260) holds the save [250,255): 5 checkpoint + 5 wasted; steps 22..30
    #   [260,350) wasted 90; tail [350,400) other 50. Recovery [400,500) = 100.
    #   attempt 1 [500,900): init [500,510) = 10, restore [510,530) = 20 checkpoint, step 21
    #   [530,560) is 30 s against a mean of 10 s: startup 20 s is init [530,550); productive
    #   [550,850) = 300; tail [850,900) other 50.
    #   productive 500, init 80, checkpoint 25, wasted 95, recovery 100, other 100: sum 900.
    ("restart", 900, 500, 80, 25, 95, 100, 100),
    # nosteps (no step timings): attempt 0 [0,300) kept up to its save: productive [0,100),
    #   checkpoint [100,110), wasted [110,300) = 190; recovery [300,360) = 60; attempt 1
    #   (final, succeeded) productive [360,600) = 240; job end 620: other [600,620) = 20.
    ("nosteps", 620, 340, 0, 10, 190, 60, 20),
    # recompute: attempt 0 saved at steps 5 and 8 but attempt 1 restored step 5 and redid 6..15,
    #   so steps 6..8 of attempt 0 count once, in attempt 1. Attempt 0: init [0,10) = 10,
    #   steps 1..5 [10,60) productive 50, steps 6..10 [60,110) hold saves [60,62), [90,92):
    #   checkpoint 4, wasted 46; tail [110,200) other 90. Recovery [200,250) = 50. Attempt 1:
    #   restore [250,255) = 5, init [255,260) = 5, steps 6..15 [260,360) productive 100,
    #   tail [360,400) other 40.   150 + 15 + 9 + 46 + 50 + 130 = 400.
    ("recompute", 400, 150, 15, 9, 46, 50, 130),
    # straggler: init [0,10), steps [10,310) productive 300, tail [310,400) other 90.
    ("straggler", 400, 300, 10, 0, 0, 0, 90),
    # legacy: a job row without attempts or steps gets one implicit attempt [100,200), failed,
    #   no save: all 100 s wasted.
    ("legacy", 100, 0, 0, 0, 100, 0, 0),
]


@pytest.mark.parametrize("job_id, wall, productive, init, ckpt, wasted, recovery, other", EXPECTED)
def test_job_goodput_breakdown(
    computed, job_id, wall, productive, init, ckpt, wasted, recovery, other
):
    row = computed.execute(
        f"SELECT {', '.join(SECONDS)} FROM job_goodput WHERE job_id = ?", [job_id]
    ).fetchall()[0]
    assert row == tuple(Decimal(v) for v in (wall, productive, init, ckpt, wasted, recovery, other))
    assert row[0] == sum(row[1:])


@pytest.mark.parametrize(
    "job_id, goodput, ettr, allocated_gpu_s, productive_gpu_s, drag_s",
    [
        # restart: 500 / 900; ettr 500 / (900 - (-100)); 2 GPUs x (400 + 400); 2 x 500; no drag.
        ("restart", 500 / 900, 0.5, 1600, 1000, Decimal(0)),
        # nosteps: 340 / 620; submitted at start; 4 x (300 + 240); 4 x 340; no step timings: NULL.
        ("nosteps", 340 / 620, 340 / 620, 2160, 1360, None),
        # recompute: 150 / 400; 2 x (200 + 150); 2 x 150.
        ("recompute", 150 / 400, 150 / 400, 700, 300, Decimal(0)),
        # straggler: 300 / 400; 4 x 400; 4 x 300; 30 steps x (9.6 - 8.0) = 48 s of drag.
        ("straggler", 0.75, 0.75, 1600, 1200, Decimal(48)),
    ],
)
def test_job_goodput_ratios(
    computed, job_id, goodput, ettr, allocated_gpu_s, productive_gpu_s, drag_s
):
    row = computed.execute(
        "SELECT goodput, ettr, allocated_gpu_s, productive_gpu_s, straggler_drag_s "
        "FROM job_goodput WHERE job_id = ?",
        [job_id],
    ).fetchall()[0]
    assert row[0] == pytest.approx(goodput, abs=1e-12)
    assert row[1] == pytest.approx(ettr, abs=1e-12)
    assert row[2:] == (Decimal(allocated_gpu_s), Decimal(productive_gpu_s), drag_s)


@pytest.mark.parametrize(
    "job_id, timeline",
    [
        (
            "restart",
            [
                (0, 0, 50, "init"),
                (0, 50, 250, "productive"),
                (0, 250, 255, "checkpoint"),
                (0, 255, 350, "wasted"),
                (0, 350, 400, "other"),
                (0, 400, 500, "recovery"),
                (1, 500, 510, "init"),
                (1, 510, 530, "checkpoint"),
                (1, 530, 550, "init"),
                (1, 550, 850, "productive"),
                (1, 850, 900, "other"),
            ],
        ),
        (
            "nosteps",
            [
                (0, 0, 100, "productive"),
                (0, 100, 110, "checkpoint"),
                (0, 110, 300, "wasted"),
                (0, 300, 360, "recovery"),
                (1, 360, 600, "productive"),
                (1, 600, 620, "other"),
            ],
        ),
    ],
)
def test_segments_timeline(computed, job_id, timeline):
    rows = computed.execute(
        "SELECT attempt, start_ts, end_ts, category FROM goodput_segments WHERE job_id = ? ORDER BY start_ts",
        [job_id],
    ).fetchall()
    assert rows == [(a, at(s), at(e), c) for a, s, e, c in timeline]


def test_recovery_and_released_tail_hold_no_gpus(computed):
    rows = computed.execute(
        "SELECT DISTINCT category FROM goodput_segments WHERE gpus = 0 ORDER BY 1"
    ).fetchall()
    # the only zero-GPU segments: recovery gaps and nosteps' [600,620) after its last attempt
    assert rows == [("other",), ("recovery",)]


def test_running_job_ends_at_the_data_horizon(con):
    # Steps 1..10 end at 20..110; the newest timestamp in the store is 110, the provisional end.
    load(
        con,
        {
            "jobs": [job("live", start=0, end=None, state="running")],
            "job_attempts": [attempt("live", 0, start=0, end=None, state="running")],
            "rank_steps": steps("live", 0, first_end=20, step_s=10, count=10),
        },
    )
    compute_with_node_states(con, Settings())
    row = con.execute(
        "SELECT wall_s, productive_s, init_s, other_s, is_running FROM job_goodput"
    ).fetchall()
    # init [0,10), steps [10,110) all productive (the running attempt keeps its steps so far).
    assert row == [(Decimal(110), Decimal(100), Decimal(10), Decimal(0), True)]


def test_running_job_waiting_for_requeue(con):
    # Attempt 0 [0,110) failed with no save: steps 1..10 [10,110) wasted, init [0,10). The job is
    # still running (waiting for a requeue); the data horizon is 200 (a node condition sample),
    # so [110,200) is recovery.
    load(
        con,
        {
            "jobs": [job("requeue", start=0, end=None, state="running")],
            "job_attempts": [attempt("requeue", 0, start=0, end=110, state="failed")],
            "rank_steps": steps("requeue", 0, first_end=20, step_s=10, count=10),
            "node_conditions": [
                {"ts": at(200), "node": "n1", "condition": "Ready", "status": "True"}
            ],
        },
    )
    compute_with_node_states(con, Settings())
    row = con.execute(
        "SELECT wall_s, productive_s, init_s, wasted_s, recovery_s, other_s, is_running FROM job_goodput"
    ).fetchall()
    assert row == [
        (Decimal(200), Decimal(0), Decimal(10), Decimal(100), Decimal(90), Decimal(0), True)
    ]


# Program startup overlapping a checkpoint. Each job: one succeeded 2-GPU attempt [0,200); step 1
# logged as 100 s ends at 100 (so it runs [0,100)), steps 2..11 of 10 s end at 110..200. The mean
# of the other kept steps is 10 s; startup = step 1 net of checkpoints - 10 s, and that much
# NON-checkpoint time from the step start is init (the checkpoint keeps its own time).
STARTUP_CASES = [
    # restore [0,30): step 1 net 100 - 30 = 70, startup 70 - 10 = 60. checkpoint [0,30) = 30,
    #   init [30,90) = 60, productive [90,100) + [100,200) = 110. 110 + 60 + 30 = 200.
    ("restore_first", ("restore", 0, 30), (200, 110, 60, 30, 0, 0, 0)),
    # save [20,30): net 90, startup 80. init [0,20) + [30,90) = 80, checkpoint 10,
    #   productive [90,100) + 100 = 110. 110 + 80 + 10 = 200.
    ("save_inside", ("save", 20, 10), (200, 110, 80, 10, 0, 0, 0)),
    # save [95,100), after the startup stretch: net 95, startup 85. init [0,85) = 85,
    #   productive [85,95) + [100,200) = 110, checkpoint 5. 110 + 85 + 5 = 200.
    ("save_after", ("save", 95, 5), (200, 110, 85, 5, 0, 0, 0)),
]


@pytest.fixture(scope="module")
def startup_computed(tmp_path_factory):
    con = open_store(Path(tmp_path_factory.mktemp("startup")) / "fleet.duckdb")
    cases = [(job_id, ck) for job_id, ck, _ in STARTUP_CASES]
    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [job(j, start=0, end=200, state="succeeded") for j, _ in cases],
            "job_attempts": [attempt(j, 0, start=0, end=200, state="succeeded") for j, _ in cases],
            "rank_steps": [
                row
                for j, _ in cases
                for row in steps(j, 0, first_end=100, step_s=10, count=11, first_step_s=100)
            ],
            "checkpoints": [
                checkpoint(j, 0, 1, kind, start=start, duration=duration)
                for j, (kind, start, duration) in cases
            ],
        },
    )
    compute_with_node_states(con, Settings())
    yield con
    con.close()


@pytest.mark.parametrize("job_id, checkpoint_row, expected", STARTUP_CASES)
def test_program_startup_is_counted_net_of_checkpoints(
    startup_computed, job_id, checkpoint_row, expected
):
    row = startup_computed.execute(
        f"SELECT {', '.join(SECONDS)} FROM job_goodput WHERE job_id = ?", [job_id]
    ).fetchall()[0]
    assert row == tuple(Decimal(v) for v in expected)
