"""The straggler detector on real per-worker step logs (Alibaba PAI traces, tests/data/pai_minibatch).

What each job shows was read off the data by eye (see the data's README); the detector must find
each slow spell with its start and end within 50 logged iterations, and nothing on the workers that
were never slow.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from tests.real_step_logs import trace_fleet

TOLERANCE = 50  # iterations: five logged steps


def straggler_episodes(
    con: duckdb.DuckDBPyConnection, name: str
) -> dict[int, list[tuple[int, int]]]:
    """rank -> [(first step, last step)] of its straggler findings, in step order."""
    trace_fleet(name).load(con)
    compute(con, Settings(), force=True)
    rows = con.execute(
        "SELECT rank, evidence FROM anomalies WHERE kind = 'straggler' ORDER BY rank, start_ts"
    ).fetchall()
    episodes: dict[int, list[tuple[int, int]]] = {}
    for rank, evidence in rows:
        found = json.loads(evidence)
        episodes.setdefault(rank, []).append((found["first_step"], found["last_step"]))
    return episodes


def near(found: int, expected: int) -> bool:
    return abs(found - expected) <= TOLERANCE


def test_transient_spell_is_found_with_its_end(con):
    # Worker 6 of job 1 runs 1.2-1.7x slow from iteration ~1801 to ~1941, then recovers.
    episodes = straggler_episodes(con, "job_1_norm")
    spells = episodes.get(6, [])
    assert any(near(first, 1801) and near(last, 1941) for first, last in spells), spells
    # Workers 3-5 and 7-9 are never slower than the others.
    assert not set(episodes) & {3, 4, 5, 7, 8, 9}


def test_ranks_that_trade_places(con):
    # Job 3: workers 0 and 1 slow until ~2181; then workers 6-9 slow from ~2161-2191 to the end
    # (iteration 2481), while fast workers drag the per-step median down.
    episodes = straggler_episodes(con, "job_3_norm")
    for rank in (0, 1):
        assert any(near(last, 2181) for _, last in episodes.get(rank, [])), (
            rank,
            episodes.get(rank),
        )
    for rank in (6, 7, 8, 9):
        late = [(first, last) for first, last in episodes.get(rank, []) if last == 2481]
        assert late and 2161 - TOLERANCE <= late[0][0] <= 2191 + TOLERANCE, (
            rank,
            episodes.get(rank),
        )
    assert not set(episodes) & {2, 3, 4, 5}


@pytest.mark.parametrize(
    "name, logged_steps, ranks", [("job_1_norm", 300, 10), ("job_3_norm", 249, 10)]
)
def test_trace_loads_as_rank_steps(con, name, logged_steps, ranks):
    trace_fleet(name).load(con)
    steps, workers = con.execute(
        "SELECT count(DISTINCT step), count(DISTINCT rank) FROM rank_steps"
    ).fetchone()
    assert (steps, workers) == (logged_steps, ranks)
