"""node_state_intervals kept between computes (queries/derived/node_state_intervals.sql), on a
hand-made node whose loads hit each case the update must see; every expected row is worked out
below.

Node n1 (1 GPU), staleness 5 minutes, from 2026-11-23 00:00 UTC (minute m); GPU_UTIL every two
minutes (even m), Ready every minute. Loads, each followed by a compute whose intervals must equal
`compute --force`:
1. minutes 0-59, Ready False at 20-29. Horizon 59.
   available [0, 20), unavailable Ready=False [20, 30), available [30, 59).
2. minutes 60-119, Ready True. The horizon moves to 119: the states are built again from the old
   horizon, 59, and the available interval before it goes on to 119 (one interval, not two; the
   GPU sample at 118 holds until 123).
3. a late sample: Ready False at 46:30, alone. Unavailable until the next Ready sample at 47.
   Ready changed four times within the hour (20, 30, 46:30, 47): a condition_flap finding (warn)
   over [20, 47) makes the available stretch [30, 46:30) degraded.
4. a maintenance window [5, 11), and no sample: a changed input from 5 on, long before the last
   interval, so the node is built again from 5, cutting [0, 20).
5. Ready every minute 120-179, no GPU sample. The node is built again from the old horizon, 119,
   an odd minute: GPU 0 is fresh there only through its sample at 118, read from before the cut.
   It holds until 123, then unknown; the telemetry-gap finding (warn, open, from the first missed
   scrape at 119) makes [119, 123) degraded.
6. NetworkingReady True at 150-179: a condition new to the node must have been fresh all along
   (no required list), so the whole lifetime is built again: `NetworkingReady stale` before 150,
   outranked only by maintenance and Ready=False.
7. the inventory says 2 GPUs: gpu 1 never reported, so the whole lifetime again.
8. a late Ready sample at minute -5, before every other: the data (and every inventory node's
   lifetime) now start there, so the whole lifetime again; [-5, 0) has no GPU sample at all.
"""

from __future__ import annotations

from datetime import timedelta

from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

UTIL = "DCGM_FI_DEV_GPU_UTIL"
INTERVALS = "SELECT start_ts, end_ts, state, reason FROM node_state_intervals ORDER BY start_ts"


def _gpu(minutes) -> list[dict]:
    return [
        {"ts": at(m), "node": "n1", "gpu": 0, "uuid": "GPU-0", "metric": UTIL, "value": 50.0}
        for m in minutes
    ]


def _condition(minutes, status: str, condition: str = "Ready", seconds: int = 0) -> list[dict]:
    return [
        {
            "ts": at(m) + timedelta(seconds=seconds),
            "node": "n1",
            "condition": condition,
            "status": status,
            "reason": None,
            "message": None,
        }
        for m in minutes
    ]


def _intervals(*rows: tuple[float, float, str, str | None]) -> list[tuple]:
    return [
        (at(0) + timedelta(minutes=start), at(0) + timedelta(minutes=end), state, reason)
        for start, end, state, reason in rows
    ]


def _computed_equals_a_rebuild(con) -> list[tuple]:
    return computed_equals_a_rebuild(con, INTERVALS)[0]


NR_STALE = "NetworkingReady stale"
GPU1 = "no DCGM sample from gpu 1"


def test_kept_node_states_follow_new_hours_late_samples_findings_and_whole_node_changes(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    ready = [m for m in range(60) if not 20 <= m < 30]
    load(
        con,
        {
            "nodes": one_node(1),
            "gpu_samples": _gpu(range(0, 60, 2)),
            "node_conditions": _condition(ready, "True") + _condition(range(20, 30), "False"),
        },
    )
    assert _computed_equals_a_rebuild(con) == _intervals(
        (0, 20, "available", None),
        (20, 30, "unavailable", "Ready=False"),
        (30, 59, "available", None),
    )

    load(
        con,
        {
            "gpu_samples": _gpu(range(60, 120, 2)),
            "node_conditions": _condition(range(60, 120), "True"),
        },
    )
    assert _computed_equals_a_rebuild(con) == _intervals(
        (0, 20, "available", None),
        (20, 30, "unavailable", "Ready=False"),
        (30, 119, "available", None),
    )

    load(con, {"node_conditions": _condition([46], "False", seconds=30)})
    flapped = [
        (20, 30, "unavailable", "Ready=False"),
        (30, 46.5, "degraded", "anomaly: condition_flap"),
        (46.5, 47, "unavailable", "Ready=False"),
    ]
    assert _computed_equals_a_rebuild(con) == _intervals(
        (0, 20, "available", None), *flapped, (47, 119, "available", None)
    )

    load(
        con,
        {"maintenance": [{"node": "n1", "start_ts": at(5), "end_ts": at(11), "reason": "reboot"}]},
    )
    maintained = [
        (0, 5, "available", None),
        (5, 11, "maintenance", "maintenance: reboot"),
        (11, 20, "available", None),
        *flapped,
    ]
    assert _computed_equals_a_rebuild(con) == _intervals(*maintained, (47, 119, "available", None))

    load(con, {"node_conditions": _condition(range(120, 180), "True")})
    assert _computed_equals_a_rebuild(con) == _intervals(
        *maintained,
        (47, 119, "available", None),
        (119, 123, "degraded", "anomaly: telemetry_gap"),
        (123, 179, "unknown", "no DCGM sample from gpu 0"),
    )

    load(
        con,
        {"node_conditions": _condition(range(150, 180), "True", condition="NetworkingReady")},
    )
    assert _computed_equals_a_rebuild(con) == _intervals(
        (0, 5, "unknown", NR_STALE),
        (5, 11, "maintenance", "maintenance: reboot"),
        (11, 20, "unknown", NR_STALE),
        (20, 30, "unavailable", "Ready=False"),
        (30, 46.5, "unknown", NR_STALE),
        (46.5, 47, "unavailable", "Ready=False"),
        (47, 123, "unknown", NR_STALE),
        (123, 150, "unknown", f"{NR_STALE}; no DCGM sample from gpu 0"),
        (150, 179, "unknown", "no DCGM sample from gpu 0"),
    )

    load(con, {"nodes": one_node(2)})
    two_gpus = [
        (0, 5, "unknown", f"{NR_STALE}; {GPU1}"),
        (5, 11, "maintenance", "maintenance: reboot"),
        (11, 20, "unknown", f"{NR_STALE}; {GPU1}"),
        (20, 30, "unavailable", f"Ready=False; {GPU1}"),
        (30, 46.5, "unknown", f"{NR_STALE}; {GPU1}"),
        (46.5, 47, "unavailable", f"Ready=False; {GPU1}"),
        (47, 123, "unknown", f"{NR_STALE}; {GPU1}"),
        (123, 150, "unknown", f"{NR_STALE}; no DCGM sample from any GPU"),
        (150, 179, "unknown", "no DCGM sample from any GPU"),
    ]
    assert _computed_equals_a_rebuild(con) == _intervals(*two_gpus)

    load(con, {"node_conditions": _condition([-5], "True")})
    assert _computed_equals_a_rebuild(con) == _intervals(
        (-5, 0, "unknown", f"{NR_STALE}; no DCGM sample from any GPU"), *two_gpus
    )
