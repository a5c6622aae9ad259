"""Node state, daily availability, MTBF and MTTR on the hand-made fleet of `tests/fleets.py`.

Every node lives 22:00 Mon -> 02:00 Tue (the horizon): 7200 s on 2026-11-23 and 7200 s on 2026-11-24.
"""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest

from pipelines.config import AvailabilitySettings, Settings
from pipelines.store import open_store
from tests.fleets import (
    Fleet,
    at,
    compute_availability,
    healthy_node,
    insert_anomalies,
    minutes,
    throttling_anomaly,
    tiny_fleet,
)

MON, TUE = date(2026, 11, 23), date(2026, 11, 24)


@pytest.fixture(scope="module")
def fleet_con(tmp_path_factory):
    """The tiny fleet loaded and computed once for the module (tests only read it)."""
    connection = open_store(tmp_path_factory.mktemp("fleet") / "fleet.duckdb")
    tiny_fleet().load(connection)
    insert_anomalies(connection, [throttling_anomaly()])
    compute_availability(connection)
    yield connection
    connection.close()


def intervals(con, node: str) -> list[tuple[str, str, str, str | None]]:
    rows = con.execute(
        "SELECT strftime(start_ts, '%H:%M'), strftime(end_ts, '%H:%M'), state, reason "
        "FROM node_state_intervals WHERE node = ? ORDER BY start_ts",
        [node],
    ).fetchall()
    return [tuple(r) for r in rows]


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        # Maintenance 23:00-23:30 wins over the Ready=False samples inside it; the 01:09 Ready sample
        # holds until 01:14 (staleness 300 s), the next comes at 01:30; Unknown samples 01:40..01:44
        # hold until the True sample at 01:45.
        (
            "n1",
            [
                ("22:00", "23:00", "available", None),
                ("23:00", "23:30", "maintenance", "maintenance: firmware"),
                ("23:30", "01:14", "available", None),
                ("01:14", "01:30", "unknown", "Ready stale"),
                ("01:30", "01:40", "available", None),
                ("01:40", "01:45", "unknown", "Ready=Unknown (NodeStatusUnknown)"),
                ("01:45", "02:00", "available", None),
            ],
        ),
        # Ready=False samples 00:30..00:59, replaced by True at 01:00.
        (
            "n2",
            [
                ("22:00", "00:30", "available", None),
                ("00:30", "01:00", "unavailable", "Ready=False (KubeletNotReady)"),
                ("01:00", "02:00", "available", None),
            ],
        ),
        # gpu 1's 23:39 sample holds until 23:44; the next is at 00:20 (fail closed: unknown).
        (
            "n3",
            [
                ("22:00", "23:44", "available", None),
                ("23:44", "00:20", "unknown", "no DCGM sample from gpu 1"),
                ("00:20", "02:00", "available", None),
            ],
        ),
        # The warn anomaly 22:30-22:45 degrades; Unschedulable=True 01:00..01:29 is a cordon until 01:30.
        (
            "n4",
            [
                ("22:00", "22:30", "available", None),
                ("22:30", "22:45", "degraded", "anomaly: throttling on gpu 0"),
                ("22:45", "01:00", "available", None),
                ("01:00", "01:30", "unavailable", "cordoned"),
                ("01:30", "02:00", "available", None),
            ],
        ),
    ],
)
def test_node_state_intervals(fleet_con, node, expected):
    assert intervals(fleet_con, node) == expected


AVAILABILITY_COLUMNS = (
    "in_fleet_s",
    "maintenance_s",
    "available_s",
    "degraded_s",
    "unavailable_s",
    "unknown_s",
    "availability",
    "failures",
    "mtbf_h",
    "repair_episodes",
    "repair_s",
    "mttr_h",
)


@pytest.mark.parametrize(
    ("day", "node", "expected"),
    [
        # n1 Mon: maintenance 1800 s excluded from the denominator: 5400 / (7200 - 1800) = 1.0; no failure.
        (MON, "n1", (7200, 1800, 5400, 0, 0, 0, 1.0, 0, None, 0, 0, None)),
        # n1 Tue: unknown 960 (01:14-01:30) + 300 (01:40-01:45) = 1260; available 7200 - 1260 = 5940;
        # 5940 / 7200 = 0.825; two failures: MTBF 5940 / 2 / 3600 = 0.825 h; MTTR 1260 / 2 = 630 s = 0.175 h.
        (TUE, "n1", (7200, 0, 5940, 0, 0, 1260, 0.825, 2, 0.825, 2, 1260, 0.175)),
        (MON, "n2", (7200, 0, 7200, 0, 0, 0, 1.0, 0, None, 0, 0, None)),
        # n2 Tue: the condition outage 00:30-01:00 = 1800 s: 5400 / 7200 = 0.75; MTBF 5400 / 1 s = 1.5 h; MTTR 0.5 h.
        (TUE, "n2", (7200, 0, 5400, 0, 1800, 0, 0.75, 1, 1.5, 1, 1800, 0.5)),
        # n3 Mon: the telemetry gap 23:44-24:00 = 960 s counts against: 6240 / 7200 = 0.8667;
        # the whole episode 23:44-00:20 = 2160 s is attributed to Monday, the day it started.
        (MON, "n3", (7200, 0, 6240, 0, 0, 960, 6240 / 7200, 1, 6240 / 3600, 1, 2160, 0.6)),
        # n3 Tue: 00:00-00:20 = 1200 s unknown: 6000 / 7200; no failure starts on Tuesday.
        (TUE, "n3", (7200, 0, 6000, 0, 0, 1200, 6000 / 7200, 0, None, 0, 0, None)),
        # n4 Mon: degraded 900 s counts as up: (6300 + 900) / 7200 = 1.0.
        (MON, "n4", (7200, 0, 6300, 900, 0, 0, 1.0, 0, None, 0, 0, None)),
        # n4 Tue: cordon 1800 s: 5400 / 7200 = 0.75.
        (TUE, "n4", (7200, 0, 5400, 0, 1800, 0, 0.75, 1, 1.5, 1, 1800, 0.5)),
    ],
)
def test_node_availability_daily(fleet_con, day, node, expected):
    row = fleet_con.execute(
        f"SELECT {', '.join(AVAILABILITY_COLUMNS)} FROM node_availability_daily WHERE day = ? AND node = ?",
        [day, node],
    ).fetchall()
    assert row == [pytest.approx(expected)]


@pytest.mark.parametrize(
    ("day", "cluster", "expected"),
    [
        # c1 Mon: 3 nodes x 7200 = 21600; maintenance 1800; up 5400 + 7200 + 6240 = 18840;
        # 18840 / (21600 - 1800) = 0.951515; one failure (n3): MTBF 18840 s = 5.2333 h; MTTR 2160 s = 0.6 h.
        (MON, "c1", (21600, 1800, 18840, 0, 0, 960, 18840 / 19800, 1, 18840 / 3600, 1, 2160, 0.6)),
        # c1 Tue: up 5940 + 5400 + 6000 = 17340; unknown 1260 + 1200 = 2460; 17340 / 21600 = 0.80278;
        # failures 2 (n1) + 1 (n2) = 3: MTBF 17340 / 3 s = 1.6056 h; episodes 960 + 300 + 1800 = 3060 s / 3 = 0.2833 h.
        (
            TUE,
            "c1",
            (
                21600,
                0,
                17340,
                0,
                1800,
                2460,
                17340 / 21600,
                3,
                17340 / 3 / 3600,
                3,
                3060,
                3060 / 3 / 3600,
            ),
        ),
        # c2 Mon: no failure, so MTBF and MTTR are NULL (not zero, not infinite).
        (MON, "c2", (7200, 0, 6300, 900, 0, 0, 1.0, 0, None, 0, 0, None)),
        (TUE, "c2", (7200, 0, 5400, 0, 1800, 0, 0.75, 1, 1.5, 1, 1800, 0.5)),
    ],
)
def test_fleet_availability_daily(fleet_con, day, cluster, expected):
    row = fleet_con.execute(
        f"SELECT {', '.join(AVAILABILITY_COLUMNS)} FROM fleet_availability_daily WHERE day = ? AND cluster = ?",
        [day, cluster],
    ).fetchall()
    assert row == [pytest.approx(expected)]


def test_fleet_ratios_are_sums_not_averages(fleet_con):
    # c1 Tue: the mean of the node availabilities (0.825 + 0.75 + 0.8333) / 3 = 0.8028 happens to be
    # close; Monday's differs: mean(1.0, 1.0, 0.8667) = 0.9556 but the summed ratio is 18840 / 19800 = 0.9515.
    (value,) = fleet_con.execute(
        "SELECT availability FROM fleet_availability_daily WHERE day = ? AND cluster = 'c1'", [MON]
    ).fetchall()[0]
    assert value == pytest.approx(18840 / 19800)
    assert value != pytest.approx((1.0 + 1.0 + 6240 / 7200) / 3)


def small_fleet(con, build, settings: Settings | None = None) -> None:
    fleet = Fleet()
    build(fleet)
    fleet.load(con)
    insert_anomalies(con, [])
    compute_availability(con, settings)


def test_a_node_that_goes_silent_stays_unknown_to_the_horizon(con):
    # n1 reports until 00:00; n2 keeps the horizon at 02:00. n1's last samples hold until 00:05,
    # then it is unknown until 02:00 (fail closed), and that open episode has no MTTR yet.
    def build(f: Fleet) -> None:
        healthy_node(f, "n2", "c1")
        silent = minutes(at("22:00"), at("00:00"))
        f.node("n1", "c1")
        f.condition("n1", "Ready", silent, "True")
        f.gpu("n1", 0, silent)
        f.gpu("n1", 1, silent)

    small_fleet(con, build)
    assert intervals(con, "n1") == [
        ("22:00", "00:05", "available", None),
        ("00:05", "02:00", "unknown", "Ready stale; no DCGM sample from any GPU"),
    ]
    row = con.execute(
        "SELECT failures, repair_episodes FROM node_availability_daily WHERE node = 'n1' AND day = ?",
        [TUE],
    ).fetchall()
    assert row == [(1, 0)]


@pytest.mark.parametrize(
    ("require_gpu_telemetry", "expected_state"),
    [
        # gpu 1 silent 00:00..00:59 -> stale 00:04-01:00: unknown when GPU telemetry is required ...
        (True, "unknown"),
        # ... else "fewer GPUs reporting than expected" (gpu 0 still reports): unavailable.
        (False, "unavailable"),
    ],
)
def test_a_missing_gpu_is_unknown_or_unavailable(con, require_gpu_telemetry, expected_state):
    def build(f: Fleet) -> None:
        gap = set(minutes(at("00:00"), at("00:59")))
        healthy_node(
            f, "n1", "c1", gpu1=[t for t in minutes(at("22:00"), at("02:00")) if t not in gap]
        )

    settings = Settings(
        availability=AvailabilitySettings(require_gpu_telemetry=require_gpu_telemetry)
    )
    small_fleet(con, build, settings)
    assert intervals(con, "n1") == [
        ("22:00", "00:04", "available", None),
        ("00:04", "01:00", expected_state, "no DCGM sample from gpu 1"),
        ("01:00", "02:00", "available", None),
    ]


def test_a_node_without_dcgm_is_not_judged_on_gpus_when_telemetry_is_optional(con):
    def build(f: Fleet) -> None:
        f.node("n1", "c1")
        f.condition("n1", "Ready", minutes(at("22:00"), at("02:00")), "True")

    small_fleet(
        con, build, Settings(availability=AvailabilitySettings(require_gpu_telemetry=False))
    )
    assert intervals(con, "n1") == [("22:00", "02:00", "available", None)]
    compute_availability(con)  # the default: every GPU of the node must report
    assert intervals(con, "n1") == [("22:00", "02:00", "unknown", "no DCGM sample from any GPU")]


@pytest.mark.parametrize(
    ("condition", "status", "expected"),
    [
        # Polarity: Ready and names ending in Ready/Healthy are good when True, the rest when False.
        (
            "AcceleratedHardwareReady",
            "False",
            ("unavailable", "AcceleratedHardwareReady=False (Bad)"),
        ),
        ("NetworkingHealthy", "False", ("unavailable", "NetworkingHealthy=False (Bad)")),
        ("MemoryPressure", "True", ("unavailable", "MemoryPressure=True (Bad)")),
        ("XidCriticalError", "False", ("available", None)),
        ("XidCriticalError", "Unknown", ("unknown", "XidCriticalError=Unknown (Bad)")),
    ],
)
def test_condition_polarity(con, condition, status, expected):
    def build(f: Fleet) -> None:
        healthy_node(f, "n1", "c1")
        f.condition("n1", condition, minutes(at("22:00"), at("02:00")), status, "Bad")

    small_fleet(con, build)
    assert [(s, r) for _, _, s, r in intervals(con, "n1")] == [expected]


def test_required_conditions_limit_what_counts_and_a_missing_one_is_unknown(con):
    def build(f: Fleet) -> None:
        healthy_node(f, "n1", "c1")
        f.condition("n1", "MemoryPressure", minutes(at("22:00"), at("02:00")), "True")

    only_ready = Settings(availability=AvailabilitySettings(required_conditions=["Ready"]))
    small_fleet(con, build, only_ready)
    assert intervals(con, "n1") == [("22:00", "02:00", "available", None)]
    never_seen = Settings(
        availability=AvailabilitySettings(required_conditions=["Ready", "NetworkingReady"])
    )
    compute_availability(con, never_seen)
    assert intervals(con, "n1") == [("22:00", "02:00", "unknown", "NetworkingReady stale")]


def test_staleness_setting(con):
    # Ready sampled every 10 minutes: fresh with a 900 s staleness, unknown gaps with the default 300 s.
    def build(f: Fleet) -> None:
        f.node("n1", "c1", gpu_count=0)
        f.condition("n1", "Ready", [at("22:00"), at("22:10"), at("22:20")], "True")

    small_fleet(con, build)
    assert intervals(con, "n1") == [
        ("22:00", "22:05", "available", None),
        ("22:05", "22:10", "unknown", "Ready stale"),
        ("22:10", "22:15", "available", None),
        ("22:15", "22:20", "unknown", "Ready stale"),
    ]
    compute_availability(
        con, dataclasses.replace(Settings(), availability=AvailabilitySettings(staleness_s=900))
    )
    assert intervals(con, "n1") == [("22:00", "22:20", "available", None)]


def test_a_node_missing_from_the_inventory_is_unknown(con):
    def build(f: Fleet) -> None:
        healthy_node(f, "n1", "c1")
        f.condition("ghost", "Ready", minutes(at("23:00"), at("02:00")), "True")

    small_fleet(con, build)
    assert intervals(con, "ghost") == [("23:00", "02:00", "unknown", "not in nodes inventory")]
    assert con.execute(
        "SELECT cluster, availability FROM node_availability_daily WHERE node = 'ghost'"
    ).fetchall() == [("unlisted", 0.0), ("unlisted", 0.0)]


@pytest.mark.parametrize("value", ["0", "-60", '"5m"'])
def test_staleness_must_be_positive_seconds(tmp_path, value):
    from pipelines.config import load_settings
    from pipelines.errors import ConfigError

    path = tmp_path / "gpufleet.toml"
    path.write_text(f"[availability]\nstaleness_s = {value}\n")
    with pytest.raises(ConfigError, match="staleness_s"):
        load_settings(path)


@pytest.mark.parametrize(
    ("silent", "reason"),
    [
        ([3], "no DCGM sample from gpu 3"),
        ([1, 3], "no DCGM sample from gpus 1, 3"),  # numeric order, one phrase
        ([0, 1, 2, 3], "no DCGM sample from any GPU"),  # the node's whole exporter is down
    ],
)
def test_missing_gpus_are_named_in_one_reason(con, silent, reason):
    def build(f: Fleet) -> None:
        everything = minutes(at("22:00"), at("02:00"))
        f.node("n1", "c1", gpu_count=4)
        f.condition("n1", "Ready", everything, "True")
        for gpu in range(4):
            f.gpu("n1", gpu, minutes(at("22:00"), at("23:00")) if gpu in silent else everything)

    small_fleet(con, build)
    # The last samples of the silent GPUs (23:00) hold until 23:05.
    assert intervals(con, "n1") == [
        ("22:00", "23:05", "available", None),
        ("23:05", "02:00", "unknown", reason),
    ]


@pytest.mark.parametrize(
    ("severity", "expected"),
    [
        # n1 healthy 22:00-02:00; an open anomaly from 23:00 holds until the 02:00 horizon.
        ("info", [("22:00", "02:00", "available", None)]),
        (
            "warn",
            [
                ("22:00", "23:00", "available", None),
                ("23:00", "02:00", "degraded", "anomaly: ecc_sbe_rate on gpu 0"),
            ],
        ),
        # critical is above warn: degraded too, never available.
        (
            "critical",
            [
                ("22:00", "23:00", "available", None),
                ("23:00", "02:00", "degraded", "anomaly: ecc_sbe_rate on gpu 0"),
            ],
        ),
    ],
)
def test_an_open_anomaly_at_warn_or_above_degrades_the_node(con, severity, expected):
    f = Fleet()
    healthy_node(f, "n1", "c1")
    f.load(con)
    insert_anomalies(
        con,
        [
            {
                "anomaly_id": "a1",
                "entity_type": "gpu",
                "node": "n1",
                "gpu": 0,
                "kind": "ecc_sbe_rate",
                "start_ts": at("23:00"),
                "end_ts": None,
                "severity": severity,
            }
        ],
    )
    compute_availability(con)
    assert intervals(con, "n1") == expected


@pytest.mark.parametrize(
    ("gpu_count", "require_gpu_telemetry", "expected"),
    [
        # n9 is in `nodes` but never reports. n1 reports 22:00-02:00, so the data spans 22:00-02:00 and
        # n9 is in the fleet all that time: 4 h unknown, not absent (absent would be fail-open).
        (2, True, [("22:00", "02:00", "unknown", "no DCGM sample from any GPU")]),
        # With GPU telemetry optional and no condition ever seen, nothing is required of n9 -- but
        # nothing reports either: still unknown.
        (2, False, [("22:00", "02:00", "unknown", "no samples from the node")]),
        (0, True, [("22:00", "02:00", "unknown", "no samples from the node")]),
    ],
)
def test_a_node_in_the_inventory_that_never_reports_is_unknown(
    con, gpu_count, require_gpu_telemetry, expected
):
    def build(f: Fleet) -> None:
        healthy_node(f, "n1", "c1")
        f.node("n9", "c1", gpu_count=gpu_count)

    settings = Settings(
        availability=AvailabilitySettings(require_gpu_telemetry=require_gpu_telemetry)
    )
    small_fleet(con, build, settings)
    assert intervals(con, "n9") == expected
    # 7200 s in the fleet each day, all unknown: availability 0 / 7200 = 0.
    assert con.execute(
        "SELECT day, in_fleet_s, unknown_s, availability FROM node_availability_daily WHERE node = 'n9' ORDER BY day"
    ).fetchall() == [(MON, 7200, 7200, 0.0), (TUE, 7200, 7200, 0.0)]


def test_a_node_that_starts_reporting_late_is_unknown_from_the_start_of_the_data(con):
    # n2 reports from 23:00 only; the data starts at 22:00 (n1): 22:00-23:00 unknown.
    def build(f: Fleet) -> None:
        healthy_node(f, "n1", "c1")
        late = minutes(at("23:00"), at("02:00"))
        f.node("n2", "c1")
        f.condition("n2", "Ready", late, "True")
        f.gpu("n2", 0, late)
        f.gpu("n2", 1, late)

    small_fleet(con, build)
    assert intervals(con, "n2") == [
        ("22:00", "23:00", "unknown", "Ready stale; no DCGM sample from any GPU"),
        ("23:00", "02:00", "available", None),
    ]


def test_one_data_horizon_for_node_states_attempts_and_goodput(con):
    # Samples run 22:00-02:00, but job j-late's attempt ends at 02:30: the data horizon is 02:30, for
    # every table. n1's last samples (02:00) hold until 02:05, then it is unknown until 02:30.
    # j-run (2 GPUs) has been running since 01:30: 3600 s to the horizon, in attempt_outcomes and
    # in goodput alike.
    def build(f: Fleet) -> None:
        healthy_node(f, "n1", "c1")
        f.job("j-late", 2, "succeeded", [("01:00", "02:30", "succeeded", 0, ["n1"])], exit_code=0)
        f.job("j-run", 2, "running", [("01:30", None, "running", None, ["n1"])])

    small_fleet(con, build)
    from pipelines.compute import compute

    compute(con, Settings(), force=True)
    assert con.execute("SELECT data_start_ts, horizon_ts FROM data_horizon").fetchall() == [
        (at("22:00"), at("02:30"))
    ]
    assert intervals(con, "n1")[-2:] == [
        ("22:00", "02:05", "available", None),
        (
            "02:05",
            "02:30",
            "unknown",
            "Ready stale; Unschedulable stale; no DCGM sample from any GPU",
        ),
    ]
    assert con.execute(
        "SELECT duration_s, allocated_gpu_s FROM attempt_outcomes WHERE job_id = 'j-run'"
    ).fetchall() == [(3600.0, 7200.0)]
    assert con.execute(
        "SELECT wall_s, end_ts FROM job_goodput WHERE job_id = 'j-run'"
    ).fetchall() == [(3600, at("02:30"))]


def test_a_known_bad_signal_outranks_missing_data(con):
    # An 8-GPU node: XID 79 on gpu 7 at 23:00, gpu 7 stops reporting (its 22:59 sample holds until
    # 23:04); from 23:00 the node is cordoned and AcceleratedHardwareReady=False to the 02:00 horizon.
    # The 2 h 56 min after 23:04 belong to the failure (unavailable, hardware reason), not to
    # "unknown": 3 h x 8 GPUs = 24 GPU-h unavailable, 0 unknown.
    def build(f: Fleet) -> None:
        everything = minutes(at("22:00"), at("02:00"))
        before, after = minutes(at("22:00"), at("22:59")), minutes(at("23:00"), at("02:00"))
        f.node("n1", "c1", gpu_count=8)
        f.condition("n1", "Ready", everything, "True")
        f.condition("n1", "AcceleratedHardwareReady", before, "True")
        f.condition("n1", "AcceleratedHardwareReady", after, "False", "GpuFellOffTheBus")
        f.condition("n1", "Unschedulable", before, "False")
        f.condition("n1", "Unschedulable", after, "True")
        for gpu in range(8):
            f.gpu("n1", gpu, before if gpu == 7 else everything)
        f.xid("n1", 7, at("23:00"), 79)

    small_fleet(con, build)
    hardware = "AcceleratedHardwareReady=False (GpuFellOffTheBus); cordoned"
    assert intervals(con, "n1") == [
        ("22:00", "23:00", "available", None),
        ("23:00", "23:04", "unavailable", hardware),
        ("23:04", "02:00", "unavailable", f"{hardware}; no DCGM sample from gpu 7"),
    ]
    unknown = con.execute(
        "SELECT sum(unknown_s) FROM node_availability_daily WHERE node = 'n1'"
    ).fetchone()[0]
    assert unknown == 0


def test_missing_data_still_outranks_degraded(con):
    # gpu 1 silent 00:00..00:59 under an open warn anomaly: unknown (telemetry required), not degraded.
    def build(f: Fleet) -> None:
        gap = set(minutes(at("00:00"), at("00:59")))
        healthy_node(
            f, "n1", "c1", gpu1=[t for t in minutes(at("22:00"), at("02:00")) if t not in gap]
        )

    small_fleet(con, build)
    insert_anomalies(
        con, [throttling_anomaly() | {"node": "n1", "start_ts": at("23:00"), "end_ts": None}]
    )
    compute_availability(con)
    assert [s for _, _, s, _ in intervals(con, "n1")] == [
        "available",
        "degraded",
        "unknown",
        "degraded",
    ]
