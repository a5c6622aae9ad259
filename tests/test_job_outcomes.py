"""Job outcomes and failure classes on the hand-made fleet of `tests/fleets.py`.

Hardware window of an attempt: [end - 600 s, end + 300 s] (defaults).
"""

from __future__ import annotations

import csv

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.config import FailureSettings, Settings
from pipelines.sql import queries_dir
from pipelines.store import open_store
from tests.fleets import (
    Fleet,
    at,
    compute_availability,
    insert_anomalies,
    throttling_anomaly,
    tiny_fleet,
)

JOB_COLUMNS = (
    "final_state",
    "eligible",
    "succeeded",
    "failure_class",
    "crash_loop",
    "attempts",
    "num_gpus",
    "gpu_hours",
    "first_attempt_succeeded",
    "implicated_nodes",
)


@pytest.fixture(scope="module")
def fleet_con(tmp_path_factory):
    """The tiny fleet loaded and computed once for the module (tests only read it)."""
    connection = open_store(tmp_path_factory.mktemp("fleet") / "fleet.duckdb")
    tiny_fleet().load(connection)
    insert_anomalies(connection, [throttling_anomaly()])
    compute_availability(connection, with_goodput=True)  # job_success reads the goodput timeline
    yield connection
    connection.close()


@pytest.mark.parametrize(
    ("job_id", "expected"),
    [
        # Failed with exit 1 at 00:29 on n2; XID 79 (hardware) at 00:28 and Ready=False from 00:30 are inside
        # [00:19, 00:34]: hardware. 2 GPUs x 39 min = 1.3 GPU-h.
        ("j-hw", ("failed", True, False, "hardware", False, 1, 2, 1.3, False, ["n2"])),
        # Three attempts failing with exit 1 on a healthy n1: software x 3 = crash loop.
        # 2 GPUs x (10 + 8 + 8) min = 52 / 60 GPU-h; the recovery gaps (2 min each) are not counted.
        ("j-crash", ("failed", True, False, "software", True, 3, 2, 52 / 60, False, [])),
        # Preempted: infrastructure, and not eligible for the success rate. 2 x 20 min = 0.6667 GPU-h.
        ("j-pre", ("preempted", False, False, "infrastructure", False, 1, 2, 40 / 60, False, [])),
        # Cancelled: user, not eligible. 2 x 30 min = 1 GPU-h.
        ("j-cancel", ("cancelled", False, False, "user", False, 1, 2, 1.0, False, [])),
        # Succeeded first time on n3 + n4 with 4 GPUs for 1 h = 4 GPU-h (n4's cordon ended at 01:30,
        # exactly at the window start of the 01:40 end, so no signal).
        ("j-ok", ("succeeded", True, True, None, False, 1, 4, 4.0, True, [])),
        # Attempt 0 node_fail on n1 (Ready stale 01:14-01:30 implicates n1), attempt 1 succeeded:
        # the job succeeded, but not on its first attempt. 2 x (20 + 20) min = 1.3333 GPU-h.
        ("j-retry", ("succeeded", True, True, None, False, 2, 2, 80 / 60, False, ["n1"])),
        # OOM: user, eligible (counts as a failure in the success rate). 2 x 20 min.
        ("j-oom", ("oom", True, False, "user", False, 1, 2, 40 / 60, False, [])),
        # Failed without an exit code and no hardware signal (n1's maintenance is not unavailable): unknown.
        ("j-noexit", ("failed", True, False, "unknown", False, 1, 2, 20 / 60, False, [])),
        # XID 13 is an application error: it must not blame the GPU; exit 1 -> software (one attempt: no loop).
        ("j-app", ("failed", True, False, "software", False, 1, 2, 20 / 60, False, [])),
        # Running since 01:50: GPU-hours up to the data horizon 02:00 = 2 x 10 min; no class yet.
        ("j-run", ("running", False, False, None, False, 1, 2, 20 / 60, False, [])),
        # A failure the scheduler explains as an eviction is infrastructure, whatever the exit code.
        ("j-evict", ("failed", True, False, "infrastructure", False, 1, 2, 20 / 60, False, [])),
    ],
)
def test_job_outcomes(fleet_con, job_id, expected):
    row = fleet_con.execute(
        f"SELECT {', '.join(JOB_COLUMNS)} FROM job_outcomes WHERE job_id = ?", [job_id]
    ).fetchall()
    assert len(row) == 1
    gpu_hours_at = JOB_COLUMNS.index("gpu_hours")
    actual = list(row[0])
    assert actual.pop(gpu_hours_at) == pytest.approx(expected[gpu_hours_at])
    assert actual == [v for i, v in enumerate(expected) if i != gpu_hours_at]


@pytest.mark.parametrize(
    ("job_id", "attempt", "failure_class", "hardware_signal"),
    [
        (
            "j-hw",
            0,
            "hardware",
            "n2 XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS) on gpu 1; n2 unavailable: Ready=False (KubeletNotReady)",
        ),
        # node_fail is hardware; n1's stale Ready is missing evidence, not a hardware signal
        ("j-retry", 0, "hardware", "node_fail reported by the scheduler"),
        ("j-retry", 1, None, None),
        ("j-crash", 0, "software", None),
        ("j-crash", 2, "software", None),
        ("j-app", 0, "software", None),
    ],
)
def test_attempt_outcomes(fleet_con, job_id, attempt, failure_class, hardware_signal):
    row = fleet_con.execute(
        "SELECT failure_class, hardware_signal FROM attempt_outcomes WHERE job_id = ? AND attempt = ?",
        [job_id, attempt],
    ).fetchall()
    assert row == [(failure_class, hardware_signal)]


def test_success_rate_from_the_eligible_jobs(fleet_con):
    # Eligible: j-hw, j-crash, j-ok, j-retry, j-oom, j-noexit, j-app, j-evict = 8; succeeded: j-ok, j-retry = 2.
    # GPU-hour weighted: (4 + 4/3) / (1.3 + 52/60 + 4 + 4/3 + 2/3 + 1/3 + 1/3 + 1/3) = 5.3333 / 9.1667.
    rate, weighted = fleet_con.execute(
        "SELECT count(*) FILTER (WHERE succeeded) / count(*), "
        "sum(gpu_hours) FILTER (WHERE succeeded) / sum(gpu_hours) FROM job_outcomes WHERE eligible"
    ).fetchall()[0]
    assert rate == pytest.approx(2 / 8)
    assert weighted == pytest.approx(
        (4 + 4 / 3) / (1.3 + 52 / 60 + 4 + 4 / 3 + 2 / 3 + 1 / 3 + 1 / 3 + 1 / 3)
    )


@pytest.mark.parametrize(
    ("settings", "job_id", "failure_class", "crash_loop"),
    [
        # The XID at 00:28 and Ready=False at 00:30 are 1 and 1 minute away from the 00:29 end: a window of
        # 30 s before / 0 s after sees neither -> the exit 1 failure is software.
        (FailureSettings(before_end_s=30, after_end_s=0), "j-hw", "software", False),
        (FailureSettings(before_end_s=120, after_end_s=0), "j-hw", "hardware", False),
        # Four software failures needed for a crash loop: j-crash has three.
        (FailureSettings(crash_loop_min_failures=4), "j-crash", "software", False),
    ],
)
def test_failure_settings(con, settings, job_id, failure_class, crash_loop):
    tiny_fleet().load(con)
    insert_anomalies(con, [])
    compute_availability(con, Settings(failures=settings))
    row = con.execute(
        "SELECT failure_class, crash_loop FROM job_outcomes WHERE job_id = ?", [job_id]
    ).fetchall()
    assert row == [(failure_class, crash_loop)]


@pytest.mark.parametrize(
    ("kind", "failure_class"),
    [
        # A hardware anomaly on n1 open from 00:25 (inside j-crash attempt 2's window) makes it hardware ...
        ("ecc_dbe", "hardware"),
        # ... a kind outside failures.hardware_anomaly_kinds does not.
        ("straggler", "software"),
    ],
)
def test_a_hardware_anomaly_implicates_the_node(con, kind, failure_class):
    tiny_fleet().load(con)
    anomaly = throttling_anomaly() | {
        "node": "n1",
        "kind": kind,
        "severity": "critical",
        "start_ts": at("00:25"),
        "end_ts": None,
    }
    insert_anomalies(con, [anomaly])
    compute_availability(con)
    row = con.execute(
        "SELECT failure_class FROM attempt_outcomes WHERE job_id = 'j-crash' AND attempt = 2"
    ).fetchall()
    assert row == [(failure_class,)]


def test_xid_catalogue_classes():
    with open(queries_dir() / "data" / "xid_catalogue.csv", newline="") as f:
        rows = {int(r["code"]): r for r in csv.DictReader(f)}
    for code in (13, 31, 43, 45):  # application errors: the workload's fault, not the GPU's
        assert rows[code]["class"] == "application", code
    for code in (48, 63, 64, 74, 79, 92, 94, 95, 119, 120):
        assert rows[code]["class"] == "hardware", code
    assert {r["class"] for r in rows.values()} <= {"hardware", "driver", "application"}
    assert {r["severity"] for r in rows.values()} <= {"info", "warn", "critical"}
    assert {r["action"] for r in rows.values()} <= {
        "watch",
        "cordon",
        "drain",
        "reset_gpu",
        "reboot",
        "replace",
    }


def test_a_job_without_attempt_rows_is_one_attempt(con):
    f = Fleet()
    f.add(
        "jobs",
        [
            {
                "job_id": "solo",
                "num_gpus": 8,
                "state": "timeout",
                "start_ts": at("22:00"),
                "end_ts": at("23:00"),
                "exit_code": None,
            },
            {
                "job_id": "queued",
                "num_gpus": 8,
                "state": "cancelled",
                "start_ts": None,
                "end_ts": at("23:00"),
                "exit_code": None,
            },
        ],
    )
    f.load(con)
    insert_anomalies(con, [])
    compute_availability(con)
    rows = con.execute(
        "SELECT job_id, failure_class, attempts, gpu_hours FROM job_outcomes ORDER BY job_id"
    ).fetchall()
    # timeout: user, 8 GPUs x 1 h; cancelled before it started: user, no attempt, no GPU-hours.
    assert rows == [("queued", "user", 0, 0.0), ("solo", "user", 1, 8.0)]


SUCCESS_COLUMNS = (
    "eligible_jobs",
    "succeeded_jobs",
    "success_ratio",
    "first_attempt_success_ratio",
    "failed_jobs_hardware",
    "failed_jobs_infrastructure",
    "failed_jobs_user",
    "failed_jobs_software",
    "failed_jobs_unknown",
    "crash_loop_jobs",
    "interruptions",
    "allocated_gpu_days",
    "interruptions_per_1k_gpu_days",
)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        # The whole fleet: 8 eligible, 2 succeeded; first attempt: only j-ok (1/8). Failed eligible jobs by
        # class: hardware j-hw, infrastructure j-evict, user j-oom, software j-crash + j-app, unknown j-noexit.
        # Interruptions (ended, not succeeded, not cancelled): j-hw 1 + j-crash 3 + j-pre 1 + j-retry 1 +
        # j-oom 1 + j-noexit 1 + j-app 1 + j-evict 1 = 10. Allocated: 40200 GPU-s = 0.465278 GPU-days.
        (
            "2026-11-23 00:00",
            "2026-11-25 00:00",
            (8, 2, 0.25, 1 / 8, 1, 1, 1, 2, 1, 1, 10, 40200 / 86400, 10 / (40200 / 86400) * 1000),
        ),
        # Tuesday 00:00-01:00: jobs ending inside are j-hw (00:29) and j-crash (00:30); 4 interrupted attempts.
        # GPU-minutes inside: j-hw 2 x 29 + j-crash 2 x 26 + j-ok 4 x 20 = 190 = 190 / 1440 GPU-days.
        (
            "2026-11-24 00:00",
            "2026-11-24 01:00",
            (2, 0, 0.0, 0.0, 1, 0, 0, 1, 0, 1, 4, 190 / 1440, 4 / (190 / 1440) * 1000),
        ),
        # A window with no job: rates are NULL, not zero.
        (
            "2026-12-01 00:00",
            "2026-12-02 00:00",
            (0, 0, None, None, 0, 0, 0, 0, 0, 0, 0, 0.0, None),
        ),
    ],
)
def test_job_success_over_a_window(fleet_con, start, end, expected):
    from datetime import UTC, datetime

    from pipelines.sql import query_pl

    window = {
        "start": datetime.fromisoformat(start).replace(tzinfo=UTC),
        "end": datetime.fromisoformat(end).replace(tzinfo=UTC),
    }
    row = query_pl(fleet_con, "metrics/job_success", window).select(SUCCESS_COLUMNS).rows()
    assert row == [pytest.approx(expected)]


@pytest.mark.parametrize(
    ("final_attempt", "expected_class"),
    [
        # Attempt 0 failed with exit 1 on a healthy node (software). The job failed; its final
        # attempt 1 has no end (the scheduler's record stopped): no class of its own -> unknown,
        # never attempt 0's software.
        (("00:12", None, "running", None, ["n1"]), "unknown"),
        # Control: a final attempt with a class of its own keeps it (timeout -> user).
        (("00:12", "00:20", "timeout", None, ["n1"]), "user"),
    ],
)
def test_a_job_takes_its_final_attempts_class_never_an_earlier_one(
    con, final_attempt, expected_class
):
    f = Fleet()
    f.node("n1", "c1")
    f.job("j", 2, "failed", [("00:00", "00:10", "failed", 1, ["n1"]), final_attempt], exit_code=1)
    f.load(con)
    insert_anomalies(con, [])
    compute_availability(con)
    assert con.execute("SELECT failure_class FROM job_outcomes").fetchall() == [(expected_class,)]


def _failure_fleet() -> Fleet:
    """Four attempts ending at 00:30, hand-classified (window [00:20, 00:35]).

    nA: XID 79 (GPU fallen off the bus, hardware) on gpu 1 at 00:28, Ready=False from 00:29.
    nB: healthy conditions, gpu 1 silent 00:10..00:40 (its 00:09 sample holds to 00:14: unknown
        00:14-00:40, a telemetry gap and nothing else).
    """
    from tests.fleets import HORIZON, START, healthy_node, minutes

    f = Fleet()
    everything = minutes(START, HORIZON)
    a_false = set(minutes(at("00:29"), at("00:59")))
    healthy_node(f, "nA", "c1", ready=[t for t in everything if t not in a_false])
    f.condition("nA", "Ready", sorted(a_false), "False", "KubeletNotReady")
    f.xid("nA", 1, at("00:28"), 79)
    gap = set(minutes(at("00:10"), at("00:40")))
    healthy_node(f, "nB", "c1", gpu1=[t for t in everything if t not in gap])
    # cancelled while a GPU fails next to it: user, never hardware
    f.job("j-cancel", 2, "cancelled", [("00:00", "00:30", "cancelled", None, ["nA"])])
    # preempted by the scheduler on the failing node: infrastructure (policy)
    f.job("j-pre", 2, "preempted", [("00:00", "00:30", "preempted", None, ["nA"])])
    # exit 1 with only a telemetry gap around its end: infrastructure (missing evidence), not hardware
    f.job("j-gap", 2, "failed", [("00:00", "00:30", "failed", 1, ["nB"])], exit_code=1)
    # exit 1 two minutes after XID 79 on its node: hardware
    f.job("j-xid", 2, "failed", [("00:00", "00:30", "failed", 1, ["nA"])], exit_code=1)
    return f


@pytest.mark.parametrize(
    ("job_id", "failure_class", "fleet_failure", "cause"),
    [
        ("j-cancel", "user", False, "cancelled"),
        ("j-pre", "infrastructure", False, "preempted"),
        ("j-gap", "infrastructure", True, "node unknown"),
        ("j-xid", "hardware", True, "XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)"),
    ],
)
def test_failure_classes_first_match_wins(con, job_id, failure_class, fleet_failure, cause):
    _failure_fleet().load(con)
    insert_anomalies(con, [])
    compute_availability(con)
    row = con.execute(
        "SELECT failure_class, fleet_failure, cause FROM attempt_outcomes WHERE job_id = ?",
        [job_id],
    ).fetchall()
    assert row == [(failure_class, fleet_failure, cause)]


def test_the_report_and_the_dashboard_count_only_fleet_failures_by_one_cause(con):
    # Of the four attempts, two are fleet failures (j-gap, j-xid): one bar each, 2 GPUs x 30 min =
    # 1 GPU-h each. j-cancel (user) and j-pre (policy) are shown apart, never as failures.
    from datetime import UTC, date, datetime

    from pipelines.sql import query_pl
    from tests.app_fixture import name_clusters

    _failure_fleet().load(con)
    insert_anomalies(con, [])
    compute_availability(con, with_goodput=True)  # attempt_clusters
    name_clusters(con)  # the derived rows' cluster, as compute gives them
    week = {"week_start": date(2026, 11, 23), "cluster": "*"}
    app_week = {
        "week_start": datetime(2026, 11, 23, tzinfo=UTC),
        "week_end": datetime(2026, 11, 30, tzinfo=UTC),
        "cluster": "*",
    }
    fleet = [
        ("hardware", "XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)", 1, 1.0),
        ("infrastructure", "node unknown", 1, 1.0),
    ]
    report = query_pl(con, "report/failures", week).sort("failure_class")
    assert report.select("failure_class", "cause", "attempts", "gpu_h").rows() == fleet
    dashboard = query_pl(con, "app/failure_pareto", app_week).sort("failure_class")
    assert dashboard.select("failure_class", "cause", "attempts", "gpu_h").rows() == fleet
    apart = [("infrastructure", "preempted", 1), ("user", "cancelled", 1)]
    assert (
        query_pl(con, "report/not_failures", week)
        .sort("failure_class")
        .select("failure_class", "cause", "attempts")
        .rows()
        == apart
    )
    assert (
        query_pl(con, "app/not_failures", app_week)
        .sort("failure_class")
        .select("failure_class", "cause", "attempts")
        .rows()
        == apart
    )


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    states=st.lists(
        st.sampled_from(["failed", "node_fail", "cancelled", "timeout", "oom", "preempted"]),
        min_size=1,
        max_size=4,
    ),
    xid=st.booleans(),
    ready_false=st.booleans(),
    gpu_gap=st.booleans(),
)
def test_user_and_policy_attempts_are_never_fleet_failures(con, states, xid, ready_false, gpu_gap):
    # Whatever evidence surrounds the 00:30 end on nA (XID 79, Ready=False, a silent GPU), an attempt
    # that the user or the scheduler ended is never hardware and never a fleet failure; a fleet
    # failure is always failed / node_fail.
    from tests.fleets import HORIZON, START, healthy_node, minutes

    f = Fleet()
    everything = minutes(START, HORIZON)
    bad = set(minutes(at("00:29"), at("00:59"))) if ready_false else set()
    gap = set(minutes(at("00:10"), at("00:40"))) if gpu_gap else set()
    healthy_node(
        f,
        "nA",
        "c1",
        ready=[t for t in everything if t not in bad],
        gpu1=[t for t in everything if t not in gap],
    )
    if bad:
        f.condition("nA", "Ready", sorted(bad), "False", "KubeletNotReady")
    if xid:
        f.xid("nA", 1, at("00:28"), 79)
    for i, state in enumerate(states):
        f.job(
            f"j{i}",
            2,
            state,
            [("00:00", "00:30", state, 1 if state == "failed" else None, ["nA"])],
            exit_code=1 if state == "failed" else None,
        )
    con.execute(
        "DELETE FROM jobs; DELETE FROM job_attempts; DELETE FROM node_conditions; "
        "DELETE FROM gpu_sample_values; DELETE FROM gpu_series; DELETE FROM gpu_events; DELETE FROM nodes"
    )
    f.load(con)
    insert_anomalies(con, [])
    compute_availability(con)
    rows = con.execute(
        "SELECT state, failure_class, fleet_failure FROM attempt_outcomes"
    ).fetchall()
    assert len(rows) == len(states)
    for state, failure_class, fleet_failure in rows:
        if state in ("cancelled", "timeout", "oom"):
            assert (failure_class, fleet_failure) == ("user", False)
        elif state == "preempted":
            assert (failure_class, fleet_failure) == ("infrastructure", False)
        else:
            assert fleet_failure
            if state == "node_fail" or xid or ready_false:
                assert failure_class == "hardware"
            else:
                assert failure_class == ("infrastructure" if gpu_gap else "software")
