"""Two clusters in one database (SPEC "Fleet-wide identity").

The demo-shaped fleet simulated twice, with different seeds and cluster names but identical node
names and job ids, loaded as two batches: both are kept apart in every table, each cluster's
derived rows equal those of a database holding that cluster alone, and reloading changes nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb
import pytest

from pipelines.compute import REFERENCE_TABLES, compute
from pipelines.config import Settings
from pipelines.contract import LANDING_TABLES
from pipelines.errors import InputError
from pipelines.simulate import SimulationConfig, simulate_to_dir
from pipelines.sources.files import ingest_files
from pipelines.sql import execute
from pipelines.store import open_store, row_counts
from testkit.equivalence import rows_difference, table_rows
from tests.conftest import database_of_schema_at, require
from tests.goodput_fleet import at, attempt, job, load

EAST, WEST = "east", "west"
START = "2026-11-23"


def _simulate(root: Path, prefix: str, seed: int) -> Path:
    out = root / prefix
    simulate_to_dir(
        SimulationConfig.create(nodes=6, days=1, seed=seed, start=START, cluster_prefix=prefix), out
    )
    return out


@pytest.fixture(scope="module")
def fleets(tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("two-clusters")
    east, west = _simulate(root, EAST, 1), _simulate(root, WEST, 2)
    both = open_store(root / "both.duckdb")
    ingest_files(both, east)
    ingest_files(both, west)
    compute(both, Settings())
    alone = {}
    for name, folder in ((EAST, east), (WEST, west)):
        con = open_store(root / f"{name}.duckdb")
        ingest_files(con, folder)
        compute(con, Settings())
        alone[name] = con
    return {"both": both, "alone": alone, "folders": {EAST: east, WEST: west}}


def _clusters_of(con: duckdb.DuckDBPyConnection, prefix: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT cluster FROM nodes WHERE starts_with(cluster, $p) ORDER BY 1",
            {"p": prefix + "-"},
        ).fetchall()
    ]


def test_the_two_fleets_share_node_names_and_job_ids(fleets):
    con = fleets["both"]
    shared_nodes = con.execute(
        "SELECT count(*) FROM (SELECT node FROM nodes GROUP BY node HAVING count(DISTINCT cluster) = 2)"
    ).fetchall()[0][0]
    shared_jobs = con.execute(
        "SELECT count(*) FROM (SELECT job_id FROM jobs GROUP BY job_id HAVING count(DISTINCT cluster) >= 2)"
    ).fetchall()[0][0]
    assert shared_nodes == 6  # every node name is in both fleets
    assert shared_jobs > 0


@pytest.mark.parametrize("table", LANDING_TABLES)
def test_every_landing_table_holds_both_clusters(fleets, table):
    both, alone = fleets["both"], fleets["alone"]
    for name in (EAST, WEST):
        single = row_counts(alone[name], (table,))[table]
        stored = both.execute(
            f"SELECT count(*) FROM {table} WHERE starts_with(cluster, $p)", {"p": name + "-"}
        ).fetchall()[0][0]
        assert stored == single
    if row_counts(both, (table,))[table]:
        prefixes = both.execute(
            f"SELECT DISTINCT split_part(cluster, '-', 1) FROM {table} ORDER BY 1"
        ).fetchall()
        assert prefixes == [(EAST,), (WEST,)]


def _derived_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    from pipelines.compute import _derived_tables

    return _derived_tables(con)


def _rows(con: duckdb.DuckDBPyConnection, table: str, clusters: list[str]) -> list[tuple]:
    where = "cluster IN (SELECT unnest($c))"
    if table == "weekly_summary":
        where += " AND cluster <> '*'"
    # A series id is the storage's own key, numbered in load order: the two stores number them
    # differently. The GPU it names (compared below) is what must match.
    ignore = ("util_series",) if table == "gpu_scrapes" else ()
    return table_rows(con, table, ignore=ignore, where=where, params={"c": clusters})


def _scrape_uuids(con: duckdb.DuckDBPyConnection, clusters: list[str]) -> list[tuple]:
    return sorted(
        con.execute(
            "SELECT s.cluster, s.node, s.gpu, s.ts, g.uuid FROM gpu_scrapes s "
            "LEFT JOIN gpu_series g ON g.series_id = s.util_series "
            "WHERE s.cluster IN (SELECT unnest($c))",
            {"c": clusters},
        ).fetchall(),
        key=str,
    )


UTILISATION_TABLES = (
    "gpu_job_assignments",
    "gpu_activity_windows",
    "gpu_utilisation_daily",
    "job_utilisation",
    "team_utilisation_weekly",
    "mig_packing",
)


def test_each_clusters_derived_rows_equal_those_of_the_cluster_alone(fleets):
    both, alone = fleets["both"], fleets["alone"]
    tables = _derived_tables(both)
    assert {
        "anomalies",
        "node_state_intervals",
        "goodput_segments",
        "weekly_summary",
        "rank_slowdown",
        *UTILISATION_TABLES,
    } <= set(tables)
    # The simulated fleets hold whole-GPU jobs: the utilisation tables have rows in both clusters.
    for table in (
        "gpu_job_assignments",
        "gpu_activity_windows",
        "gpu_utilisation_daily",
        "job_utilisation",
        "team_utilisation_weekly",
    ):
        prefixes = both.execute(
            f"SELECT DISTINCT split_part(cluster, '-', 1) FROM {table} ORDER BY 1"
        ).fetchall()
        assert prefixes == [(EAST,), (WEST,)], table
    checked = 0
    for name in (EAST, WEST):
        clusters = _clusters_of(alone[name], name)
        for table in tables:
            if table not in _derived_tables(alone[name]) or table in REFERENCE_TABLES:
                continue
            mixed, single = _rows(both, table, clusters), _rows(alone[name], table, clusters)
            assert rows_difference(mixed, single, table) is None, name
            checked += len(mixed)
        uuids = _scrape_uuids(both, clusters)
        assert uuids == _scrape_uuids(alone[name], clusters), name
        assert any(row[-1] is not None for row in uuids), name
    assert checked > 0


@pytest.mark.parametrize("table", sorted(REFERENCE_TABLES))
def test_reference_tables_are_kept_once_without_a_cluster(fleets, table):
    both, alone = fleets["both"], fleets["alone"][EAST]
    columns = [d[0] for d in both.execute(f"SELECT * FROM {table} LIMIT 0").description]
    assert "cluster" not in columns
    rows = both.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
    assert rows and rows == alone.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


def test_the_all_clusters_week_counts_both(fleets):
    both = fleets["both"]
    jobs = both.execute("SELECT count(*) FROM job_outcomes").fetchall()[0][0]
    per_cluster = both.execute(
        "SELECT sum(jobs_ended) FROM weekly_summary WHERE cluster <> '*'"
    ).fetchall()[0][0]
    total = both.execute(
        "SELECT sum(jobs_ended) FROM weekly_summary WHERE cluster = '*'"
    ).fetchall()[0][0]
    assert jobs > 0 and total == per_cluster


@pytest.fixture(scope="module")
def mig_fleets(tmp_path_factory) -> dict[str, duckdb.DuckDBPyConnection]:
    """tests/test_utilisation.py's fleet (whole GPUs and MIG instances) in c1, and again in c2 with
    every activity halved: the same node names, instance ids and job ids, other numbers."""
    from tests.test_utilisation import build_fleet

    root = tmp_path_factory.mktemp("mig-two-clusters")
    made = {}
    for name, parts in (
        ("both", (("c1", 1.0), ("c2", 0.5))),
        ("c1", (("c1", 1.0),)),
        ("c2", (("c2", 0.5),)),
    ):
        con = open_store(root / f"{name}.duckdb")
        for cluster, activity in parts:
            build_fleet(con, cluster, activity)
        compute(con, Settings(), force=True)
        made[name] = con
    return made


@pytest.mark.parametrize("table", UTILISATION_TABLES)
def test_each_clusters_utilisation_with_mig_equals_the_cluster_alone(mig_fleets, table):
    both = mig_fleets["both"]
    for cluster in ("c1", "c2"):
        mixed, single = _rows(both, table, [cluster]), _rows(mig_fleets[cluster], table, [cluster])
        assert mixed, (table, cluster)
        assert rows_difference(mixed, single, table) is None, cluster


def test_mig_instance_samples_keep_their_cluster_and_weekly_utilisation_adds_up(mig_fleets):
    both = mig_fleets["both"]
    # 60 scrapes x 3 instances x 2 fields per cluster, each in its own cluster.
    assert both.execute(
        "SELECT cluster, count(*) FROM gpu_instance_samples GROUP BY 1 ORDER BY 1"
    ).fetchall() == [("c1", 360), ("c2", 360)]
    rows = {
        r[0]: r[1:]
        for r in both.execute(
            "SELECT cluster, measured_allocated_gpu_h, busy_allocated_gpu_h, allocated_idle_gpu_h, gpus_freeable_by_mig "
            "FROM weekly_summary WHERE week = '2026-W48'"
        ).fetchall()
    }
    assert set(rows) == {"c1", "c2", "*"}
    for i in range(4):
        assert rows["*"][i] == pytest.approx(rows["c1"][i] + rows["c2"][i])
    # c2's activity is half of c1's: half the busy GPU-hours on the same measured hours.
    assert rows["c2"][0] == pytest.approx(rows["c1"][0])
    assert rows["c2"][1] == pytest.approx(rows["c1"][1] / 2)


def test_the_reports_top_idle_jobs_name_each_jobs_cluster(mig_fleets):
    from pipelines.report import build_report, to_markdown
    from pipelines.weeks import IsoWeek

    markdown = to_markdown(build_report(mig_fleets["both"], IsoWeek.parse("2026-W48")))
    # llm/batch: j8 held 8 GPUs and left 7 idle for the hour in each cluster (c2's halved activity
    # is still 0 on GPUs 1-7): 7 + 7 idle GPU-h, and j8 is a job id of both, so each is qualified
    # (equal idle hours: c1's first)
    (row,) = [line for line in markdown.splitlines() if line.startswith("| llm | batch |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[5] == "14.0"
    assert cells[-1] == "c1/j8, c2/j8"


@pytest.mark.parametrize("name", [EAST, WEST])
def test_reloading_either_batch_changes_nothing(fleets, name):
    con = fleets["both"]
    before = row_counts(con)
    log = con.execute("SELECT count(*) FROM load_log").fetchall()[0][0]
    results = ingest_files(con, fleets["folders"][name])
    assert all(r.rows_new == 0 and r.rows_updated == 0 for r in results)
    assert row_counts(con) == before
    assert con.execute("SELECT count(*) FROM load_log").fetchall()[0][0] == log


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


JOBS = "cluster,job_id,submit_ts,start_ts,end_ts,num_gpus,state\n"


def test_a_running_job_that_ends_later_is_updated_in_its_own_cluster(tmp_path):
    con = open_store(tmp_path / "db.duckdb")
    # Job 7 runs in both clusters; a later batch ends east's only.
    ingest_files(
        con,
        _write(
            tmp_path / "b1",
            "jobs.csv",
            JOBS
            + "east,7,2026-11-23T00:00:00Z,2026-11-23T00:01:00Z,,8,running\n"
            + "west,7,2026-11-23T05:00:00Z,2026-11-23T05:01:00Z,,16,running\n",
        ),
    )
    results = ingest_files(
        con,
        _write(
            tmp_path / "b2",
            "jobs.csv",
            JOBS
            + "east,7,2026-11-23T00:00:00Z,2026-11-23T00:01:00Z,2026-11-23T02:00:00Z,8,succeeded\n",
        ),
    )
    (jobs,) = results
    assert (jobs.rows_new, jobs.rows_updated, jobs.rows_unchanged) == (0, 1, 0)
    states = dict(con.execute("SELECT cluster, state FROM jobs WHERE job_id = '7'").fetchall())
    assert states == {"east": "succeeded", "west": "running"}


def test_a_reused_ended_id_is_refused_in_its_cluster_and_a_new_job_in_the_other(tmp_path):
    con = open_store(tmp_path / "db.duckdb")
    ingest_files(
        con,
        _write(
            tmp_path / "b1",
            "jobs.csv",
            JOBS
            + "east,7,2026-11-23T00:00:00Z,2026-11-23T00:01:00Z,2026-11-23T02:00:00Z,8,succeeded\n",
        ),
    )
    reused = JOBS + "{},7,2026-11-30T00:00:00Z,2026-11-30T00:01:00Z,2026-11-30T02:00:00Z,8,failed\n"
    with pytest.raises(
        InputError, match=r"line 2.*cluster `east`, job_id `7` has ended with submit_ts"
    ):
        ingest_files(con, _write(tmp_path / "b2", "jobs.csv", reused.format("east")))
    (jobs,) = ingest_files(con, _write(tmp_path / "b3", "jobs.csv", reused.format("west")))
    assert (jobs.rows_new, jobs.rows_updated) == (1, 0)
    assert row_counts(con, ("jobs",))["jobs"] == 2


NODES = "node,cluster,gpu_count\ngpu001,east,8\ngpu001,west,8\ngpu002,east,8\n"
SAMPLES = "ts,node,gpu,metric,value\n2026-11-23T00:00:00Z,gpu002,0,DCGM_FI_DEV_GPU_UTIL,90\n"


@pytest.mark.parametrize(
    "samples, cluster, expected",
    [
        # gpu002 is in east only: its samples take east.
        (SAMPLES, None, "east"),
        # gpu001 is in east and west: refused, naming the node and both clusters.
        (
            SAMPLES.replace("gpu002", "gpu001"),
            None,
            r"line 2, column `node`: node `gpu001` is in several clusters \(east, west\)",
        ),
        # ... unless the batch says which.
        (SAMPLES.replace("gpu002", "gpu001"), "west", "west"),
        # gpu009 is in no cluster and the database knows two: refused, with the hint to pass --cluster.
        (
            SAMPLES.replace("gpu002", "gpu009"),
            None,
            r"node `gpu009` is in no known cluster(.|\n)*--cluster",
        ),
        # A record whose own cluster differs from --cluster is refused, naming its line.
        (
            "cluster," + SAMPLES.replace("\n2026", "\neast,2026"),
            "west",
            r"line 2, column `cluster`: the record's cluster `east` differs from --cluster `west`",
        ),
    ],
)
def test_cluster_resolution(tmp_path, samples, cluster, expected):
    con = open_store(tmp_path / "db.duckdb")
    ingest_files(con, _write(tmp_path / "inventory", "nodes.csv", NODES))
    folder = _write(tmp_path / "batch", "gpu_samples.csv", samples)
    if expected in ("east", "west"):
        ingest_files(con, folder, cluster)
        assert con.execute("SELECT cluster FROM gpu_samples").fetchall() == [(expected,)]
    else:
        before = row_counts(con)
        with pytest.raises(InputError, match=expected):
            ingest_files(con, folder, cluster)
        assert row_counts(con) == before


def test_a_job_takes_the_cluster_of_its_attempts_nodes(tmp_path):
    con = open_store(tmp_path / "db.duckdb")
    ingest_files(con, _write(tmp_path / "inventory", "nodes.csv", NODES))
    batch = tmp_path / "batch"
    _write(batch, "jobs.csv", "job_id,num_gpus,state\n7,16,failed\n")
    # gpu001 is in both clusters, gpu002 in east only: the attempt's nodes are all in east.
    _write(
        batch,
        "job_attempts.jsonl",
        '{"job_id": "7", "attempt": 0, "start_ts": "2026-11-23T00:00:00Z", "end_ts": "2026-11-23T01:00:00Z", '
        '"state": "failed", "nodes": ["gpu001", "gpu002"]}\n',
    )
    ingest_files(con, batch)
    assert con.execute(
        "SELECT cluster FROM jobs UNION ALL SELECT cluster FROM job_attempts"
    ).fetchall() == [("east",), ("east",)]


def test_a_database_of_the_older_schema_upgrades_in_place(tmp_path):
    path = tmp_path / "old.duckdb"
    con = database_of_schema_at("b4719d4", path)
    con.execute(
        "INSERT INTO nodes VALUES ('gpu001', 'east', NULL, NULL, 8, NULL), ('gpu002', 'west', NULL, NULL, 8, NULL)"
    )
    con.execute(
        "INSERT INTO gpu_samples VALUES ('2026-11-23 00:00:00+00', 'gpu002', 0, NULL, 'DCGM_FI_DEV_GPU_UTIL', 90)"
    )
    con.execute(
        "INSERT INTO jobs (job_id, num_gpus, state) VALUES ('7', 8, 'failed'), ('8', 8, 'failed')"
    )
    con.execute(
        "INSERT INTO job_attempts VALUES ('7', 0, '2026-11-23 00:00:00+00', NULL, 'running', NULL, NULL, ['gpu001'])"
    )
    con.execute(
        "INSERT INTO rank_steps VALUES ('7', 0, 1, 0, 'gpu001', 0, '2026-11-23 00:01:00+00', 1.0, NULL)"
    )
    con.execute("INSERT INTO load_log VALUES (1, now(), 'files:old', ['nodes'], 7, 7)")
    con.close()
    con = open_store(path)  # a writing open upgrades
    assert con.execute("SELECT cluster FROM gpu_samples").fetchall() == [("west",)]
    assert dict(con.execute("SELECT job_id, cluster FROM jobs").fetchall()) == {
        "7": "east",
        "8": "unknown",
    }
    assert con.execute(
        "SELECT cluster FROM job_attempts UNION ALL SELECT cluster FROM rank_steps"
    ).fetchall() == [("east",), ("east",)]
    assert con.execute("SELECT max(batch_id), count(*) FROM load_log").fetchall() == [(2, 2)]
    con.close()
    con = open_store(path)  # the second open has nothing to do
    assert con.execute("SELECT count(*) FROM load_log").fetchall()[0][0] == 2


def test_gpufleet_migrate_says_what_it_upgraded(tmp_path):
    import sys

    path = tmp_path / "old.duckdb"
    con = database_of_schema_at("b4719d4", path)
    con.execute("INSERT INTO nodes VALUES ('gpu001', 'east', NULL, NULL, 8, NULL)")
    con.close()
    run = [sys.executable, "-m", "pipelines", "--db", str(path), "migrate"]
    first = subprocess.run(run, capture_output=True, text=True, check=False, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "Upgraded node_conditions, gpu_samples" in " ".join(first.stdout.split())
    second = subprocess.run(run, capture_output=True, text=True, check=False, timeout=120)
    assert "Nothing to upgrade" in second.stdout


def test_mig_instance_samples_of_an_older_database_take_their_nodes_cluster(tmp_path):
    # f4e4d8f: gpu_instance_samples without `cluster` (and `cluster` on `nodes` only).
    old_schema = subprocess.run(
        ["git", "show", "f4e4d8f:queries/schema/landing.sql"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
    )
    require(old_schema.returncode == 0, "commit f4e4d8f in the git history")
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute(old_schema.stdout)
    con.execute(
        "INSERT INTO nodes VALUES ('gpu001', 'east', NULL, NULL, 8, NULL), ('gpu002', 'west', NULL, NULL, 8, NULL)"
    )
    con.execute(
        "INSERT INTO gpu_instance_samples VALUES ('2026-11-23 00:00:00+00', 'gpu002', 0, NULL, 1, '3g.40gb', "
        "'4711', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 0.5)"
    )
    con.close()
    con = open_store(path)  # a writing open upgrades
    assert con.execute(
        "SELECT cluster, node, gpu_i_id, job_id FROM gpu_instance_samples"
    ).fetchall() == [("west", "gpu002", 1, "4711")]
    con.close()


def _load_in(con, cluster: str, rows: dict[str, list[dict]]) -> None:
    """Load `rows` as one batch of `cluster`."""
    load(
        con,
        {table: [{**r, "cluster": cluster} for r in records] for table, records in rows.items()},
    )


def _weekly_jobs(con) -> list[tuple]:
    """Week 2026-W48's (cluster, jobs ended, succeeded, allocated GPU-h, node availability)."""
    return con.execute(
        "SELECT cluster, jobs_ended, succeeded_jobs, allocated_gpu_h, node_availability "
        "FROM weekly_summary WHERE week = '2026-W48' ORDER BY cluster"
    ).fetchall()


def test_a_jobs_work_counts_in_its_own_cluster_even_on_nodes_not_in_the_inventory(tmp_path):
    """Worked by hand. Both clusters list one 8-GPU node `n1`. East: job 1 holds 8 GPUs for 2 h
    on node `ghost`, which no inventory lists, and job 2 (no job_attempts rows: an implicit
    attempt 0) holds 4 GPUs for 1 h; both succeed. Job 3 is cancelled before it starts. West:
    job 1 holds 8 GPUs for 1 h on n1 and fails. Each job belongs to the cluster it was landed
    in, so east's row counts 3 jobs ended, 2 succeeded, 8 x 2 + 4 x 1 = 20 allocated GPU-h,
    west's 1 job, 0 succeeded, 8 GPU-h, and the all-clusters row is their sum. The dashboard's
    job table lists east's three. No work lands in a cluster named `unknown`."""
    con = open_store(tmp_path / "fleet.duckdb")
    for cluster, jobs, attempts in (
        (
            EAST,
            [
                job("1", start=0, end=7200, state="succeeded", gpus=8),
                job("2", start=0, end=3600, state="succeeded", gpus=4),
                {**job("3", start=0, end=600, state="cancelled", gpus=8), "start_ts": None},
            ],
            [attempt("1", 0, start=0, end=7200, state="succeeded", nodes=["ghost"])],
        ),
        (
            WEST,
            [job("1", start=0, end=3600, state="failed", gpus=8)],
            [attempt("1", 0, start=0, end=3600, state="failed", nodes=["n1"])],
        ),
    ):
        _load_in(
            con,
            cluster,
            {"nodes": [{"node": "n1", "gpu_count": 8}], "jobs": jobs, "job_attempts": attempts},
        )
    compute(con, Settings())
    summary = _weekly_jobs(con)
    assert [row[:4] for row in summary] == [
        ("*", 4, 2, 28.0),
        (EAST, 3, 2, 20.0),
        (WEST, 1, 0, 8.0),
    ]
    stack = con.execute(
        "SELECT cluster, CAST(allocated_gpu_h AS DOUBLE) FROM goodput_stack ORDER BY cluster"
    ).fetchall()
    assert stack == [(EAST, 20.0), (WEST, 8.0)]
    assert con.execute(
        "SELECT cluster, job_id, attempt, job_cluster FROM attempt_clusters ORDER BY ALL"
    ).fetchall() == [(EAST, "1", 0, EAST), (EAST, "2", 0, EAST), (WEST, "1", 0, WEST)]
    week = {"week_start": at(0), "week_end": at(7 * 86400), "outcome": "*"}
    listed = execute(con, "app/job_table", week | {"cluster": EAST}).fetchall()
    assert sorted(row[0] for row in listed) == ["1", "2", "3"]
    con.close()


def test_a_cluster_whose_inventory_was_never_loaded_still_gets_its_weekly_row(tmp_path):
    """Worked by hand. East lists node n1 and runs job 1 (8 GPUs, 1 h, succeeded) on it. South's
    inventory was never loaded: only its job 1 (4 GPUs, 2 h, failed on node s1) was landed. South
    gets a row of its own: 1 job ended, 0 succeeded, 4 x 2 = 8 allocated GPU-h; its availability
    is unknown (no node of it is known), not 0 and not 1. The all-clusters row sums both:
    2 jobs, 1 succeeded, 8 + 8 = 16 GPU-h."""
    con = open_store(tmp_path / "fleet.duckdb")
    east = {
        "nodes": [{"node": "n1", "gpu_count": 8}],
        "jobs": [job("1", start=0, end=3600, state="succeeded", gpus=8)],
        "job_attempts": [attempt("1", 0, start=0, end=3600, state="succeeded", nodes=["n1"])],
    }
    south = {
        "jobs": [job("1", start=0, end=7200, state="failed", gpus=4)],
        "job_attempts": [attempt("1", 0, start=0, end=7200, state="failed", nodes=["s1"])],
    }
    _load_in(con, EAST, east)
    _load_in(con, "south", south)
    compute(con, Settings())
    summary = _weekly_jobs(con)
    assert [row[:4] for row in summary] == [
        ("*", 2, 1, 16.0),
        (EAST, 1, 1, 8.0),
        ("south", 1, 0, 8.0),
    ]
    assert summary[2][4] is None
    assert [row[0] for row in execute(con, "app/clusters").fetchall()] == [EAST, "south"]
    con.close()
