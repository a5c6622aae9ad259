"""Fleet goodput stack: capacity -> unavailable/unknown -> idle -> allocated -> badput -> productive."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pipelines.config import Settings
from tests.goodput_fleet import at, attempt, compute_with_node_states, job, load

LEVELS = [
    "capacity_gpu_h",
    "unavailable_gpu_h",
    "unknown_gpu_h",
    "idle_gpu_h",
    "allocated_gpu_h",
    "init_gpu_h",
    "checkpoint_gpu_h",
    "wasted_gpu_h",
    "other_gpu_h",
    "productive_gpu_h",
]


@pytest.fixture
def stacked(con):
    # Two 8-GPU nodes. Job "s": 4 GPUs over [n1, n2] (2 per node) for [0, 1200), no step timings,
    # succeeded: all 1200 s productive. Node states over the first hour:
    #   n1 available [0, 3600)
    #   n2 unknown [0, 600), available [600, 1800), unavailable [1800, 2400), maintenance [2400, 3600)
    load(
        con,
        {
            "nodes": [
                {"node": "n1", "cluster": "c1", "gpu_count": 8},
                {"node": "n2", "cluster": "c1", "gpu_count": 8},
            ],
            "jobs": [job("s", start=0, end=1200, state="succeeded", gpus=4)],
            "job_attempts": [
                attempt("s", 0, start=0, end=1200, state="succeeded", nodes=["n1", "n2"])
            ],
        },
    )
    compute_with_node_states(
        con,
        Settings(),
        [
            ("n1", 0, 3600, "available"),
            ("n2", 0, 600, "unknown"),
            ("n2", 600, 1800, "available"),
            ("n2", 1800, 2400, "unavailable"),
            ("n2", 2400, 3600, "maintenance"),
        ],
    )
    return con


def test_stack_worked_example(stacked):
    rows = stacked.execute(
        f"SELECT week, cluster, {', '.join(LEVELS)}, goodput FROM goodput_stack"
    ).fetchall()
    # allocated: 4 GPUs x 1200 s = 4800 GPU-s = 1.333333 GPU-h, all productive.
    # n1 free: 6 GPUs x 1200 s + 8 x 2400 s = 26400 GPU-s idle.
    # n2 free: unknown 6 x 600 = 3600 (the job's 2 GPUs there count as allocated, not unknown);
    #   idle 6 x 600 + 8 x 600 = 8400; unavailable 8 x 600 = 4800; maintenance not in capacity.
    # idle 34800 GPU-s = 9.666667 GPU-h; unavailable 1.333333; unknown 1.0.
    # capacity = 1.333333 + 1.0 + 9.666667 + 1.333333 = 13.333333 (sum of the rounded leaves).
    expected = (
        "2026-W48",
        "c1",
        "13.333333",
        "1.333333",
        "1.000000",
        "9.666667",
        "1.333333",
        "0",
        "0",
        "0",
        "0",
        "1.333333",
    )
    assert rows[0][:2] == expected[:2]
    assert rows[0][2:12] == tuple(Decimal(v) for v in expected[2:])
    assert rows[0][12] == 1.0
    assert len(rows) == 1


def test_stack_splits_at_iso_weeks(con):
    # A 2-GPU job on n1 from Sunday 2026-11-29 23:00 to Monday 2026-11-30 01:00 UTC, 1 h in W48 and
    # 1 h in W49; node n1 (8 GPUs) available over those 2 hours: idle 6 GPU-h in each week.
    start = 7 * 86400 - 3600
    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [job("w", start=start, end=start + 7200, state="succeeded")],
            "job_attempts": [attempt("w", 0, start=start, end=start + 7200, state="succeeded")],
        },
    )
    compute_with_node_states(con, Settings(), [("n1", start, start + 7200, "available")])
    rows = con.execute(
        "SELECT week, window_start, capacity_gpu_h, idle_gpu_h, productive_gpu_h FROM goodput_stack"
    ).fetchall()
    assert rows == [
        ("2026-W48", at(0), Decimal(8), Decimal(6), Decimal(2)),
        ("2026-W49", at(7 * 86400), Decimal(8), Decimal(6), Decimal(2)),
    ]


@pytest.mark.parametrize(
    "state, expected",
    [
        # A 2-GPU job on an 8-GPU node for the whole hour [0, 3600); the node's state all hour:
        # capacity, unavailable, unknown, idle, allocated (GPU-h). Allocated 2 x 1 h whatever the state;
        # the 6 free GPUs x 1 h go by state; in maintenance they are not in capacity at all.
        ("available", (8, 0, 0, 6, 2)),
        ("degraded", (8, 0, 0, 6, 2)),
        ("unavailable", (8, 6, 0, 0, 2)),
        ("unknown", (8, 0, 6, 0, 2)),
        ("maintenance", (2, 0, 0, 0, 2)),
    ],
)
def test_allocated_gpus_count_whatever_the_node_state(con, state, expected):
    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [job("j", start=0, end=3600, state="succeeded")],
            "job_attempts": [attempt("j", 0, start=0, end=3600, state="succeeded")],
        },
    )
    compute_with_node_states(con, Settings(), [("n1", 0, 3600, state)])
    row = con.execute(
        "SELECT capacity_gpu_h, unavailable_gpu_h, unknown_gpu_h, idle_gpu_h, allocated_gpu_h FROM goodput_stack"
    ).fetchall()
    assert row == [tuple(Decimal(v) for v in expected)]
