"""failure_escapes and checkpoint_advice against the simulator's ground truth, seeds 1..3.

16 nodes x 3 days each, through the real path: simulate -> Parquet -> `ingest files` -> `compute`.
The fault plan kills jobs on GPUs that fell off the bus with no warning (escapes), on a GPU that
logged a contained ECC error hours before failing (placed on a flagged node, or seen ahead when the
job was already running), and after a rising single-bit ECC rate; it runs two recurring jobs that
checkpoint too often and too rarely.
"""

from __future__ import annotations

import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.simulate import SimulationConfig, simulate_to_dir
from pipelines.simulator.escapes import RECURRING_NAMES, failure_escape_truth
from pipelines.simulator.output import run
from pipelines.sources.files import ingest_files
from pipelines.store import open_store

SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = {}
    for seed in SEEDS:
        cfg = SimulationConfig.create(nodes=16, days=3, seed=seed, start="2026-11-23")
        folder = tmp_path_factory.mktemp(f"seed{seed}")
        simulate_to_dir(cfg, folder / "data")
        con = open_store(folder / "fleet.duckdb")
        ingest_files(con, folder / "data")
        compute(con, Settings())
        sim = run(cfg)
        truth = failure_escape_truth(sim.effects, sim.attempts, sim.fleet.names, sim.cfg.horizon_s)
        escapes = con.sql("SELECT * FROM failure_escapes").pl().to_dicts()
        advice = con.sql("SELECT * FROM checkpoint_advice").pl().to_dicts()
        gt = (
            con.sql(f"SELECT * FROM read_parquet('{folder / 'data' / 'ground_truth.parquet'}')")
            .pl()
            .to_dicts()
        )
        con.close()
        out[seed] = (truth, escapes, advice, gt)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_every_failed_attempt_is_classified_as_the_ground_truth_says(simulated, seed):
    truth, escapes, _, _ = simulated[seed]
    assert truth, "the fault plan killed no job"
    found = {(r["job_id"], r["attempt"]): r for r in escapes}
    for t in truth:
        row = found.pop((t.job_id, t.attempt), None)
        assert row is not None, f"{t} is missing from failure_escapes"
        assert row["outcome"] in t.possible, (t, row["outcome"], row["first_signal_kind"])
        assert t.node in row["implicated_nodes"]
    # Nothing else: every fleet failure in the table is one a fault caused.
    assert not found, f"failure_escapes rows no fault explains: {sorted(found)}"


def test_the_seeds_cover_every_outcome(simulated):
    outcomes = {r["outcome"] for seed in SEEDS for r in simulated[seed][1]}
    assert outcomes == {"placed_on_flagged", "seen_before_failure", "escaped"}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", sorted(RECURRING_NAMES))
def test_checkpoint_advice_points_the_way_the_ground_truth_says(simulated, seed, kind):
    _, _, advice, gt = simulated[seed]
    name, team = RECURRING_NAMES[kind]
    assert any(g["kind"] == kind for g in gt)
    rows = [a for a in advice if a["job_key"] == f"{team}/{name}"]
    assert rows, f"no advice for {team}/{name}"
    for row in rows:
        assert row["jobs"] >= 2  # a recurring job: several runs under one key
        if kind == "checkpoint_too_frequent":
            assert row["optimal_interval_s"] > row["current_interval_s"]
        else:
            assert row["optimal_interval_s"] < row["current_interval_s"]
        assert row["regained_gpu_h"] > 0
