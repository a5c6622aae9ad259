"""The Remediation page and `gpufleet remediation`: the action list, on the hand-made fleet.

The fixture (tests/app_fixture.py) as this test file sets it up:
- c1 (gpu-000, gpu-001) reports the kubelet's `Ready` condition: kubernetes.
- c2 (gpu-002, gpu-003) reports no conditions; job j-100, which ran on gpu-002, is renamed `4711`
  here, a Slurm job id: slurm.
- the disruption budget is recomputed with max_out_share 0.5: floor(0.5 x 2 nodes) = 1 node per
  cluster may be out, so gpu-003's drain (the only step from cordon up) is granted.
Week 2026-W48 (history rows overlapping 23-30 Nov), latest step per node:
  gpu-001 reset_gpu 25 Nov 10:00-12:30, critical, ended    cost 28.0 GPU-h (j-101's failure)
  gpu-003 drain since 28 Nov 06:00, critical, granted        cost 0.158 GPU-h (straggler drag)
  gpu-000 watch since 26 Nov 00:00, warn, watch             cost 28.0 GPU-h
Sorted by severity, then cost: gpu-001 (critical, 28.0), gpu-003 (critical, 0.158), gpu-000 (warn).
gpu-002's watch (17 Nov) is in W47 only.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pytest

from pipelines.config import Settings
from pipelines.markdown import escape_markdown
from pipelines.sql import execute
from testkit.cli import run_gpufleet
from tests.app_fixture import build_app_db
from tests.app_helpers import no_errors, open_page

SLURM_JOB = "4711"

# node, step, severity, status, command
EXPECTED_W48 = [
    ("gpu-001", "reset_gpu", "critical", "ended", None),
    (
        "gpu-003",
        "drain",
        "critical",
        "granted",
        'scontrol update NodeName=gpu-003 State=DRAIN Reason="gpufleet drain: condition_flap"',
    ),
    ("gpu-000", "watch", "warn", "watch", None),
]


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = build_app_db(tmp_path_factory.mktemp("app") / "fleet.duckdb")
    con = duckdb.connect(str(path))
    for table in ("jobs", "job_attempts"):
        con.execute(f"UPDATE {table} SET job_id = ? WHERE job_id = 'j-100'", [SLURM_JOB])
    execute(con, "derived/node_remediation", {**Settings().sql_params(), "det_max_out_share": 0.5})
    execute(con, "derived/cluster_schedulers")
    con.close()
    return path


def test_the_page_lists_every_node_with_a_step_most_severe_then_costliest(use_db: Path) -> None:
    at = open_page("remediation", week="2026-W48")
    no_errors(at)
    table = at.dataframe[0].value
    assert table[["node", "step", "severity", "status"]].values.tolist() == [
        list(r[:4]) for r in EXPECTED_W48
    ]
    assert [None if pd.isna(c) else c for c in table["command"]] == [r[4] for r in EXPECTED_W48]
    assert table["cost_gpu_h"].round(3).tolist() == [28.0, 0.158, 28.0]
    # both links name gpu-003's cluster, c2
    assert table["node_link"].tolist()[1] == "/nodes?node=gpu-003&cluster=c2&week=2026-W48"
    assert table["findings_link"].tolist()[1] == "/anomalies?week=2026-W48&cluster=c2&node=gpu-003"
    # The first row is shown below the table: its why and (ended) no command; its history.
    why = [m.value for m in at.markdown if m.value.startswith("**Why:**")]
    assert why == [f"**Why:** {escape_markdown('xid 79 on gpu 3 (critical) -> reset_gpu')}"]
    assert not at.code  # an ended step: nothing to run
    history = at.dataframe[1].value
    assert history["step"].tolist() == ["reset_gpu"]


@pytest.mark.parametrize(
    ("step", "command"),
    [
        ("cordon", "kubectl cordon gpu-000"),
        ("drain", "kubectl drain gpu-000 --ignore-daemonsets --delete-emptydir-data"),
        ("replace", "kubectl drain gpu-000 --ignore-daemonsets --delete-emptydir-data"),
    ],
)
def test_a_kubernetes_node_gets_kubectl(
    app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, command: str
) -> None:
    # gpu-000 (c1, kubernetes): its throttling finding raised to `step`, granted.
    db = tmp_path / "fleet.duckdb"
    shutil.copyfile(app_db, db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE node_remediation_history SET step = ? WHERE node = 'gpu-000'", [step])
    con.execute(
        "UPDATE node_remediation SET ladder_step = ?, decision = 'act' WHERE node = 'gpu-000'",
        [step],
    )
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    at = open_page("remediation", week="2026-W48", cluster="c1")
    no_errors(at)
    table = at.dataframe[0].value
    assert table["node"].tolist() == ["gpu-001", "gpu-000"]  # cluster c1 only; critical first
    row = table[table["node"] == "gpu-000"].iloc[0]
    assert (row["status"], row["scheduler"], row["command"]) == ("granted", "kubernetes", command)


def test_a_past_week_shows_its_own_steps(use_db: Path) -> None:
    at = open_page("remediation", week="2026-W47")
    no_errors(at)
    table = at.dataframe[0].value
    assert table[["node", "step", "status"]].values.tolist() == [["gpu-002", "watch", "ended"]]


def test_the_anomalies_link_filters_by_node(use_db: Path) -> None:
    at = open_page("anomalies", week="2026-W48", node="gpu-003")
    no_errors(at)
    assert sorted(at.dataframe[0].value["kind"].tolist()) == ["condition_flap", "straggler"]
    unknown = open_page("anomalies", week="2026-W48", node="gpu-999")
    assert any("Unknown node “gpu-999”" in w.value for w in unknown.warning)


def test_cli_writes_the_same_plan_as_json_and_csv(app_db: Path, tmp_path: Path) -> None:
    js = run_gpufleet(
        tmp_path, "--db", str(app_db), "remediation", "--week", "2026-W48", "--format", "json"
    )
    assert js.returncode == 0, js.stderr
    document = json.loads(js.stdout)
    assert document["week"] == "2026-W48" and document["dry_run"] is True
    nodes = document["nodes"]
    assert [
        (n["node"], n["step"], n["severity"], n["status"], n["command"]) for n in nodes
    ] == EXPECTED_W48
    assert nodes[1]["since"] == "2026-11-28T06:00:00+00:00" and nodes[1]["until"] is None
    assert (
        nodes[1]["history"] == "cordon 2026-11-27 00:06–2026-11-27 04:00; drain 2026-11-28 06:00–…"
    )

    out = tmp_path / "plan.csv"
    done = run_gpufleet(
        tmp_path,
        "--db",
        str(app_db),
        "remediation",
        "--week",
        "2026-W48",
        "--format",
        "csv",
        "--out",
        str(out),
        "--cluster",
        "c2",
    )
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [(r["node"], r["status"], r["command"]) for r in rows] == [
        ("gpu-003", "granted", EXPECTED_W48[1][4])
    ]
    back = pl.read_csv(out)
    assert back["node"].to_list() == ["gpu-003"] and back["cost_gpu_h"].round(3).to_list() == [
        0.158
    ]


def test_cli_refuses_an_unknown_cluster_and_says_it_is_a_dry_run(
    app_db: Path, tmp_path: Path
) -> None:
    bad = run_gpufleet(
        tmp_path, "--db", str(app_db), "remediation", "--week", "2026-W48", "--cluster", "c9"
    )
    assert (
        bad.returncode == 2
        and "Unknown cluster `c9`" in bad.stderr
        and "Traceback" not in bad.stderr
    )
    helped = run_gpufleet(tmp_path, "remediation", "--help")
    assert "never acts on a cluster" in " ".join(helped.stdout.split())
