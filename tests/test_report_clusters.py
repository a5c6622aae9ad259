"""The weekly report on two clusters with the same node names (SPEC "Fleet-wide identity"): a
node name another cluster has is shown as `cluster/name`, a unique one bare, and each cluster's
node keeps its own numbers.

The report's hand-made fleet (tests/report_fixture.py: n1 and n2 in c1, n3 in c2) with c1 copied
as c9, so n1 and n2 are in c1 and c9.
"""

from __future__ import annotations

import duckdb
import pytest

from pipelines.report import build_report, to_markdown
from pipelines.weeks import IsoWeek
from tests.app_fixture import copy_cluster
from tests.report_fixture import computed_fixture


@pytest.fixture(scope="module")
def markdown(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = computed_fixture(tmp_path_factory.mktemp("report-two") / "fleet.duckdb")
    con = duckdb.connect(str(db))
    try:
        copy_cluster(con, "c1", "c9")
        return to_markdown(build_report(con, IsoWeek.parse("2026-W48")))
    finally:
        con.close()


def _rows(markdown: str, first_cell: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith(f"| {first_cell} |")
    ]


def test_top_nodes_qualify_shared_names_and_keep_each_clusters_numbers(markdown: str) -> None:
    # Node, cluster, GPU model, down, unavailable, unknown GPU-h, availability, failed attempts.
    # n2 (each copy): XID 79 and AcceleratedHardwareReady=False, 4 h unavailable + 2 h unknown x 8
    # GPUs; one failed attempt implicates it, in each cluster, never the other's too.
    for cluster in ("c1", "c9"):
        (row,) = [r for r in _rows(markdown, f"{cluster}/n2") if r[2].startswith("NVIDIA")]
        assert row[:8] == [
            f"{cluster}/n2",
            cluster,
            "NVIDIA H100 80GB HBM3",
            "48.0",
            "32.0",
            "16.0",
            "96.43 %",
            "1",
        ]
    (n3,) = _rows(markdown, "n3")  # only c2 has an n3: bare
    assert n3[:2] == ["n3", "c2"]
    assert not _rows(markdown, "n2") and not _rows(markdown, "n1")  # never bare where shared


def test_findings_and_remediation_name_the_node_of_their_cluster(markdown: str) -> None:
    for cluster in ("c1", "c9"):
        rows = _rows(markdown, f"{cluster}/n2")
        assert all(r[1] == cluster for r in rows)
        # top nodes, the XID 79 finding, its remediation step
        assert any(r[3] == "xid 79" for r in rows)
        assert any(r[2] == "reboot" for r in rows)
