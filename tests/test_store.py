"""The store: schema as the contract says, idempotent and all-or-nothing loads, clear errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.contract import LANDING_TABLES, NATURAL_KEYS, PROBE_WINDOW, UPSERT_TABLES
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
        "node_conditions": ["cluster", "ts", "node", "condition", "status", "reason", "message"],
        "gpu_samples": ["cluster", "ts", "node", "gpu", "uuid", "metric", "value"],
        "gpu_instance_samples": [
            "cluster",
            "ts",
            "node",
            "gpu",
            "uuid",
            "gpu_i_id",
            "gpu_i_profile",
            "job_id",
            "metric",
            "value",
        ],
        "node_samples": ["cluster", "ts", "node", "metric", "value"],
        "gpu_events": ["cluster", "ts", "node", "gpu", "uuid", "kind", "code", "message", "source"],
        "jobs": [
            "cluster",
            "job_id",
            "name",
            "user",
            "team",
            "queue",
            "submit_ts",
            "start_ts",
            "end_ts",
            "num_gpus",
            "state",
            "exit_code",
            "reason",
        ],
        "job_attempts": [
            "cluster",
            "job_id",
            "attempt",
            "start_ts",
            "end_ts",
            "state",
            "exit_code",
            "reason",
            "nodes",
        ],
        "rank_steps": [
            "cluster",
            "job_id",
            "attempt",
            "step",
            "rank",
            "node",
            "gpu",
            "end_ts",
            "step_s",
            "compute_s",
        ],
        "checkpoints": ["cluster", "job_id", "attempt", "step", "kind", "start_ts", "duration_s"],
        "maintenance": ["cluster", "node", "start_ts", "end_ts", "reason"],
    }
    assert set(expected) == set(LANDING_TABLES)
    for table, columns in expected.items():
        assert [c.name for c in table_columns(con, table)] == columns
    timestamp_types = {
        c.type for t in LANDING_TABLES for c in table_columns(con, t) if c.name.endswith("ts")
    }
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
    write(
        tmp_path / "b",
        "jobs.csv",
        header + "j1,8,succeeded,2026-11-23T00:00:00Z,2026-11-23T02:00:00Z\n",
    )
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
def test_a_bad_cell_names_file_line_and_column_and_loads_nothing(
    con, tmp_path, line, column, bad_value, problem
):
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
    pl.DataFrame(
        {"node": ["n1", "n2"], "cluster": ["c1", "c1"], "gpu_count": ["8", "eight"]}
    ).write_parquet(folder / "nodes.parquet")
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
        {
            "node": ["n1", None],
            "cluster": ["c1", "c1"],
            "gpu_count": pl.Series([8, 8], dtype=pl.Int32),
        }
    ).write_parquet(folder / "nodes.parquet")
    with pytest.raises(InputError, match=r"nodes.parquet, row 2, column `node`"):
        ingest_files(con, folder)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # A blank line 2 must not shift the numbering: the bad record is on line 3.
        (
            (
                '{"node": "n1", "start_ts": "2026-11-23T00:00:00Z", "end_ts": "2026-11-23T04:00:00Z"}\n'
                "\n"
                '{"node": "n1", "start_ts": "soon", "end_ts": "2026-11-24T04:00:00Z"}\n'
            ),
            r"line 3, column `start_ts`",
        ),
        # Malformed JSON names its line.
        (
            (
                '{"node": "n1", "start_ts": "2026-11-23T00:00:00Z", "end_ts": "2026-11-23T04:00:00Z"}\n'
                '{"node": "n1", "start_ts": \n'
            ),
            r"maintenance.jsonl, line 2: not valid JSON",
        ),
        # A number where text is expected is fine; a list where a timestamp is expected is not.
        (
            '{"node": 7, "start_ts": "2026-11-23T00:00:00Z", "end_ts": ["x"]}\n',
            r"line 1, column `end_ts`",
        ),
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
    write(
        folder,
        "maintenance.csv",
        "node,start_ts,end_ts,reason\n"
        "n1,2026-11-23T00:00:00Z,2026-11-23T04:00:00Z,fw\n"
        "n1,2026-11-24T04:00:00Z,2026-11-24T00:00:00Z,fw\n",
    )
    with pytest.raises(
        InputError, match=r"line 3, column `end_ts`: the interval ends before its `start_ts`"
    ):
        ingest_files(con, folder)
    assert row_counts(con)["maintenance"] == 0


# One minimal record per landing table, and a non-key column with a second value:
# (table, CSV header, record, column to change, other value).
ONE_RECORD = [
    (
        "nodes",
        "node,cluster,gpu_count,instance_type",
        "n1,c1,8,p5.48xlarge",
        "instance_type",
        "p4d",
    ),
    (
        "node_conditions",
        "ts,node,condition,status",
        "2026-11-23T00:00:00Z,n1,Ready,True",
        "status",
        "False",
    ),
    (
        "gpu_samples",
        "ts,node,gpu,metric,value",
        "2026-11-23T00:00:00Z,n1,0,DCGM_FI_DEV_GPU_UTIL,90",
        "value",
        "91",
    ),
    (
        "node_samples",
        "ts,node,metric,value",
        "2026-11-23T00:00:00Z,n1,nic_links_up,32",
        "value",
        "31",
    ),
    (
        "gpu_events",
        "ts,node,gpu,kind,code,message",
        "2026-11-23T00:00:00Z,n1,0,xid,79,fell off",
        "message",
        "gone",
    ),
    ("jobs", "job_id,num_gpus,state", "x9,8,succeeded", "state", "failed"),
    (
        "job_attempts",
        "job_id,attempt,start_ts,state,nodes",
        "x9,0,2026-11-23T00:00:00Z,failed,n1",
        "state",
        "succeeded",
    ),
    (
        "rank_steps",
        "job_id,attempt,step,rank,node,end_ts,step_s,compute_s",
        "j1,0,1,0,n1,2026-11-23T00:00:10Z,10,9",
        "step_s",
        "11",
    ),
    (
        "checkpoints",
        "job_id,attempt,step,kind,start_ts,duration_s",
        "j1,0,1,save,2026-11-23T00:00:00Z,30",
        "duration_s",
        "31",
    ),
    (
        "maintenance",
        "node,start_ts,end_ts,reason",
        "n1,2026-11-23T00:00:00Z,2026-11-23T04:00:00Z,fw",
        "reason",
        "bios",
    ),
]


def _csv_records(header: str, *records: str) -> str:
    # job_attempts.nodes is a list: a CSV cell `n1` would not cast, so that table goes as JSONL.
    return header + "\n" + "\n".join(records) + "\n"


def _write_records(folder: Path, table: str, header: str, records: list[str]) -> Path:
    if table == "job_attempts":
        import json

        names = header.split(",")
        lines = []
        for record in records:
            values: dict[str, object] = dict(zip(names, record.split(","), strict=True))
            values["nodes"] = [values["nodes"]]
            lines.append(json.dumps(values))
        return write(folder, f"{table}.jsonl", "\n".join(lines) + "\n")
    return write(folder, f"{table}.csv", _csv_records(header, *records))


def _changed(header: str, record: str, column: str, value: str) -> str:
    cells = record.split(",")
    cells[header.split(",").index(column)] = value
    return ",".join(cells)


@pytest.mark.parametrize(("table", "header", "record", "column", "other"), ONE_RECORD)
def test_an_exact_repeat_in_a_batch_loads_once_and_is_counted(
    con, tmp_path, table, header, record, column, other
):
    # Records on lines 2, 3 (the same), 4 (the same again): one record, two repeats skipped.
    _write_records(tmp_path / "in", table, header, [record, record, record])
    (result,) = ingest_files(con, tmp_path / "in")
    assert (result.rows_in, result.rows_new, result.repeats_skipped) == (3, 1, 2)
    assert row_counts(con)[table] == 1


@pytest.mark.parametrize(("table", "header", "record", "column", "other"), ONE_RECORD)
def test_one_key_with_two_different_records_is_refused_naming_both_lines(
    con, tmp_path, table, header, record, column, other
):
    # The record, then the same key with `column` changed (CSV lines 2 and 3; JSONL has no header: 1 and 2).
    path = _write_records(
        tmp_path / "in", table, header, [record, _changed(header, record, column, other)]
    )
    with pytest.raises(InputError) as info:
        ingest_files(con, tmp_path / "in")
    message = str(info.value)
    first = 1 if path.suffix == ".jsonl" else 2
    assert str(path) in message
    assert f"lines {first} and {first + 1} are the same record" in message
    assert f"{column} `" in message and "with different values" in message
    assert row_counts(con)[table] == 0


def test_a_job_reported_succeeded_and_failed_in_one_file_is_refused(con, tmp_path):
    write(
        tmp_path / "in",
        "jobs.csv",
        "job_id,num_gpus,state\nx1,8,succeeded\nx9,8,succeeded\nx9,8,failed\n",
    )
    with pytest.raises(
        InputError,
        match=r"jobs.csv: lines 3 and 4 are the same record \(cluster `default`, job_id `x9`\) "
        r"with different values: state `succeeded` vs `failed`",
    ):
        ingest_files(con, tmp_path / "in")
    assert row_counts(con)["jobs"] == 0


def test_a_rank_step_file_with_one_exact_repeat_loads(con, tmp_path):
    header = "job_id,attempt,step,rank,node,gpu,end_ts,step_s,compute_s\n"
    write(
        tmp_path / "in",
        "rank_steps.csv",
        header
        + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n"
        + "j1,0,1,1,n1,1,2026-11-23T00:00:10Z,10,9.5\n"
        + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n",
    )
    (result,) = ingest_files(con, tmp_path / "in")
    assert (result.rows_in, result.rows_new, result.repeats_skipped) == (3, 2, 1)
    # The same instant spelt another way is the same record, not a new one.
    write(
        tmp_path / "again",
        "rank_steps.csv",
        header
        + "j1,0,1,0,n1,0,2026-11-23 00:00:10+00,10.0,9\n"
        + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n",
    )
    (again,) = ingest_files(con, tmp_path / "again")
    assert (again.rows_new, again.rows_unchanged, again.repeats_skipped) == (0, 1, 1)
    assert row_counts(con)["rank_steps"] == 2


def test_a_later_batch_of_steps_probes_only_its_own_jobs_rows(con, tmp_path):
    """Rank steps and checkpoints are keyed by job, not time: a later batch is compared with its
    own jobs' stored rows. Stored: j1 step 1 on ranks 0 and 1, one save at step 1. Later: j1
    step 1 rank 0 again (unchanged), j1 step 2 rank 0 (new), j2 step 1 rank 0 (new job, new);
    the save again (unchanged) and a restore of j2 (new). Then a batch of a third job only, whose
    rows no stored job shares: all new."""
    header = "job_id,attempt,step,rank,node,gpu,end_ts,step_s,compute_s\n"
    saves = "job_id,attempt,step,kind,start_ts,duration_s\n"
    write(
        tmp_path / "a",
        "rank_steps.csv",
        header
        + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n"
        + "j1,0,1,1,n1,1,2026-11-23T00:00:10Z,10,9.5\n",
    )
    write(tmp_path / "a", "checkpoints.csv", saves + "j1,0,1,save,2026-11-23T00:00:10Z,5\n")
    ingest_files(con, tmp_path / "a")
    write(
        tmp_path / "b",
        "rank_steps.csv",
        header
        + "j1,0,1,0,n1,0,2026-11-23T00:00:10Z,10,9\n"
        + "j1,0,2,0,n1,0,2026-11-23T00:00:20Z,10,9\n"
        + "j2,0,1,0,n2,0,2026-11-23T00:00:10Z,10,9\n",
    )
    write(
        tmp_path / "b",
        "checkpoints.csv",
        saves + "j1,0,1,save,2026-11-23T00:00:10Z,5\nj2,0,1,restore,2026-11-23T00:00:00Z,3\n",
    )
    counts = {
        r.table: (r.rows_in, r.rows_new, r.rows_unchanged)
        for r in ingest_files(con, tmp_path / "b")
    }
    assert counts == {"rank_steps": (3, 2, 1), "checkpoints": (2, 1, 1)}
    write(tmp_path / "c", "rank_steps.csv", header + "j3,0,1,0,n3,0,2026-11-23T00:00:10Z,10,9\n")
    (third,) = ingest_files(con, tmp_path / "c")
    assert (third.rows_in, third.rows_new, third.rows_unchanged) == (1, 1, 0)
    assert row_counts(con)["rank_steps"] == 5
    assert row_counts(con)["checkpoints"] == 2
    # Every batch's jobs are noted for the next compute's step summaries, once per batch.
    noted = con.execute("SELECT job_id, count(*) FROM rank_steps_loaded GROUP BY ALL ORDER BY 1")
    assert noted.fetchall() == [("j1", 2), ("j2", 1), ("j3", 1)]
    temporary = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    assert temporary == []


def test_every_landing_table_is_upserted_or_probed_within_a_window_of_its_key():
    assert set(UPSERT_TABLES) | set(PROBE_WINDOW) == set(LANDING_TABLES)
    assert not set(UPSERT_TABLES) & set(PROBE_WINDOW)
    for table, column in PROBE_WINDOW.items():
        assert column in NATURAL_KEYS[table], table


@pytest.mark.parametrize(
    ("table", "header", "record", "column", "bad", "problem"),
    [
        (
            "rank_steps",
            "job_id,attempt,step,rank,node,end_ts,step_s,compute_s",
            "j1,0,1,0,n1,2026-11-23T00:00:10Z,10,9",
            "step_s",
            "-1",
            "cannot be negative",
        ),
        (
            "rank_steps",
            "job_id,attempt,step,rank,node,end_ts,step_s,compute_s",
            "j1,0,1,0,n1,2026-11-23T00:00:10Z,10,9",
            "compute_s",
            "-0.5",
            "cannot be negative",
        ),
        (
            "checkpoints",
            "job_id,attempt,step,kind,start_ts,duration_s",
            "j1,0,1,save,2026-11-23T00:00:00Z,30",
            "duration_s",
            "-30",
            "cannot be negative",
        ),
        ("jobs", "job_id,num_gpus,state", "x1,8,succeeded", "num_gpus", "-8", "cannot be negative"),
        ("nodes", "node,cluster,gpu_count", "n1,c1,8", "gpu_count", "-1", "cannot be negative"),
        # compute_s 10.002 > step_s 10 + 0.001 rounding allowance: refused.
        (
            "rank_steps",
            "job_id,attempt,step,rank,node,end_ts,step_s,compute_s",
            "j1,0,1,0,n1,2026-11-23T00:00:10Z,10,9",
            "compute_s",
            "10.002",
            "above step_s",
        ),
        (
            "gpu_samples",
            "ts,node,gpu,metric,value",
            "2026-11-23T00:00:00Z,n1,0,DCGM_FI_DEV_GPU_UTIL,90",
            "value",
            "NaN",
            "not a finite number",
        ),
        (
            "gpu_samples",
            "ts,node,gpu,metric,value",
            "2026-11-23T00:00:00Z,n1,0,DCGM_FI_DEV_GPU_UTIL,90",
            "value",
            "inf",
            "not a finite number",
        ),
        (
            "node_samples",
            "ts,node,metric,value",
            "2026-11-23T00:00:00Z,n1,nic_links_up,32",
            "value",
            "-Infinity",
            "not a finite number",
        ),
    ],
)
def test_a_value_that_cannot_be_is_refused_with_file_line_and_column(
    con, tmp_path, table, header, record, column, bad, problem
):
    # Line 2 is fine, line 3 holds the impossible value (a different key, so no repeat rule applies).
    second = _changed(header, record, column, bad)
    key_column = header.split(",")[0]
    second = _changed(
        header, second, key_column, "2026-11-24T00:00:00Z" if key_column == "ts" else "other"
    )
    path = write(tmp_path / "in", f"{table}.csv", _csv_records(header, record, second))
    with pytest.raises(InputError) as info:
        ingest_files(con, tmp_path / "in")
    assert (info.value.file, info.value.line, info.value.column) == (str(path), 3, column)
    assert problem in str(info.value)
    assert row_counts(con)[table] == 0


def test_a_non_finite_sample_in_typed_parquet_is_refused(con, tmp_path):
    from datetime import UTC, datetime

    import polars as pl

    folder = tmp_path / "in"
    folder.mkdir()
    pl.DataFrame(
        {
            "ts": [datetime(2026, 11, 23, 0, m, tzinfo=UTC) for m in range(3)],
            "node": ["n1"] * 3,
            "gpu": pl.Series([0, 0, 0], dtype=pl.Int16),
            "metric": ["DCGM_FI_DEV_XID_ERRORS"] * 3,
            "value": [0.0, float("inf"), 0.0],
        }
    ).write_parquet(folder / "gpu_samples.parquet")
    with pytest.raises(
        InputError, match=r"gpu_samples.parquet, row 2, column `value`: value is not a finite"
    ):
        ingest_files(con, folder)


def test_compute_above_step_by_rounding_is_clipped_and_counted(con, tmp_path):
    header = "job_id,attempt,step,rank,node,end_ts,step_s,compute_s\n"
    # Rank 0: 1.2505 > 1.25 by half a millisecond (rounding): clipped to 1.25. Rank 1 is fine.
    write(
        tmp_path / "in",
        "rank_steps.csv",
        header
        + "j1,0,1,0,n1,2026-11-23T00:00:10Z,1.25,1.2505\n"
        + "j1,0,1,1,n1,2026-11-23T00:00:10Z,1.25,1.0\n",
    )
    (result,) = ingest_files(con, tmp_path / "in")
    assert (result.rows_new, result.clipped) == (2, 1)
    assert con.execute("SELECT rank, compute_s FROM rank_steps ORDER BY rank").fetchall() == [
        (0, 1.25),
        (1, 1.0),
    ]


def _version(con) -> int:
    from pipelines.store import data_version

    return data_version(con)


def test_a_load_that_adds_nothing_keeps_the_data_version(con, tmp_path):
    folder = tmp_path / "in"
    write(folder, "node_conditions.csv", CONDITIONS_CSV)
    write(folder, "nodes.csv", NODES_CSV)
    ingest_files(con, folder)
    assert _version(con) == 1
    # The same spool again: every record is stored, nothing changes, no new version.
    ingest_files(con, folder)
    assert _version(con) == 1
    # Only repeats of stored records: still nothing.
    repeats = tmp_path / "repeats"
    write(repeats, "nodes.csv", NODES_CSV + NODES_CSV.splitlines()[1] + "\n")
    (result,) = ingest_files(con, repeats)
    assert (result.rows_new, result.rows_updated, result.repeats_skipped) == (0, 0, 1)
    assert _version(con) == 1
    # One changed node: a new version.
    write(tmp_path / "changed", "nodes.csv", NODES_CSV.replace(",32", ",16"))
    ingest_files(con, tmp_path / "changed")
    assert _version(con) == 2


JOBS_HEADER = "job_id,submit_ts,start_ts,end_ts,num_gpus,state\n"


@pytest.mark.parametrize(
    ("second_batch", "counts"),
    [
        # j1 was running and ends: updated; j2 unchanged; j3 new.  (new, updated, unchanged)
        (
            (
                "j1,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T05:00:00Z,8,succeeded\n"
                "j2,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T02:00:00Z,8,failed\n"
                "j3,2026-11-23T03:00:00Z,2026-11-23T03:00:00Z,,16,running\n"
            ),
            (1, 1, 1),
        ),
        # The same batch as stored: everything unchanged.
        (
            (
                "j1,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,,8,running\n"
                "j2,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T02:00:00Z,8,failed\n"
            ),
            (0, 0, 2),
        ),
        # An ended job's state corrected (same submit time and GPUs): an update, not new.
        (
            "j2,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T02:00:00Z,8,node_fail\n",
            (0, 1, 0),
        ),
    ],
)
def test_ingest_counts_new_updated_and_unchanged(con, tmp_path, second_batch, counts):
    write(
        tmp_path / "a",
        "jobs.csv",
        JOBS_HEADER
        + "j1,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,,8,running\n"
        + "j2,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T02:00:00Z,8,failed\n",
    )
    ingest_files(con, tmp_path / "a")
    write(tmp_path / "b", "jobs.csv", JOBS_HEADER + second_batch)
    (result,) = ingest_files(con, tmp_path / "b")
    assert (result.rows_new, result.rows_updated, result.rows_unchanged) == counts


@pytest.mark.parametrize(
    ("line", "column", "stored", "given"),
    [
        (
            "j2,2026-11-30T09:00:00Z,2026-11-30T09:00:00Z,2026-11-30T10:00:00Z,8,succeeded",
            "submit_ts",
            "2026-11-23 00:00:00+00",
            "2026-11-30 09:00:00+00",
        ),
        (
            "j2,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T02:00:00Z,64,failed",
            "num_gpus",
            "8",
            "64",
        ),
    ],
)
def test_an_ended_job_id_reused_by_another_job_is_refused(
    con, tmp_path, line, column, stored, given
):
    write(
        tmp_path / "a",
        "jobs.csv",
        JOBS_HEADER
        + "j2,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T02:00:00Z,8,failed\n",
    )
    ingest_files(con, tmp_path / "a")
    before = con.execute("SELECT * FROM jobs").fetchall()
    path = write(
        tmp_path / "b",
        "jobs.csv",
        JOBS_HEADER + "j5,2026-11-30T00:00:00Z,2026-11-30T01:00:00Z,,8,running\n" + line + "\n",
    )
    with pytest.raises(InputError) as info:
        ingest_files(con, tmp_path / "b")
    message = str(info.value)
    assert (info.value.file, info.value.line, info.value.column) == (str(path), 3, column)
    assert "job_id `j2`" in message and f"`{stored}`" in message and f"`{given}`" in message
    assert "a different job reusing the id" in message
    assert con.execute("SELECT * FROM jobs").fetchall() == before


def test_the_repeat_check_finds_a_repeat_when_it_splits_a_big_batch(con, tmp_path, monkeypatch):
    import pipelines.store

    # Two hashes per pass: 5 rows take 3 passes; the repeat of line 2 on line 6 is still found.
    monkeypatch.setattr(pipelines.store, "HASHES_PER_PASS", 2)
    lines = [f"2026-11-23T00:0{m}:00Z,n1,Ready,True" for m in range(4)]
    write(
        tmp_path / "in",
        "node_conditions.csv",
        _csv_records("ts,node,condition,status", *lines, lines[0]),
    )
    (result,) = ingest_files(con, tmp_path / "in")
    assert (result.rows_in, result.rows_new, result.repeats_skipped) == (5, 4, 1)


def test_ingest_prints_new_updated_unchanged_and_repeats(tmp_path):
    import os
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent

    def ingest(folder: Path) -> str:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipelines",
                "--db",
                str(tmp_path / "fleet.duckdb"),
                "ingest",
                "files",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    write(
        tmp_path / "a",
        "jobs.csv",
        JOBS_HEADER
        + "j1,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,,8,running\n"
        + "j1,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,,8,running\n",
    )
    first = ingest(tmp_path / "a")
    # 2 read, 1 new, the exact repeat skipped.
    assert re.search(
        r"jobs\s+2 rows read\s+1 new\s+0 updated\s+0 unchanged\s+\(1 repeated records skipped\)",
        first,
    )
    write(
        tmp_path / "b",
        "jobs.csv",
        JOBS_HEADER
        + "j1,2026-11-23T00:00:00Z,2026-11-23T01:00:00Z,2026-11-23T05:00:00Z,8,succeeded\n",
    )
    assert re.search(
        r"jobs\s+1 rows read\s+0 new\s+1 updated\s+0 unchanged", ingest(tmp_path / "b")
    )
    again = ingest(tmp_path / "b")
    assert re.search(r"jobs\s+1 rows read\s+0 new\s+0 updated\s+1 unchanged", again)
    assert "Nothing new: the data version is unchanged." in again


# Property: whatever records a batch holds and however often each repeats (in any order), the store
# holds each distinct record once, the repeats are counted, and loading the batch again changes
# nothing and keeps the data version.
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 3)), min_size=1, max_size=12, unique=True
    ),
    copies=st.lists(st.integers(1, 3), min_size=12, max_size=12),
    order=st.randoms(use_true_random=False),
)
def test_repeats_load_once_and_a_second_load_changes_nothing(
    tmp_path_factory, records, copies, order
):
    from datetime import UTC, datetime, timedelta

    import polars as pl

    from pipelines.store import TableInput, data_version, load_batch, open_store

    con = open_store(tmp_path_factory.mktemp("db") / "fleet.duckdb")
    rows = [
        (minute, gpu) for (minute, gpu), n in zip(records, copies, strict=False) for _ in range(n)
    ]
    order.shuffle(rows)
    t0 = datetime(2026, 11, 23, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "ts": [t0 + timedelta(minutes=m) for m, _ in rows],
            "node": ["n1"] * len(rows),
            "gpu": pl.Series([g for _, g in rows], dtype=pl.Int16),
            "metric": ["DCGM_FI_DEV_GPU_UTIL"] * len(rows),
            "value": [float(m * 10 + g) for m, g in rows],  # one value per key: repeats are exact
        }
    ).with_row_index("__row", offset=1)
    (first,) = load_batch(con, [TableInput("gpu_samples", frame, "batch")], "test")
    assert (first.rows_in, first.rows_new, first.repeats_skipped) == (
        len(rows),
        len(records),
        len(rows) - len(records),
    )
    assert con.execute("SELECT count(*) FROM gpu_samples").fetchall()[0][0] == len(records)
    version = data_version(con)
    (second,) = load_batch(con, [TableInput("gpu_samples", frame, "batch")], "test")
    assert (second.rows_new, second.rows_unchanged) == (0, len(records))
    assert data_version(con) == version
    con.close()


MIG_CSV = textwrap.dedent(
    """\
    ts,node,gpu,uuid,gpu_i_id,gpu_i_profile,job_id,metric,value
    2026-11-23T00:00:00Z,n1,0,GPU-0,1,3g.40gb,j1,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.5
    2026-11-23T00:00:00Z,n1,0,GPU-0,2,3g.40gb,j2,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.1
    2026-11-23T00:00:00Z,n1,0,GPU-0,1,3g.40gb,j1,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.5
    """
)


def test_mig_instance_samples_load_once_by_instance(con, tmp_path):
    """Two instances of one GPU at one scrape are two rows; the exact repeat of the third line
    is loaded once (the one repeat rule); a second load changes nothing."""
    folder = tmp_path / "in"
    write(folder, "gpu_instance_samples.csv", MIG_CSV)
    ingest_files(con, folder)
    ingest_files(con, folder)
    assert con.execute(
        "SELECT gpu_i_id, job_id, value FROM gpu_instance_samples ORDER BY gpu_i_id"
    ).fetchall() == [(1, "j1", 0.5), (2, "j2", 0.1)]


def test_one_instance_with_two_values_at_one_scrape_is_refused(con, tmp_path):
    folder = tmp_path / "in"
    write(
        folder,
        "gpu_instance_samples.csv",
        MIG_CSV.replace("j1,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.5\n", "", 1)
        + "2026-11-23T00:00:00Z,n1,0,GPU-0,1,3g.40gb,j1,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.9\n",
    )
    with pytest.raises(InputError, match="gpu_instance_samples.csv"):
        ingest_files(con, folder)
    assert row_counts(con, ("gpu_instance_samples",)) == {"gpu_instance_samples": 0}
