"""sacct --parsable2 parsing: states, requeues, steps, exit codes, node lists, bad lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.errors import InputError
from pipelines.sources.slurm import (
    expand_nodelist,
    gpus_of,
    ingest_sacct,
    normalise_state,
    parse_exit_code,
    parse_sacct,
)
from pipelines.store import row_counts

HEADER = "JobID|JobName|User|Account|Partition|Submit|Start|End|State|ExitCode|AllocTRES|NodeList|Reason|Restarts"

# Real sacct shapes: a job, its batch/extern/numbered steps, a requeued job shown with
# --duplicates (two rows with the same JobID), a cancelled-by-uid job, an OOM step.
SACCT_LINES = [
    HEADER,
    "1001|pretrain-7b|alice|llm|gpu|2026-11-23T00:00:00|2026-11-23T00:05:00|2026-11-23T04:05:00|COMPLETED|0:0|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2|gpu-[01-02]|None|0",
    "1001.batch|batch|||gpu|2026-11-23T00:05:00|2026-11-23T00:05:00|2026-11-23T04:05:00|COMPLETED|0:0|cpu=64,gres/gpu=8,mem=500G,node=1|gpu-01|||",
    "1001.extern|extern|||gpu|2026-11-23T00:05:00|2026-11-23T00:05:00|2026-11-23T04:05:00|COMPLETED|0:0|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2|gpu-[01-02]|||",
    "1001.0|torchrun|||gpu|2026-11-23T00:05:01|2026-11-23T00:05:01|2026-11-23T04:05:00|COMPLETED|0:0|cpu=128,gres/gpu=16,mem=1000G,node=2|gpu-[01-02]|||",
    "1002|finetune|bob|vision|gpu|2026-11-23T01:00:00|2026-11-23T01:00:10|2026-11-23T02:00:00|REQUEUED|0:0|cpu=64,gres/gpu:h100=8,node=1|gpu-03|None|1",
    "1002|finetune|bob|vision|gpu|2026-11-23T01:00:00|2026-11-23T02:10:00|2026-11-23T03:00:00|NODE_FAIL|0:0|cpu=64,gres/gpu:h100=8,node=1|gpu-07|None|1",
    "1003|sweep|carol|llm|gpu|2026-11-23T02:00:00|2026-11-23T02:01:00|2026-11-23T02:30:00|CANCELLED by 1234|0:15|cpu=8,gres/gpu=1,node=1|gpu-04|None|0",
    "1004|oomer|dave|llm|gpu|2026-11-23T03:00:00|2026-11-23T03:00:30|2026-11-23T03:10:00|FAILED|1:0|cpu=8,gres/gpu=2,node=1|gpu-05|None|0",
    "1004.batch|batch|||gpu|2026-11-23T03:00:30|2026-11-23T03:00:30|2026-11-23T03:10:00|OUT_OF_MEMORY|0:125|cpu=8,gres/gpu=2,node=1|gpu-05|||",
    "1005|queued|erin|llm|gpu|2026-11-23T04:00:00|Unknown|Unknown|PENDING|0:0||None assigned|Resources|0",
    "1006|long|frank|llm|gpu|2026-11-23T04:00:00|2026-11-23T04:01:00|Unknown|RUNNING|0:0|cpu=64,gres/gpu=8,node=1|gpu-06|None|0",
    "1007|slow|gina|llm|gpu|2026-11-23T04:00:00|2026-11-23T04:01:00|2026-11-23T08:01:00|TIMEOUT|0:0|cpu=64,gres/gpu=8,node=1|gpu-08|None|0",
    "1008|never|hank|llm|gpu|2026-11-23T05:00:00|None|2026-11-23T05:10:00|CANCELLED by 0|0:0||None assigned|None|0",
    "1009|boot|ivan|llm|gpu|2026-11-23T05:00:00|2026-11-23T05:01:00|2026-11-23T05:02:00|BOOT_FAIL|0:0|gres/gpu=8|gpu-09|None|0",
]
SACCT = "\n".join(SACCT_LINES)


@pytest.fixture
def parsed():
    return parse_sacct(SACCT, "sacct.txt")


def _job(parsed, job_id: str) -> dict:
    return next(r for r in parsed.jobs.iter_rows(named=True) if r["job_id"] == job_id)


@pytest.mark.parametrize(
    ("job_id", "state", "num_gpus", "exit_code", "reason"),
    [
        ("1001", "succeeded", 16, 0, None),  # steps folded: one job
        ("1002", "node_fail", 8, 0, None),  # typed gres/gpu:h100=8; final attempt decides
        ("1003", "cancelled", 1, 143, "by 1234"),  # 0:15 -> 128 + SIGTERM
        ("1004", "oom", 2, 1, None),  # FAILED job whose batch step ran out of memory
        ("1006", "running", 8, 0, None),
        ("1007", "timeout", 8, 0, None),
        ("1008", "cancelled", 0, 0, "by 0"),  # cancelled before it started: no attempt
        ("1009", "node_fail", 8, 0, None),  # BOOT_FAIL
    ],
)
def test_job_outcomes(parsed, job_id, state, num_gpus, exit_code, reason):
    job = _job(parsed, job_id)
    assert (job["state"], job["num_gpus"], job["exit_code"], job["reason"]) == (
        state,
        num_gpus,
        exit_code,
        reason,
    )


def test_pending_jobs_are_skipped_and_steps_are_folded(parsed):
    assert sorted(parsed.jobs["job_id"]) == [
        "1001",
        "1002",
        "1003",
        "1004",
        "1006",
        "1007",
        "1008",
        "1009",
    ]


def test_requeued_job_has_two_attempts_in_start_order(parsed):
    attempts = parsed.job_attempts.filter(parsed.job_attempts["job_id"] == "1002").sort("attempt")
    assert attempts.select("attempt", "state", "nodes").rows() == [
        (0, "preempted", ["gpu-03"]),  # REQUEUED: interrupted and put back in the queue
        (1, "node_fail", ["gpu-07"]),
    ]
    job = _job(parsed, "1002")
    # The job starts with its first attempt and ends with its last.
    assert job["start_ts"] == datetime(2026, 11, 23, 1, 0, 10, tzinfo=UTC)
    assert job["end_ts"] == datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


def test_running_job_has_no_end(parsed):
    assert _job(parsed, "1006")["end_ts"] is None
    attempt = parsed.job_attempts.filter(parsed.job_attempts["job_id"] == "1006").row(0, named=True)
    assert attempt["end_ts"] is None and attempt["state"] == "running"


def test_job_without_start_has_no_attempt(parsed):
    assert parsed.job_attempts.filter(parsed.job_attempts["job_id"] == "1008").height == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu-[01-04,07]", ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-07"]),
        ("gpu-01", ["gpu-01"]),
        ("a[1-2],b[09-10]", ["a1", "a2", "b09", "b10"]),  # two prefixes, padding kept
        ("gpu-[1-2],cpu-3", ["gpu-1", "gpu-2", "cpu-3"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),  # two dimensions
        ("node[8-10]", ["node8", "node9", "node10"]),  # no padding when widths differ
        ("None assigned", []),
        ("", []),
    ],
)
def test_expand_nodelist(text, expected):
    assert expand_nodelist(text) == expected


@pytest.mark.parametrize("text", ["gpu-[01-", "gpu-]01[", "gpu-[a-b]", "gpu-[5-1]"])
def test_expand_nodelist_rejects(text):
    with pytest.raises(ValueError):
        expand_nodelist(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0:0", 0), ("1:0", 1), ("0:9", 137), ("0:15", 143), ("2:0", 2), ("", None)],
)
def test_parse_exit_code(text, expected):
    assert parse_exit_code(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("COMPLETED", ("succeeded", None)),
        ("FAILED", ("failed", None)),
        ("NODE_FAIL", ("node_fail", None)),
        ("TIMEOUT", ("timeout", None)),
        ("OUT_OF_MEMORY", ("oom", None)),
        ("CANCELLED by 1234", ("cancelled", "by 1234")),
        ("CANCELLED+", ("cancelled", None)),  # sacct's `+`: the field was cut
        ("PREEMPTED", ("preempted", None)),
        ("REQUEUED", ("preempted", None)),
        ("BOOT_FAIL", ("node_fail", None)),
        ("DEADLINE", ("timeout", None)),
        ("RUNNING", ("running", None)),
        ("PENDING", (None, None)),
    ],
)
def test_normalise_state(text, expected):
    assert normalise_state(text) == expected


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("billing=64,cpu=64,gres/gpu=8,mem=500G,node=1", 8),
        ("cpu=64,gres/gpu:a100=4,node=1", 4),
        ("cpu=64,gres/gpu=8,gres/gpu:h100=8,node=1", 8),  # untyped total wins over the typed copy
        ("cpu=8,mem=10G", 0),
        ("", 0),
    ],
)
def test_gpus_of(tres, gpus):
    assert gpus_of(tres) == gpus


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "2001|x|u|a|p|2026-11-23T00:00:00|2026-11-23T00:00:00|2026-11-23T01:00:00|EXPLODED|0:0|gres/gpu=1|n1|None|0",
            "sacct.txt, line 3, column `State`: `EXPLODED` is not a Slurm job state",
        ),
        (
            "2001|x|u|a|p|2026-11-23T00:00:00|yesterday|2026-11-23T01:00:00|COMPLETED|0:0|gres/gpu=1|n1|None|0",
            "sacct.txt, line 3, column `Start`",
        ),
        (
            "2001|x|u|a|p|2026-11-23T00:00:00|2026-11-23T00:00:00|2026-11-23T01:00:00|COMPLETED|zero|gres/gpu=1|n1|None|0",
            "sacct.txt, line 3, column `ExitCode`: `zero` is not `exit:signal`",
        ),
        (
            "2001|x|u|a|p|2026-11-23T00:00:00|2026-11-23T00:00:00|2026-11-23T01:00:00|COMPLETED|0:0|gres/gpu=1|n[1-|None|0",
            "sacct.txt, line 3, column `NodeList`",
        ),
        ("2001|a|b", "sacct.txt, line 3: has 3 fields, the header has 14"),
    ],
)
def test_malformed_lines_name_file_line_and_column(line, message):
    text = "\n".join([HEADER, SACCT.splitlines()[1], line])
    with pytest.raises(InputError) as err:
        parse_sacct(text, "sacct.txt")
    assert message in str(err.value)


def test_header_without_required_column():
    with pytest.raises(InputError, match="no `State` column"):
        parse_sacct("JobID|Start|End|Submit\n1|x|y|z\n", "sacct.txt")


def test_ingest_is_idempotent_and_warns_without_duplicates(con, tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text(SACCT + "\n")
    results, parsed = ingest_sacct(con, path)
    assert {r.table: r.rows_new for r in results} == {
        "jobs": 8,
        "job_attempts": 8,
    }  # 7 started + 1 requeue
    assert parsed.warnings == []
    ingest_sacct(con, path)
    assert row_counts(con, ("jobs", "job_attempts")) == {"jobs": 8, "job_attempts": 8}
    nodes = con.execute("SELECT nodes FROM job_attempts WHERE job_id = '1001'").fetchall()
    assert nodes == [(["gpu-01", "gpu-02"],)]
    # Without --duplicates only the last attempt of a requeued job is shown.
    without = "\n".join(line for line in SACCT.splitlines() if "REQUEUED" not in line)
    assert "--duplicates" in parse_sacct(without, "x").warnings[0]


def test_a_name_with_a_pipe_loads_with_the_delimiter_sacct_was_run_with(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    # Job 3001's name holds `|`: with `|` as separator the line has 15 fields (header: 14), and
    # the advice is to rerun sacct with --delimiter. Run with `;`, the same file loads whole.
    named = "3001|eval|nightly|u|a|p|2026-11-23T00:00:00|2026-11-23T00:00:00|2026-11-23T01:00:00|COMPLETED|0:0|gres/gpu=8|n1|None|0"
    with pytest.raises(InputError) as err:
        parse_sacct(f"{HEADER}\n{named}", "sacct.txt")
    assert "has 15 fields" in str(
        err.value
    ) and "pass the same --delimiter to `gpufleet ingest sacct`" in str(err.value)
    fields = named.split("|")
    with_semicolons = ";".join([fields[0], "eval|nightly", *fields[3:]])
    path = tmp_path / "sacct.txt"
    path.write_text(HEADER.replace("|", ";") + "\n" + with_semicolons + "\n")
    root = Path(__file__).resolve().parent.parent
    db = tmp_path / "fleet.duckdb"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines",
            "--db",
            str(db),
            "ingest",
            "sacct",
            str(path),
            "--delimiter",
            ";",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    import duckdb

    with duckdb.connect(str(db), read_only=True) as check:
        assert check.execute("SELECT job_id, name, num_gpus FROM jobs").fetchall() == [
            ("3001", "eval|nightly", 8)
        ]
    # Without it, the file is refused with the line.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines",
            "--db",
            str(tmp_path / "other.duckdb"),
            "ingest",
            "sacct",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_a_delimiter_that_cannot_separate_fields_is_refused():
    with pytest.raises(InputError, match="cannot separate sacct fields"):
        parse_sacct(SACCT, "sacct.txt", delimiter="")
