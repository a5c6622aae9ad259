"""Faults of the machine or the file: one clear line, never a traceback, nothing half written.

Disk full (a file size limit, RLIMIT_FSIZE, makes every write past it fail as a full
disk does), a read-only folder, a truncated or damaged database file, and out of
memory under GPUFLEET_MEMORY_LIMIT. Each runs the real command in its own process.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.processes import run_python
from tests.conftest import require
from tests.test_serving import ENV, ROOT, computed, gpufleet, landing, no_leftovers, one_error_line  # noqa: F401

WEEK = "2026-W48"


@pytest.fixture
def db(computed: Path, tmp_path: Path) -> Path:  # noqa: F811
    path = tmp_path / "fleet.duckdb"
    path.write_bytes(computed.read_bytes())
    return path


def with_file_size_limit(limit: int):
    def limit_writes() -> None:
        # Ignored SIGXFSZ: a write past the limit fails with EFBIG, as one on a full disk does.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_writes


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(
    "args",
    [
        ["compute", "--force"],  # the private copy of the database does not fit
        ["ingest", "files", "{landing}"],  # DuckDB's own writes do not fit
    ],
)
def test_a_full_disk_is_one_line_and_leaves_the_database_as_it_was(
    db: Path,
    landing: Path,  # noqa: F811
    args: list[str],
) -> None:
    before = snapshot(db.parent)
    limit = db.stat().st_size // 2
    done = gpufleet(
        db, *[a.format(landing=landing) for a in args], preexec_fn=with_file_size_limit(limit)
    )
    line = one_error_line(done)
    assert line.startswith("Error: No space left"), line
    assert "File too large" in line
    no_leftovers(db)
    after = snapshot(db.parent)
    after.pop(f".{db.name}.lock", None)  # the writers' lock file, created empty beside the database
    assert after == before


def test_a_full_disk_on_a_new_database_creates_nothing(tmp_path: Path, landing: Path) -> None:  # noqa: F811
    db = tmp_path / "new.duckdb"
    done = gpufleet(db, "ingest", "files", str(landing), preexec_fn=with_file_size_limit(400_000))
    assert one_error_line(done).startswith("Error: No space left")
    assert not db.exists()
    no_leftovers(db)


def test_an_export_to_a_full_disk_is_one_line_and_keeps_the_earlier_export(
    db: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    first = gpufleet(db, "export", "--week", WEEK, "--out", str(lake))
    assert first.returncode == 0, first.stderr
    before = snapshot(lake)
    done = gpufleet(
        db, "export", "--week", WEEK, "--out", str(lake), preexec_fn=with_file_size_limit(600)
    )
    assert one_error_line(done).startswith("Error: No space left")
    assert snapshot(lake) == before


@contextlib.contextmanager
def read_only_folder(folder: Path) -> Iterator[None]:
    """`folder` made read-only: a read-only bind mount as root (root ignores modes), else chmod."""
    if os.geteuid() == 0:
        mounted = subprocess.run(
            ["mount", "--bind", str(folder), str(folder)], capture_output=True, check=False
        )
        require(mounted.returncode == 0, "mount (a read-only bind mount, for a root test run)")
        try:
            remount = subprocess.run(
                ["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True, check=False
            )
            require(remount.returncode == 0, "mount -o remount,ro")
            yield
        finally:
            subprocess.run(["umount", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)


@pytest.mark.parametrize("args", [["compute", "--force"], ["ingest", "files", "{landing}"]])
def test_a_read_only_folder_refuses_writers_in_one_line_and_still_serves_readers(
    db: Path,
    landing: Path,  # noqa: F811
    args: list[str],
) -> None:
    before = snapshot(db.parent)
    with read_only_folder(db.parent):
        done = gpufleet(db, *[a.format(landing=landing) for a in args])
        report = gpufleet(db, "report", "--week", WEEK)
    line = one_error_line(done)
    assert line.startswith(f"Error: Cannot create the lock file in `{db.parent}`"), line
    assert "Read-only file system" in line or "Permission denied" in line
    assert report.returncode == 0, report.stderr
    assert "Weekly reliability report" in report.stdout
    assert snapshot(db.parent) == before


def damage(db: Path, how: str) -> None:
    if how == "truncated":
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 3)
    else:
        db.write_bytes(b"this is not a database\n" * 1000)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
@pytest.mark.parametrize(
    "args",
    [
        ["report", "--week", WEEK],
        ["export", "--week", WEEK, "--out", "{tmp}/lake"],
        ["compute", "--force"],
        ["ingest", "files", "{landing}"],
    ],
)
def test_a_damaged_database_is_one_line_and_stays_as_it_was(
    db: Path,
    landing: Path,  # noqa: F811
    tmp_path: Path,
    how: str,
    args: list[str],
) -> None:
    damage(db, how)
    before = db.read_bytes()
    done = gpufleet(db, *[a.format(landing=landing, tmp=tmp_path) for a in args])
    line = one_error_line(done)
    assert line == f"Error: Database `{db}` is damaged or not a DuckDB file.", line
    assert db.read_bytes() == before
    no_leftovers(db)


def test_out_of_memory_is_one_line_and_leaves_the_database_as_it_was(db: Path) -> None:
    before = db.read_bytes()
    done = gpufleet(db, "compute", "--force", env={**ENV, "GPUFLEET_MEMORY_LIMIT": "2MB"})
    line = one_error_line(done)
    assert line.startswith("Error: Out of memory under GPUFLEET_MEMORY_LIMIT=2MB"), line
    assert db.read_bytes() == before
    no_leftovers(db)


def test_a_memory_limit_that_is_not_a_size_is_one_line(db: Path) -> None:
    done = gpufleet(db, "compute", "--force", env={**ENV, "GPUFLEET_MEMORY_LIMIT": "lots"})
    assert (
        one_error_line(done)
        == "Error: GPUFLEET_MEMORY_LIMIT must be a size such as 6GB or 512MB, not `lots`."
    )


def test_python_running_out_of_memory_is_one_line(db: Path) -> None:
    """A MemoryError from a Python step (polars, scipy) gets the same line as DuckDB's."""
    script = (
        "import sys; import pipelines.compute as c\n"
        "def boom(*a, **k): raise MemoryError()\n"
        "c.compute = boom\n"
        "sys.argv = ['gpufleet', '--db', sys.argv[1], 'compute', '--force']\n"
        "from pipelines.cli import main; main()\n"
    )
    done = run_python(["-c", script, str(db)], env=ENV, cwd=ROOT)
    assert one_error_line(done).startswith("Error: Out of memory")


def test_running_out_of_memory_in_a_compute_step_names_the_step(db: Path) -> None:
    """Which step ran out tells the SRE what to look at (and what GPUFLEET_MEMORY_LIMIT starves)."""
    before = db.read_bytes()
    script = (
        "import sys; import pipelines.rank_slowdown as r\n"
        "def boom(*a, **k): raise MemoryError()\n"
        "r.stream_rank_tables = boom\n"
        "sys.argv = ['gpufleet', '--db', sys.argv[1], 'compute', '--force']\n"
        "from pipelines.cli import main; main()\n"
    )
    done = run_python(["-c", script, str(db)], env=ENV, cwd=ROOT)
    assert one_error_line(done) == "Error: Out of memory in compute step `rank_slowdown`."
    assert db.read_bytes() == before
    no_leftovers(db)
