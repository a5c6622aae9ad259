"""`gpufleet demo --no-app`: simulate, load, compute, then the one-screen summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import duckdb


def test_demo_without_the_app_prints_its_stages_and_a_summary(tmp_path: Path):
    db, data = tmp_path / "fleet.duckdb", tmp_path / "demo-data"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines",
            "--db",
            str(db),
            "demo",
            "--no-app",
            "--nodes",
            "2",
            "--days",
            "1",
            "--data",
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # Each stage says what it did and how long it took (stderr), the summary goes to stdout.
    for stage in (
        "Simulated 2 nodes x 1 days into",
        "Loaded",
        "Computed the metrics and anomalies",
    ):
        assert re.search(re.escape(stage) + r".* in \d+ s", done.stderr.replace("\n", " ")), (
            done.stderr
        )
    assert "Fleet: 2 nodes, 16 GPUs" in done.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM gpu_samples").fetchall()[0][0]
        computed = con.execute("SELECT count(*) FROM compute_log").fetchall()[0][0]
    assert re.search(rf"gpu_samples\s+{stored:,} rows", done.stdout), done.stdout
    assert stored > 0 and computed == 1
