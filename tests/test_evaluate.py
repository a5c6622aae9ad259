"""Detection quality: matching rules on hand-made findings, and the targets pinned on a small
simulated suite (a regression in any detector fails here)."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from pipelines.compute import _steps
from pipelines.config import Settings
from pipelines.evaluate import SeedRun, bounds_match, failures, parse_seeds, run_seed, summarise
from tests.conftest import require

T = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)


def h(hours: float) -> dt.datetime:
    return T + dt.timedelta(hours=hours)


def finding(
    kind: str,
    node: str,
    gpu: int | None,
    start: float,
    end: float | None,
    detected: float | None = None,
    job_id: str | None = None,
    rank: int | None = None,
) -> dict:
    evidence = {} if detected is None else {"detected_at": h(detected).isoformat()}
    return {
        "kind": kind,
        "node": node,
        "gpu": gpu,
        "job_id": job_id,
        "rank": rank,
        "start_ts": h(start),
        "end_ts": None if end is None else h(end),
        "evidence": json.dumps(evidence),
    }


def fault(
    kind: str,
    entity: str,
    node: str | None,
    gpu: int | None,
    start: float,
    end: float,
    job_id: str | None = None,
    rank: int | None = None,
) -> dict:
    return {
        "kind": kind,
        "entity_type": entity,
        "node": node,
        "gpu": gpu,
        "job_id": job_id,
        "rank": rank,
        "start_ts": h(start),
        "end_ts": h(end),
    }


def score(findings: list[dict], faults: list[dict], gpu_days: float = 1000.0) -> dict:
    run = SeedRun(
        1,
        pl.DataFrame(findings, infer_schema_length=None),
        pl.DataFrame(faults, infer_schema_length=None),
        gpu_days,
        h(48),
    )
    return summarise([run])


@pytest.mark.parametrize(
    "findings, faults, kind, expected",
    [
        # The XID on the faulty GPU, detected 0.5 h after the fault: TP, recall 1, TTD 1800 s.
        (
            [finding("xid", "n1", 3, 10, 16, detected=10.5)],
            [fault("xid79_fell_off_bus", "gpu", "n1", 3, 10, 20)],
            "xid",
            {"precision": 1.0, "recall": 1.0, "median_ttd_s": 1800.0, "false_positives": 0},
        ),
        # Same GPU but a day later (after end + 1 h slack): FP, and the fault is missed.
        # 1 FP per 1,000 GPU-days = 1.0.
        (
            [finding("xid", "n1", 3, 40, None)],
            [fault("xid79_fell_off_bus", "gpu", "n1", 3, 10, 20)],
            "xid",
            {"precision": 0.0, "recall": 0.0, "fp_per_1k_gpu_days": 1.0},
        ),
        # Another GPU of the node: not the same entity.
        (
            [finding("xid", "n1", 4, 10, 16)],
            [fault("xid79_fell_off_bus", "gpu", "n1", 3, 10, 20)],
            "xid",
            {"precision": 0.0, "recall": 0.0},
        ),
        # A node-level telemetry gap on the XID-79 node: allowed (TP) though not required.
        (
            [finding("telemetry_gap", "n1", None, 12, 13)],
            [fault("xid79_fell_off_bus", "gpu", "n1", 3, 10, 20)],
            "telemetry_gap",
            {"precision": 1.0, "recall": None},
        ),
        # A counter finding ending 0.5 h after the fault (inside the 1 h slack): TP.
        (
            [finding("pcie_replay_rate", "n2", 0, 5, 20.5)],
            [fault("pcie_replay", "gpu", "n2", 0, 4, 20)],
            "pcie_replay_rate",
            {"precision": 1.0, "recall": 1.0, "median_ttd_s": 3600.0},
        ),
        # Any finding on a negative hard case is a false positive.
        (
            [finding("throttling", "n3", 2, 5, 6)],
            [fault("noisy_gpu", "gpu", "n3", 2, 0, 48)],
            "throttling",
            {"precision": 0.0, "false_positives": 1},
        ),
        # Stragglers: same job and rank; the second straggler of the job is missed: recall 1/2.
        (
            [finding("straggler", "n4", 1, 3, 5, detected=3.25, job_id="j1", rank=9)],
            [
                fault("two_stragglers", "rank", "n4", 1, 3, 5, job_id="j1", rank=9),
                fault("two_stragglers", "rank", "n5", 2, 3, 5, job_id="j1", rank=17),
            ],
            "straggler",
            {"precision": 1.0, "recall": 0.5, "median_ttd_s": 900.0},
        ),
        # An ECC fault's DBE is timed from the fault's end (the error), not the SBE rise.
        (
            [finding("ecc_dbe", "n6", 5, 9, 11, detected=9)],
            [fault("ecc_dbe", "gpu", "n6", 5, 3, 9)],
            "ecc_dbe",
            {"precision": 1.0, "recall": 1.0, "median_ttd_s": 0.0},
        ),
    ],
)
def test_matching(findings, faults, kind, expected):
    row = score(findings, faults)[kind]
    for key, value in expected.items():
        assert row[key] == value, key


def episode(first: int | None, last: int | None) -> dict:
    evidence = {} if first is None else {"first_step": first, "last_step": last}
    return {"evidence": json.dumps(evidence)}


@pytest.mark.parametrize(
    "hits, truth, ok",
    [
        # Truth steps 1,400-1,599 (200 steps: tolerance max(50, 10) = 50); found 1,400-1,599.
        ([episode(1400, 1599)], (1400, 1599), True),
        # Found 1,449-1,650: both ends 49 and 51 off -- the end misses.
        ([episode(1449, 1650)], (1400, 1599), False),
        # Truth 0-2,069 (2,070 steps: tolerance 5 % = 103.5); found 0-2,170 (101 off): within.
        ([episode(0, 2170)], (0, 2069), True),
        # Open until the attempt's end instead of ending at 2,069 (the old behaviour): 230 off.
        ([episode(0, 2299)], (0, 2069), False),
        # Two findings on the rank: the one overlapping the truth most is judged.
        ([episode(700, 849), episode(2000, 2149)], (2000, 2149), True),
        # A finding without steps in its evidence cannot be judged: not within.
        ([episode(None, None)], (10, 20), False),
    ],
)
def test_episode_bounds(hits, truth, ok):
    assert bounds_match(hits, {"first_step": truth[0], "last_step": truth[1]}) is ok


def test_findings_on_negative_cases_are_counted():
    # A straggler finding on the all-ranks-slow negative job: 1 false positive, counted on negatives.
    f = finding("straggler", "n1", 0, 3, 4, job_id="j9", rank=2)
    t = fault("all_ranks_slow", "job", None, None, 2, 5, job_id="j9")
    row = score([f], [t])["straggler"]
    assert (row["false_positives"], row["on_negatives"]) == (1, 1)
    assert failures({"straggler": row}) == [
        "straggler: precision 0.0",
        "straggler: 1 findings on negative cases",
    ]


@pytest.mark.parametrize("text, seeds", [("1..5", [1, 2, 3, 4, 5]), ("1,3", [1, 3]), ("7", [7])])
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


def _has_rank_slowdown() -> bool:
    return any(step.name == "rank_slowdown" for step in _steps())


@pytest.mark.slow
def test_targets_on_a_small_suite():
    """One seed, 12 nodes x 1 day, the fault plan plus every hard case: precision and recall >= 0.95
    for every kind that has faults or findings."""
    run = run_seed(1, nodes=12, days=1, faults="default", settings=Settings())
    kinds = set(run.truth["kind"].to_list())
    summary = summarise([run])
    missed = failures(summary)
    if not _has_rank_slowdown():
        missed = [m for m in missed if not m.startswith("straggler")]
    assert missed == []
    # The suite really holds the hard cases (it cannot pass by injecting nothing).
    assert {
        "pcie_replay",
        "nvlink_errors",
        "row_remap_failure",
        "noisy_gpu",
        "counter_reset",
    } <= kinds
    assert summary["xid"]["recall"] == 1.0
    require(_has_rank_slowdown(), "the rank_slowdown compute step")
    assert {"straggler", "straggler_midrun", "two_stragglers"} <= kinds
    assert summary["straggler"]["recall"] >= 0.95
    # The episode and stall cases with their negatives; every episode's bounds checked.
    assert {
        "straggler_spell",
        "stragglers_trade_places",
        "straggler_two_spells",
        "straggler_sampled",
        "all_ranks_slow",
        "noisy_ranks",
        "job_hang",
        "job_hang_no_step_logs",
        "long_checkpoint_save",
        "data_wait",
    } <= kinds
    assert summary["straggler"]["bounds_checked"] >= 10
    assert summary["straggler"]["bounds_ok"] == summary["straggler"]["bounds_checked"]
    assert summary["job_stalled"]["recall"] == 1.0 and summary["job_stalled"]["precision"] == 1.0
    assert all(row["on_negatives"] == 0 for row in summary.values())


@pytest.mark.slow
def test_fault_free_fleet_has_no_findings():
    run = run_seed(4, nodes=8, days=1, faults="none", settings=Settings())
    assert run.truth.is_empty()
    assert run.anomalies.select("kind", "node", "gpu", "start_ts").to_dicts() == []


def test_every_detection_setting_is_documented():
    import dataclasses
    from pathlib import Path

    from pipelines.config import DetectionSettings

    doc = (Path(__file__).resolve().parent.parent / "docs" / "detection.md").read_text()
    missing = [f.name for f in dataclasses.fields(DetectionSettings) if f"`{f.name}`" not in doc]
    assert missing == []
