"""One database path read while it is written: writers publish a copy, readers keep their version.

Every writing command takes the one writer lock beside `--db`, works on a private copy
and renames it onto the path; a plain `duckdb.connect(PATH, read_only=True)` held open
in another process (a notebook) never stops them. See pipelines/serving.py.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from pipelines.errors import StorageError
from pipelines.serving import WORK_SUFFIX, EarlyFlush, lock_path, writing
from pipelines.store import open_store
from testkit.processes import holding, run_python

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}

NOTEBOOK = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)  # exactly what the notebooks do, held open
def look():
    return {
        "data_version": con.execute("SELECT max(batch_id) FROM load_log").fetchall()[0][0],
        "computed_version": con.execute("SELECT max(data_version) FROM compute_log").fetchall()[0][0],
        "maintenance": con.execute("SELECT count(*) FROM maintenance").fetchall()[0][0],
        "samples": con.execute("SELECT count(*) FROM gpu_samples").fetchall()[0][0],
        "summary_rows": con.execute("SELECT count(*) FROM weekly_summary").fetchall()[0][0],
    }
print(json.dumps(look()), flush=True)
sys.stdin.readline()
print(json.dumps(look()), flush=True)
"""


def gpufleet(
    db: Path, *args: str, env: dict[str, str] | None = None, **kwargs
) -> subprocess.CompletedProcess:
    return run_python(
        ["-m", "pipelines", "--db", str(db), *args], env=env or ENV, cwd=ROOT, **kwargs
    )


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("landing")
    done = run_python(
        [
            "-m",
            "pipelines",
            "simulate",
            "--nodes",
            "2",
            "--days",
            "1",
            "--seed",
            "3",
            "--start",
            "2026-11-23",
            "--out",
            str(folder),
        ],
        env=ENV,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="module")
def computed(landing: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database built by the commands: ingest + compute of a 2-node day."""
    db = tmp_path_factory.mktemp("built") / "fleet.duckdb"
    for args in (["ingest", "files", str(landing)], ["compute"]):
        done = gpufleet(db, *args)
        assert done.returncode == 0, done.stderr
    return db


@pytest.fixture
def db(computed: Path, tmp_path: Path) -> Path:
    path = tmp_path / "fleet.duckdb"
    path.write_bytes(computed.read_bytes())
    return path


def late_maintenance(tmp_path: Path) -> Path:
    folder = tmp_path / "late"
    folder.mkdir()
    (folder / "maintenance.csv").write_text(
        # A node no inventory lists: its cluster is given, as the database holds two.
        "cluster,node,start_ts,end_ts,reason\n"
        "train-use1-a,node-late,2026-11-23T10:00:00Z,2026-11-23T11:00:00Z,declared late\n"
    )
    return folder


def one_error_line(done: subprocess.CompletedProcess) -> str:
    """A failure is `Error: <one line>` plus an optional hint line: never a traceback."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1 if len(lines) == 1 else -2].startswith("Error: "), done.stderr
    assert len(lines) <= 2, done.stderr
    return lines[0]


def no_leftovers(db: Path) -> None:
    assert not list(db.parent.glob(f".{db.name}.*{WORK_SUFFIX}"))
    assert not db.with_name(db.name + ".wal").exists()


def test_a_notebook_holding_the_file_open_stops_neither_ingest_nor_compute(
    db: Path, tmp_path: Path
) -> None:
    notebook = subprocess.Popen(
        [sys.executable, "-c", NOTEBOOK, str(db)],
        env=ENV,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert notebook.stdin is not None and notebook.stdout is not None  # both piped
        before = json.loads(notebook.stdout.readline())
        assert before["maintenance"] >= 0 and before["summary_rows"] > 0

        # No waiting allowed: a writer that needed the reader gone would fail at once (the old
        # store waited ~1 min, then failed), so success means neither waited for it.
        no_wait = {**ENV, "GPUFLEET_LOCK_WAIT_S": "0"}
        ingest = gpufleet(db, "ingest", "files", str(late_maintenance(tmp_path)), env=no_wait)
        assert ingest.returncode == 0, ingest.stderr
        compute = gpufleet(db, "compute", env=no_wait)
        assert compute.returncode == 0, compute.stderr
        assert "Computed data version" in compute.stdout

        notebook.stdin.write("\n")
        notebook.stdin.flush()
        after = json.loads(notebook.stdout.readline())
    finally:
        notebook.kill()
        notebook.wait(timeout=30)
    # The open connection still reads its one complete version ...
    assert after == before
    # ... and a new connection reads the newest one, computed from the new load.
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert (
            con.execute("SELECT max(batch_id) FROM load_log").fetchall()[0][0]
            == before["data_version"] + 1
        )
        assert (
            con.execute("SELECT max(data_version) FROM compute_log").fetchall()[0][0]
            == before["data_version"] + 1
        )
        assert (
            con.execute("SELECT count(*) FROM maintenance").fetchall()[0][0]
            == before["maintenance"] + 1
        )
    finally:
        con.close()
    no_leftovers(db)


def test_a_new_connection_in_a_process_that_still_holds_the_old_one_sees_the_new_version(
    db: Path, tmp_path: Path
) -> None:
    """The dashboard's process keeps connections of earlier page runs open while a new run starts."""
    from pipelines.serving import open_snapshot

    old = open_snapshot(db)
    version = old.execute("SELECT max(batch_id) FROM load_log").fetchall()[0][0]
    assert gpufleet(db, "ingest", "files", str(late_maintenance(tmp_path))).returncode == 0
    new = open_snapshot(db)
    try:
        assert new.execute("SELECT max(batch_id) FROM load_log").fetchall()[0][0] == version + 1
        assert old.execute("SELECT max(batch_id) FROM load_log").fetchall()[0][0] == version
    finally:
        old.close()
        new.close()


PROGRESS_BAR = """
import sys
from pipelines.serving import open_snapshot
from pipelines.store import connect
for con in (connect(sys.argv[1], read_only=True), open_snapshot(sys.argv[1])):
    con.execute("SET progress_bar_time = 0")  # the bar from the first instant, not after 2 s
    con.execute("SELECT sum(i * random()) FROM range(30000000) t(i)").fetchall()
    con.close()
"""


def test_the_connections_of_the_commands_and_the_dashboard_draw_no_progress_bar(db: Path) -> None:
    """DuckDB draws a progress bar on stdout, terminal or not, once a query runs 2 s, whenever it
    takes the process for an interactive one (`python -c`, a REPL, a script that imports duckdb
    early): in a report or export written to stdout, or a scheduled run's log, it is garbage."""
    done = run_python(["-c", PROGRESS_BAR, str(db)], env=ENV, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


HOLD_WRITER_LOCK = """
import sys
from pathlib import Path
from pipelines.serving import writer_lock
with writer_lock(Path(sys.argv[1]).absolute(), "gpufleet ingest prometheus"):
    print("locked", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize(
    "command",
    [
        ["compute", "--force"],
        ["ingest", "files", "{landing}"],
        ["ingest", "sacct", "{landing}/none.txt"],
        ["ingest", "rank-steps", "{landing}/none.jsonl"],
        ["ingest", "kernel-log", "{landing}/none.log", "--node", "n1"],
    ],
)
def test_every_writing_command_waits_for_the_lock_the_same_way_and_names_the_holder(
    db: Path, landing: Path, command: list[str]
) -> None:
    with holding(HOLD_WRITER_LOCK, db, "locked", env=ENV, cwd=ROOT, timeout_s=30) as holder:
        began = time.monotonic()
        done = gpufleet(
            db,
            *[part.format(landing=landing) for part in command],
            env={**ENV, "GPUFLEET_LOCK_WAIT_S": "1.5"},
        )
        waited = time.monotonic() - began
    line = one_error_line(done)
    assert f"is being written by `gpufleet ingest prometheus` (pid {holder.pid}" in line
    assert "waited 2 s" in line
    assert 1.5 <= waited < 30


def test_a_program_holding_the_file_open_for_writing_is_named(db: Path, tmp_path: Path) -> None:
    hold = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('open', flush=True); sys.stdin.readline()"
    with holding(hold, db, "open", env=ENV, cwd=ROOT, timeout_s=30) as holder:
        for args in (["compute", "--force"], ["report", "--week", "2026-W48"]):
            line = one_error_line(gpufleet(db, *args))
            assert f"is held open for writing by {sys.executable} -c import duckdb" in line
            assert f"(pid {holder.pid})" in line


@pytest.mark.parametrize(
    "args",
    [
        ["compute"],
        ["compute", "--force"],
        ["report", "--week", "2026-W48"],
        ["export", "--week", "2026-W48", "--out", "{tmp}/lake"],
        ["app", "--port", "1"],
    ],
)
def test_commands_that_only_read_or_compute_refuse_a_missing_database(
    tmp_path: Path, args: list[str]
) -> None:
    db = tmp_path / "typo.duckdb"
    line = one_error_line(gpufleet(db, *[a.format(tmp=tmp_path) for a in args]))
    assert line == f"Error: Database `{db}` does not exist."
    assert not db.exists()
    assert not (tmp_path / "lake").exists()


def test_ingest_creates_the_database(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    done = gpufleet(db, "ingest", "files", str(late_maintenance(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert db.is_file()
    no_leftovers(db)


def test_a_link_planted_at_the_lock_file_is_refused_and_never_followed(
    db: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lock_path(db).symlink_to(victim)
    before = db.read_bytes()
    line = one_error_line(gpufleet(db, "compute", "--force"))
    assert "is a symbolic link" in line
    assert victim.read_text() == "precious"
    assert db.read_bytes() == before


KILL_AFTER_WRITING = """
import os, sys
from pipelines.serving import writing
with writing(sys.argv[1], command="gpufleet compute", create=False) as session:
    session.con.execute("CREATE TABLE half_written AS SELECT 1 AS x")
    os._exit(9)  # killed before publishing
"""


def test_a_killed_writer_leaves_the_database_as_it_was_and_its_copy_is_cleaned_up(db: Path) -> None:
    before = db.read_bytes()
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_WRITING, str(db)],
        env=ENV,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert killed.returncode == 9
    assert db.read_bytes() == before
    assert list(db.parent.glob(f".{db.name}.*{WORK_SUFFIX}"))  # its private copy is left behind ...
    done = gpufleet(db, "compute", "--force")
    assert done.returncode == 0, done.stderr
    no_leftovers(db)  # ... and removed by the next writer
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
    finally:
        con.close()
    assert "half_written" not in tables


UNCLEAN_OLD_WRITER = """
import os, sys
import duckdb
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE written_in_place AS SELECT 42 AS answer")
os._exit(0)  # no checkpoint: the row lives only in the WAL beside the file
"""


def test_a_database_written_in_place_with_its_wal_is_adopted_by_the_first_write(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.duckdb"
    open_store(db).close()
    subprocess.run(
        [sys.executable, "-c", UNCLEAN_OLD_WRITER, str(db)],
        env=ENV,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    assert db.with_name(db.name + ".wal").exists()
    done = gpufleet(db, "ingest", "files", str(late_maintenance(tmp_path)))
    assert done.returncode == 0, done.stderr
    no_leftovers(db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT answer FROM written_in_place").fetchall() == [(42,)]
        assert con.execute("SELECT count(*) FROM maintenance").fetchall()[0][0] == 1
    finally:
        con.close()


def test_an_unchanged_compute_publishes_nothing(db: Path) -> None:
    inode = db.stat().st_ino
    done = gpufleet(db, "compute")
    assert done.returncode == 0, done.stderr
    assert "Nothing changed" in done.stdout
    assert db.stat().st_ino == inode


def test_the_early_flush_of_a_copy_reports_what_it_met(tmp_path: Path) -> None:
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(b"x" * 1_000_000)
    assert EarlyFlush(copy).wait() is None
    error = EarlyFlush(tmp_path / "gone.duckdb").wait()
    assert isinstance(error, FileNotFoundError)


def test_a_write_whose_early_flush_failed_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fails the copy's write-back (EIO cannot be made here: the flush's error is
    set as the kernel would report it) stops the command before it publishes: PATH stays as it
    was, the private copy is removed, and no flush thread is left behind."""
    db = tmp_path / "fleet.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE kept AS SELECT 1 AS x")
    before = db.read_bytes()

    def failing_flush(self: EarlyFlush, path: Path) -> None:
        self.error = OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(EarlyFlush, "_flush", failing_flush)
    with (
        pytest.raises(StorageError, match="Input/output error"),
        writing(db, command="test") as session,
    ):
        session.con.execute("CREATE TABLE added AS SELECT 2 AS y")
    assert db.read_bytes() == before
    assert not list(tmp_path.glob(f"*{WORK_SUFFIX}"))
    assert not [t for t in threading.enumerate() if t.name == "gpufleet-early-flush"]


def test_a_write_after_a_plain_copy_flushes_early_and_publishes(tmp_path: Path) -> None:
    db = tmp_path / "fleet.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE kept AS SELECT 1 AS x")
    with writing(db, command="test") as session:
        session.con.execute("CREATE TABLE added AS SELECT 2 AS y")
        copied_with = session.cloned_with
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT y FROM added").fetchall() == [(2,)]
    assert copied_with in ("copy", "reflink")
    assert not [t for t in threading.enumerate() if t.name == "gpufleet-early-flush"]
