"""Utilisation and MIG packing on a simulated fleet, checked against the simulator's
`utilisation_truth`.

8 nodes x 1 day (seed 2) with the utilisation workloads: per cluster one MIG node (half its GPUs
in two 3g instances, half in seven 1g, one of them idle), one whole-node job that uses one GPU of
eight and one light inference job on eight whole GPUs. The fleet goes through the real path:
simulate -> Parquet files -> `ingest files` -> `compute`.

Exact: GPU-hours (whole scrape windows), idle GPU-hours of idle windows (activity exactly 0),
the recommended profile and the GPUs it frees. Within `LIGHT_IDLE_TOLERANCE`: the idle hours of
light inference (GPU_UTIL ~12 % with noise, which may dip under 5 % in a rare window).
"""

from __future__ import annotations

import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.simulate import SimulationConfig, run, simulate_to_dir
from pipelines.simulator.output import record_tables
from pipelines.sources.files import ingest_files
from pipelines.store import open_store

START = "2026-11-23"  # a Monday: the day is inside one ISO week
LIGHT_IDLE_TOLERANCE = 0.01  # share of a light inference job's GPU-hours
EXACT = 1e-6


@pytest.fixture(scope="module")
def sim_con(tmp_path_factory):
    folder = tmp_path_factory.mktemp("util")
    cfg = SimulationConfig.create(nodes=8, days=1, seed=2, start=START, inference=True)
    simulate_to_dir(cfg, folder / "data")
    con = open_store(folder / "fleet.duckdb")
    ingest_files(con, folder / "data")
    compute(con, Settings())
    con.execute(
        "CREATE TABLE utilisation_truth AS SELECT * FROM read_parquet("
        f"'{folder / 'data' / 'utilisation_truth.parquet'}')"
    )
    yield con
    con.close()


def rows(con, sql: str) -> list[dict]:
    return con.sql(sql).pl().to_dicts()


def test_the_truth_holds_every_kind_of_workload(sim_con):
    kinds = rows(
        sim_con,
        "SELECT cluster, kind, count(*) AS n FROM utilisation_truth GROUP BY ALL ORDER BY ALL",
    )
    per_cluster = {"mig_inference": 35, "mig_inference_idle": 1, "light_inference": 1}
    per_cluster["one_of_eight"] = 1
    assert {(r["cluster"], r["kind"]): r["n"] for r in kinds} == {
        (c, k): n for c in ("train-use1-a", "train-use1-b") for k, n in per_cluster.items()
    }


def test_mig_instances_land_with_their_labels(sim_con):
    landed = rows(
        sim_con,
        "SELECT node, gpu_i_profile, count(DISTINCT (gpu, gpu_i_id)) AS instances, "
        "count(DISTINCT job_id) AS jobs, count(*) AS samples "
        "FROM gpu_instance_samples GROUP BY ALL ORDER BY ALL",
    )
    # 4 GPUs x 2 instances of 3g, 4 x 7 of 1g; a sample every 5 minutes, 2 fields each.
    assert landed == [
        {"node": "gpu-003", "gpu_i_profile": "1g.10gb", "instances": 28, "jobs": 28,
         "samples": 28 * 288 * 2},
        {"node": "gpu-003", "gpu_i_profile": "3g.40gb", "instances": 8, "jobs": 8,
         "samples": 8 * 288 * 2},
        {"node": "gpu-007", "gpu_i_profile": "1g.18gb", "instances": 28, "jobs": 28,
         "samples": 28 * 288 * 2},
        {"node": "gpu-007", "gpu_i_profile": "3g.71gb", "instances": 8, "jobs": 8,
         "samples": 8 * 288 * 2},
    ]  # fmt: skip


def test_mig_packing_recommends_exactly_what_the_truth_says(sim_con):
    """Every workload the truth says fits a profile, and no other, with its profile and GPUs freed."""
    got = rows(
        sim_con,
        "SELECT cluster, week, workload, profile, gpu_h, freed_gpu_h, gpus_freed "
        "FROM mig_packing ORDER BY cluster, workload",
    )
    want = rows(
        sim_con,
        "SELECT cluster, week, workload, fits_profile AS profile, gpu_h, freed_gpu_h, gpus_freed "
        "FROM utilisation_truth WHERE fits_profile IS NOT NULL ORDER BY cluster, workload",
    )
    assert [r["profile"] for r in want] == ["2g.20gb", "2g.35gb"]
    assert [(r["cluster"], r["week"], r["workload"], r["profile"]) for r in got] == [
        (r["cluster"], r["week"], r["workload"], r["profile"]) for r in want
    ]
    for g, w in zip(got, want, strict=True):
        for key in ("gpu_h", "freed_gpu_h", "gpus_freed"):
            assert g[key] == pytest.approx(w[key], abs=EXACT), (w["workload"], key)
    # Light inference on 8 GPUs packs onto 2g instances, three to a GPU: two thirds freed.
    for w in want:
        assert w["freed_gpu_h"] == pytest.approx(w["gpu_h"] * 2 / 3)


def test_weekly_summary_counts_the_gpus_packing_frees(sim_con):
    got = rows(
        sim_con,
        "SELECT cluster, gpus_freeable_by_mig FROM weekly_summary WHERE week = '2026-W48' "
        "ORDER BY cluster",
    )
    want = rows(
        sim_con,
        "SELECT cluster, sum(gpus_freed) AS freed FROM utilisation_truth GROUP BY ALL "
        "ORDER BY cluster",
    )
    fleet = sum(w["freed"] for w in want)
    want = [{"cluster": "*", "freed": fleet}, *want]  # '*': the whole fleet
    assert [r["cluster"] for r in got] == [r["cluster"] for r in want]
    for g, w in zip(got, want, strict=True):
        assert w["freed"] > 0
        assert g["gpus_freeable_by_mig"] == pytest.approx(w["freed"], abs=EXACT)


def test_job_utilisation_measures_each_workload_as_the_truth_says(sim_con):
    joined = rows(
        sim_con,
        "SELECT t.kind, t.workload, t.gpu_h, t.idle_gpu_h AS want_idle, t.idle_exact, "
        "u.measured_gpu_h, u.idle_gpu_h, u.gpus_mapped, u.gpus_used, u.on_mig, u.mapped_by "
        "FROM utilisation_truth t "
        "LEFT JOIN job_utilisation u ON u.cluster = t.cluster AND u.job_id = t.job_id "
        "ORDER BY t.cluster, t.job_id",
    )
    assert len(joined) == 2 * (36 + 2)  # per cluster: 36 MIG instances, 2 whole-node jobs
    for r in joined:
        assert r["measured_gpu_h"] == pytest.approx(r["gpu_h"], abs=EXACT), r["workload"]
        if r["idle_exact"]:
            assert r["idle_gpu_h"] == pytest.approx(r["want_idle"], abs=EXACT), r["workload"]
        else:
            assert r["idle_gpu_h"] <= LIGHT_IDLE_TOLERANCE * r["gpu_h"], r["workload"]
        if r["kind"].startswith("mig_inference"):
            assert (r["on_mig"], r["mapped_by"], r["gpus_mapped"]) == (True, "labels", 1)
            assert r["gpus_used"] == (0 if r["kind"] == "mig_inference_idle" else 1)
        else:
            assert (r["on_mig"], r["mapped_by"], r["gpus_mapped"]) == (False, "whole_node", 8)
            assert r["gpus_used"] == (1 if r["kind"] == "one_of_eight" else 8)
    one_of_eight = [r for r in joined if r["kind"] == "one_of_eight"]
    assert all(r["want_idle"] == pytest.approx(r["gpu_h"] * 7 / 8) for r in one_of_eight)


def test_idle_allocated_gpu_hours_are_the_truths_and_nothing_else(sim_con):
    """The simulated fleet's other jobs keep their GPUs busy: every idle allocated GPU-hour is a
    utilisation workload's."""
    total = sim_con.execute("SELECT sum(idle_gpu_h) FROM job_utilisation").fetchall()[0][0]
    exact, light_h = sim_con.execute(
        "SELECT sum(idle_gpu_h) FILTER (WHERE idle_exact), "
        "sum(gpu_h) FILTER (WHERE NOT idle_exact) FROM utilisation_truth"
    ).fetchall()[0]
    assert exact > 0
    assert exact - EXACT <= total <= exact + LIGHT_IDLE_TOLERANCE * light_h
    weekly = sim_con.execute(
        "SELECT sum(idle_gpu_h) FROM team_utilisation_weekly WHERE week = '2026-W48'"
    ).fetchall()[0][0]
    assert weekly == pytest.approx(total, abs=EXACT)


def test_the_demo_fleet_has_idle_allocated_hours_and_freeable_gpus():
    """The demo's shape (16 nodes x 21 days at load 0.5): utilisation workloads every week."""
    sim = run(
        SimulationConfig.create(
            nodes=16, days=21, seed=1, start="2026-11-09", load=0.5, inference=True
        )
    )
    tables = record_tables(sim)
    truth = tables["utilisation_truth"].to_pylist()
    weeks = {"2026-W46", "2026-W47", "2026-W48"}
    assert {r["week"] for r in truth if r["kind"] == "light_inference"} == weeks
    assert {r["week"] for r in truth if r["kind"] == "one_of_eight"} == weeks
    assert sum(r["idle_gpu_h"] for r in truth) > 0
    assert sum(r["gpus_freed"] for r in truth) > 0
    assert tables["gpu_instance_samples"].num_rows == 2 * 36 * 21 * 288 * 2


def test_without_the_utilisation_workloads_nothing_changes():
    """`inference` off leaves the fleet every detection scenario was built on: no MIG nodes, no
    instance samples, no under-using jobs."""
    cfg = SimulationConfig.create(nodes=8, days=1, seed=2, start=START)
    sim = run(cfg)
    tables = record_tables(sim)
    assert not sim.fleet.mig.any()
    assert tables["gpu_instance_samples"].num_rows == 0
    assert tables["utilisation_truth"].num_rows == 0
    assert all(a.job.gpu_util is None for a in sim.attempts)


def test_the_utilisation_workloads_raise_no_findings(sim_con):
    """Idle GPUs inside a job, light load and MIG instances are not faults: no finding names a
    MIG node, a utilisation workload, or the node of an under-using job while it runs."""
    on_workloads = rows(
        sim_con,
        "SELECT a.kind, a.node, a.job_id FROM anomalies a "
        "WHERE a.node IN (SELECT DISTINCT node FROM utilisation_truth WHERE gpu_i_id IS NOT NULL) "
        "   OR a.job_id IN (SELECT job_id FROM utilisation_truth) "
        "   OR EXISTS (SELECT 1 FROM utilisation_truth t JOIN jobs j USING (cluster, job_id) "
        "              WHERE t.gpu_i_id IS NULL AND t.node = a.node "
        "                AND a.start_ts < j.end_ts AND coalesce(a.end_ts, j.end_ts) > j.start_ts)",
    )
    assert sim_con.execute("SELECT count(*) FROM anomalies").fetchall()[0][0] > 0
    assert on_workloads == []
