"""The store: schema as the contract says, idempotent and all-or-nothing loads, clear errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipelines.contract import LANDING_TABLES
from pipelines.errors import InputError
from pipelines.sources.files import ingest_files
from pipelines.store import row_counts, table_columns

CONDITIONS_CSV = textwrap.dedent(
    """\
    ts,node,condition,status,reason,message
    2026-11-23T00:00:00Z,n1,Ready,True,KubeletReady,
    2026-11-23T00:01:00Z,n1,Ready,True,KubeletReady,
    2026-11-23T00:02:00Z,n1,Ready,False,KubeletNotReady,PLEG is not healthy
    2026-11-23T00:03:00Z,n1,Ready,True,KubeletReady,
    2026-11-23T00:04:00Z,n1,Ready,True,KubeletReady,
    2026-11-23T00:05:00Z,n1,Ready,True,KubeletReady,
    """
)
NODES_CSV = "node,cluster,instance_type,gpu_model,gpu_count,nic_expected\nn1,c1,p5.48xlarge,NVIDIA H100 80GB HBM3,8,32\n"


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_schema_matches_the_landing_contract(con):
    expected = {
        "nodes": ["node", "cluster", "instance_type", "gpu_model", "gpu_count", "nic_expected"],
        "node_conditions": ["ts", "node", "condition", "status", "reason", "message"],
        "gpu_samples": ["ts", "node", "gpu", "uuid", "metric", "value"],
        "node_samples": ["ts", "node", "metric", "value"],
        "gpu_events": ["ts", "node", "gpu", "uuid", "kind", "code", "message", "source"],
        "jobs": ["job_id", "name", "user", "team", "queue", "submit_ts", "start_ts", "end_ts",
                 "num_gpus", "state", "exit_code", "reason"],
        "job_attempts": ["job_id", "attempt", "start_ts", "end_ts", "state", "exit_code", "reason", "nodes"],
        "rank_steps": ["job_id", "attempt", "step", "rank", "node", "gpu", "end_ts", "step_s", "compute_s"],
        "checkpoints": ["job_id", "attempt", "step", "kind", "start_ts", "duration_s"],
        "maintenance": ["node", "start_ts", "end_ts", "reason"],
    }
    assert set(expected) == set(LANDING_TABLES)
    for table, columns in expected.items():
        assert [c.name for c in table_columns(con, table)] == columns
    timestamp_types = {c.type for t in LANDING_TABLES for c in table_columns(con, t) if c.name.endswith("ts")}
    assert timestamp_types == {"TIMESTAMP WITH TIME ZONE"}


def test_loading_the_same_files_twice_changes_nothing(con, tmp_path):
    folder = tmp_path / "in"
    write(folder, "node_conditions.csv", CONDITIONS_CSV)
    write(folder, "nodes.csv", NODES_CSV)
    first = {r.table: r.rows_new for r in ingest_files(con, folder)}
    after_first = con.execute("SELECT * FROM node_conditions ORDER BY ts").fetchall()
    second = {r.table: r.rows_new for r in ingest_files(con, folder)}
    assert first == {"nodes": 1, "node_conditions": 6}
    assert second == {"nodes": 0, "node_conditions": 0}
    assert con.execute("SELECT * FROM node_conditions ORDER BY ts").fetchall() == after_first
    assert row_counts(con)["nodes"] == 1


def test_a_later_load_updates_a_mutable_record(con, tmp_path):
    header = "job_id,num_gpus,state,start_ts,end_ts\n"
    write(tmp_path / "a", "jobs.csv", header + "j1,8,running,2026-11-23T00:00:00Z,\n")
    write(tmp_path / "b", "jobs.csv", header + "j1,8,succeeded,2026-11-23T00:00:00Z,2026-11-23T02:00:00Z\n")
    ingest_files(con, tmp_path / "a")
    ingest_files(con, tmp_path / "b")
    assert con.execute("SELECT job_id, state FROM jobs").fetchall() == [("j1", "succeeded")]


@pytest.mark.parametrize(
    ("line", "column", "bad_value", "problem"),
    [
        (7, "ts", "2026-11-23T25:99:00Z", "not a valid TIMESTAMP WITH TIME ZONE"),
        (3, "status", "Maybe", "not one of True, False, Unknown"),
        (5, "node", "", "required but empty"),
    ],
)
def test_a_bad_cell_names_file_line_and_column_and_loads_nothing(con, tmp_path, line, column, bad_value, problem):
    good = tmp_path / "good"
    write(good, "nodes.csv", NODES_CSV)
    ingest_files(con, good)
    before = row_counts(con)

    lines = CONDITIONS_CSV.splitlines()
    lines += ["2026-11-23T00:06:00Z,n1,Ready,True,KubeletReady,"] * 2
    header = lines[0].split(",")
    cells = lines[line - 1].split(",")
    cells[header.index(column)] = bad_value
    lines[line - 1] = ",".join(cells)
    bad = tmp_path / "bad"
    path = write(bad, "node_conditions.csv", "\n".join(lines) + "\n")
    write(bad, "nodes.csv", NODES_CSV.replace("n1,c1", "n2,c1"))

    with pytest.raises(InputError) as info:
        ingest_files(con, bad)
    message = str(info.value)
    assert str(path) in message
    assert f"line {line}" in message
    assert f"column `{column}`" in message
    assert problem in message
    assert (info.value.file, info.value.line, info.value.column) == (str(path), line, column)
    assert row_counts(con) == before


def test_an_unknown_column_lists_the_expected_ones(con, tmp_path):
    folder = tmp_path / "in"
    write(folder, "nodes.csv", "node,cluster,gpu_count,colour\nn1,c1,8,blue\n")
    with pytest.raises(InputError, match="unknown column `colour`") as info:
        ingest_files(con, folder)
    assert "node, cluster, instance_type, gpu_model, gpu_count, nic_expected" in str(info.value)


def test_a_failure_in_a_later_file_rolls_back_the_whole_batch(con, tmp_path):
    folder = tmp_path / "in"
    write(folder, "nodes.csv", NODES_CSV)
    write(folder, "jobs.csv", "job_id,num_gpus,state\nj1,eight,succeeded\n")
    with pytest.raises(InputError, match="line 2"):
        ingest_files(con, folder)
    assert sum(row_counts(con).values()) == 0


def test_jsonl_and_parquet_load_with_row_numbers(con, tmp_path):
    import polars as pl

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "maintenance.jsonl").write_text(
        '{"node": "n1", "start_ts": "2026-11-23T00:00:00Z", "end_ts": "2026-11-23T04:00:00Z", "reason": "fw"}\n'
        '{"node": "n1", "start_ts": "yesterday", "end_ts": "2026-11-24T04:00:00Z", "reason": "fw"}\n'
    )
    with pytest.raises(InputError, match=r"maintenance.jsonl, line 2, column `start_ts`"):
        ingest_files(con, folder)
    (folder / "maintenance.jsonl").unlink()
    pl.DataFrame({"node": ["n1", "n2"], "cluster": ["c1", "c1"], "gpu_count": ["8", "eight"]}).write_parquet(
        folder / "nodes.parquet"
    )
    with pytest.raises(InputError, match=r"nodes.parquet, row 2, column `gpu_count`"):
        ingest_files(con, folder)


@pytest.mark.parametrize(
    ("later_minutes", "expected_new"),
    [
        # Minutes 6..8 are after everything stored (minutes 0..5): all 3 rows are new (append path).
        ((6, 7, 8), 3),
        # Minutes 4..7 overlap the stored 4 and 5: only 6 and 7 are new (anti-join path).
        ((4, 5, 6, 7), 2),
        # Minutes 0..5 again: nothing is new.
        ((0, 1, 2, 3, 4, 5), 0),
    ],
)
def test_a_later_batch_adds_only_samples_not_stored(con, tmp_path, later_minutes, expected_new):
    from datetime import UTC, datetime

    import polars as pl

    def samples(minutes) -> pl.DataFrame:
        minutes = list(minutes)
        return pl.DataFrame(
            {
                "ts": [datetime(2026, 11, 23, 0, m, tzinfo=UTC) for m in minutes],
                "node": ["n1"] * len(minutes),
                "gpu": pl.Series([0] * len(minutes), dtype=pl.Int16),
                "uuid": ["GPU-1"] * len(minutes),
                "metric": ["DCGM_FI_DEV_GPU_UTIL"] * len(minutes),
                "value": [float(m) for m in minutes],
            }
        )

    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    samples(range(6)).write_parquet(first / "gpu_samples.parquet")
    ingest_files(con, first)
    samples(later_minutes).write_parquet(later / "gpu_samples.parquet")
    (result,) = ingest_files(con, later)
    assert (result.rows_in, result.rows_new) == (len(later_minutes), expected_new)
    stored = con.execute("SELECT minute(ts) FROM gpu_samples ORDER BY ts").fetchall()
    assert [m for (m,) in stored] == sorted(set(range(6)) | set(later_minutes))


def test_typed_parquet_still_rejects_a_missing_required_value(con, tmp_path):
    import polars as pl

    folder = tmp_path / "in"
    folder.mkdir()
    pl.DataFrame(
        {"node": ["n1", None], "cluster": ["c1", "c1"], "gpu_count": pl.Series([8, 8], dtype=pl.Int32)}
    ).write_parquet(folder / "nodes.parquet")
    with pytest.raises(InputError, match=r"nodes.parquet, row 2, column `node`"):
        ingest_files(con, folder)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # A blank line 2 must not shift the numbering: the bad record is on line 3.
        (('{"node": "n1", "start_ts": "2026-11-23T00:00:00Z", "end_ts": "2026-11-23T04:00:00Z"}\n'
         "\n"
         '{"node": "n1", "start_ts": "soon", "end_ts": "2026-11-24T04:00:00Z"}\n'),
         r"line 3, column `start_ts`"),
        # Malformed JSON names its line.
        (('{"node": "n1", "start_ts": "2026-11-23T00:00:00Z", "end_ts": "2026-11-23T04:00:00Z"}\n'
         '{"node": "n1", "start_ts": \n'),
         r"maintenance.jsonl, line 2: not valid JSON"),
        # A number where text is expected is fine; a list where a timestamp is expected is not.
        ('{"node": 7, "start_ts": "2026-11-23T00:00:00Z", "end_ts": ["x"]}\n',
         r"line 1, column `end_ts`"),
    ],
)
def test_jsonl_errors_name_the_real_line(con, tmp_path, text, message):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "maintenance.jsonl").write_text(text)
    with pytest.raises(InputError, match=message):
        ingest_files(con, folder)
    assert row_counts(con)["maintenance"] == 0


def test_jsonl_lists_load_as_lists(con, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "job_attempts.jsonl").write_text(
        '{"job_id": "j1", "attempt": 0, "start_ts": "2026-11-23T00:00:00Z", "state": "running", '
        '"nodes": ["gpu-001", "gpu-002"]}\n'
    )
    ingest_files(con, folder)
    assert con.execute("SELECT nodes FROM job_attempts").fetchall() == [(["gpu-001", "gpu-002"],)]


def test_an_interval_that_ends_before_it_starts_is_rejected(con, tmp_path):
    folder = tmp_path / "in"
    write(folder, "maintenance.csv",
          "node,start_ts,end_ts,reason\n"
          "n1,2026-11-23T00:00:00Z,2026-11-23T04:00:00Z,fw\n"
          "n1,2026-11-24T04:00:00Z,2026-11-24T00:00:00Z,fw\n")
    with pytest.raises(InputError, match=r"line 3, column `end_ts`: the interval ends before its `start_ts`"):
        ingest_files(con, folder)
    assert row_counts(con)["maintenance"] == 0


def test_a_step_repeated_in_one_batch_is_rejected_with_both_lines(con, tmp_path):
    folder = tmp_path / "in"
    header = "job_id,attempt,step,rank,node,gpu,end_ts,step_s,compute_s\n"
    write(folder, "rank_steps.csv", header
          + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n"
          + "j1,0,1,1,n1,1,2026-11-23T00:00:10Z,10,9.5\n"
          + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n")
    with pytest.raises(InputError, match=r"line 4, column `rank`: the same \(job_id, attempt, step, rank\) "
                                         r"appears twice, first on line 2"):
        ingest_files(con, folder)
    assert row_counts(con)["rank_steps"] == 0
