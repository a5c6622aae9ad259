"""goodput_steps, job_stalls, goodput_segments and job_goodput kept per job between computes, on
two hand-made jobs; every expected number is worked out below.

Both jobs start at T0 on node n1 with 2 GPUs and log 10-second steps (2 ranks) ending at 20, 30,
..., 110 s: a step's interval starts where the previous one ended, the first one 10 s before its
end, so the attempt spends [0, 10) in init and [10, 110) in steps.
- `done` succeeded at 110 s: its final attempt keeps every step. Wall 110 s = init 10 + productive
  100.
- `live` is running; its open attempt keeps its steps so far and ends at the data horizon, the
  newest timestamp in the store (110 s after the first load).

Loads, each followed by a compute:
1. Both jobs as above.
2. `live`'s steps 11-20 (ending at 120 ... 210 s), after `done`'s job_goodput and segment rows were
   overwritten by hand: `done`'s inputs are unchanged, so its overwritten rows stand; `live`, whose
   span now ends at 210 s, is built again: wall 210 = init 10 + productive 200.
3. A blocking checkpoint save of `done` at step 5, 55-60 s: `done` is built again. 5 s of its
   step [50, 60) are now checkpoint, and the first kept step's program startup is its 10 s less
   the mean of the other kept steps net of checkpoints, 85 / 9 s (9,444,444 us rounded): 555,556
   us more init. Init 10.555556, checkpoint 5, productive 100 - 5 - 0.555556 = 94.444444.
After each, `compute --force` gives the same rows for every job whose rows were not overwritten.
"""

from __future__ import annotations

from decimal import Decimal

from pipelines.compute import compute
from pipelines.config import DetectionSettings, Settings
from pipelines.store import open_store
from tests.goodput_fleet import attempt, checkpoint, job, steps
from tests.kept_cases import computed_equals_a_rebuild, load, one_node

GOODPUT = (
    "SELECT job_id, wall_s, productive_s, init_s, checkpoint_s, other_s, is_running "
    "FROM job_goodput ORDER BY job_id"
)
SEGMENTS = (
    "SELECT job_id, attempt, start_us, end_us, category, gpus FROM goodput_segments ORDER BY ALL"
)
STEPS = "SELECT job_id, attempt, step, start_us, end_us, kept FROM goodput_steps ORDER BY ALL"


def _first_load(con) -> None:
    load(
        con,
        {
            "nodes": one_node(2),
            "jobs": [
                job("done", start=0, end=110, state="succeeded"),
                job("live", start=0, end=None, state="running"),
            ],
            "job_attempts": [
                attempt("done", 0, start=0, end=110, state="succeeded"),
                attempt("live", 0, start=0, end=None, state="running"),
            ],
            "rank_steps": steps("done", 0, first_end=20, step_s=10, count=10)
            + steps("live", 0, first_end=20, step_s=10, count=10),
        },
    )


def test_a_job_whose_inputs_did_not_change_keeps_its_rows(tmp_path):
    con = open_store(tmp_path / "fleet.duckdb")
    _first_load(con)
    goodput, *_ = computed_equals_a_rebuild(con, GOODPUT, SEGMENTS, STEPS)
    assert goodput == [
        ("done", Decimal(110), Decimal(100), Decimal(10), Decimal(0), Decimal(0), False),
        ("live", Decimal(110), Decimal(100), Decimal(10), Decimal(0), Decimal(0), True),
    ]

    # 2. `done`'s rows overwritten by hand; only `live` gets new steps.
    con.execute("UPDATE job_goodput SET productive_s = 1 WHERE job_id = 'done'")
    con.execute("UPDATE goodput_segments SET gpus = 99 WHERE job_id = 'done'")
    load(con, {"rank_steps": steps("live", 0, first_end=120, step_s=10, count=10, first_step=11)})
    compute(con, Settings())
    assert con.execute(GOODPUT).fetchall() == [
        ("done", Decimal(110), Decimal(1), Decimal(10), Decimal(0), Decimal(0), False),
        ("live", Decimal(210), Decimal(200), Decimal(10), Decimal(0), Decimal(0), True),
    ]
    assert con.execute(
        "SELECT DISTINCT gpus FROM goodput_segments WHERE job_id = 'done'"
    ).fetchall() == [(99,)]
    live = [
        con.execute(
            f"{query.replace('ORDER BY', 'WHERE job_id = ? ORDER BY')}", ["live"]
        ).fetchall()
        for query in (GOODPUT, SEGMENTS, STEPS)
    ]
    compute(con, Settings(), force=True)
    assert [
        con.execute(
            f"{query.replace('ORDER BY', 'WHERE job_id = ? ORDER BY')}", ["live"]
        ).fetchall()
        for query in (GOODPUT, SEGMENTS, STEPS)
    ] == live

    # 3. A change to `done`'s inputs builds it again (after another overwrite).
    con.execute("UPDATE job_goodput SET productive_s = 1 WHERE job_id = 'done'")
    load(con, {"checkpoints": [checkpoint("done", 0, 5, "save", start=55, duration=5)]})
    goodput, *_ = computed_equals_a_rebuild(con, GOODPUT, SEGMENTS, STEPS)
    assert goodput[0] == (
        "done",
        Decimal(110),
        Decimal("94.444444"),
        Decimal("10.555556"),
        Decimal(5),
        Decimal(0),
        False,
    )


def test_new_settings_build_every_job_again(tmp_path):
    con = open_store(tmp_path / "fleet.duckdb")
    _first_load(con)
    compute(con, Settings())
    con.execute("UPDATE job_goodput SET productive_s = 1")
    compute(con, Settings(detection=DetectionSettings(stall_min_s=1200)))
    assert con.execute("SELECT productive_s FROM job_goodput ORDER BY job_id").fetchall() == [
        (Decimal(100),),
        (Decimal(100),),
    ]
