"""The simulator: deterministic, lands exactly the landing contract, and every injected fault shows in the data."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.contract import LANDING_TABLES
from pipelines.errors import ConfigError
from pipelines.simulate import (
    DEFAULT_FAULT_PLAN,
    GPU_METRICS,
    SimulationConfig,
    last_full_iso_week_start,
    run,
    simulate,
    simulate_to_dir,
)
from pipelines.simulator.escapes import ESCAPE_FAULT_KINDS
from pipelines.simulator.output import record_tables
from pipelines.store import open_store, row_counts

START = "2026-11-23"
COUNTERS = (
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
)
FAULT_KINDS = {spec.kind for spec in DEFAULT_FAULT_PLAN} | set(ESCAPE_FAULT_KINDS)


@pytest.fixture(scope="session")
def fleet() -> dict[str, pl.DataFrame]:
    """16 nodes x 2 days with the default fault plan: every fault kind, small enough for seconds."""
    return simulate(SimulationConfig.create(nodes=16, days=2, seed=5, start=START))


@pytest.fixture(scope="session")
def demo_ground_truth() -> pl.DataFrame:
    """The default demo fleet's (64 nodes x 7 days) ground truth, planned and scheduled but not scraped."""
    sim = run(SimulationConfig.create(nodes=64, days=7, seed=1, start=START))
    truth = pl.from_arrow(record_tables(sim)["ground_truth"])
    assert isinstance(truth, pl.DataFrame)  # from a table, not an array
    return truth


def faults_of(fleet: dict[str, pl.DataFrame], kind: str) -> list[dict]:
    rows = fleet["ground_truth"].filter(pl.col("kind") == kind).to_dicts()
    assert rows, f"no {kind} fault in the ground truth"
    return rows


def gpu_series(fleet, uuid: str, metric: str) -> pl.DataFrame:
    return (
        fleet["gpu_samples"]
        .filter((pl.col("uuid") == uuid) & (pl.col("metric") == metric))
        .sort("ts")
    )


# --- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("today", "monday"),
    [
        # Wed 2026-12-02 is in W49; the last full week is W48, Mon 2026-11-23.
        (date(2026, 12, 2), datetime(2026, 11, 23, tzinfo=UTC)),
        # On a Monday the week that just started is not full: the previous one.
        (date(2026, 11, 30), datetime(2026, 11, 23, tzinfo=UTC)),
        # Sunday 2026-11-29 is the last day of W48, so W47 is the last full one: Mon 2026-11-16.
        (date(2026, 11, 29), datetime(2026, 11, 16, tzinfo=UTC)),
    ],
)
def test_default_start_is_the_last_full_iso_week(today, monday):
    assert last_full_iso_week_start(today) == monday
    assert monday.weekday() == 0


@pytest.mark.parametrize(
    ("now", "days", "start"),
    [
        # Wed 2026-12-02 12:00: the last full week starts Mon 11-23; 7 days end Mon 11-30 <= now.
        (datetime(2026, 12, 2, 12, tzinfo=UTC), 7, datetime(2026, 11, 23, tzinfo=UTC)),
        # 9 days from 11-23 end Wed 12-02 00:00 <= 12:00: still fits.
        (datetime(2026, 12, 2, 12, tzinfo=UTC), 9, datetime(2026, 11, 23, tzinfo=UTC)),
        # 14 days from 11-23 would end Mon 12-07, in the future: a week earlier, 11-16 .. 11-30.
        (datetime(2026, 12, 2, 12, tzinfo=UTC), 14, datetime(2026, 11, 16, tzinfo=UTC)),
        # 15 days from 11-16 end 12-01 <= 12-02: fits.
        (datetime(2026, 12, 2, 12, tzinfo=UTC), 15, datetime(2026, 11, 16, tzinfo=UTC)),
        # 62 days (the most): from Mon 09-28 they end Sun 11-29 <= 12-02 (10-05 would end 12-06).
        (datetime(2026, 12, 2, 12, tzinfo=UTC), 62, datetime(2026, 9, 28, tzinfo=UTC)),
    ],
)
def test_the_default_window_ends_at_or_before_now(now, days, start):
    from pipelines.simulator.model import default_start

    assert default_start(now, days) == start
    assert start.weekday() == 0 and start + timedelta(days=days) <= now


@pytest.mark.parametrize("days", [1, 7, 14, 30, 62])
def test_a_simulation_without_a_start_never_reaches_the_future(days):
    cfg = SimulationConfig.create(nodes=1, days=days, seed=1)
    assert cfg.start + timedelta(days=days) <= datetime.now(UTC)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"nodes": 0, "days": 1, "seed": 1}, "0 nodes"),
        ({"nodes": 4, "days": 0, "seed": 1}, "0 days"),
        ({"nodes": 4, "days": 1, "seed": 1, "faults": "some"}, "fault plan"),
        ({"nodes": 4, "days": 1, "seed": 1, "start": "last tuesday"}, "start"),
        ({"nodes": 4, "days": 1, "seed": 1, "load": 0.0}, "load of 0.0"),
        ({"nodes": 4, "days": 1, "seed": 1, "load": 1.5}, "load of 1.5"),
    ],
)
def test_bad_settings_are_config_errors(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        SimulationConfig.create(**kwargs)


def test_start_is_utc_and_minute_aligned():
    cfg = SimulationConfig.create(nodes=1, days=1, seed=1, start="2026-11-23T01:02:03+02:00")
    assert cfg.start == datetime(2026, 11, 22, 23, 2, tzinfo=UTC)


# --- determinism and shape -----------------------------------------------------------------------


def test_same_seed_gives_identical_frames():
    cfg = SimulationConfig.create(nodes=4, days=1, seed=5, start=START)
    first, second = simulate(cfg), simulate(cfg)
    for table in first:
        assert first[table].equals(second[table]), table


def test_different_seed_gives_a_different_fleet():
    a = simulate(SimulationConfig.create(nodes=4, days=1, seed=5, start=START))
    b = simulate(SimulationConfig.create(nodes=4, days=1, seed=6, start=START))
    assert not a["gpu_samples"].equals(b["gpu_samples"])
    assert not a["jobs"].equals(b["jobs"])
    assert a["nodes"]["node"].to_list() == b["nodes"]["node"].to_list()


def _duckdb_types(con, sql: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {sql}").fetchall()]


def test_parquet_files_have_the_landing_types(tmp_path, con):
    counts = simulate_to_dir(
        SimulationConfig.create(nodes=4, days=1, seed=2, start=START, inference=True), tmp_path
    )
    assert set(counts) == {*LANDING_TABLES, "ground_truth", "utilisation_truth"}
    assert counts["gpu_instance_samples"] > 0  # a MIG node per cluster
    for table in LANDING_TABLES:
        landing = _duckdb_types(con, table)
        written = _duckdb_types(con, f"SELECT * FROM read_parquet('{tmp_path / table}.parquet')")
        assert written == landing, table
        assert (
            counts[table]
            == con.execute(f"SELECT count(*) FROM '{tmp_path / table}.parquet'").fetchall()[0][0]
        )
    assert not list(tmp_path.glob(".simulate-*")), "temporary folder left behind"


def test_cli_simulate_then_ingest_twice_changes_nothing(tmp_path):
    runner = CliRunner()
    data, db = tmp_path / "data", tmp_path / "fleet.duckdb"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--out",
            str(data),
            "--nodes",
            "4",
            "--days",
            "1",
            "--seed",
            "3",
            "--start",
            START,
        ],
    )
    assert result.exit_code == 0, result.output
    first = runner.invoke(app, ["--db", str(db), "ingest", "files", str(data)])
    assert first.exit_code == 0, first.output
    con = open_store(db)
    after_first = row_counts(con, LANDING_TABLES)
    con.close()
    second = runner.invoke(app, ["--db", str(db), "ingest", "files", str(data)])
    assert second.exit_code == 0, second.output
    con = open_store(db)
    assert row_counts(con, LANDING_TABLES) == after_first
    expected = {t: pl.read_parquet(data / f"{t}.parquet").height for t in LANDING_TABLES}
    assert after_first == expected
    con.close()


def test_fleet_looks_like_a_real_one(fleet):
    nodes = fleet["nodes"]
    assert nodes["node"].to_list()[:2] == ["gpu-000", "gpu-001"]
    assert set(nodes["gpu_model"]) == {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}
    assert set(nodes["instance_type"]) == {"p5.48xlarge", "p5en.48xlarge"}
    assert nodes["cluster"].n_unique() == 2
    samples = fleet["gpu_samples"]
    assert set(samples["metric"].unique()) == set(GPU_METRICS)
    # One UUID per GPU, in NVIDIA's format.
    uuids = samples.select("node", "gpu", "uuid").unique()
    assert uuids.height == 16 * 8 == uuids["uuid"].n_unique()
    assert (
        uuids["uuid"]
        .str.contains(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
        .all()
    )
    # Samples sorted by (ts, node, gpu), one scrape a minute.
    keys = samples.select("ts", "node", "gpu")
    assert keys.equals(keys.sort("ts", "node", "gpu"))
    assert samples["ts"].dt.second().max() == 0
    sizes = fleet["jobs"]["num_gpus"]
    assert (sizes == 1).sum() > (sizes >= 16).sum() > 0
    assert set(fleet["jobs"]["state"]) <= {
        "succeeded",
        "failed",
        "node_fail",
        "timeout",
        "oom",
        "cancelled",
        "preempted",
        "running",
    }


def test_values_follow_load(fleet):
    wide = (
        fleet["gpu_samples"]
        .filter(
            pl.col("metric").is_in(
                ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK"]
            )
        )
        .pivot("metric", index=["ts", "node", "gpu"], values="value")
    )
    busy = wide.filter(pl.col("DCGM_FI_DEV_GPU_UTIL") >= 90)
    idle = wide.filter(pl.col("DCGM_FI_DEV_GPU_UTIL") == 0)
    assert busy.height > 1000 and idle.height > 100
    assert busy["DCGM_FI_DEV_POWER_USAGE"].median() > 550
    assert busy["DCGM_FI_DEV_SM_CLOCK"].median() == 1980
    assert idle["DCGM_FI_DEV_POWER_USAGE"].median() < 100
    assert idle["DCGM_FI_DEV_SM_CLOCK"].median() < 500


def test_counters_only_grow_except_across_a_reboot(fleet):
    # Samples are sorted by time, so each series is in time order within its group.
    series = (
        fleet["gpu_samples"]
        .filter(pl.col("metric").is_in(COUNTERS))
        .with_columns(
            drop=pl.col("value").diff().over("uuid", "metric"),
            gap_s=pl.col("ts").diff().over("uuid", "metric").dt.total_seconds(),
        )
    )
    drops = series.filter(pl.col("drop") < 0)
    # A counter may only fall back to 0 after the GPU stopped reporting (a reboot), never mid-series.
    assert (drops["gap_s"] > 60).all()
    assert drops.height > 0, "the fault plan reboots nodes, so some counters reset"


def test_rank_steps_are_synchronous_and_inside_their_attempt(fleet):
    steps = fleet["rank_steps"]
    assert steps.height > 0
    per_step = steps.group_by("job_id", "attempt", "step").agg(
        spread=pl.col("step_s").max() - pl.col("step_s").min(),
        slowest=pl.col("compute_s").max(),
        step_s=pl.col("step_s").min(),
        ends=pl.col("end_ts").n_unique(),
        ranks=pl.len(),
    )
    assert per_step["spread"].max() < 0.005
    assert (per_step["step_s"] >= per_step["slowest"]).all()
    assert per_step["ends"].max() == 1
    attempts = fleet["job_attempts"]
    joined = steps.join(attempts, on=["job_id", "attempt"], suffix="_attempt")
    assert (joined["end_ts"] > joined["start_ts"]).all()
    ended = joined.filter(pl.col("end_ts_attempt").is_not_null())
    assert (ended["end_ts"] <= ended["end_ts_attempt"]).all()
    # Rank r runs on the attempt's node r // 8, GPU r % 8.
    mapped = joined.with_columns(expected=pl.col("nodes").list.get(pl.col("rank") // 8))
    assert (mapped["expected"] == mapped["node"]).all() and (
        joined["gpu"] == joined["rank"] % 8
    ).all()
    # The first kept step of an attempt is longer (compilation / warm-up).
    first = (
        per_step.sort("step")
        .group_by("job_id", "attempt")
        .agg(first=pl.col("step_s").first(), rest=pl.col("step_s").slice(1).median())
    )
    assert (first.drop_nulls()["first"] > first.drop_nulls()["rest"]).all()


def test_checkpoints_lie_inside_the_timeline_and_restores_resume(fleet):
    ck, steps, attempts = fleet["checkpoints"], fleet["rank_steps"], fleet["job_attempts"]
    saves = ck.filter(pl.col("kind") == "save").join(
        steps.filter(pl.col("rank") == 0), on=["job_id", "attempt", "step"]
    )
    assert saves.height > 0
    # A blocking save ends with its step.
    ends = saves["start_ts"] + (saves["duration_s"] * 1e6).round().cast(pl.Int64).cast(
        pl.Duration("us")
    )
    assert ((ends - saves["end_ts"]).dt.total_microseconds().abs() <= 1).all()
    restores = ck.filter(pl.col("kind") == "restore").join(
        attempts, on=["job_id", "attempt"], suffix="_a"
    )
    assert restores.height > 0
    for r in restores.to_dicts():
        assert r["start_ts"] - r["start_ts_a"] < timedelta(minutes=2)
        previous = ck.filter(
            (pl.col("job_id") == r["job_id"])
            & (pl.col("attempt") < r["attempt"])
            & (pl.col("kind") == "save")
        )
        assert previous["step"].max() == r["step"], "restores the last checkpoint saved before"
        first_step = steps.filter(
            (pl.col("job_id") == r["job_id"]) & (pl.col("attempt") == r["attempt"])
        )["step"].min()
        assert first_step is None or first_step == r["step"] + 1


def test_conditions_are_complete_samples_with_real_reasons(fleet):
    cond = fleet["node_conditions"]
    assert set(cond["condition"].unique()) == {
        "Ready",
        "MemoryPressure",
        "AcceleratedHardwareReady",
        "NetworkingReady",
        "Unschedulable",
    }
    # Every node has every condition at every minute of 2 days: 16 x 5 x 2880.
    assert cond.height == 16 * 5 * 2880
    assert (
        cond.filter(pl.col("condition") == "Ready")["reason"]
        .value_counts()
        .sort("count")["reason"][-1]
        == "KubeletReady"
    )


def test_no_fault_plan_gives_a_fault_free_fleet():
    out = simulate(SimulationConfig.create(nodes=8, days=1, seed=7, start=START, faults="none"))
    assert out["ground_truth"].height == 0
    assert out["gpu_events"].height == 0
    assert "node_fail" not in set(out["job_attempts"]["state"])
    assert out["job_attempts"]["attempt"].max() == 0
    assert out["node_samples"].filter(pl.col("metric") == "nic_links_up")["value"].min() >= 16


# --- injected faults -----------------------------------------------------------------------------


def test_every_fault_kind_is_in_the_small_fleet(fleet):
    assert set(fleet["ground_truth"]["kind"]) == FAULT_KINDS


def test_every_fault_kind_is_in_the_default_demo_fleet(demo_ground_truth):
    assert set(demo_ground_truth["kind"]) == FAULT_KINDS
    assert demo_ground_truth["fault_id"].n_unique() == demo_ground_truth.height
    assert set(demo_ground_truth["class"]) <= {"hardware", "infrastructure", "software"}
    # Node and GPU faults hit jobs: the detection work scores impact on them.
    hit = demo_ground_truth.filter(
        pl.col("kind").is_in(["xid79_fell_off_bus", "ecc_dbe", "thermal_throttle"])
    )
    assert hit["job_id"].null_count() == 0


def test_xid79_gpu_reports_79_then_stops_and_its_job_fails(fleet):
    for f in faults_of(fleet, "xid79_fell_off_bus"):
        xid = gpu_series(fleet, f["uuid"], "DCGM_FI_DEV_XID_ERRORS")
        at = xid.filter(pl.col("ts") == f["start_ts"])
        assert at["value"].to_list() == [79.0]
        silent = xid.filter((pl.col("ts") > f["start_ts"]) & (pl.col("ts") < f["end_ts"]))
        assert silent.height == 0
        assert (
            fleet["gpu_events"]
            .filter((pl.col("uuid") == f["uuid"]) & (pl.col("code") == 79))
            .height
            == 1
        )
        cond = fleet["node_conditions"].filter(
            (pl.col("node") == f["node"]) & (pl.col("ts") == f["start_ts"] + timedelta(minutes=5))
        )
        status = dict(zip(cond["condition"], cond["status"], strict=True))
        assert status["AcceleratedHardwareReady"] == "False" and status["Unschedulable"] == "True"
        assert status["Ready"] == "True"
        if f["job_id"] is not None:
            failed = fleet["job_attempts"].filter(
                (pl.col("job_id") == f["job_id"]) & (pl.col("end_ts") == f["start_ts"])
            )
            assert failed["state"].to_list() == ["node_fail"]
        # No attempt starts on the node while it is cordoned.
        during = fleet["job_attempts"].filter(
            pl.col("nodes").list.contains(f["node"])
            & (pl.col("start_ts") >= f["start_ts"])
            & (pl.col("start_ts") < f["end_ts"])
        )
        assert during.height == 0
    assert any(f["job_id"] for f in faults_of(fleet, "xid79_fell_off_bus"))


def test_ecc_sbe_rate_rises_then_dbe_counter_steps_and_job_fails(fleet):
    for f in faults_of(fleet, "ecc_dbe"):
        dbe = gpu_series(fleet, f["uuid"], "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
        before = dbe.filter(pl.col("ts") < f["end_ts"])["value"][-1]
        assert dbe.filter(pl.col("ts") == f["end_ts"])["value"].to_list() == [before + 1]
        sbe = gpu_series(fleet, f["uuid"], "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL").filter(
            (pl.col("ts") >= f["start_ts"]) & (pl.col("ts") <= f["end_ts"])
        )
        half = sbe.height // 2
        first_half = sbe["value"][half] - sbe["value"][0]
        second_half = sbe["value"][-1] - sbe["value"][half]
        assert second_half > 3 * max(first_half, 1)
        assert (
            fleet["gpu_events"]
            .filter((pl.col("uuid") == f["uuid"]) & (pl.col("code") == 48))
            .height
            == 1
        )
        assert f["job_id"] is not None
        ended = fleet["job_attempts"].filter(
            (pl.col("job_id") == f["job_id"]) & (pl.col("end_ts") == f["end_ts"])
        )
        assert ended["state"].to_list() == ["failed"]


def test_throttled_gpu_runs_hot_and_slow_and_its_rank_straggles(fleet):
    for f in faults_of(fleet, "thermal_throttle"):
        window = (
            fleet["gpu_samples"]
            .filter(
                (pl.col("node") == f["node"])
                & pl.col("ts").is_between(f["start_ts"], f["end_ts"], closed="left")
                & pl.col("metric").is_in(
                    ["DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL"]
                )
            )
            .pivot("metric", index=["ts", "gpu"], values="value")
            .filter(pl.col("DCGM_FI_DEV_GPU_UTIL") > 50)
        )
        sick = window.filter(pl.col("gpu") == f["gpu"])
        peers = window.filter(pl.col("gpu") != f["gpu"])
        assert sick.height > 30 and peers.height > 30
        assert sick["DCGM_FI_DEV_SM_CLOCK"].median() < 0.9 * peers["DCGM_FI_DEV_SM_CLOCK"].median()
        assert sick["DCGM_FI_DEV_GPU_TEMP"].median() > peers["DCGM_FI_DEV_GPU_TEMP"].median() + 10
    ranked = [f for f in faults_of(fleet, "thermal_throttle") if f["rank"] is not None]
    assert ranked, "a throttled GPU ran a rank of a multi-node job"
    for f in ranked:
        steps = fleet["rank_steps"].filter(
            (pl.col("job_id") == f["job_id"])
            & pl.col("end_ts").is_between(f["start_ts"], f["end_ts"])
        )
        ratio = steps.with_columns(
            r=pl.col("compute_s") / pl.col("compute_s").median().over("attempt", "step")
        )
        per_rank = ratio.group_by("rank").agg(pl.col("r").median())
        slow = per_rank.filter(pl.col("rank") == f["rank"])["r"][0]
        assert 1.08 < slow < 1.18
        assert per_rank.filter(pl.col("rank") != f["rank"])["r"].max() < 1.03


def test_nic_links_below_expected_during_the_fault_only(fleet):
    expected = dict(zip(fleet["nodes"]["node"], fleet["nodes"]["nic_expected"], strict=True))
    links = fleet["node_samples"].filter(pl.col("metric") == "nic_links_up")
    for f in faults_of(fleet, "nic_links_down"):
        node = links.filter(pl.col("node") == f["node"])
        inside = node.filter(pl.col("ts").is_between(f["start_ts"], f["end_ts"], closed="left"))
        outside = node.filter(~pl.col("ts").is_between(f["start_ts"], f["end_ts"], closed="left"))
        assert inside.height > 0 and (inside["value"] < expected[f["node"]]).all()
        assert (outside["value"] == expected[f["node"]]).all()
    # The node's ranks in a multi-node job run slower while its links are down.
    checked = 0
    for f in faults_of(fleet, "nic_links_down"):
        if f["job_id"] is None:
            continue
        steps = fleet["rank_steps"].filter(
            (pl.col("job_id") == f["job_id"])
            & pl.col("end_ts").is_between(f["start_ts"], f["end_ts"])
        )
        if steps.height == 0:
            continue
        ratio = (
            steps.with_columns(
                r=pl.col("compute_s") / pl.col("compute_s").median().over("attempt", "step")
            )
            .group_by(on_node=pl.col("node") == f["node"])
            .agg(pl.col("r").median())
        )
        ratios = dict(zip(ratio["on_node"], ratio["r"], strict=True))
        # 7 % slower compute on the node's 8 ranks than on the other nodes' ranks.
        assert 1.05 < ratios[True] / ratios[False] < 1.09
        checked += 1
    assert checked, "a multi-node job ran on the node while its links were down"
    other = links.filter(
        ~pl.col("node").is_in([f["node"] for f in faults_of(fleet, "nic_links_down")])
    )
    assert (other["value"] == other["node"].replace_strict(expected)).all()


def test_telemetry_gap_has_no_samples_while_ready_stays_true(fleet):
    for f in faults_of(fleet, "telemetry_gap"):
        scope = pl.col("node") == f["node"]
        if f["gpu"] is not None:
            scope &= pl.col("gpu") == f["gpu"]
        samples = fleet["gpu_samples"].filter(scope)
        assert (
            samples.filter(
                pl.col("ts").is_between(f["start_ts"], f["end_ts"], closed="left")
            ).height
            == 0
        )
        assert samples.filter(pl.col("ts") == f["start_ts"] - timedelta(minutes=1)).height == 14 * (
            1 if f["gpu"] is not None else 8
        )
        assert samples.filter(pl.col("ts") == f["end_ts"]).height > 0
        ready = fleet["node_conditions"].filter(
            (pl.col("node") == f["node"])
            & (pl.col("condition") == "Ready")
            & pl.col("ts").is_between(f["start_ts"], f["end_ts"], closed="left")
        )
        assert ready.height > 0 and (ready["status"] == "True").all()
    assert {f["entity_type"] for f in faults_of(fleet, "telemetry_gap")} == {"gpu", "node"}


def test_networking_ready_flaps(fleet):
    for f in faults_of(fleet, "condition_flap"):
        status = (
            fleet["node_conditions"]
            .filter(
                (pl.col("node") == f["node"])
                & (pl.col("condition") == "NetworkingReady")
                & pl.col("ts").is_between(f["start_ts"], f["end_ts"], closed="left")
            )
            .sort("ts")["status"]
        )
        changes = (status != status.shift(1)).sum()
        # 60 minutes, 3 down and 3 up: 19 changes.
        assert changes >= 8
        assert set(status) == {"True", "False"}


def test_crash_loop_job_fails_again_and_again_with_exit_1(fleet):
    for f in faults_of(fleet, "crash_loop"):
        attempts = fleet["job_attempts"].filter(pl.col("job_id") == f["job_id"])
        assert attempts.height >= 3
        assert (attempts["state"] == "failed").all() and (attempts["exit_code"] == 1).all()
        job = fleet["jobs"].filter(pl.col("job_id") == f["job_id"])
        assert job["state"].to_list() == ["failed"]
        nodes = set(attempts["nodes"].explode())
        events = fleet["gpu_events"].filter(
            pl.col("node").is_in(nodes) & pl.col("ts").is_between(f["start_ts"], f["end_ts"])
        )
        assert events.height == 0, "no hardware signal"


def test_preempted_attempt_resumes(fleet):
    for f in faults_of(fleet, "preemption"):
        attempts = fleet["job_attempts"].filter(pl.col("job_id") == f["job_id"]).sort("attempt")
        assert attempts["state"][0] == "preempted"
        assert attempts.height >= 2 and attempts["start_ts"][1] > attempts["end_ts"][0]
        restore = fleet["checkpoints"].filter(
            (pl.col("job_id") == f["job_id"])
            & (pl.col("attempt") == 1)
            & (pl.col("kind") == "restore")
        )
        saved = fleet["checkpoints"].filter(
            (pl.col("job_id") == f["job_id"])
            & (pl.col("attempt") == 0)
            & (pl.col("kind") == "save")
        )
        assert restore.height == (1 if saved.height else 0)


# --- invariants on any small fleet ---------------------------------------------------------------


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    faults=st.sampled_from(["default", "none"]),
)
def test_any_fleet_keeps_its_invariants(nodes, seed, faults):
    out = simulate(
        SimulationConfig.create(nodes=nodes, days=1, seed=seed, start=START, faults=faults)
    )
    attempts = out["job_attempts"].with_columns(
        end=pl.col("end_ts").fill_null(datetime(2026, 11, 24, tzinfo=UTC))
    )
    # Whole-node attempts never share a node at the same time.
    whole = (
        attempts.join(out["jobs"].select("job_id", "num_gpus"), on="job_id")
        .filter(pl.col("num_gpus") >= 8)
        .explode("nodes")
        .sort("nodes", "start_ts")
        .with_columns(previous_end=pl.col("end").shift(1).over("nodes"))
    )
    assert (whole["start_ts"] >= whole["previous_end"]).fill_null(True).all()
    for table in ("gpu_samples", "node_conditions", "node_samples"):
        frame = out[table]
        if frame.height:
            assert frame["ts"].min() >= datetime(2026, 11, 23, tzinfo=UTC)
            assert frame["ts"].max() < datetime(2026, 11, 24, tzinfo=UTC)
    assert (attempts["end"] >= attempts["start_ts"]).all()
    assert out["jobs"]["job_id"].n_unique() == out["jobs"].height
    assert out["job_attempts"].select("job_id", "attempt").is_unique().all()
    assert out["rank_steps"].select("job_id", "attempt", "step", "rank").is_unique().all()
    assert out["gpu_samples"].select("node", "gpu", "metric", "ts").is_unique().all()
    util = out["gpu_samples"].filter(pl.col("metric") == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")["value"]
    assert util.min() >= 0 and util.max() <= 1
    if faults == "none":
        assert out["ground_truth"].height == 0


def test_nothing_runs_on_a_node_while_it_reboots(fleet):
    rebooting = fleet["node_conditions"].filter(
        (pl.col("condition") == "Ready") & (pl.col("status") == "Unknown")
    )
    assert rebooting.height > 0, "repairs and maintenance reboot nodes"
    running = (
        fleet["job_attempts"]
        .explode("nodes")
        .join(rebooting, left_on="nodes", right_on="node")
        .filter(
            (pl.col("start_ts") <= pl.col("ts"))
            & (pl.col("end_ts").is_null() | (pl.col("end_ts") > pl.col("ts")))
        )
    )
    assert running.height == 0
    # ... and the scrapes agree: a rebooting node reports no GPU samples.
    silent = fleet["gpu_samples"].join(rebooting.select("ts", "node"), on=["ts", "node"])
    assert silent.height == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_demo_queues_stay_short_and_weekly_ettr_steady_over_three_weeks(seed: int) -> None:
    """The demo's fleet (16 nodes x 21 days, load 0.5): the offered work is what the scheduler
    can serve, so no queue builds up and each week's ETTR (here run time / (end - submit) of the
    jobs that ended in the week, queueing included) stays level. At load 1 the first-attempt wait
    of `dev` went 0.7 -> 1.7 -> 14.4 h and `train` waited 23-28 h every week (seed 1), and this
    ratio fell 0.41 -> 0.34 -> 0.10, as the demo's ETTR did (0.40 -> 0.32 -> 0.10; 24 nodes)."""
    sim = run(SimulationConfig.create(nodes=16, days=21, seed=seed, start="2026-11-09", load=0.5))
    week_s = 7 * 86400
    waits: dict[tuple[str, int], list[float]] = {}
    run_s: dict[int, float] = {}
    life_s: dict[int, float] = {}
    by_job: dict[int, list] = {}
    for attempt in sim.attempts:
        by_job.setdefault(attempt.job.index, []).append(attempt)
    for attempts in by_job.values():
        job, first = attempts[0].job, min(attempts, key=lambda a: a.attempt)
        waits.setdefault((job.queue, int(job.submit_s // week_s)), []).append(
            (first.start_s - job.submit_s) / 3600
        )
        if any(a.end_s is None for a in attempts):
            continue  # still running at the end of the window
        end = max(a.end_s for a in attempts)
        week = int(end // week_s)
        run_s[week] = run_s.get(week, 0.0) + sum(a.end_s - a.start_s for a in attempts)
        life_s[week] = life_s.get(week, 0.0) + end - job.submit_s
    mean_wait_h = {key: sum(w) / len(w) for key, w in waits.items()}
    assert max(mean_wait_h.values()) < 10, mean_wait_h
    ratios = [run_s[week] / life_s[week] for week in sorted(run_s)]
    assert len(ratios) == 3 and min(ratios) > 0.6 and max(ratios) - min(ratios) < 0.25, ratios
