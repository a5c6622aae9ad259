"""The Utilisation page (AppTest) on the hand-made utilisation fleet of tests/test_utilisation.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import open_store
from tests.app_helpers import metrics, no_errors, open_page
from tests.test_utilisation import build_fleet


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("util-app") / "fleet.duckdb"
    con = open_store(path)
    build_fleet(con)
    compute(con, Settings(), force=True)
    con.close()
    return path


def test_the_page_shows_teams_idle_jobs_packing_and_models(use_db: Path) -> None:
    at = open_page("utilisation", week="2026-W48")
    no_errors(at)
    shown = metrics(at)
    # Allocated idle: j8's 7 GPU-h + 4712's 1/7; busy share (1 + 1.72/7) / (9 + 6/7) = 12.64 %.
    assert shown["Allocated but idle"][0] == "7.1 GPU-h"
    assert shown["Busy share of allocated GPU-hours"][0] == "12.64 %"
    teams, jobs, packing, models = (frame.value for frame in at.dataframe)
    assert teams[["team", "queue"]].values.tolist()[0] == ["llm", "batch"]
    assert teams["idle_gpu_h"].round(3).tolist()[0] == 7.0
    # The job that held 8 GPUs and used one leads the idle jobs, linked to its page.
    assert jobs["job_link"].tolist()[0] == "/jobs?job=j8&cluster=c1"  # the page of c1's j8
    assert jobs[["gpus_mapped", "gpus_used"]].values.tolist()[0] == [8, 1]
    assert packing[["workload", "profile"]].values.tolist() == [["notebook", "1g.10gb"]]
    # H100s (n1 + n3) as whole GPUs, the A100's three MIG instances apart.
    assert models[["gpu_model", "mig_instance", "devices"]].values.tolist() == [
        ["NVIDIA A100 80GB PCIe", True, 3],
        ["NVIDIA H100 80GB HBM3", False, 9],
    ]


def test_the_page_is_in_the_navigation(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    at.switch_page("gpufleet_app/views/utilisation.py").run()
    no_errors(at)
    assert [t.value for t in at.title] == ["Utilisation"]


def test_the_overview_links_the_utilisation_page(use_db: Path) -> None:
    at = open_page(None, week="2026-W48")
    no_errors(at)
    links = [link for link in at.get("page_link") if link.proto.label.startswith("Utilisation:")]
    assert len(links) == 1
    assert links[0].proto.label == (
        "Utilisation: 12.64 % of allocated GPU-hours busy, 7.1 GPU-h allocated but "
        "idle, 0.01 GPUs freeable by MIG packing"
    )


def test_the_job_page_shows_the_job_utilisation(use_db: Path) -> None:
    at = open_page("jobs", job="j8")
    no_errors(at)
    lines = [m.value for m in at.markdown if m.value.startswith("**Utilisation:**")]
    # 0.9 busy of 8 GPU-h: 11.25 % mean; p95 of 60 windows at 90 % and 420 at 0 % is 90 %.
    expected = (
        "**Utilisation:** mean activity 11.25 %, p95 90.00 % · 1 of 8 GPUs used · 7.0 GPU-h "
        "allocated but idle of 8.0 GPU-h in telemetry · memory high-water 40.0 GiB"
    )
    assert lines == [expected]


def test_the_node_page_marks_mig_partitioned_gpus(use_db: Path) -> None:
    at = open_page("nodes", node="n2", week="2026-W48")
    no_errors(at)
    lines = [m.value for m in at.markdown if m.value.startswith("**MIG-partitioned:**")]
    assert len(lines) == 1
    assert lines[0].startswith(
        "**MIG-partitioned:** GPU 0 · instances 1:3g.40gb, 5:2g.20gb, 13:1g.10gb · "
    )
    assert not [
        m
        for m in open_page("nodes", node="n1", week="2026-W48").markdown
        if m.value.startswith("**MIG-partitioned:**")
    ]
