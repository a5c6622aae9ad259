"""The dashboard on a fleet of two clusters that share node names and job ids (SPEC "Fleet-wide
identity"): every node and job page is per (cluster, name), its links carry the cluster, and a
name is shown as `cluster/name` only where another cluster has the same name.

The database is the hand-made fleet with cluster c1 copied as c9 (tests/app_fixture.py
`fleet="two-clusters"`): gpu-000, gpu-001, j-101 and j-104 are in both; gpu-002, gpu-003, j-103
only in c2.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.fleet_names import SharedNames, qualified
from pipelines.sql import load_sql
from tests.app_fixture import SECOND_CLUSTER, build_app_db
from tests.app_helpers import metrics, no_errors, open_page, sql

WEEK = "2026-W48"


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_app_db(tmp_path_factory.mktemp("two") / "fleet.duckdb", "two-clusters")


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _page_links(at) -> list[str]:
    return [link.proto.label for link in at.get("page_link")]


def _page_link_queries(at) -> list[str]:
    return [link.proto.query_string for link in at.get("page_link")]


# --- the naming helper -------------------------------------------------------------------------


def test_a_name_is_qualified_only_where_another_cluster_has_it() -> None:
    shared = frozenset({"gpu-001"})
    assert qualified("gpu-001", "east", shared) == "east/gpu-001"
    assert qualified("gpu-002", "east", shared) == "gpu-002"
    assert qualified("gpu-001", None, shared) == "gpu-001"  # cluster not known: as stored


def test_shared_names_qualify_a_table_column() -> None:
    names = SharedNames.from_rows([("node", "gpu-001"), ("job", "7")])
    frame = pl.DataFrame(
        {
            "node": ["gpu-001", "gpu-001", "gpu-002", None],
            "job_id": ["7", "7", "8", None],
            "cluster": ["east", "west", "east", "east"],
        }
    )
    nodes = names.qualify(frame, "node", "node")
    assert nodes["node"].to_list() == ["east/gpu-001", "west/gpu-001", "gpu-002", None]
    assert nodes["job_id"].to_list() == frame["job_id"].to_list()  # only the named column
    jobs = names.qualify(frame, "job_id", "job")
    assert jobs["job_id"].to_list() == ["east/7", "west/7", "8", None]
    assert names.node("gpu-002", "west") == "gpu-002" and names.job("7", "west") == "west/7"
    # one cluster: nothing is shared, every name stays bare
    assert SharedNames().qualify(frame, "node", "node")["node"].to_list() == frame["node"].to_list()


def test_shared_names_qualify_a_list_of_job_ids() -> None:
    names = SharedNames.from_rows([("job", "7")])
    frame = pl.DataFrame(
        {
            "job_ids": [["7", "8"], ["7"], [], None],
            "cluster": ["east", None, "east", "east"],
            "job_clusters": [["west", "west"], ["east"], [], None],
        }
    )
    # one cluster per row: each shared id in the list takes it; a cluster not known leaves it bare
    by_row = names.qualify(frame, "job_ids", "job")
    assert by_row["job_ids"].to_list() == [["east/7", "8"], ["7"], [], None]
    # a cluster per id (a team's top idle jobs summed over clusters)
    by_id = names.qualify(frame, "job_ids", "job", "job_clusters")
    assert by_id["job_ids"].to_list() == [["west/7", "8"], ["east/7"], [], None]
    assert by_id.drop("job_ids").equals(frame.drop("job_ids"))  # only the named column


def test_the_database_shares_the_names_the_tests_rely_on(use_db: Path) -> None:
    shared = sql(use_db, load_sql("app/shared_names"))
    assert shared.rows() == [
        ("job", "j-101"),
        ("job", "j-104"),
        ("node", "gpu-000"),
        ("node", "gpu-001"),
    ]


# --- node pages ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "availability", "unavailable_gpu_h", "lost_intervals"),
    [
        # c1: unavailable 10:00-12:00 and unknown 12:00-12:30 on 11-25 -> (168 - 2.5) / 168
        ("c1", "98.51 %", "16.0", "2 intervals unavailable or unknown"),
        # c9: unavailable 10:00-22:00 on 11-25 -> (168 - 12) / 168; 12 h x 8 GPUs
        (SECOND_CLUSTER, "92.86 %", "96.0", "1 intervals unavailable or unknown"),
    ],
)
def test_the_node_page_shows_only_its_clusters_node(
    use_db: Path, cluster: str, availability: str, unavailable_gpu_h: str, lost_intervals: str
) -> None:
    at = open_page("nodes", node="gpu-001", cluster=cluster, week=WEEK)
    no_errors(at)
    assert at.title[0].value == f"Node {cluster}/gpu-001"
    shown = metrics(at)
    assert shown["Availability"][0] == availability
    assert shown["Unavailable GPU-h"][0] == unavailable_gpu_h
    assert [e.label for e in at.expander if "intervals" in e.label] == [lost_intervals]
    assert at.caption[0].value.startswith(f"{cluster} ·")
    # MIG rows only in c9 (GPU 0: instances 1 and 2 busy 6 h + 18 h of 48 h sampled -> 50.00 %)
    mig = "**MIG-partitioned:** GPU 0 · instances 1:3g.40gb, 2:3g.40gb · mean activity 50.00 %"
    assert (mig in _markdown(at)) == (cluster == SECOND_CLUSTER)
    assert at.query_params["cluster"] == cluster


def test_the_node_pages_jobs_link_to_the_same_clusters_job(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-001", cluster=SECOND_CLUSTER, week=WEEK)
    no_errors(at)
    jobs = next(df.value for df in at.dataframe if "attempt_state" in df.value.columns)
    # j-101 (attempts on gpu-000 and gpu-001 in both clusters) is shown qualified: c9's, not c1's.
    assert set(jobs["job_id"]) == {f"{SECOND_CLUSTER}/j-101"}


def test_a_bare_unique_node_name_still_opens_its_page(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-002", week=WEEK)
    no_errors(at)
    assert at.title[0].value == "Node gpu-002"  # unique in the fleet: bare
    assert "Availability" in metrics(at)
    assert at.query_params["cluster"] == "c2"  # the URL now names it


def test_a_bare_shared_node_name_says_it_is_ambiguous(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-001", week=WEEK)
    no_errors(at)
    assert [w.value for w in at.warning] == [
        "Node “gpu-001” is ambiguous: clusters c1, c9 each have a node of that name. Choose one:"
    ]
    assert not at.metric  # no page for either until one is chosen
    assert _page_links(at) == ["Node c1/gpu-001", "Node c9/gpu-001"]
    assert _page_link_queries(at) == [
        f"node=gpu-001&cluster=c1&week={WEEK}",
        f"node=gpu-001&cluster=c9&week={WEEK}",
    ]
    assert "cluster" not in at.query_params


def test_a_node_not_in_the_named_cluster_lists_the_clusters_that_have_it(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-002", cluster="c1", week=WEEK)
    no_errors(at)
    assert [w.value for w in at.warning] == [
        "Node “gpu-002” is not in cluster c1; clusters with a node of that name: c2."
    ]
    assert not at.metric


def test_an_unknown_node_says_unknown(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-999", week=WEEK)
    no_errors(at)
    assert [w.value for w in at.warning] == [
        "Node “gpu-999” is not in the fleet inventory (table `nodes`)."
    ]


def test_the_node_table_qualifies_shared_names_only(use_db: Path) -> None:
    at = open_page("nodes", week=WEEK)
    no_errors(at)
    table = at.dataframe[0].value
    assert sorted(table["node"]) == [
        "c1/gpu-000",
        "c1/gpu-001",
        "c9/gpu-000",
        "c9/gpu-001",
        "gpu-002",
        "gpu-003",
    ]
    # costs tie at 28 GPU-h (c9 is a copy of c1); c9's gpu-001 lost the most time: it leads
    assert table["node"].tolist()[0] == "c9/gpu-001"


# --- job pages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "name", "utilisation"),
    [
        ("c1", "pretrain-7b", "mean activity 75.00 %, p95 90.00 % · 16 of 16 GPUs used"),
        (SECOND_CLUSTER, "j-101-in-c9", "mean activity 25.00 %, p95 50.00 % · 8 of 16 GPUs used"),
    ],
)
def test_the_job_page_shows_only_its_clusters_job(
    use_db: Path, cluster: str, name: str, utilisation: str
) -> None:
    at = open_page("jobs", job="j-101", cluster=cluster)
    no_errors(at)
    assert at.title[0].value == f"Job {cluster}/j-101"
    assert at.caption[0].value.startswith(f"{name} · cluster {cluster} ·")
    assert utilisation in _markdown(at)


def test_a_bare_shared_job_id_says_it_is_ambiguous(use_db: Path) -> None:
    at = open_page("jobs", job="j-101")
    no_errors(at)
    assert [w.value for w in at.warning] == [
        "Job “j-101” is ambiguous: clusters c1, c9 each have a job of that name. Choose one:"
    ]
    assert not at.metric
    assert _page_links(at)[1:] == ["Job c1/j-101", "Job c9/j-101"]  # after "All jobs"
    assert _page_link_queries(at)[1:] == ["job=j-101&cluster=c1", "job=j-101&cluster=c9"]


def test_a_bare_unique_job_id_still_opens_its_page(use_db: Path) -> None:
    at = open_page("jobs", job="j-103")
    no_errors(at)
    assert at.title[0].value == "Job j-103"
    assert "Goodput" in metrics(at)


def test_an_unknown_job_says_unknown(use_db: Path) -> None:
    at = open_page("jobs", job="j-999")
    no_errors(at)
    assert [w.value for w in at.warning] == ["Job “j-999” is not in the database (table `jobs`)."]


# --- links ---------------------------------------------------------------------------------


def test_anomaly_links_carry_the_cluster(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK)
    no_errors(at)
    table = at.dataframe[0].value
    assert len(table) > 0
    for node, job, link in table[["node", "job_id", "link"]].itertuples(index=False):
        if isinstance(job, str):
            cluster, _, job_id = job.rpartition("/")
            assert link == f"/jobs?job={job_id}&cluster={cluster or 'c2'}"
        else:
            cluster, _, name = node.rpartition("/")
            assert link == f"/nodes?node={name}&cluster={cluster or 'c2'}&week={WEEK}"
    # every finding on c1's gpu-001 has its copy on c9's: both listed, each linking to its own
    links = set(table["link"])
    assert any("node=gpu-001&cluster=c1&" in link for link in links)
    assert any("node=gpu-001&cluster=c9&" in link for link in links)


def test_remediation_links_carry_the_cluster(use_db: Path) -> None:
    at = open_page("remediation", week=WEEK)
    no_errors(at)
    table = at.dataframe[0].value
    for node, cluster, node_link, findings in table[
        ["node", "cluster", "node_link", "findings_link"]
    ].itertuples(index=False):
        name = node.removeprefix(f"{cluster}/")
        assert node == (name if cluster == "c2" else f"{cluster}/{name}")
        assert node_link == f"/nodes?node={name}&cluster={cluster}&week={WEEK}"
        assert findings == f"/anomalies?week={WEEK}&cluster={cluster}&node={name}"


def test_the_anomaly_page_from_a_findings_link_lists_one_clusters_node(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK, cluster=SECOND_CLUSTER, node="gpu-001")
    no_errors(at)
    table = at.dataframe[0].value
    assert set(table["node"]) == {f"{SECOND_CLUSTER}/gpu-001"}
    assert "Findings on node c9/gpu-001 only (from the link)." in [c.value for c in at.caption]


def test_the_anomaly_list_qualifies_shared_job_ids(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK)
    no_errors(at)
    table = at.dataframe[0].value
    jobs = table[table["job_id"].notna()]
    # a-6 (j-101, in c1 and c9) qualified, each linking its own cluster's job; a-3 (j-103, c2 only) bare
    assert sorted(jobs[["job_id", "link"]].values.tolist()) == [
        ["c1/j-101", "/jobs?job=j-101&cluster=c1"],
        ["c9/j-101", "/jobs?job=j-101&cluster=c9"],
        ["j-103", "/jobs?job=j-103&cluster=c2"],
    ]


def _dataframe_with(at, column: str):
    (frame,) = [df.value for df in at.dataframe if column in df.value.columns]
    return frame


def test_the_utilisation_page_qualifies_shared_job_ids(use_db: Path) -> None:
    at = open_page("utilisation", week=WEEK)
    no_errors(at)
    # idle jobs, most idle first: c9's j-101 12 GPU-h, c1's j-101 4, c2's j-103 2 (unique: bare)
    jobs = _dataframe_with(at, "job_link")
    assert jobs[["job_id", "idle_gpu_h", "job_link"]].values.tolist() == [
        ["c9/j-101", 12.0, "/jobs?job=j-101&cluster=c9"],
        ["c1/j-101", 4.0, "/jobs?job=j-101&cluster=c1"],
        ["j-103", 2.0, "/jobs?job=j-103&cluster=c2"],
    ]
    # team llm/default summed over the three clusters: idle 12 + 4 + 2 = 18 GPU-h; its top idle
    # jobs, the most idle cluster's first, each qualified by its own cluster
    teams = _dataframe_with(at, "top_idle_jobs")
    assert teams[["team", "queue", "idle_gpu_h"]].values.tolist() == [["llm", "default", 18.0]]
    assert list(teams["top_idle_jobs"][0]) == ["c9/j-101", "c1/j-101", "j-103"]
    assert "top_idle_job_clusters" not in teams.columns
    # MIG packing: c9's notebook (j-104, in c1 and c9 too) frees more than c2's sweep-lr (j-102)
    packing = _dataframe_with(at, "job_ids")
    assert packing["workload"].tolist() == ["notebook", "sweep-lr"]
    assert [list(ids) for ids in packing["job_ids"]] == [["c9/j-104"], ["j-102"]]


def test_the_utilisation_page_of_one_cluster_still_qualifies_a_shared_job_id(
    use_db: Path,
) -> None:
    at = open_page("utilisation", week=WEEK, cluster="c1")
    no_errors(at)
    # only c1's j-101 is listed, but c9 has a j-101 too: the name stays qualified
    assert _dataframe_with(at, "job_link")["job_id"].tolist() == ["c1/j-101"]
    assert list(_dataframe_with(at, "top_idle_jobs")["top_idle_jobs"][0]) == ["c1/j-101"]


# --- the anomaly list filtered by a node named in a link ------------------------------------


def test_anomalies_of_a_bare_shared_node_name_ask_which_cluster(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK, node="gpu-001", severity="critical")
    no_errors(at)
    # as on the node page: ambiguous, a choice per cluster, no cluster's findings until one is chosen
    assert [w.value for w in at.warning] == [
        "Node “gpu-001” is ambiguous: clusters c1, c9 each have a node of that name. Choose one:"
    ]
    assert not at.dataframe
    assert _page_links(at) == ["Node c1/gpu-001", "Node c9/gpu-001"]
    # each choice stays on the anomaly list with the link's filters, adding the cluster
    assert _page_link_queries(at) == [
        f"node=gpu-001&cluster=c1&week={WEEK}&severity=critical",
        f"node=gpu-001&cluster=c9&week={WEEK}&severity=critical",
    ]
    assert {link.proto.page for link in at.get("page_link")} == {"anomalies"}


def test_anomalies_of_a_node_the_clusters_filter_does_not_have(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK, node="gpu-003", cluster="c1")
    no_errors(at)
    assert [w.value for w in at.warning] == [
        "Node “gpu-003” is not in cluster c1; clusters with a node of that name: c2."
    ]
    assert not at.dataframe
    assert _page_link_queries(at) == [f"node=gpu-003&cluster=c2&week={WEEK}"]


def test_anomalies_of_a_bare_unique_node_name_list_its_findings(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK, node="gpu-003")
    no_errors(at)
    assert not at.warning
    table = at.dataframe[0].value
    # gpu-003 (c2 only) in W48: a-5 condition_flap (critical) before a-3 j-103's straggler (warn)
    assert table[["node", "kind", "job_id"]].fillna("").values.tolist() == [
        ["gpu-003", "condition_flap", ""],
        ["gpu-003", "straggler", "j-103"],
    ]
    assert "Findings on node gpu-003 only (from the link)." in [c.value for c in at.caption]
    assert at.query_params["node"] == "gpu-003"


def test_anomalies_of_an_unknown_node_list_every_node(use_db: Path) -> None:
    at = open_page("anomalies", week=WEEK, node="gpu-999")
    no_errors(at)
    assert [w.value for w in at.warning] == [
        "Unknown node “gpu-999” in the link; showing every node."
    ]
    # every finding of W48: a-1, a-2, a-6 in c1 and c9, a-3 and a-5 in c2
    assert len(at.dataframe[0].value) == 8
    assert "node" not in at.query_params
