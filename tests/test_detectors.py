"""Each detector on a hand-made one-node fleet (sample i at T0 + i minutes; see detect_fleet.py).

Defaults used in the arithmetic: counter window 3600 s, SBE threshold 50 per window, gap 300 s,
peer window 900 s with 80 % of samples deviating, NIC minimum 3 samples, flap 4 transitions/h.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines.compute import compute
from pipelines.config import DetectionSettings, Settings
from tests.detect_fleet import Fleet, at

SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
PCIE = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
NVLINK = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
CLOCK = "DCGM_FI_DEV_SM_CLOCK"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
UTIL = "DCGM_FI_DEV_GPU_UTIL"
REMAP = "DCGM_FI_DEV_ROW_REMAP_FAILURE"


def findings(con, fleet: Fleet, settings: Settings | None = None) -> list[dict]:
    fleet.load(con)
    compute(con, settings or Settings(), force=True)
    rel = con.sql(
        "SELECT kind, entity_type, node, gpu, uuid, start_ts, end_ts, score, severity, action, "
        "evidence, impact_gpu_h, goodput_lost_gpu_h FROM anomalies ORDER BY kind, gpu, start_ts"
    )
    return [dict(zip(rel.columns, row)) for row in rel.fetchall()]


def only(rows: list[dict], kind: str) -> list[dict]:
    return [r for r in rows if r["kind"] == kind]


def ramp(start: int, per_min: float, minutes: int = 120, base: float = 0.0) -> list[float]:
    """A counter flat at `base` until `start`, then rising `per_min` each minute."""
    return [base + max(0, i - start) * per_min for i in range(minutes)]


# --- counters: (metric, series for gpu 0, expected kind, expected (start, end) minutes or None) ---
COUNTER_CASES = [
    # +2/min from minute 10: the hour's increase reaches 10 at minute 15 (5 x 2); still rising at
    # the horizon (minute 119), so open.
    pytest.param(SBE, ramp(10, 2.0), "ecc_sbe_rate", (15, None), id="sbe-rising"),
    # +1/min: reaches 10 at minute 20; open.
    pytest.param(SBE, ramp(10, 1.0), "ecc_sbe_rate", (20, None), id="sbe-slow-rise"),
    # +0.1/min: at most 6 per hour < 10: never.
    pytest.param(SBE, ramp(10, 0.1), "ecc_sbe_rate", None, id="sbe-normal-trickle"),
    # A reboot resets a large counter to 0 at minute 60, then it trickles +0.1/min: a drop is a
    # reset, not a rate of -5000: nothing.
    pytest.param(
        SBE,
        [5000.0 + 0.1 * i for i in range(60)] + [0.1 * (i - 60) for i in range(60, 120)],
        "ecc_sbe_rate",
        None,
        id="sbe-counter-reset",
    ),
    # Reset from 100 to 0 at minute 60 (+0), then +3/min: 3, 6, 9, 12 -> reaches 10 at minute 64.
    pytest.param(
        SBE,
        [100.0] * 60 + [3.0 * (i - 60) for i in range(60, 120)],
        "ecc_sbe_rate",
        (64, None),
        id="sbe-rise-after-reset",
    ),
    # DBE volatile total steps 0 -> 1 at minute 50, back to 0 (GPU reset) at minute 90:
    # open from 50; last flagged sample 89, end 89 + 1 min = 90.
    pytest.param(
        DBE, [0.0] * 50 + [1.0] * 40 + [0.0] * 30, "ecc_dbe", (50, 90), id="dbe-until-reset"
    ),
    # PCIe replays +5/min from minute 0: the window holds 100 at minute 20 (20 x 5).
    pytest.param(PCIE, ramp(0, 5.0), "pcie_replay_rate", (20, None), id="pcie-replays"),
    # NVLink CRC errors: a burst of 60 at minute 30 only: flagged from 30 while the burst is in
    # the trailing hour (to minute 90), end = 90 + 1 = 91.
    pytest.param(
        NVLINK, [0.0] * 30 + [60.0] * 90, "nvlink_error_rate", (30, 91), id="nvlink-burst"
    ),
    # Row-remap failure gauge 1 from minute 100 to the end: open at 100.
    pytest.param(
        REMAP, [0.0] * 100 + [1.0] * 20, "row_remap_failure", (100, None), id="remap-failure"
    ),
]


@pytest.mark.parametrize("metric, series, kind, expected", COUNTER_CASES)
def test_counter_detectors(con, metric, series, kind, expected):
    fleet = Fleet()
    fleet.set("n1", 0, metric, series)
    rows = only(findings(con, fleet), kind)
    if expected is None:
        assert rows == []
        return
    start, end = expected
    assert len(rows) == 1
    row = rows[0]
    assert (row["entity_type"], row["node"], row["gpu"], row["uuid"]) == (
        "gpu",
        "n1",
        0,
        "GPU-n1-0",
    )
    assert row["start_ts"] == at(start)
    assert row["end_ts"] == (None if end is None else at(end))
    assert row["score"] >= 1.0


NVLINK_DATA = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"


def test_nvlink_counters_add_up_per_instant(con):
    # Two NVLink counters of GPU 0 each jump by 30 at minute 30: each alone stays under the
    # threshold of 50, together 60 reach it. Flagged from 30 while the jump is in the trailing hour
    # (to minute 90): one sample per instant, 61 of them, not one per counter; end 90 + 1 = 91.
    fleet = Fleet()
    fleet.set("n1", 0, NVLINK, [0.0] * 30 + [30.0] * 90)
    fleet.set("n1", 0, NVLINK_DATA, [0.0] * 30 + [30.0] * 90)
    rows = only(findings(con, fleet), "nvlink_error_rate")
    assert [(r["gpu"], r["uuid"], r["start_ts"], r["end_ts"], r["score"]) for r in rows] == [
        (0, "GPU-n1-0", at(30), at(91), 60 / 50)
    ]
    evidence = json.loads(rows[0]["evidence"])
    assert (evidence["max_value"], evidence["samples"]) == (60.0, 61)


def test_one_nvlink_counter_under_the_threshold_is_quiet(con):
    fleet = Fleet()
    fleet.set("n1", 0, NVLINK, [0.0] * 30 + [30.0] * 90)
    assert only(findings(con, fleet), "nvlink_error_rate") == []


def test_counter_with_missing_samples(con: duckdb.DuckDBPyConnection) -> None:
    # +2/min from minute 10 but minutes 12..16 are missing: minute 11 adds 2, then the increase over
    # the gap arrives at minute 17 (14 - 2 = 12): the hour's total first reaches 10 at minute 17
    # (without the gap it would have been minute 15). No negative or lost increase.
    fleet = Fleet()
    series: list[float | None] = [*ramp(10, 2.0)]
    for i in range(12, 17):
        series[i] = None
    fleet.set("n1", 0, SBE, series)
    rows = only(findings(con, fleet), "ecc_sbe_rate")
    assert [r["start_ts"] for r in rows] == [at(17)]


# --- XIDs ---
XID_CASES = [
    # (code, expected: (severity, action) or None for application errors that must not blame the GPU)
    (79, ("critical", "reboot")),
    (48, ("critical", "reset_gpu")),
    (64, ("critical", "replace")),
    (13, None),
    (31, None),
    (43, None),
    (45, None),
]


@pytest.mark.parametrize("code, expected", XID_CASES)
def test_xid_catalogue_classes(con, code, expected):
    fleet = Fleet()
    fleet.events.append(
        {
            "ts": at(10),
            "node": "n1",
            "gpu": 1,
            "uuid": None,
            "kind": "xid",
            "code": code,
            "message": f"NVRM: Xid {code}",
            "source": "test",
        }
    )
    rows = only(findings(con, fleet), "xid")
    if expected is None:
        assert rows == []
        return
    assert len(rows) == 1
    # Open: 6 h clear window after minute 10 reaches past the horizon (minute 119).
    assert (rows[0]["severity"], rows[0]["action"], rows[0]["end_ts"]) == (*expected, None)
    assert json.loads(rows[0]["evidence"])["xid"] == code


def test_xid_episode_closes_after_clear_window(con):
    # 20 minute clear window: events at 10 and 20 are one episode (10 apart), closing at 20 + 20 = 40;
    # the event at 70 is a second episode (50 after 20), closing at 90.
    fleet = Fleet()
    for i in (10, 20, 70):
        fleet.events.append(
            {
                "ts": at(i),
                "node": "n1",
                "gpu": 2,
                "uuid": "GPU-n1-2",
                "kind": "xid",
                "code": 48,
                "message": "DBE",
                "source": "test",
            }
        )
    rows = only(
        findings(con, fleet, Settings(detection=DetectionSettings(xid_clear_s=1200))), "xid"
    )
    assert [(r["start_ts"], r["end_ts"], r["score"]) for r in rows] == [
        (at(10), at(40), 2.0),
        (at(70), at(90), 1.0),
    ]


# --- peers ---
def test_throttled_gpu_below_peers(con):
    # GPU 3 at 1700 MHz (-14 %) from minute 30 to 89 under load: the 15-minute window [t-15, t]
    # holds 16 samples; 80 % needs 13 deviating, first at minute 42 (30..42). Last at 89, end 90.
    fleet = Fleet()
    fleet.set("n1", 3, CLOCK, {i: 1700.0 for i in range(30, 90)})
    rows = only(findings(con, fleet), "throttling")
    assert [(r["gpu"], r["uuid"], r["start_ts"], r["end_ts"], r["action"]) for r in rows] == [
        (3, "GPU-n1-3", at(42), at(90), "cordon")
    ]


@pytest.mark.parametrize(
    ("swap_minute", "expected_uuid"),
    [
        # Swapped at minute 20, before the finding starts (42): the new GPU's UUID.
        pytest.param(20, "GPU-n1-3-new", id="swapped-before"),
        # Swapped at minute 60, during the episode: the UUID of the GPU when it started.
        pytest.param(60, "GPU-n1-3", id="swapped-during"),
    ],
)
def test_a_peer_finding_names_the_gpu_that_was_in_the_slot_when_it_started(
    con, swap_minute, expected_uuid
):
    # The throttling case above, on an index whose GPU was replaced (a new UUID, same index).
    fleet = Fleet()
    fleet.set("n1", 3, CLOCK, {i: 1700.0 for i in range(30, 90)})
    fleet.swapped[("n1", 3)] = (swap_minute, "GPU-n1-3-new")
    rows = only(findings(con, fleet), "throttling")
    assert [(r["gpu"], r["uuid"], r["start_ts"], r["end_ts"]) for r in rows] == [
        (3, expected_uuid, at(42), at(90))
    ]


def test_hot_gpu_above_peers(con):
    # GPU 4 at 78 C (+18 C) from minute 0: at the start of the data the window is not full; it needs
    # half its 15 expected samples (7.5, so 8: minutes 0..7), all deviating (>= 80 %): minute 7.
    fleet = Fleet()
    fleet.set("n1", 4, TEMP, {i: 78.0 for i in range(120)})
    rows = only(findings(con, fleet), "temp_above_peers")
    assert [(r["gpu"], r["uuid"], r["start_ts"], r["end_ts"]) for r in rows] == [
        (4, "GPU-n1-4", at(7), None)
    ]


def test_noisy_but_healthy_gpu_is_quiet(con):
    # GPU 5 dips 10 % every 4th minute: 25 % of any window deviates, below 80 %: nothing.
    fleet = Fleet()
    fleet.set("n1", 5, CLOCK, {i: 1782.0 for i in range(0, 120, 4)})
    fleet.set("n1", 5, TEMP, {i: 75.0 for i in range(2, 120, 4)})
    assert findings(con, fleet) == []


def test_power_alone_is_not_throttling(con):
    # GPU 2 draws 400 W against its peers' 650 W at full clock: a lighter job, not a sick GPU.
    fleet = Fleet()
    fleet.set("n1", 2, "DCGM_FI_DEV_POWER_USAGE", [400.0] * 120)
    assert findings(con, fleet) == []


def test_idle_gpu_is_not_compared(con):
    # GPU 6 idle (util 0, clocks low) is not under load: not a throttling finding.
    fleet = Fleet()
    fleet.set("n1", 6, UTIL, [0.0] * 120)
    fleet.set("n1", 6, CLOCK, [345.0] * 120)
    assert findings(con, fleet) == []


# --- NIC links ---
def test_nic_links_down(con):
    # 28 of 32 links from minute 20 to 40, and a one-sample blip at 60 (< 3 samples: ignored).
    fleet = Fleet()
    fleet.node_samples += [
        {
            "ts": at(i),
            "node": "n1",
            "metric": "nic_links_up",
            "value": 28.0 if 20 <= i <= 40 or i == 60 else 32.0,
        }
        for i in range(120)
    ]
    rows = only(findings(con, fleet), "nic_links_down")
    assert [(r["entity_type"], r["start_ts"], r["end_ts"], r["score"]) for r in rows] == [
        ("node", at(20), at(41), 4.0)
    ]
    assert json.loads(rows[0]["evidence"])["detected_at"].startswith("2026-11-23 00:22")


# --- telemetry gaps ---
def test_gpu_gap_while_ready(con):
    # GPU 2 silent minutes 50..69 (20 min > 5): gap [51? no: last sample 49 + 1 min = 50, next 70).
    # GPU 6 silent from minute 100 to the horizon (119): open. Ready True throughout.
    fleet = Fleet()
    fleet.drop("n1", 2, range(50, 70))
    fleet.drop("n1", 6, range(100, 120))
    fleet.set("n1", 0, SBE, [0.0] * 120)  # horizon stays at minute 119
    rows = only(findings(con, fleet), "telemetry_gap")
    assert [(r["entity_type"], r["gpu"], r["start_ts"], r["end_ts"]) for r in rows] == [
        ("gpu", 2, at(50), at(70)),
        ("gpu", 6, at(100), None),
    ]


def test_whole_node_gap_is_one_node_finding(con):
    fleet = Fleet()
    for gpu in range(8):
        fleet.drop("n1", gpu, range(10, 20))
    rows = only(findings(con, fleet), "telemetry_gap")
    assert [(r["entity_type"], r["gpu"], r["start_ts"], r["end_ts"]) for r in rows] == [
        ("node", None, at(10), at(20))
    ]


def test_short_gap_or_not_ready_is_not_a_telemetry_gap(con):
    # GPU 1 silent 4 minutes (<= 5): nothing. GPU 3 silent 30..59 while Ready is False: an outage.
    fleet = Fleet()
    fleet.drop("n1", 1, range(10, 14))
    fleet.drop("n1", 3, range(30, 60))
    for i in range(30, 60):
        fleet.ready["n1"][i] = "False"
    assert only(findings(con, fleet), "telemetry_gap") == []


# --- flapping ---
def test_condition_flapping(con):
    # NetworkingReady toggles every 3 minutes from minute 30 to 60: transitions at 33, 36, ..., 60
    # (10 of them). The 4th (minute 42) completes 4 in an hour: start = first transition (33);
    # last transition 60 is more than an hour before... no: horizon 119 - 60 = 59 min < 60: open.
    fleet = Fleet()
    for i in range(120):
        flapping = 30 <= i <= 60 and (i // 3) % 2 == 1
        fleet.conditions.append(
            {
                "ts": at(i),
                "node": "n1",
                "condition": "NetworkingReady",
                "status": "False" if flapping else "True",
                "reason": None,
                "message": None,
            }
        )
    rows = only(findings(con, fleet), "condition_flap")
    assert len(rows) == 1
    assert rows[0]["start_ts"] == at(33)
    assert rows[0]["end_ts"] is None
    assert json.loads(rows[0]["evidence"])["detected_at"].startswith("2026-11-23 00:42")


def test_stable_conditions_do_not_flap(con):
    # Outages 30..39 and 95..99: transitions at 30, 40, 95, 100; any hour holds at most three
    # (40, 95, 100): a real outage and recovery is not flapping.
    fleet = Fleet()
    for i in range(120):
        status = "False" if 30 <= i < 40 or 95 <= i < 100 else "True"
        fleet.conditions.append(
            {
                "ts": at(i),
                "node": "n1",
                "condition": "NetworkingReady",
                "status": status,
                "reason": None,
                "message": None,
            }
        )
    assert only(findings(con, fleet), "condition_flap") == []


def test_impact_counts_jobs_on_the_node_while_open(con):
    # DBE open from minute 50 to 90. An 8-GPU job on n1 from minute 0 to 60 overlaps 10 min:
    # 8 x 10/60 = 1.333 GPU-h; a job on another node adds nothing; a failed 8-GPU attempt on n1
    # from 30 to 55 overlaps 5 min: + 8 x 5/60 = 0.667, total 2.0 GPU-h. That attempt logged no
    # steps and no checkpoint, so all of it is wasted progress (goodput_segments): its 25 min x 8
    # GPUs = 3.333 GPU-h of goodput lost, ending inside the finding's failure window (the open DBE
    # makes it a hardware failure implicating n1); no next attempt, so no recovery.
    fleet = Fleet(nodes=["n1", "n2"])
    fleet.set("n1", 0, DBE, [0.0] * 50 + [1.0] * 40 + [0.0] * 30)
    for job, node, start, end, state in (
        ("j1", "n1", 0, 60, "succeeded"),
        ("j2", "n2", 0, 60, "succeeded"),
        ("j3", "n1", 30, 55, "failed"),
    ):
        fleet.jobs.append(
            {
                "job_id": job,
                "name": job,
                "user": "u",
                "team": "t",
                "queue": "q",
                "submit_ts": at(0),
                "start_ts": at(start),
                "end_ts": at(end),
                "num_gpus": 8,
                "state": state,
                "exit_code": 0 if state == "succeeded" else 1,
                "reason": None,
            }
        )
        fleet.attempts.append(
            {
                "job_id": job,
                "attempt": 0,
                "start_ts": at(start),
                "end_ts": at(end),
                "state": state,
                "exit_code": 0 if state == "succeeded" else 1,
                "reason": None,
                "nodes": [node],
            }
        )
    rows = only(findings(con, fleet), "ecc_dbe")
    assert [round(r["impact_gpu_h"], 3) for r in rows] == [2.0]
    assert rows[0]["goodput_lost_gpu_h"] == pytest.approx(3.3333, abs=1e-3)


def _job(
    fleet: Fleet, job: str, gpus: int, attempts: list[tuple[float, float, str, list[str]]]
) -> None:
    """attempts: (start minute, end minute, state, nodes); the job ends with its last attempt."""
    last = attempts[-1]
    fleet.jobs.append(
        {
            "job_id": job,
            "name": job,
            "user": "u",
            "team": "t",
            "queue": "q",
            "submit_ts": at(0),
            "start_ts": at(attempts[0][0]),
            "end_ts": at(last[1]),
            "num_gpus": gpus,
            "state": last[2],
            "exit_code": 0 if last[2] == "succeeded" else 1,
            "reason": None,
        }
    )
    fleet.attempts += [
        {
            "job_id": job,
            "attempt": i,
            "start_ts": at(s),
            "end_ts": at(e),
            "state": st,
            "exit_code": 0 if st == "succeeded" else 1,
            "reason": None,
            "nodes": nodes,
        }
        for i, (s, e, st, nodes) in enumerate(attempts)
    ]


def test_a_finding_that_kills_a_job_carries_the_goodput_it_lost(con):
    # A 64-GPU job on n1..n8: attempt 0 from minute 0 ends failed at minute 10 exactly when XID 48
    # (double-bit ECC, hardware) hits n1 gpu 0; it logged no steps, so all 10 min are wasted:
    # 64 x 10/60 = 10.667 GPU-h; the restart on n2..n9 waits until minute 15: recovery
    # 64 x 5/60 = 5.333 GPU-h. Goodput lost 16.0 GPU-h. No attempt ran on n1 after minute 10:
    # impact_gpu_h (exposure while open) is 0.
    nodes = [f"n{i}" for i in range(1, 10)]
    fleet = Fleet(nodes=nodes)
    fleet.events.append(
        {
            "ts": at(10),
            "node": "n1",
            "gpu": 0,
            "uuid": "GPU-n1-0",
            "kind": "xid",
            "code": 48,
            "message": "NVRM: Xid 48",
            "source": "test",
        }
    )
    _job(fleet, "big", 64, [(0, 10, "failed", nodes[:8]), (15, 100, "succeeded", nodes[1:])])
    rows = only(findings(con, fleet), "xid")
    assert [(r["node"], r["gpu"], r["impact_gpu_h"]) for r in rows] == [("n1", 0, 0.0)]
    assert rows[0]["goodput_lost_gpu_h"] == pytest.approx(64 * 10 / 60 + 64 * 5 / 60)


def test_a_hardware_finding_stays_open_while_its_node_stays_down(con):
    # XID 79 on n1 gpu 3 at minute 10; the detector alone closes it xid_clear_s = 30 min after the last
    # event (minute 40). n1 is Ready=False from minute 10 to 70: the finding holds until minute 70.
    # n2 gets XID 79 at minute 10 and stays Ready=False to the horizon (minute 119 + 5 min
    # staleness): its finding stays open (end NULL). n3's Ready=False 0..5 ended before its XID at 20:
    # another outage; its finding closes at 50 as the detector says.
    fleet = Fleet(nodes=["n1", "n2", "n3"])
    for node, minute in (("n1", 10), ("n2", 10), ("n3", 20)):
        fleet.events.append(
            {
                "ts": at(minute),
                "node": node,
                "gpu": 3,
                "uuid": f"GPU-{node}-3",
                "kind": "xid",
                "code": 79,
                "message": "NVRM: Xid 79",
                "source": "test",
            }
        )
    fleet.ready["n1"] = ["False" if 10 <= i < 70 else "True" for i in range(120)]
    fleet.ready["n2"] = ["False" if i >= 10 else "True" for i in range(120)]
    fleet.ready["n3"] = ["False" if i < 5 else "True" for i in range(120)]
    settings = Settings(detection=DetectionSettings(xid_clear_s=1800))
    rows = only(findings(con, fleet, settings), "xid")
    assert [(r["node"], r["start_ts"], r["end_ts"]) for r in rows] == [
        ("n1", at(10), at(70)),
        ("n2", at(10), None),
        ("n3", at(20), at(50)),
    ]
    assert json.loads(rows[0]["evidence"])["held_open_by"] == "Ready=False"


def test_the_third_critical_xid_on_one_gpu_within_the_window_calls_for_replace(con):
    # XID 79 (catalogue: critical -> reboot) on n1 gpu 2 at minutes 0, 40 and 80: three episodes with
    # xid_clear_s = 10 min. The third calls for replace; gpu 5's single XID keeps its reboot. With a
    # 1-hour look-back (escalate_window_s = 3600) the third sees only itself and the one at 40: reboot.
    fleet = Fleet(nodes=["n1"])
    for gpu, minute in ((2, 0), (2, 40), (2, 80), (5, 80)):
        fleet.events.append(
            {
                "ts": at(minute),
                "node": "n1",
                "gpu": gpu,
                "uuid": f"GPU-n1-{gpu}",
                "kind": "xid",
                "code": 79,
                "message": "NVRM: Xid 79",
                "source": "test",
            }
        )
    settings = Settings(detection=DetectionSettings(xid_clear_s=600))
    rows = only(findings(con, fleet, settings), "xid")
    assert [(r["gpu"], r["start_ts"], r["action"]) for r in rows] == [
        (2, at(0), "reboot"),
        (2, at(40), "reboot"),
        (2, at(80), "replace"),
        (5, at(80), "reboot"),
    ]
    assert "#3 on gpu 2 within 30.0 days" in json.loads(rows[2]["evidence"])["escalated"]
    short = Settings(detection=DetectionSettings(xid_clear_s=600, escalate_window_s=3600))
    assert [r["action"] for r in only(findings(con, fleet, short), "xid")] == ["reboot"] * 4


def test_healthy_fleet_has_no_findings(con):
    fleet = Fleet(nodes=["n1", "n2"])
    fleet.node_samples += [
        {"ts": at(i), "node": n, "metric": "nic_links_up", "value": 32.0}
        for n in ("n1", "n2")
        for i in range(120)
    ]
    assert findings(con, fleet) == []


def _load_part(con, fleet: Fleet, first: int, end: int) -> None:
    """Load the fleet's samples and conditions of minutes [first, end) (and its nodes)."""
    from pipelines.store import TableInput, load_batch

    frames = fleet.frames()
    items = []
    for name, frame in frames.items():
        if "ts" in frame.columns:
            frame = frame.filter((frame["ts"] >= at(first)) & (frame["ts"] < at(end)))
        items.append(TableInput(name, frame.with_row_index("__row", offset=1), f"{name} (part)"))
    load_batch(con, items, "test")


def test_a_kept_counter_episode_reads_the_last_sample_before_the_new_data(con):
    # Two GPUs whose SBE counter stops reporting (the GPU's other fields go on), then comes back
    # at minute 480 one hundred higher. The jump is that sample's increase over the last one
    # before it, however old: flagged from 480 while in the trailing hour, to 540; end 541.
    # Loaded in two parts (minutes 0-419, then 420-599) with a compute after each, the second
    # compute re-finds the counter episodes from 420 - (300 + 3600 + 300 + 2 x 60) s = minute 348
    # on and reads the samples from one window earlier, minute 288: neither GPU has a counter
    # sample there. GPU 1's last one (minute 239) is within the hour the carry looks at first;
    # GPU 0's (minute 119) is found in all earlier samples.
    fleet = Fleet(minutes=600)
    fleet.set("n1", 0, SBE, [0.0] * 120 + [None] * 360 + [100.0] * 120)
    fleet.set("n1", 1, SBE, [0.0] * 240 + [None] * 240 + [100.0] * 120)
    _load_part(con, fleet, 0, 420)
    compute(con, Settings())
    _load_part(con, fleet, 420, 600)
    compute(con, Settings())
    query = "SELECT gpu, start_ts, end_ts, score FROM anomalies WHERE kind = 'ecc_sbe_rate' ORDER BY gpu"
    kept = con.execute(query).fetchall()
    assert [(gpu, start, end) for gpu, start, end, _ in kept] == [
        (0, at(480), at(541)),
        (1, at(480), at(541)),
    ]
    compute(con, Settings(), force=True)
    assert con.execute(query).fetchall() == kept
