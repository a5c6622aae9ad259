"""failure_escapes, checkpoint_advice and node_cost on hand-made fleets; values worked out by hand.

Times are seconds from T0 = Monday 2026-11-23 00:00 UTC (ISO week 2026-W48). The full
`gpufleet compute` runs on the landing rows; node states, anomalies and (for node_cost) one
straggler verdict are then pinned by hand and the tables that read them are rebuilt.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pipelines.config import Settings
from pipelines.sql import execute
from pipelines.store import open_store
from tests.fleets import insert_anomalies
from tests.goodput_fleet import at, attempt, checkpoint, job, load, set_node_states

H = 3600

# The escapes fleet: four 8-GPU nodes of cluster c1, 2-GPU jobs without step timings (a failed
# attempt without steps is all wasted progress, a succeeded one all productive).
#   j-esc   n1 [0, 1 h) node_fail. n1 had an `xid` finding [-2 h, -1 h), closed before the start, and
#           is unavailable from 1 h (the failure): nothing open before the end -> escaped.
#   j-flag  n2 [0, 2 h) failed (exit 1). An ecc_sbe_rate finding (warn) opened on n2 at -30 min and
#           is still open when the attempt starts -> placed_on_flagged, lead 2 h 30 min = 9000 s.
#   j-seen  n3 [0, 2 h) failed (exit 1). An xid finding (critical) opened on n3 40 min before the
#           end (1 h 20 min) -> seen_before_failure, lead 2400 s.
#   j-pre   n4 [0, 30 min) preempted: infrastructure by policy, not a failure of the fleet.
#   j-sw    n4 [0, 30 min) failed (exit 1) with no signal: software, not in the table.
#   j-wait  n4 submitted at 1 h, started at 2 h, succeeded at 3 h: a job waited in c1's queue 1 h-2 h.
ESCAPE_JOBS = {
    "jobs": [
        job("j-esc", start=0, end=1 * H, state="node_fail"),
        {**job("j-flag", start=0, end=2 * H, state="failed"), "exit_code": 1},
        {**job("j-seen", start=0, end=2 * H, state="failed"), "exit_code": 1},
        job("j-pre", start=0, end=H / 2, state="preempted"),
        {**job("j-sw", start=0, end=H / 2, state="failed"), "exit_code": 1},
        job("j-wait", start=2 * H, end=3 * H, state="succeeded", submit=1 * H),
    ],
    "job_attempts": [
        attempt("j-esc", 0, start=0, end=1 * H, state="node_fail", nodes=["n1"]),
        {**attempt("j-flag", 0, start=0, end=2 * H, state="failed", nodes=["n2"]), "exit_code": 1},
        {**attempt("j-seen", 0, start=0, end=2 * H, state="failed", nodes=["n3"]), "exit_code": 1},
        attempt("j-pre", 0, start=0, end=H / 2, state="preempted", nodes=["n4"]),
        {**attempt("j-sw", 0, start=0, end=H / 2, state="failed", nodes=["n4"]), "exit_code": 1},
        attempt("j-wait", 0, start=2 * H, end=3 * H, state="succeeded", nodes=["n4"]),
    ],
}
NODE_STATES = [
    ("n1", 0, 1 * H, "available"),
    ("n1", 1 * H, 4 * H, "unavailable"),
    ("n2", 0, 4 * H, "available"),
    ("n3", 0, 4 * H, "available"),
    ("n4", 0, 4 * H, "available"),
]
FINDINGS = [
    {
        "anomaly_id": "a1",
        "entity_type": "gpu",
        "node": "n1",
        "gpu": 0,
        "kind": "xid",
        "start_ts": at(-2 * H),
        "end_ts": at(-1 * H),
        "severity": "critical",
        "action": "reboot",
    },
    {
        "anomaly_id": "a2",
        "entity_type": "gpu",
        "node": "n2",
        "gpu": 5,
        "kind": "ecc_sbe_rate",
        "start_ts": at(-H / 2),
        "end_ts": None,
        "severity": "warn",
        "action": "drain",
    },
    {
        "anomaly_id": "a3",
        "entity_type": "gpu",
        "node": "n3",
        "gpu": 2,
        "kind": "xid",
        "start_ts": at(2 * H - 40 * 60),
        "end_ts": None,
        "severity": "critical",
        "action": "reboot",
    },
]
REBUILT = (
    "attempt_outcomes",
    "failure_escapes",
    "checkpoint_advice",
    "node_cost",
    "weekly_summary",
)


def rebuild(con, settings: Settings, steps=REBUILT) -> None:
    for step in steps:
        execute(con, f"derived/{step}", settings.sql_params())


@pytest.fixture(scope="module")
def escapes_con(tmp_path_factory):
    from pipelines.compute import compute

    con = open_store(tmp_path_factory.mktemp("escapes") / "fleet.duckdb")
    load(
        con,
        {
            "nodes": [{"node": f"n{i}", "cluster": "c1", "gpu_count": 8} for i in range(1, 5)],
            **ESCAPE_JOBS,
        },
    )
    settings = Settings()
    compute(con, settings, force=True)
    set_node_states(con, NODE_STATES)
    con.execute("DELETE FROM anomalies")
    insert_anomalies(con, FINDINGS)
    # One straggler verdict: a rank of j-flag on n2 dragged its steps 900 s in total.
    con.execute("DELETE FROM rank_slowdown")
    con.execute(
        "INSERT INTO rank_slowdown (job_id, attempt, rank, node, gpu, drag_s, is_straggler) "
        "VALUES ('j-flag', 0, 1, 'n2', 1, 900, true)"
    )
    execute(con, "derived/goodput_stack", settings.sql_params())
    rebuild(con, settings)
    yield con
    con.close()


ESCAPE_CASES = [
    # job, outcome, first signal kind, lead time s, detector, node, gpu
    # j-esc: the closed finding does not count; n1 goes unavailable at the failure itself (1 h):
    # the check saw it only after the job did (late_signal_kind), detector node_unavailable.
    ("j-esc", "escaped", None, None, "node_unavailable", "n1", None),
    # j-flag: ecc_sbe_rate open since -30 min when the attempt started at 0; end 2 h: 7200 + 1800.
    ("j-flag", "placed_on_flagged", "ecc_sbe_rate", 9000.0, "ecc_sbe_rate", "n2", 5),
    # j-seen: xid at 1 h 20 min, failure at 2 h: seen 40 min = 2400 s ahead.
    ("j-seen", "seen_before_failure", "xid", 2400.0, "xid", "n3", 2),
]


@pytest.mark.parametrize(
    ("job_id", "outcome", "kind", "lead", "detector", "node", "gpu"), ESCAPE_CASES
)
def test_failure_escapes(escapes_con, job_id, outcome, kind, lead, detector, node, gpu):
    row = (
        escapes_con.sql("SELECT * FROM failure_escapes WHERE job_id = $job", params={"job": job_id})
        .pl()
        .to_dicts()
    )
    assert len(row) == 1
    row = row[0]
    assert (
        row["outcome"],
        row["first_signal_kind"],
        row["lead_time_s"],
        row["detector"],
        row["node"],
        row["gpu"],
    ) == (outcome, kind, lead, detector, node, gpu)
    assert [row["placed_on_flagged"], row["seen_before_failure"], row["escaped"]] == [
        outcome == o for o in ("placed_on_flagged", "seen_before_failure", "escaped")
    ]


WEEKLY_CASES = [
    # 1 escaped (j-esc) of 3 fleet failures; j-flag placed on a flagged node;
    # median lead of the caught ones: median(9000, 2400) = 5700 s.
    ("escape_rate", 1 / 3),
    ("jobs_placed_on_flagged", 1),
    ("median_lead_time_s", 5700.0),
    ("fleet_failures", 3),
    ("escaped_failures", 1),
]


@pytest.mark.parametrize(("column", "expected"), WEEKLY_CASES)
def test_weekly_escape_figures(escapes_con, column, expected):
    (value,) = escapes_con.execute(
        f"SELECT {column} FROM weekly_summary WHERE week = '2026-W48' AND cluster = '*'"
    ).fetchone()
    assert value == pytest.approx(expected, rel=1e-12)


DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"


@pytest.mark.parametrize("table", ["failure_escapes", "checkpoint_advice", "node_cost"])
def test_every_column_is_documented(escapes_con, table):
    text = DOCS.read_text()
    columns = [c[0] for c in escapes_con.execute(f"SELECT * FROM {table} LIMIT 0").description]
    missing = [c for c in columns if f"`{c}`" not in text]
    assert missing == [], f"{table}: document {missing} in docs/metrics.md"


def test_only_fleet_failures_are_rows(escapes_con):
    # j-pre (preempted, by policy), j-sw (software) and j-wait (succeeded) are not fleet failures.
    rows = escapes_con.execute(
        "SELECT job_id, failure_class, week, cluster FROM failure_escapes ORDER BY job_id"
    ).fetchall()
    assert rows == [
        ("j-esc", "hardware", "2026-W48", "c1"),
        ("j-flag", "hardware", "2026-W48", "c1"),
        ("j-seen", "hardware", "2026-W48", "c1"),
    ]


LOSS_CASES = [
    # Each failed attempt lost all its work (no step timings, no checkpoint): 2 GPUs x its length;
    # no later attempt, so no recovery gap. Late remediation: the losses of failures seen coming.
    ("j-esc", 2 * 1 * H, 0.0),  # escaped: not a late remediation
    ("j-flag", 2 * 2 * H, 2 * 2 * H),
    ("j-seen", 2 * 2 * H, 2 * 2 * H),
]


@pytest.mark.parametrize(("job_id", "lost", "late"), LOSS_CASES)
def test_failure_losses(escapes_con, job_id, lost, late):
    got = escapes_con.execute(
        "SELECT lost_gpu_s, late_remediation_gpu_s FROM failure_escapes WHERE job_id = ?", [job_id]
    ).fetchall()
    assert got == [(pytest.approx(lost), pytest.approx(late))]


# node_cost, week 2026-W48, GPU-hours:
#   n1: failure j-esc 2 GPU-h; unavailable 1 h-4 h while j-wait queued 1 h-2 h: 8 GPUs x 1 h = 8 -> 10.
#   n2: failure j-flag 4 GPU-h; straggler drag 900 s x 2 GPUs = 0.5 GPU-h -> 4.5.
#   n3: failure j-seen 4 GPU-h.
#   n4: nothing (j-pre and j-sw are not the fleet's failures): no row.
# Fleet: allocated j-esc 2 + j-flag 4 + j-seen 4 + j-pre 1 + j-sw 1 + j-wait 2 = 14 GPU-h,
# productive j-wait 2 -> goodput 2/14. Without n1: (2 + 10) / (14 + 0 recovery + 8 waiting) = 12/22.
NODE_COST_CASES = [
    ("n1", "lost_gpu_h", 10.0),
    ("n1", "failure_gpu_h", 2.0),
    ("n1", "waiting_gpu_h", 8.0),
    ("n1", "fleet_goodput", 2 / 14),
    ("n1", "fleet_goodput_without", 12 / 22),
    ("n1", "goodput_regained", 12 / 22 - 2 / 14),
    ("n2", "lost_gpu_h", 4.5),
    ("n2", "straggler_gpu_h", 0.5),
    ("n2", "straggler_ranks", 1),
    ("n2", "fleet_goodput_without", (2 + 4.5) / 14),
    ("n3", "lost_gpu_h", 4.0),
    ("n3", "failures", 1),
]


@pytest.mark.parametrize(("node", "column", "expected"), NODE_COST_CASES)
def test_node_cost(escapes_con, node, column, expected):
    (value,) = escapes_con.execute(
        f"SELECT {column} FROM node_cost WHERE week = '2026-W48' AND node = ?", [node]
    ).fetchone()
    assert value == pytest.approx(expected, rel=1e-9)


def test_node_cost_rows_sort_by_cost(escapes_con):
    rows = escapes_con.execute("SELECT node FROM node_cost WHERE week = '2026-W48'").fetchall()
    assert rows == [("n1",), ("n2",), ("n3",)]


# checkpoint_advice: job "llama" of team "pretrain" on 64 nodes (512 GPUs) runs 24 h in W48 and saves
# every 10 min (saves start at 600, 1200, ... s) for C = 60 s: 540 s of work between saves. The fleet
# saw 64 interruptions in the week over the 64 x 24 = 1536 node-hours held: lambda per node = 1/24 h,
# lambda for 64 nodes = 64/24 per h, M = 24/64 h = 1350 s.
#   Young: sqrt(2 x 60 x 1350) = sqrt(162000) = 402.49 s.
#   Daly: C/2M = 60/2700 = 1/45; 402.49 x (1 + sqrt(1/45)/3 + (1/45)/9) - 60
#         = 402.49 x (1 + 0.04969 + 0.00247) - 60 = 423.49 - 60 = 363.49 s.
#   lost fraction 1 - tau / (M (e^((tau + C)/M) - 1)):
#     current tau = 540: (540 + 60)/1350 = 0.4444, e^ - 1 = 0.5596, x 1350 = 755.49 -> 1 - 0.7148 = 0.2852
#     optimal tau = 363.49: 423.49/1350 = 0.3137, e^ - 1 = 0.3685, x 1350 = 497.43 -> 1 - 0.7307 = 0.2693
#   allocated 512 x 24 = 12288 GPU-h; regained (0.2852 - 0.2693) x 12288 = 196 GPU-h.
M_S = 1350.0
C_S = 60.0
YOUNG = math.sqrt(2 * C_S * M_S)
DALY = YOUNG * (1 + math.sqrt(C_S / (2 * M_S)) / 3 + (C_S / (2 * M_S)) / 9) - C_S


def lost_fraction(tau: float) -> float:
    return 1 - tau / (M_S * (math.exp((tau + C_S) / M_S) - 1))


ADVICE_CASES = [
    ("save_cost_s", 60.0, 1e-12),
    ("current_interval_s", 540.0, 1e-12),
    ("nodes", 64, 1e-12),
    ("gpus", 512, 1e-12),
    ("fleet_interruptions", 64, 1e-12),
    ("fleet_node_h", 1536.0, 1e-12),
    ("interruptions_per_node_h", 1 / 24, 1e-12),
    ("interruption_rate_per_h", 64 / 24, 1e-12),
    ("mtbi_h", 0.375, 1e-12),
    ("young_interval_s", 402.49, 1e-4),
    ("young_interval_s", YOUNG, 1e-12),
    ("optimal_interval_s", 363.49, 1e-4),
    ("optimal_interval_s", DALY, 1e-12),
    ("lost_fraction_current", 0.2852, 1e-3),
    ("lost_fraction_current", lost_fraction(540.0), 1e-12),
    ("lost_fraction_optimal", 0.2693, 1e-3),
    ("lost_fraction_optimal", lost_fraction(DALY), 1e-12),
    ("allocated_gpu_h", 12288.0, 1e-12),
    ("regained_gpu_h", 196.1, 2e-3),
    ("regained_gpu_h", (lost_fraction(540.0) - lost_fraction(DALY)) * 12288, 1e-9),
]


@pytest.fixture(scope="module")
def advice(tmp_path_factory):
    from pipelines.compute import compute

    con = open_store(tmp_path_factory.mktemp("advice") / "fleet.duckdb")
    nodes = [f"g{i:02d}" for i in range(64)]
    load(
        con,
        {
            "nodes": [{"node": n, "cluster": "c1", "gpu_count": 8} for n in nodes],
            "jobs": [
                {
                    **job("llama-1", start=0, end=24 * H, state="succeeded", gpus=512),
                    "name": "llama",
                    "team": "pretrain",
                }
            ],
            "job_attempts": [
                attempt("llama-1", 0, start=0, end=24 * H, state="succeeded", nodes=nodes)
            ],
            "checkpoints": [
                checkpoint("llama-1", 0, k, "save", start=600 * k, duration=60.0)
                for k in range(1, 144)
            ],
        },
    )
    settings = Settings()
    compute(con, settings, force=True)
    # 64 fleet failures in the week (their own attempts would add exposure; only the count matters here).
    con.execute(
        "CREATE OR REPLACE TABLE failure_escapes AS SELECT '2026-W48' AS week FROM range(64)"
    )
    rebuild(con, settings, ("checkpoint_advice",))
    rows = con.sql("SELECT * FROM checkpoint_advice").pl().to_dicts()
    con.close()
    return rows


@pytest.mark.parametrize(("column", "expected", "rel"), ADVICE_CASES)
def test_checkpoint_advice(advice, column, expected, rel):
    assert len(advice) == 1
    row = advice[0]
    assert (row["week"], row["job_key"]) == ("2026-W48", "pretrain/llama")
    assert row[column] == pytest.approx(expected, rel=rel)
