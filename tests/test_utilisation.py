"""Utilisation tables on a hand-made fleet (queries/derived/gpu_activity_windows.sql and the
tables built on it); every number is worked out in the comments.

One hour, 2026-11-23 00:00-01:00 UTC (ISO week 2026-W48), one scrape a minute: every series has
60 samples, each the start of a 60 s window (the last one takes the gap before it), so 1 h.
- n1 (H100 80GB, 8 GPUs): job j8 holds all 8 GPUs (no rank logs: mapped as a whole node);
  GPU 0 is 90 % active with 40 GiB used, GPUs 1-7 stay at 0 %.
- n2 (A100 80GB, 1 GPU) is MIG-partitioned into three instances with three jobs:
  3g.40gb (id 1) `serving/chat` (a pod with no `jobs` row) 50 %, 20 GiB;
  2g.20gb (id 5) Slurm job 4711 10 %, 8 GiB; 1g.10gb (id 13) Slurm job 4712 2 %, 1 GiB.
  Its whole-device GPU_UTIL series (30 %) must not count a second time.
- n3 (H100 80GB, 1 GPU): job jn holds it at 10 %, 8 GiB: a MIG packing candidate.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.compute import compute, run_step
from pipelines.config import Settings
from pipelines.sql import execute
from pipelines.store import ensure_schema
from testkit.landing_rows import insert_landing

T0 = datetime(2026, 11, 23, tzinfo=UTC)
MINUTES = 60
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100 80GB PCIe"
GR = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
FB = "DCGM_FI_DEV_FB_USED"


def _insert(con, table: str, rows: list[dict], cluster: str = "c1") -> None:
    """Insert `rows`; every landing row is in `cluster` unless it names its own."""
    frame = pl.DataFrame(rows)
    if "cluster" not in frame.columns:
        frame = frame.with_columns(pl.lit(cluster).alias("cluster"))
    con.register("__rows", frame)
    columns = ", ".join(f'"{c}"' for c in frame.columns)
    insert_landing(con, table, f"SELECT {columns} FROM __rows")
    con.unregister("__rows")


def build_fleet(con, cluster: str = "c1", activity: float = 1.0) -> None:
    """The fleet above in `cluster`, every activity value x `activity` (another cluster's fleet of
    the same node names and job ids with other numbers)."""
    ensure_schema(con)
    _insert(
        con,
        "nodes",
        [
            {
                "node": "n1",
                "instance_type": "p5",
                "gpu_model": H100,
                "gpu_count": 8,
                "nic_expected": None,
            },
            {
                "node": "n2",
                "instance_type": "a2",
                "gpu_model": A100,
                "gpu_count": 1,
                "nic_expected": None,
            },
            {
                "node": "n3",
                "instance_type": "p5",
                "gpu_model": H100,
                "gpu_count": 1,
                "nic_expected": None,
            },
        ],
        cluster,
    )
    end = T0 + timedelta(minutes=MINUTES)
    _insert(
        con,
        "jobs",
        [
            {
                "job_id": "j8",
                "name": "finetune",
                "user": "u",
                "team": "llm",
                "queue": "batch",
                "submit_ts": T0,
                "start_ts": T0,
                "end_ts": end,
                "num_gpus": 8,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
            },
            {
                "job_id": "jn",
                "name": "notebook",
                "user": "u",
                "team": "llm",
                "queue": "dev",
                "submit_ts": T0,
                "start_ts": T0,
                "end_ts": end,
                "num_gpus": 1,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
            },
            {
                "job_id": "4711",
                "name": "embed",
                "user": "u",
                "team": "search",
                "queue": "infer",
                "submit_ts": T0,
                "start_ts": T0,
                "end_ts": end,
                "num_gpus": 1,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
            },
            {
                "job_id": "4712",
                "name": "rerank",
                "user": "u",
                "team": "search",
                "queue": "infer",
                "submit_ts": T0,
                "start_ts": T0,
                "end_ts": end,
                "num_gpus": 1,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
            },
        ],
        cluster,
    )
    _insert(
        con,
        "job_attempts",
        [
            {
                "job_id": "j8",
                "attempt": 0,
                "start_ts": T0,
                "end_ts": end,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
                "nodes": ["n1"],
            },
            {
                "job_id": "jn",
                "attempt": 0,
                "start_ts": T0,
                "end_ts": end,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
                "nodes": ["n3"],
            },
        ],
        cluster,
    )
    device, instance = [], []
    for m in range(MINUTES):
        ts = T0 + timedelta(minutes=m)
        for gpu in range(8):
            device.append(
                {
                    "ts": ts,
                    "node": "n1",
                    "gpu": gpu,
                    "uuid": f"GPU-n1-{gpu}",
                    "metric": GR,
                    "value": 0.9 * activity if gpu == 0 else 0.0,
                }
            )
            device.append(
                {
                    "ts": ts,
                    "node": "n1",
                    "gpu": gpu,
                    "uuid": f"GPU-n1-{gpu}",
                    "metric": FB,
                    "value": 40960.0 if gpu == 0 else 0.0,
                }
            )
        device.append(
            {
                "ts": ts,
                "node": "n2",
                "gpu": 0,
                "uuid": "GPU-n2-0",
                "metric": "DCGM_FI_DEV_GPU_UTIL",
                "value": 30.0 * activity,
            }
        )
        device.append(
            {
                "ts": ts,
                "node": "n3",
                "gpu": 0,
                "uuid": "GPU-n3-0",
                "metric": GR,
                "value": 0.1 * activity,
            }
        )
        device.append(
            {"ts": ts, "node": "n3", "gpu": 0, "uuid": "GPU-n3-0", "metric": FB, "value": 8192.0}
        )
        for gi, profile, job, share, mib in (
            (1, "3g.40gb", "serving/chat", 0.5, 20480.0),
            (5, "2g.20gb", "4711", 0.1, 8192.0),
            (13, "1g.10gb", "4712", 0.02, 1024.0),
        ):
            for metric, value in ((GR, share * activity), (FB, mib)):
                instance.append(
                    {
                        "ts": ts,
                        "node": "n2",
                        "gpu": 0,
                        "uuid": "GPU-n2-0",
                        "gpu_i_id": gi,
                        "gpu_i_profile": profile,
                        "job_id": job,
                        "metric": metric,
                        "value": value,
                    }
                )
    _insert(con, "gpu_samples", device, cluster)
    _insert(con, "gpu_instance_samples", instance, cluster)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from pipelines.store import connect

    con = connect(str(tmp_path_factory.mktemp("util") / "fleet.duckdb"))
    build_fleet(con)
    compute(con, Settings(), force=True)
    yield con
    con.close()


def _row(con, sql: str, params: dict | None = None) -> dict:
    frame = con.sql(sql, params=params or {}).pl()
    assert frame.height == 1, frame
    return frame.row(0, named=True)


@pytest.mark.parametrize(
    "node, gpu, gpu_i_id, expected",
    [
        # n1 GPU 0: 60 windows x 60 s = 1 h sampled and allocated; busy 0.9 x 1 h; peak 40960 MiB = 40 GiB.
        (
            "n1",
            0,
            None,
            {
                "sampled_h": 1.0,
                "allocated_h": 1.0,
                "busy_h": 0.9,
                "idle_allocated_h": 0.0,
                "mean_activity": 0.9,
                "p95_activity": 0.9,
                "peak_memory_gib": 40.0,
                "jobs": 1,
            },
        ),
        # n1 GPU 5: allocated to j8 all hour at 0 %: 1 idle allocated hour.
        (
            "n1",
            5,
            None,
            {
                "sampled_h": 1.0,
                "allocated_h": 1.0,
                "busy_h": 0.0,
                "idle_allocated_h": 1.0,
                "mean_activity": 0.0,
                "peak_memory_gib": 0.0,
                "jobs": 1,
            },
        ),
        # n2's three instances, one job each; hours are instance-hours. 2 % < 5 %: 4712's hour is idle.
        (
            "n2",
            0,
            1,
            {
                "gpu_i_profile": "3g.40gb",
                "sampled_h": 1.0,
                "allocated_h": 1.0,
                "busy_h": 0.5,
                "idle_allocated_h": 0.0,
                "p95_activity": 0.5,
                "peak_memory_gib": 20.0,
                "jobs": 1,
            },
        ),
        (
            "n2",
            0,
            5,
            {
                "gpu_i_profile": "2g.20gb",
                "busy_h": 0.1,
                "idle_allocated_h": 0.0,
                "peak_memory_gib": 8.0,
            },
        ),
        (
            "n2",
            0,
            13,
            {
                "gpu_i_profile": "1g.10gb",
                "busy_h": 0.02,
                "idle_allocated_h": 1.0,
                "peak_memory_gib": 1.0,
            },
        ),
    ],
)
def test_gpu_utilisation_daily(fleet, node, gpu, gpu_i_id, expected):
    row = _row(
        fleet,
        "SELECT * FROM gpu_utilisation_daily WHERE node = $node AND gpu = $gpu "
        "AND gpu_i_id IS NOT DISTINCT FROM $gi",
        {"node": node, "gpu": gpu, "gi": gpu_i_id},
    )
    assert str(row["day"]) == "2026-11-23" and row["cluster"] == "c1"
    for column, value in expected.items():
        assert row[column] == pytest.approx(value), column


def test_a_mig_gpu_counts_its_instances_not_its_whole_device_series(fleet):
    # n2 GPU 0 reports GPU_UTIL 30 % for the device and activity per instance: only the three
    # instance rows count (the device series would add a fourth hour).
    rows = fleet.execute(
        "SELECT gpu_i_id FROM gpu_utilisation_daily WHERE node = 'n2' ORDER BY 1"
    ).fetchall()
    assert rows == [(1,), (5,), (13,)]


@pytest.mark.parametrize(
    "job_id, expected",
    [
        # Allocated 8 GPUs, used one: 8 GPU-h allocated and measured; busy 0.9; mean 0.9 / 8;
        # GPUs 1-7 idle the whole hour: 7 idle GPU-h; 8 GPUs mapped, 1 used.
        (
            "j8",
            {
                "cluster": "c1",
                "allocated_gpu_h": 8.0,
                "measured_gpu_h": 8.0,
                "busy_gpu_h": 0.9,
                "mean_activity": 0.9 / 8,
                "idle_gpu_h": 7.0,
                "gpus_mapped": 8,
                "gpus_used": 1,
                "peak_memory_gib": 40.0,
                "mapped_by": "whole_node",
                "on_mig": False,
            },
        ),
        # 2g.20gb for an hour = 2/7 GPU-h; busy 0.1 x 2/7.
        (
            "4711",
            {
                "measured_gpu_h": 2 / 7,
                "busy_gpu_h": 0.1 * 2 / 7,
                "mean_activity": 0.1,
                "idle_gpu_h": 0.0,
                "gpus_mapped": 1,
                "gpus_used": 1,
                "mapped_by": "labels",
                "on_mig": True,
                "team": "search",
            },
        ),
        # 1g.10gb at 2 %: its 1/7 GPU-h is idle, nothing used.
        (
            "4712",
            {"measured_gpu_h": 1 / 7, "idle_gpu_h": 1 / 7, "gpus_used": 0, "peak_memory_gib": 1.0},
        ),
        # Only the pod's labels name it: no jobs row, no scheduler hours; cluster from its node.
        (
            "serving/chat",
            {
                "cluster": "c1",
                "name": None,
                "allocated_gpu_h": 0.0,
                "measured_gpu_h": 3 / 7,
                "busy_gpu_h": 0.5 * 3 / 7,
            },
        ),
    ],
)
def test_job_utilisation(fleet, job_id, expected):
    row = _row(fleet, "SELECT * FROM job_utilisation WHERE job_id = $j", {"j": job_id})
    for column, value in expected.items():
        assert row[column] == (pytest.approx(value) if isinstance(value, float) else value), column


@pytest.mark.parametrize(
    "team, queue, expected",
    [
        # llm/batch: j8 only -> 8 measured, 0.9 busy, share 0.1125, 7 idle.
        (
            "llm",
            "batch",
            {
                "measured_gpu_h": 8.0,
                "busy_gpu_h": 0.9,
                "busy_share": 0.9 / 8,
                "idle_gpu_h": 7.0,
                "jobs": 1,
                "top_idle_jobs": ["j8"],
            },
        ),
        # search/infer: 4711 (2/7, busy 0.2/7) + 4712 (1/7, busy 0.02/7, idle 1/7).
        (
            "search",
            "infer",
            {
                "measured_gpu_h": 3 / 7,
                "busy_gpu_h": 0.22 / 7,
                "busy_share": 0.22 / 3,
                "idle_gpu_h": 1 / 7,
                "jobs": 2,
                "top_idle_jobs": ["4712"],
            },
        ),
        # the pod without a jobs row
        ("unknown", "unknown", {"measured_gpu_h": 3 / 7, "idle_gpu_h": 0.0, "top_idle_jobs": []}),
    ],
)
def test_team_utilisation_weekly(fleet, team, queue, expected):
    row = _row(
        fleet,
        "SELECT * FROM team_utilisation_weekly WHERE team = $t AND queue = $q",
        {"t": team, "q": queue},
    )
    assert (row["week"], row["cluster"]) == ("2026-W48", "c1")
    for column, value in expected.items():
        got = row[column] if column != "top_idle_jobs" else list(row[column] or [])
        assert got == (pytest.approx(value) if isinstance(value, float) else value), column


def test_mig_packing_on_the_fleet(fleet):
    # notebook (jn): p95 10 %, peak 8 GiB on an H100. With 20 % headroom it needs 12 % of the
    # compute (1g: 1/7 = 14.3 %) and 9.6 GB (1g.10gb): one seventh of a GPU -> frees 6/7 GPU-h of
    # its 1 GPU-h, 6/7 / 168 GPUs on average over the week. finetune (j8) has p95 90 %: no advice.
    rows = fleet.execute(
        "SELECT workload, profile, gpu_h, freed_gpu_h, gpus_freed FROM mig_packing"
    ).fetchall()
    assert len(rows) == 1
    workload, profile, gpu_h, freed, gpus = rows[0]
    assert (workload, profile) == ("notebook", "1g.10gb")
    assert (
        gpu_h == pytest.approx(1.0)
        and freed == pytest.approx(6 / 7)
        and gpus == pytest.approx(6 / 7 / 168)
    )


@pytest.mark.parametrize(
    "model, p95, peak_gib, expected",
    [
        # H100: compute >= p95 x 1.2, memory >= peak x 1.2; smallest share of a GPU wins.
        (H100, 0.10, 8.0, ("1g.10gb", 1 / 7)),
        (H100, 0.10, 12.0, ("1g.20gb", 1 / 4)),  # 14.4 GB: 1g.20gb (4 per GPU) beats 2g.20gb (3)
        (H100, 0.30, 12.0, ("3g.40gb", 1 / 2)),  # needs 36 %: 2g = 28.6 % is short, 3g = 42.9 %
        (H100, 0.45, 30.0, None),  # needs 54 %: only 4g / 7g, which take a whole GPU: no advice
        (H100, 0.60, 1.0, None),  # p95 above packing_max_activity (50 %): not a candidate
        ("NVIDIA H200", 0.10, 16.0, ("1g.35gb", 1 / 4)),  # 19.2 GB > 1g.18gb's 18
        ("NVIDIA B200", 0.10, 16.0, ("1g.23gb", 1 / 7)),
        ("NVIDIA A100-SXM4-40GB", 0.10, 4.0, ("1g.5gb", 1 / 7)),
        ("NVIDIA L40S", 0.10, 4.0, None),  # no MIG on this model
    ],
)
def test_mig_packing_profile_choice(model, p95, peak_gib, expected):
    from pipelines.store import connect

    con = connect(":memory:")
    ensure_schema(con)
    _insert(
        con,
        "nodes",
        [
            {
                "node": "n",
                "cluster": "c",
                "instance_type": None,
                "gpu_model": model,
                "gpu_count": 1,
                "nic_expected": None,
            }
        ],
    )
    con.execute(
        "CREATE TABLE gpu_activity_windows AS SELECT 'c' AS cluster, 'n' AS node, 0::SMALLINT AS gpu, "
        "NULL::SMALLINT AS gpu_i_id, NULL::VARCHAR AS gpu_i_profile, $ts::TIMESTAMPTZ AS start_ts, "
        "3600.0 AS window_s, $a::DOUBLE AS activity, $mib::DOUBLE AS fb_used_mib, 1.0 AS gpu_share, "
        "'j' AS job_id, 0 AS attempt, 'whole_node' AS mapped_by",
        {"ts": T0, "a": p95, "mib": peak_gib * 1024},
    )
    execute(con, "compute/pass_cluster", {"cluster": "c"})
    for step in ("mig_profiles", "job_records_changed", "mig_packing"):
        run_step(con, Settings(), step)
    rows = con.execute("SELECT profile, gpu_share FROM mig_packing").fetchall()
    if expected is None:
        assert rows == []
    else:
        assert (
            len(rows) == 1
            and rows[0][0] == expected[0]
            and rows[0][1] == pytest.approx(expected[1])
        )


def test_weekly_summary_gains_busy_share_and_mig_freeable_gpus(fleet):
    # Allocated GPU-h in telemetry: j8 8 + 4711 2/7 + 4712 1/7 + chat 3/7 + jn 1 = 9 + 6/7.
    # Busy: 0.9 + 0.2/7 + 0.02/7 + 1.5/7 + 0.1 = 1.0 + 1.72/7. Idle: 7 + 1/7.
    # MIG packing frees notebook's 6/7 GPU-h over 168 h.
    row = _row(fleet, "SELECT * FROM weekly_summary WHERE week = '2026-W48' AND cluster = '*'")
    assert row["measured_allocated_gpu_h"] == pytest.approx(9 + 6 / 7)
    assert row["busy_share_allocated"] == pytest.approx((1.0 + 1.72 / 7) / (9 + 6 / 7))
    assert row["allocated_idle_gpu_h"] == pytest.approx(7 + 1 / 7)
    assert row["gpus_freeable_by_mig"] == pytest.approx(6 / 7 / 168)
    assert _row(
        fleet,
        "SELECT gpus_freeable_by_mig FROM weekly_summary WHERE week = '2026-W48' "
        "AND cluster = 'c1'",
    )["gpus_freeable_by_mig"] == pytest.approx(6 / 7 / 168)


def test_export_writes_the_utilisation_tables(fleet, tmp_path):
    from pipelines.export import export_week
    from pipelines.weeks import IsoWeek

    tables = ["gpu_utilisation_daily", "job_utilisation", "team_utilisation_weekly", "mig_packing"]
    results = {
        r.table: r.rows
        for r in export_week(fleet, IsoWeek.parse("2026-W48"), tmp_path / "lake", tables=tables)
    }
    # 8 + 3 + 1 GPU / instance rows on 2026-11-23; jobs j8, jn, 4711, 4712 ended in W48 (the pod
    # has no jobs row); 4 team rows (llm/batch, llm/dev, search/infer, unknown/unknown); 1 packing row.
    assert results == {
        "gpu_utilisation_daily": 12,
        "job_utilisation": 4,
        "team_utilisation_weekly": 4,
        "mig_packing": 1,
    }
    assert (tmp_path / "lake" / "mig_packing" / "cluster=c1" / "week=2026-W48").is_dir()


def test_goodput_stack_splits_idle_into_unallocated_and_allocated_but_idle(fleet):
    from decimal import Decimal

    row = _row(
        fleet,
        "SELECT week, idle_gpu_h, allocated_gpu_h, allocated_idle_gpu_h FROM goodput_stack "
        "WHERE cluster = 'c1'",
    )
    # Allocated (scheduler): j8 8 GPUs x 1 h + jn 1 GPU x 1 h + the Slurm jobs 4711 and 4712, 1 GPU
    # x 1 h each, landed in c1 = 11 GPU-h. Unallocated idle: n2's GPU, held by no attempt with nodes
    # (the Slurm jobs name none, so they take no node's capacity), 1 GPU x 1 h = 1 GPU-h.
    # Allocated but idle (telemetry, below 5 %): n1 GPUs 1-7 at 0 % for the hour = 7 GPU-h, and
    # 4712's 1g.10gb instance at 2 % = 1 h x 1/7 = 0.142857; 7.142857 in all.
    assert row["week"] == "2026-W48"
    assert (row["idle_gpu_h"], row["allocated_gpu_h"]) == (Decimal(1), Decimal(11))
    assert row["allocated_idle_gpu_h"] == Decimal("7.142857")


def test_weekly_report_shows_teams_and_mig_packing(fleet):
    import json

    from pipelines.report import build_report, to_json, to_markdown
    from pipelines.weeks import IsoWeek

    report = build_report(fleet, IsoWeek.parse("2026-W48"))
    markdown = to_markdown(report)
    assert "Utilisation by team and queue" in markdown and "MIG packing" in markdown
    # llm/batch leads by idle GPU-hours (7.0) with j8; notebook fits a 1g.10gb.
    assert report.utilisation.row(0, named=True)["team"] == "llm"
    assert report.utilisation.row(0, named=True)["top_idle_jobs"] == ["j8"]
    assert "| notebook | c1 |" in markdown and "1g.10gb" in markdown
    summary = {r["metric"]: r["value"] for r in json.loads(to_json(report))["summary"]}
    assert summary["allocated_idle_gpu_h"] == pytest.approx(7 + 1 / 7)
    assert summary["gpus_freeable_by_mig"] == pytest.approx(6 / 7 / 168)


@pytest.mark.parametrize(
    "table",
    [
        "gpu_job_assignments",
        "gpu_activity_windows",
        "gpu_utilisation_daily",
        "job_utilisation",
        "team_utilisation_weekly",
        "mig_packing",
        "mig_profiles",
    ],
)
def test_every_column_is_documented(fleet, table):
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "metrics.md").read_text()
    columns = [c[0] for c in fleet.execute(f"SELECT * FROM {table} LIMIT 0").description]
    missing = [c for c in columns if f"`{c}`" not in text]
    assert missing == [], f"{table}: document {missing} in docs/metrics.md"


def test_every_setting_is_documented():
    import dataclasses
    from pathlib import Path

    from pipelines.config import UtilisationSettings

    text = (Path(__file__).resolve().parent.parent / "docs" / "metrics.md").read_text()
    missing = [f.name for f in dataclasses.fields(UtilisationSettings) if f"`{f.name}`" not in text]
    assert missing == []


@pytest.mark.parametrize(
    "idle_activity, expected_idle_4712",
    [
        (0.05, 1 / 7),  # 2 % < 5 %: its hour on a 1g.10gb (1/7 GPU) is idle
        (0.02, 0.0),  # 2 % is not below 2 %
    ],
)
def test_the_idle_threshold_is_a_setting(tmp_path, idle_activity, expected_idle_4712):
    import dataclasses

    from pipelines.config import UtilisationSettings
    from pipelines.store import connect

    con = connect(str(tmp_path / "fleet.duckdb"))
    build_fleet(con)
    settings = dataclasses.replace(
        Settings(), utilisation=UtilisationSettings(idle_activity=idle_activity)
    )
    compute(con, settings, force=True)
    idle = con.execute("SELECT idle_gpu_h FROM job_utilisation WHERE job_id = '4712'").fetchall()[
        0
    ][0]
    con.close()
    assert idle == pytest.approx(expected_idle_4712)


_WINDOW = st.tuples(
    st.sampled_from(["n1", "n2"]),
    st.integers(0, 1),
    st.sampled_from([None, 1]),
    st.integers(0, 2 * 24 * 60),
    st.sampled_from([30.0, 60.0]),
    st.floats(0, 1, allow_nan=False),
    st.sampled_from([None, "a", "b", "c"]),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(windows=st.lists(_WINDOW, max_size=40, unique_by=lambda w: w[:4]))
def test_the_utilisation_tables_agree(windows):
    """Whatever the windows: busy and idle never exceed what was measured, and the per-GPU, per-job
    and per-team tables count the same allocated hours (instances x gpu_share in the job tables)."""
    from pipelines.store import connect

    con = connect(":memory:")
    ensure_schema(con)
    _insert(
        con,
        "jobs",
        [
            {
                "job_id": j,
                "name": j,
                "user": "u",
                "team": "t" + j,
                "queue": "q",
                "submit_ts": T0,
                "start_ts": T0,
                "end_ts": T0,
                "num_gpus": 1,
                "state": "succeeded",
                "exit_code": 0,
                "reason": None,
            }
            for j in "abc"
        ],
    )
    con.execute(
        "CREATE TABLE gpu_activity_windows (cluster VARCHAR, node VARCHAR, gpu SMALLINT, gpu_i_id SMALLINT, "
        "gpu_i_profile VARCHAR, start_ts TIMESTAMPTZ, window_s DOUBLE, activity DOUBLE, fb_used_mib DOUBLE, "
        "gpu_share DOUBLE, job_id VARCHAR, attempt INTEGER, mapped_by VARCHAR)"
    )
    con.execute(
        "CREATE TABLE goodput_attempts (job_id VARCHAR, gpus INTEGER, start_us BIGINT, end_us BIGINT)"
    )
    con.execute("CREATE TABLE attempt_clusters (job_id VARCHAR, job_cluster VARCHAR)")
    for node, gpu, gi, minute, window_s, activity, job in windows:
        con.execute(
            "INSERT INTO gpu_activity_windows VALUES ('c', ?, ?, ?, ?, ?, ?, ?, 1024, ?, ?, NULL, ?)",
            [
                node,
                gpu,
                gi,
                None if gi is None else "3g.40gb",
                T0 + timedelta(minutes=minute),
                window_s,
                activity,
                1.0 if gi is None else 3 / 7,
                job,
                None if job is None else "labels",
            ],
        )
    execute(con, "compute/pass_cluster", {"cluster": "c"})
    for step in (
        "gpu_utilisation_daily",
        "job_activity",
        "job_utilisation",
        "job_records_changed",
        "team_utilisation_weekly",
    ):
        run_step(con, Settings(), step)
    assert con.execute(
        "SELECT count(*) FROM gpu_utilisation_daily WHERE busy_h > sampled_h + 1e-9 "
        "OR idle_allocated_h > allocated_h + 1e-9 OR allocated_h > sampled_h + 1e-9"
    ).fetchall() == [(0,)]
    assert con.execute(
        "SELECT count(*) FROM job_utilisation WHERE busy_gpu_h > measured_gpu_h + 1e-9 "
        "OR idle_gpu_h > measured_gpu_h + 1e-9 OR gpus_used > gpus_mapped"
    ).fetchall() == [(0,)]
    expected = sum(w[4] * (1.0 if w[2] is None else 3 / 7) for w in windows if w[6]) / 3600
    jobs = con.execute("SELECT coalesce(sum(measured_gpu_h), 0) FROM job_utilisation").fetchall()[
        0
    ][0]
    teams = con.execute(
        "SELECT coalesce(sum(measured_gpu_h), 0) FROM team_utilisation_weekly"
    ).fetchall()[0][0]
    assert jobs == pytest.approx(expected) and teams == pytest.approx(expected)
    con.close()
