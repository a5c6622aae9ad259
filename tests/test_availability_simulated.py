"""Availability and job outcomes on a simulated fleet, checked against the simulator's ground truth.

6 nodes x 1 day (seed 5): every fault kind of the default plan is injected once or twice.
The fleet goes through the real path: simulate -> Parquet files -> `ingest files` -> `compute`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.simulate import SimulationConfig, simulate_to_dir
from pipelines.sources.files import ingest_files
from pipelines.store import open_store

STALENESS = timedelta(seconds=Settings().availability.staleness_s)


@pytest.fixture(scope="module")
def sim_con(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sim")
    simulate_to_dir(
        SimulationConfig.create(nodes=6, days=1, seed=5, start="2026-11-23"), folder / "data"
    )
    con = open_store(folder / "fleet.duckdb")
    ingest_files(con, folder / "data")
    compute(con, Settings())
    con.execute(
        f"CREATE TABLE ground_truth AS SELECT * FROM read_parquet('{folder / 'data' / 'ground_truth.parquet'}')"
    )
    yield con
    con.close()


def faults(con, kind: str) -> list[dict]:
    rows = (
        con.sql(
            "SELECT * FROM ground_truth WHERE kind = $kind ORDER BY fault_id", params={"kind": kind}
        )
        .pl()
        .to_dicts()
    )
    assert rows, f"the simulator injected no {kind}"
    return rows


def seconds_in_states(
    con, node: str, start: datetime, end: datetime, states: tuple[str, ...]
) -> float:
    """Seconds of [start, end) the node spent in one of `states`."""
    rows = con.execute(
        "SELECT coalesce(sum(epoch(least(end_ts, $end)) - epoch(greatest(start_ts, $start))), 0) "
        "FROM node_state_intervals WHERE node = $node AND list_contains($states, state) "
        "AND start_ts < $end AND end_ts > $start",
        {"node": node, "start": start, "end": end, "states": list(states)},
    ).fetchall()
    return rows[0][0]


def horizon(con) -> datetime:
    return con.execute("SELECT max(end_ts) FROM node_state_intervals").fetchall()[0][0]


def test_xid79_outage_is_down_time_and_lowers_that_days_availability(sim_con):
    for fault in faults(sim_con, "xid79_fell_off_bus"):
        node, start, end = fault["node"], fault["start_ts"], min(fault["end_ts"], horizon(sim_con))
        outage_s = (end - start).total_seconds()
        assert outage_s > 3600
        # The node is unavailable (AcceleratedHardwareReady=False, cordoned) then unknown (the GPU is off the bus).
        assert (
            seconds_in_states(sim_con, node, start, end, ("unavailable", "unknown"))
            >= 0.99 * outage_s
        )
        day = start.date()
        day_end = min(
            end, datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=start.tzinfo)
        )
        outage_today_s = (day_end - start).total_seconds()
        ((in_fleet, maintenance, down, availability, failures, repair_s),) = sim_con.execute(
            "SELECT in_fleet_s, maintenance_s, unavailable_s + unknown_s, availability, failures, repair_s "
            "FROM node_availability_daily WHERE node = ? AND day = ?",
            [node, day],
        ).fetchall()
        assert down >= 0.99 * outage_today_s
        assert availability <= 1 - 0.99 * outage_today_s / (in_fleet - maintenance)
        assert failures >= 1
        # The repair episode started that day and lasted at least the outage.
        assert repair_s >= 0.99 * outage_s


@pytest.mark.parametrize("kind", ["xid79_fell_off_bus", "ecc_dbe"])
def test_the_job_killed_by_a_gpu_fault_failed_for_hardware_and_implicates_the_node(sim_con, kind):
    for fault in faults(sim_con, kind):
        # XID 79 kills at the fault's start; a double-bit ECC error at its end (the SBE rise comes first).
        killed_at = fault["start_ts"] if kind == "xid79_fell_off_bus" else fault["end_ts"]
        rows = sim_con.execute(
            "SELECT job_id, failure_class, list_contains(implicated_nodes, $node) FROM attempt_outcomes "
            "WHERE list_contains(nodes, $node) AND state <> 'succeeded' AND end_ts BETWEEN $lo AND $hi",
            {
                "node": fault["node"],
                "lo": killed_at - timedelta(minutes=1),
                "hi": killed_at + timedelta(minutes=5),
            },
        ).fetchall()
        assert fault["job_id"] in {r[0] for r in rows}, (fault["fault_id"], rows)
        assert all(r[1:] == ("hardware", True) for r in rows), (fault["fault_id"], rows)


def _on_a_hardware_fault(con, job_id: str) -> bool:
    """Did an attempt of the job run on a node while a hardware fault of the ground truth held there?

    On this 6-node fleet faults can share a node; a crash-looping job whose attempts fail while
    its node has, say, NIC links down has a hardware signal, and SPEC's first match makes those
    failures `hardware`, not `software`."""
    rows = con.execute(
        "SELECT count(*) FROM job_attempts a JOIN ground_truth g "
        "ON g.class = 'hardware' AND list_contains(a.nodes, g.node) "
        "AND g.start_ts < a.end_ts AND g.end_ts > a.start_ts WHERE a.job_id = ?",
        [job_id],
    ).fetchall()
    return rows[0][0] > 0


def test_the_crash_looping_job_is_flagged_and_no_other(sim_con):
    crash_loops = {f["job_id"] for f in faults(sim_con, "crash_loop")}
    on_hardware = {j for j in crash_loops if _on_a_hardware_fault(sim_con, j)}
    expected = crash_loops - on_hardware
    flagged = {
        r[0] for r in sim_con.execute("SELECT job_id FROM job_outcomes WHERE crash_loop").fetchall()
    }
    assert flagged == expected
    for job_id in on_hardware:
        row = sim_con.execute(
            "SELECT failure_class FROM job_outcomes WHERE job_id = ?", [job_id]
        ).fetchall()
        assert row[0][0] == "hardware"
    for job_id in expected:
        row = sim_con.execute(
            "SELECT failure_class, attempts, eligible FROM job_outcomes WHERE job_id = ?", [job_id]
        ).fetchall()
        assert row[0][0] == "software"
        assert row[0][1] >= Settings().failures.crash_loop_min_failures
        assert row[0][2] is True


def test_a_telemetry_gap_is_unknown_not_available(sim_con):
    for fault in faults(sim_con, "telemetry_gap"):
        # The last sample before the gap holds for the staleness; after that the node is unknown
        # (or in a state that outranks it).
        start, end = fault["start_ts"] + STALENESS, min(fault["end_ts"], horizon(sim_con))
        assert end > start
        covered = seconds_in_states(sim_con, fault["node"], start, end, ("unknown", "maintenance"))
        assert covered == pytest.approx((end - start).total_seconds()), fault["fault_id"]


def test_a_preempted_attempt_is_infrastructure_unless_its_node_failed(sim_con):
    preempted = sim_con.execute(
        "SELECT job_id, failure_class, hardware_signal FROM attempt_outcomes WHERE state = 'preempted'"
    ).fetchall()
    for job_id, failure_class, signal in preempted:
        assert failure_class == ("hardware" if signal else "infrastructure"), job_id
    for fault in faults(sim_con, "preemption"):
        assert (fault["job_id"], "infrastructure", None) in preempted
        # The job resumed and finished: preemption does not make it a failed job.
        row = sim_con.execute(
            "SELECT final_state, attempts FROM job_outcomes WHERE job_id = ?", [fault["job_id"]]
        ).fetchall()
        assert row[0][0] != "preempted" and row[0][1] >= 2


def test_healthy_nodes_are_available_most_of_the_day(sim_con):
    faulty = {
        r[0]
        for r in sim_con.execute(
            "SELECT DISTINCT node FROM ground_truth WHERE node IS NOT NULL"
        ).fetchall()
    }
    rows = sim_con.execute("SELECT node, availability FROM node_availability_daily").fetchall()
    clean = [(node, a) for node, a in rows if node not in faulty]
    for node, availability in clean:
        assert availability is None or availability > 0.95, node
