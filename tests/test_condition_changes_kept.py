"""node_condition_changes kept between computes (queries/derived/node_condition_changes.sql), on a
hand-made node whose loads hit each case the update must see; every expected row is worked out
below.

Node n1, condition NetworkingReady (NR) sampled every two minutes from 2026-11-23 00:00 UTC
(minute m), Ready always True. A row is a change of status, or a condition's first sample
(marked first). Loads, each followed by a compute whose rows (and flapping findings) must equal
`compute --force`:
1. even minutes 0-58: NR True, False from 10, True from 20, False from 30, True from 40.
   Rows: NR (0, True, first), (10, False), (20, True), (30, False), (40, True); Ready (0, True,
   first). Four changes within the hour: NR flaps.
2. even minutes 60-118, NR True: nothing changes (the status before them, True, comes from the
   kept row at 40).
3. a late batch: NR False at minute 45 alone. It is a change, and so is minute 46 (back to True):
   the update starts at 45, from the status kept at 40.
4. odd minutes 121-179, NR False: one change at 121, from the True kept at 46.
5. a late batch before every sample: NR True at minute -2. It is NR's first sample now; minute 0
   is no longer a change (True after True): the update starts at -2 with no status before it.
"""

from __future__ import annotations

from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

NR = "NetworkingReady"


def _load(con, rows: list[dict], nodes: list[dict] | None = None) -> None:
    load(con, {**({"nodes": nodes} if nodes else {}), "node_conditions": rows})


def _sample(minute: int, condition: str, status: bool) -> dict:
    return {
        "ts": at(minute),
        "node": "n1",
        "condition": condition,
        "status": str(status),
        "reason": None,
        "message": None,
    }


ROWS = (
    "SELECT condition, ts, status, first_sample FROM node_condition_changes "
    "WHERE condition = 'NetworkingReady' ORDER BY ts"
)
FINDINGS = "SELECT start_ts, end_ts, score, evidence FROM anomalies WHERE kind = 'condition_flap' ORDER BY ALL"


def _computed_equals_a_rebuild(con) -> list[tuple]:
    return computed_equals_a_rebuild(con, ROWS, FINDINGS)[0]


def _changes(*rows: tuple[int, bool, bool]) -> list[tuple]:
    return [(NR, at(m), str(status), first) for m, status, first in rows]


def test_kept_condition_changes_follow_new_hours_late_samples_and_a_new_first_sample(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    nodes = one_node(1)
    first_hour = [_sample(m, NR, m >= 40 or (m // 10) % 2 == 0) for m in range(0, 60, 2)]
    first_hour += [_sample(m, "Ready", True) for m in range(0, 60, 2)]
    _load(con, first_hour, nodes)
    flapping = _changes(
        (0, True, True),
        (10, False, False),
        (20, True, False),
        (30, False, False),
        (40, True, False),
    )
    assert _computed_equals_a_rebuild(con) == flapping
    ready = con.execute(
        "SELECT ts, status, first_sample FROM node_condition_changes WHERE condition = 'Ready'"
    ).fetchall()
    assert ready == [(at(0), "True", True)]
    assert len(con.execute(FINDINGS).fetchall()) == 1

    _load(con, [_sample(m, NR, True) for m in range(60, 120, 2)])
    assert _computed_equals_a_rebuild(con) == flapping

    _load(con, [_sample(45, NR, False)])
    with_late = [*flapping, *_changes((45, False, False), (46, True, False))]
    assert _computed_equals_a_rebuild(con) == with_late

    _load(con, [_sample(m, NR, False) for m in range(121, 180, 2)])
    assert _computed_equals_a_rebuild(con) == [*with_late, *_changes((121, False, False))]

    _load(con, [_sample(-2, NR, True)])
    assert _computed_equals_a_rebuild(con) == [
        *_changes((-2, True, True)),
        *with_late[1:],
        *_changes((121, False, False)),
    ]
