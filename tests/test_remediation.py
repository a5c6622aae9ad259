"""node_remediation: the highest ladder step of each node's open anomalies, and the policy that
never takes more than `max_out_share` of a cluster out of service at once."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.config import DetectionSettings, Settings
from pipelines.detectors import LADDER
from pipelines.sql import execute, load_sql, statements

T = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)


def setup(
    con, nodes: dict[str, str], anomalies: list[tuple], share: float = 0.10
) -> dict[str, dict]:
    """nodes: node -> cluster; anomalies: (node, kind, severity, action, score, open)."""
    for statement in statements(load_sql("schema/derived")):
        con.execute(statement)
    con.execute("DELETE FROM nodes")
    con.execute("DELETE FROM anomalies")
    con.executemany(
        "INSERT INTO nodes VALUES (?, ?, 'p5.48xlarge', 'H100', 8, 32)",
        [[n, c] for n, c in nodes.items()],
    )
    if anomalies:
        con.executemany(
            "INSERT INTO anomalies VALUES (?, 'node', ?, NULL, NULL, NULL, NULL, ?, ?, ?, ?, ?, '{}', ?, 0, 0)",
            [
                [
                    f"a{i}",
                    n,
                    kind,
                    T,
                    None if is_open else T + dt.timedelta(hours=1),
                    score,
                    sev,
                    action,
                ]
                for i, (n, kind, sev, action, score, is_open) in enumerate(anomalies)
            ],
        )
    params = Settings(detection=DetectionSettings(max_out_share=share)).sql_params()
    execute(con, "derived/node_remediation", params)
    rel = con.sql("SELECT * FROM node_remediation")
    return {row[0]: dict(zip(rel.columns, row)) for row in rel.fetchall()}


def test_ladder_and_policy(con):
    # c1 has 20 nodes: at most floor(0.10 x 20) = 2 out at once. Three nodes ask for cordon or more:
    # n01 (reboot, critical) and n02 (cordon, score 10) act; n03 (cordon, score 5) waits.
    # n04 only needs watching; n05's anomaly is closed (nothing open).
    # c2 has 5 nodes: floor(0.5) = 0, so even its drain request waits.
    nodes = {f"n{i:02d}": "c1" for i in range(1, 21)} | {f"m{i}": "c2" for i in range(1, 6)}
    got = setup(
        con,
        nodes,
        [
            ("n01", "xid", "critical", "reboot", 1.0, True),
            ("n01", "ecc_sbe_rate", "warn", "watch", 3.0, True),
            ("n02", "throttling", "warn", "cordon", 10.0, True),
            ("n03", "nic_links_down", "warn", "cordon", 5.0, True),
            ("n04", "ecc_sbe_rate", "warn", "watch", 2.0, True),
            ("n05", "row_remap_failure", "critical", "replace", 1.0, False),
            ("m1", "throttling", "warn", "drain", 4.0, True),
        ],
    )
    expected = {
        # node: (ladder_step, open_anomalies, decision, priority)
        "n01": ("reboot", 2, "act", 1),
        "n02": ("cordon", 1, "act", 2),
        "n03": ("cordon", 1, "wait", 3),
        "n04": ("watch", 1, "watch", None),
        "n05": ("none", 0, "none", None),
        "m1": ("drain", 1, "wait", 1),
    }
    for node, (step, count, decision, priority) in expected.items():
        row = got[node]
        assert (row["ladder_step"], row["open_anomalies"], row["decision"], row["priority"]) == (
            step,
            count,
            decision,
            priority,
        ), node
    assert got["n01"]["kinds"] == ["ecc_sbe_rate", "xid"]
    # c1: 3 of 20 asked to go out (0.15), 2 of 20 granted (0.10).
    assert got["n01"]["cluster_out_share_requested"] == pytest.approx(0.15)
    assert got["n01"]["cluster_out_share_granted"] == pytest.approx(0.10)
    assert got["m1"]["cluster_out_share_granted"] == 0.0


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n_nodes=st.integers(min_value=1, max_value=30),
    share=st.sampled_from([0.05, 0.1, 0.25, 0.5]),
    findings=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=29),
            st.sampled_from(LADDER),
            st.sampled_from(["warn", "critical"]),
            st.floats(0, 100),
            st.booleans(),
        ),
        max_size=40,
    ),
)
def test_policy_never_exceeds_share(con, n_nodes, share, findings):
    nodes = {f"n{i:02d}": "c1" for i in range(n_nodes)}
    anomalies = [
        (f"n{i % n_nodes:02d}", "k", sev, action, score, is_open)
        for i, action, sev, score, is_open in findings
    ]
    got = setup(con, nodes, anomalies, share)
    acting = [r for r in got.values() if r["decision"] == "act"]
    assert len(acting) <= share * n_nodes
    for node, row in got.items():
        open_actions = [a[3] for a in anomalies if a[0] == node and a[5]]
        want = max(open_actions, key=LADDER.index) if open_actions else "none"
        assert row["ladder_step"] == want


H = dt.timedelta(hours=1)


def history(con, anomalies: list[tuple]) -> list[tuple]:
    """anomalies: (id, node, gpu, kind, start h, end h or None, severity, action, evidence JSON);
    data from T to the horizon T + 168 h (one week)."""
    for statement in statements(load_sql("schema/derived")):
        con.execute(statement)
    con.execute("DELETE FROM nodes")
    con.execute(
        "INSERT INTO nodes VALUES ('n1', 'c1', 'p5.48xlarge', 'H100', 8, 32), "
        "('n2', 'c1', 'p5.48xlarge', 'H100', 8, 32)"
    )
    con.execute(
        "CREATE OR REPLACE TABLE data_horizon AS SELECT ?::TIMESTAMPTZ AS data_start_ts, "
        "?::TIMESTAMPTZ AS horizon_ts",
        [T, T + 168 * H],
    )
    con.execute("DELETE FROM anomalies")
    con.executemany(
        "INSERT INTO anomalies VALUES (?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, 1.0, ?, ?, ?, 0, 0)",
        [
            [
                i,
                "gpu" if gpu is not None else "node",
                node,
                gpu,
                kind,
                T + s * H,
                None if e is None else T + e * H,
                sev,
                evidence,
                action,
            ]
            for i, node, gpu, kind, s, e, sev, action, evidence in anomalies
        ],
    )
    execute(con, "derived/node_remediation_history", Settings().sql_params())
    rows = con.execute(
        "SELECT node, step, (epoch(since) - epoch(?::TIMESTAMPTZ)) / 3600, "
        "(epoch(until) - epoch(?::TIMESTAMPTZ)) / 3600, severity, why, anomaly_ids "
        "FROM node_remediation_history ORDER BY node, since",
        [T, T],
    ).fetchall()
    return [tuple(r) for r in rows]


def test_history_keeps_what_was_recommended_after_the_findings_closed(con):
    # n1: a warn ECC rate 0-10 h (watch), XID 79 on gpu 7 4-6 h (reboot) overlapping it, an escalated
    # XID 79 30-40 h (replace). n2: a repeat-offender host 50-60 h (cordon) and a finding still open
    # from 100 h (watch, until NULL). Every finding is closed at the end of the week except n2's
    # last, yet each step stays on record with the findings behind it.
    got = history(
        con,
        [
            ("e1", "n1", 7, "ecc_sbe_rate", 0, 10, "warn", "watch", "{}"),
            ("x1", "n1", 7, "xid", 4, 6, "critical", "reboot", '{"xid": 79}'),
            (
                "x3",
                "n1",
                7,
                "xid",
                30,
                40,
                "critical",
                "replace",
                '{"xid": 79, "escalated": "critical hardware XID finding #3 on gpu 7 within 30.0 days"}',
            ),
            ("r1", "n2", None, "repeat_offender", 50, 60, "warn", "cordon", "{}"),
            ("w1", "n2", None, "telemetry_gap", 100, None, "warn", "watch", "{}"),
        ],
    )
    assert got == [
        ("n1", "watch", 0.0, 4.0, "warn", "ecc_sbe_rate on gpu 7 (warn) -> watch", ["e1"]),
        ("n1", "reboot", 4.0, 6.0, "critical", "xid 79 on gpu 7 (critical) -> reboot", ["x1"]),
        ("n1", "watch", 6.0, 10.0, "warn", "ecc_sbe_rate on gpu 7 (warn) -> watch", ["e1"]),
        (
            "n1",
            "replace",
            30.0,
            40.0,
            "critical",
            "xid 79 on gpu 7 (critical) -> replace: critical hardware XID finding #3 on gpu 7 within 30.0 days",
            ["x3"],
        ),
        ("n2", "cordon", 50.0, 60.0, "warn", "repeat_offender (warn) -> cordon", ["r1"]),
        ("n2", "watch", 100.0, None, "warn", "telemetry_gap (warn) -> watch", ["w1"]),
    ]
