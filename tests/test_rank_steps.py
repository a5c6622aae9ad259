"""Rank step files (JSONL, CSV) as training jobs log them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from pipelines.errors import InputError
from pipelines.sources.rank_steps import ingest_rank_steps
from pipelines.store import row_counts

T = datetime(2026, 11, 23, 10, 0, 1, 250000, tzinfo=UTC)
RECORDS = [
    # RFC 3339 end time, everything given
    {
        "job_id": "1001",
        "attempt": 0,
        "step": 1,
        "rank": 0,
        "node": "n1",
        "gpu": 0,
        "end_ts": "2026-11-23T10:00:01.250Z",
        "step_s": 1.25,
        "compute_s": 1.0,
    },
    # Unix seconds from time.time(); attempt, gpu and compute_s left out
    {"job_id": "1001", "step": 1, "rank": 1, "node": "n1", "end_ts": T.timestamp(), "step_s": 1.5},
]


def write_jsonl(path, records, extra_lines=()):
    path.write_text("\n".join([json.dumps(r) for r in records] + list(extra_lines)) + "\n")
    return path


def test_jsonl_with_rfc3339_and_unix_times(con, tmp_path):
    path = write_jsonl(tmp_path / "steps.jsonl", RECORDS)
    ingest_rank_steps(con, path)
    rows = con.execute(
        "SELECT job_id, attempt, step, rank, node, gpu, end_ts, step_s, compute_s FROM rank_steps ORDER BY rank"
    ).fetchall()
    assert rows == [
        ("1001", 0, 1, 0, "n1", 0, T, 1.25, 1.0),
        ("1001", 0, 1, 1, "n1", None, T, 1.5, None),
    ]
    ingest_rank_steps(con, path)  # idempotent
    assert row_counts(con, ("rank_steps",)) == {"rank_steps": 2}


def test_csv(con, tmp_path):
    path = tmp_path / "steps.csv"
    path.write_text(
        "job_id,step,rank,node,end_ts,step_s\n1001,1,0,n1,2026-11-23T10:00:01.250Z,1.25\n1001,1,1,n1,1795428001.25,1.5\n"
    )
    ingest_rank_steps(con, path)
    assert con.execute("SELECT rank, end_ts, attempt FROM rank_steps ORDER BY rank").fetchall() == [
        (0, T, 0),
        (1, T, 0),
    ]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("s.jsonl", json.dumps(RECORDS[0]) + "\n\n{not json\n", "s.jsonl, line 3: is not JSON"),
        ("s.jsonl", json.dumps(RECORDS[0]) + "\n[1, 2]\n", "s.jsonl, line 2: is not a JSON object"),
        (
            "s.jsonl",
            json.dumps({**RECORDS[0], "step_s": "fast"}) + "\n",
            "s.jsonl, line 1, column `step_s`: value is not a valid DOUBLE",
        ),
        (
            "s.jsonl",
            json.dumps({k: v for k, v in RECORDS[0].items() if k != "node"}) + "\n",
            "s.jsonl, line 1, column `node`: value is required but empty",
        ),
        (
            "s.csv",
            "job_id,step,rank,node,end_ts,step_s\n1,1,0,n1,2026-11-23T10:00:00Z,1\n1,2,0,n1,tomorrow,1\n",
            "s.csv, line 3, column `end_ts`",
        ),
        (
            "s.csv",
            "job_id,step,rank,end_ts,step_s\n1,1,0,2026-11-23T10:00:00Z,1\n",
            "s.csv: has no `node` column",
        ),
        ("s.txt", "x", "s.txt: is not a .jsonl or .csv file"),
    ],
)
def test_bad_input_names_file_line_and_column(con, tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        ingest_rank_steps(con, path)
    assert message in str(err.value).replace(str(tmp_path) + "/", "")
    assert row_counts(con, ("rank_steps",)) == {"rank_steps": 0}
