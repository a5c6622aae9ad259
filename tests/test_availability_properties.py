"""Invariants of node state and availability on random small fleets (hypothesis)."""

from __future__ import annotations

import os
from datetime import timedelta

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from pipelines.compute import compute
from pipelines.config import AvailabilitySettings, Settings
from pipelines.store import open_store
from tests.fleets import START, Fleet, compute_availability, insert_anomalies

STATES = {"maintenance", "unknown", "unavailable", "degraded", "available"}
TABLES = (
    "node_state_intervals",
    "node_availability_daily",
    "fleet_availability_daily",
    "attempt_outcomes",
    "job_outcomes",
)
# Minutes from 23:00 so that random fleets often cross midnight.
BASE = START + timedelta(hours=1)
SPAN = 150


def minute(m: int):
    return BASE + timedelta(minutes=m)


minutes_set = st.sets(st.integers(0, SPAN), max_size=40)
window = st.tuples(st.integers(0, SPAN), st.integers(1, 60))


@st.composite
def random_fleets(draw) -> Fleet:
    fleet = Fleet()
    for n in range(draw(st.integers(1, 3))):
        node = f"n{n}"
        gpu_count = draw(st.integers(0, 2))
        fleet.node(node, draw(st.sampled_from(["c1", "c2"])), gpu_count)
        for condition in draw(
            st.sets(st.sampled_from(["Ready", "MemoryPressure", "Unschedulable"]), min_size=1)
        ):
            for m in draw(minutes_set):
                fleet.condition(
                    node,
                    condition,
                    [minute(m)],
                    draw(st.sampled_from(["True", "False", "Unknown"])),
                )
        for gpu in range(gpu_count + draw(st.integers(0, 1))):  # sometimes a GPU beyond gpu_count
            fleet.gpu(node, gpu, [minute(m) for m in draw(minutes_set)])
        for start, length in draw(st.lists(window, max_size=2, unique_by=lambda w: w[0])):
            fleet.add(
                "maintenance",
                [
                    {
                        "node": node,
                        "start_ts": minute(start),
                        "end_ts": minute(start + length),
                        "reason": "planned",
                    }
                ],
            )
    return fleet


@st.composite
def anomalies(draw) -> list[dict]:
    rows = []
    for i, (start, length) in enumerate(draw(st.lists(window, max_size=2))):
        rows.append(
            {
                "anomaly_id": f"a{i}",
                "entity_type": "node",
                "node": f"n{draw(st.integers(0, 2))}",
                "kind": "throttling",
                "start_ts": minute(start),
                "end_ts": draw(st.sampled_from([None, minute(start + length)])),
                "severity": draw(st.sampled_from(["warn", "critical"])),
            }
        )
    return rows


def union_length_s(windows: list[tuple], lo, hi) -> float:
    """Seconds of the union of [start, end) windows clipped to [lo, hi)."""
    clipped = sorted((max(s, lo), min(e, hi)) for s, e in windows if max(s, lo) < min(e, hi))
    total, current_start, current_end = 0.0, None, None
    for s, e in clipped:
        if current_end is None or s > current_end:
            if current_end is not None:
                total += (current_end - current_start).total_seconds()
            current_start, current_end = s, e
        else:
            current_end = max(current_end, e)
    if current_end is not None:
        total += (current_end - current_start).total_seconds()
    return total


@settings(
    max_examples=int(os.environ.get("GPUFLEET_PROPERTY_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    fleet=random_fleets(),
    found=anomalies(),
    staleness_s=st.sampled_from([60, 300, 900]),
    require_gpu=st.booleans(),
)
def test_state_intervals_cover_each_lifetime_exactly_once(
    fleet: Fleet, found: list[dict], staleness_s: int, require_gpu: bool
) -> None:
    con = open_store(":memory:")
    try:
        fleet.load(con)
        insert_anomalies(con, found)
        config = Settings(
            availability=AvailabilitySettings(
                staleness_s=staleness_s, require_gpu_telemetry=require_gpu
            )
        )
        compute(con, config, force=True)

        # These fleets have no jobs: a cluster's data spans the first to the last sample of any of its
        # nodes (compute runs once per cluster, each with its own data horizon).
        spans_by_cluster = {
            c: (lo, hi)
            for c, lo, hi in con.execute(
                "SELECT cluster, min(ts), max(ts) FROM (SELECT cluster, ts FROM node_conditions "
                "UNION ALL SELECT cluster, ts FROM gpu_samples) GROUP BY cluster"
            ).fetchall()
        }
        cluster_of = {n["node"]: n["cluster"] for n in fleet.rows["nodes"]}
        # Every node of the inventory lives from the start of its cluster's data, whether it reports or not.
        first_seen = {
            n: spans_by_cluster[c][0] for n, c in cluster_of.items() if c in spans_by_cluster
        }
        horizon_of = {
            n: spans_by_cluster[c][1] for n, c in cluster_of.items() if c in spans_by_cluster
        }
        rows = con.execute(
            "SELECT node, start_ts, end_ts, state, reason FROM node_state_intervals "
            "ORDER BY node, start_ts"
        ).fetchall()
        by_node: dict[str, list] = {}
        for row in rows:
            by_node.setdefault(row[0], []).append(row[1:])
        living = {n for n, first in first_seen.items() if first < horizon_of[n]}
        assert set(by_node) == living
        for node, spans in by_node.items():
            horizon = horizon_of[node]
            assert spans[0][0] == first_seen[node]
            assert spans[-1][1] == horizon
            for (s, e, state, reason), nxt in zip(spans, spans[1:] + [None]):
                assert s < e
                assert state in STATES
                assert (reason is None) == (state == "available")
                if nxt is not None:
                    assert nxt[0] == e  # no gap, no overlap
                    assert (nxt[2], nxt[3]) != (state, reason)  # merged
            # Maintenance wins over everything: its time is exactly the declared windows in the lifetime.
            declared = con.execute(
                "SELECT start_ts, end_ts FROM maintenance WHERE node = ?", [node]
            ).fetchall()
            in_maintenance = sum(
                (e - s).total_seconds() for s, e, state, _ in spans if state == "maintenance"
            )
            assert abs(in_maintenance - union_length_s(declared, first_seen[node], horizon)) < 1e-6

        days = con.execute(
            "SELECT node, in_fleet_s, maintenance_s + available_s + degraded_s + unavailable_s + unknown_s, "
            "availability, failures, repair_episodes FROM node_availability_daily"
        ).fetchall()
        lifetime_s: dict[str, float] = {}
        for node, in_fleet, parts, availability, failures, repairs in days:
            assert abs(in_fleet - parts) < 1e-6
            assert 0 < in_fleet <= 86400
            assert availability is None or 0.0 <= availability <= 1.0
            assert failures >= 0 and repairs >= 0
            lifetime_s[node] = lifetime_s.get(node, 0.0) + in_fleet
        for node in living:
            assert (
                abs(lifetime_s[node] - (horizon_of[node] - first_seen[node]).total_seconds()) < 1e-6
            )
        for (availability,) in con.execute(
            "SELECT availability FROM fleet_availability_daily"
        ).fetchall():
            assert availability is None or 0.0 <= availability <= 1.0

        first = {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
        compute(con, config, force=True)
        assert {
            t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES
        } == first
    finally:
        con.close()


def reference_state(
    fleet: Fleet, found: list[dict], node: str, t, horizon, staleness_s: int, require_gpu: bool
) -> str:
    """SPEC's rules evaluated directly at one instant: the oracle for node_state_intervals."""
    stale = timedelta(seconds=staleness_s)
    rows = fleet.rows
    if any(
        m["node"] == node and m["start_ts"] <= t < m["end_ts"] for m in rows.get("maintenance", [])
    ):
        return "maintenance"
    samples = [c for c in rows.get("node_conditions", []) if c["node"] == node]
    verdicts = []
    for condition in {c["condition"] for c in samples}:
        latest = max(
            (c for c in samples if c["condition"] == condition and c["ts"] <= t),
            key=lambda c: c["ts"],
            default=None,
        )
        if latest is None or t - latest["ts"] >= stale or latest["status"] == "Unknown":
            verdicts.append("unknown")
        elif (latest["status"] == "True") != (
            condition == "Ready"
        ):  # Ready good when True, the others when False
            verdicts.append("unavailable")
    gpu_count = next(n["gpu_count"] for n in rows["nodes"] if n["node"] == node)
    ticks = [g for g in rows.get("gpu_samples", []) if g["node"] == node and g["ts"] <= t]

    def fresh(gpu: int) -> bool:
        return any(g["gpu"] == gpu and t - g["ts"] < stale for g in ticks)

    missing = [gpu for gpu in range(gpu_count) if not fresh(gpu)]
    if "unavailable" in verdicts:
        return "unavailable"  # a known-bad signal outranks missing data
    if "unknown" in verdicts or (missing and require_gpu):
        return "unknown"
    any_reporting = any(t - g["ts"] < stale for g in ticks)
    any_condition_fresh = any(t - c["ts"] < stale for c in samples if c["ts"] <= t)
    if not any_reporting and not any_condition_fresh:
        return "unknown"  # nothing reports from the node: silence is never available
    if missing and any_reporting:
        return "unavailable"  # GPU telemetry optional: fewer GPUs report than expected
    if any(
        a["node"] == node
        and a["severity"] in ("warn", "critical")
        and a["start_ts"] <= t < (a["end_ts"] or horizon)
        for a in found
    ):
        return "degraded"
    return "available"


@settings(
    max_examples=int(os.environ.get("GPUFLEET_PROPERTY_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    fleet=random_fleets(),
    found=anomalies(),
    staleness_s=st.sampled_from([60, 180, 300]),
    require_gpu=st.booleans(),
)
def test_state_matches_the_rules_evaluated_at_every_instant(fleet, found, staleness_s, require_gpu):
    con = open_store(":memory:")
    try:
        fleet.load(con)
        insert_anomalies(con, found)
        config = Settings(
            availability=AvailabilitySettings(
                staleness_s=staleness_s, require_gpu_telemetry=require_gpu
            )
        )
        compute_availability(con, config)
        rows = con.execute(
            "SELECT node, start_ts, end_ts, state FROM node_state_intervals"
        ).fetchall()
        if not rows:
            return
        horizon = max(r[2] for r in rows)
        for node in {r[0] for r in rows}:
            spans = [r[1:] for r in rows if r[0] == node]
            start = min(s for s, _, _ in spans)
            # Every sample and window sits on whole minutes: probing at half minutes avoids the edges.
            t = start + timedelta(seconds=30)
            while t < horizon:
                actual = next(state for s, e, state in spans if s <= t < e)
                expected = reference_state(fleet, found, node, t, horizon, staleness_s, require_gpu)
                assert actual == expected, (node, t, actual, expected)
                t += timedelta(minutes=1)
    finally:
        con.close()
