"""Files written next to user-chosen paths (export, report, demo): never through a planted link,
never over a week that has data with an empty one, never from derived tables older than the data."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.errors import GpufleetError
from pipelines.export import LAKE_MARKER, export_week
from pipelines.simulate import OUTPUT_TABLES
from pipelines.sources.files import ingest_files
from pipelines.store import connect, open_store
from pipelines.weeks import parse_week
from testkit.cli import run_gpufleet
from tests.report_fixture import simulated_fleet

W48 = parse_week("2026-W48")
VICTIM_TEXT = "precious data that must not change\n"


def victim(tmp_path: Path, name: str = "victim.txt") -> Path:
    path = tmp_path / "elsewhere" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(VICTIM_TEXT)
    return path


def lake_digests(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in (".parquet", ".csv")
    }


def export(db: Path, out: Path, *extra: str, week: str = "2026-W48"):
    return run_gpufleet(
        out.parent, "--db", str(db), "export", "--week", week, "--out", str(out), *extra
    )


def one_line_error(result) -> str:
    """The CLI's error: exit 2, `Error: ...`, no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("Error: ")
    return " ".join(result.stderr.split())


# ---- export: planted links -------------------------------------------------------------------


@pytest.mark.parametrize("planted", [".export.lock", LAKE_MARKER])
def test_export_refuses_a_link_in_place_of_its_bookkeeping_files(fixture_db, tmp_path, planted):
    out = tmp_path / "lake"
    out.mkdir()
    target = victim(tmp_path)
    (out / planted).symlink_to(target)
    message = one_line_error(export(fixture_db, out))
    assert f"{out / planted}" in message
    assert target.read_text() == VICTIM_TEXT
    assert not lake_digests(out)


@pytest.mark.parametrize(
    "planted",
    [
        "job_outcomes",  # a table folder
        "node_availability_daily/cluster=c1/day=2026-11-23",  # a partition folder of the week
        "weekly_summary/cluster=c1",  # an inner partition folder
    ],
)
def test_export_refuses_a_linked_folder_and_leaves_its_target_alone(fixture_db, tmp_path, planted):
    out = tmp_path / "lake"
    assert export(fixture_db, out).returncode == 0
    link = out / planted
    if link.exists():
        import shutil

        shutil.rmtree(link)
    target_dir = tmp_path / "elsewhere" / "folder"
    target_dir.mkdir(parents=True)
    (target_dir / "data_0.parquet").write_text(VICTIM_TEXT)
    (target_dir / "keep.txt").write_text(VICTIM_TEXT)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target_dir, target_is_directory=True)
    message = one_line_error(export(fixture_db, out))
    assert "is a link or a file where the export keeps a folder" in message
    assert sorted(p.name for p in target_dir.iterdir()) == ["data_0.parquet", "keep.txt"]
    assert all(p.read_text() == VICTIM_TEXT for p in target_dir.iterdir())


def test_export_replaces_a_linked_data_file_instead_of_writing_through_it(fixture_db, tmp_path):
    out = tmp_path / "lake"
    assert export(fixture_db, out).returncode == 0
    data = out / "weekly_summary" / "cluster=c1" / "week=2026-W48" / "data_0.parquet"
    data.unlink()
    target = victim(tmp_path)
    data.symlink_to(target)
    assert export(fixture_db, out).returncode == 0
    assert target.read_text() == VICTIM_TEXT
    assert data.is_file() and not data.is_symlink()


def test_export_staging_names_are_random(fixture_db, tmp_path):
    # A link planted where an earlier run staged (a predictable name) is neither followed nor removed.
    out = tmp_path / "lake"
    out.mkdir()
    target_dir = tmp_path / "elsewhere"
    target_dir.mkdir()
    (target_dir / "keep.txt").write_text(VICTIM_TEXT)
    (out / ".staging-planted").symlink_to(target_dir, target_is_directory=True)
    (out / LAKE_MARKER).write_text("")
    assert export(fixture_db, out).returncode == 0
    assert (target_dir / "keep.txt").read_text() == VICTIM_TEXT


# ---- export: where --out may point -----------------------------------------------------------


def test_the_root_folder_is_refused_before_anything_is_written():
    # Checked at the functions that only look (a regression must not let a test write into `/`).
    from pipelines.export import _check_out
    from pipelines.simulator.output import check_output_folder

    for check in (_check_out, check_output_folder):
        with pytest.raises(GpufleetError, match="is the root folder"):
            check(Path("/"))


def test_export_refuses_a_file_and_a_foreign_folder(fixture_db, tmp_path):
    a_file = victim(tmp_path, "notes.txt")
    assert "is a file, not a folder" in one_line_error(export(fixture_db, a_file))
    assert a_file.read_text() == VICTIM_TEXT
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text(VICTIM_TEXT)
    assert "holds other files and is not a gpufleet lake" in one_line_error(
        export(fixture_db, home)
    )
    assert sorted(p.name for p in home.iterdir()) == ["thesis.tex"]


def test_export_marks_a_new_lake_and_accepts_it_and_an_older_unmarked_one(fixture_db, tmp_path):
    out = tmp_path / "lake"
    assert export(fixture_db, out).returncode == 0
    assert (out / LAKE_MARKER).is_file()
    (out / "README.txt").write_text("notes kept next to the data")  # a marked lake may hold more
    assert export(fixture_db, out).returncode == 0
    # A lake exported before the marker existed holds only export tables: still accepted.
    (out / LAKE_MARKER).unlink()
    (out / "README.txt").unlink()
    assert export(fixture_db, out).returncode == 0
    assert (out / LAKE_MARKER).is_file()


# ---- export: never an empty week over data, never stale numbers -------------------------------


def test_export_from_an_empty_database_refuses_to_empty_the_week(fixture_db, tmp_path):
    out = tmp_path / "lake"
    assert export(fixture_db, out).returncode == 0
    before = lake_digests(out)
    assert before
    empty = tmp_path / "empty.duckdb"
    con = open_store(empty)
    compute(con, Settings())  # every derived table exists, with nothing in it
    con.close()
    message = one_line_error(export(empty, out))
    assert f"`{empty}` has nothing computed for 2026-W48" in message
    assert "--allow-empty" in message
    assert lake_digests(out) == before
    # Asked for explicitly, the week is emptied.
    assert export(empty, out, "--allow-empty").returncode == 0
    assert not [p for p in lake_digests(out) if "2026-W48" in p or "2026-11-2" in p]


def test_a_week_the_database_does_not_have_is_refused(fixture_db, tmp_path):
    message = one_line_error(export(fixture_db, tmp_path / "lake", week="2026-W50"))
    assert "has nothing computed for 2026-W50" in message


def test_export_refuses_stale_derived_tables_and_report_warns(tmp_path):
    db = simulated_fleet(tmp_path / "fleet.duckdb")
    out = tmp_path / "lake"
    assert export(db, out).returncode == 0
    before = lake_digests(out)
    # A new node lands: the derived tables no longer describe the raw data.
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "nodes.csv").write_text("node,cluster,gpu_count\ngpu-new,train-use1-a,8\n")
    con = open_store(db)
    ingest_files(con, extra)
    con.close()
    message = one_line_error(export(db, out))
    assert "changed since the last compute" in message and "--stale-ok" in message
    assert lake_digests(out) == before
    report = run_gpufleet(tmp_path, "--db", str(db), "report", "--week", "2026-W48")
    assert report.returncode == 0, report.stderr
    assert "Raw data changed since the last compute" in " ".join(report.stderr.split())
    assert export(db, out, "--stale-ok").returncode == 0
    # Computed again, and a re-ingest of the same file adds nothing: current, no warning.
    con = open_store(db)
    compute(con, Settings())
    ingest_files(con, extra)
    con.close()
    assert export(db, out).returncode == 0
    report = run_gpufleet(tmp_path, "--db", str(db), "report", "--week", "2026-W48")
    assert "changed since the last compute" not in report.stderr


# ---- report --out ----------------------------------------------------------------------------


def test_report_does_not_write_through_a_planted_temporary_name_or_link(fixture_db, tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    target = victim(tmp_path)
    # The fixed temporary name the report once used, and the report's own name, both planted.
    (folder / ".review.md.tmp").symlink_to(target)
    (folder / "review.md").symlink_to(victim(tmp_path, "victim2.txt"))
    result = run_gpufleet(
        tmp_path,
        "--db",
        str(fixture_db),
        "report",
        "--week",
        "2026-W48",
        "--out",
        str(folder / "review.md"),
    )
    assert result.returncode == 0, result.stderr
    assert target.read_text() == VICTIM_TEXT
    assert (tmp_path / "elsewhere" / "victim2.txt").read_text() == VICTIM_TEXT
    written = folder / "review.md"
    assert written.is_file() and not written.is_symlink() and "Goodput" in written.read_text()
    assert oct(written.stat().st_mode & 0o777) == "0o644"
    assert sorted(p.name for p in folder.iterdir()) == [".review.md.tmp", "review.md"]


def test_report_out_at_a_folder_is_a_clean_error(fixture_db, tmp_path):
    # `/` is a folder too; a test never points a writing command at it.
    result = run_gpufleet(
        tmp_path, "--db", str(fixture_db), "report", "--week", "2026-W48", "--out", str(tmp_path)
    )
    assert "is a folder" in one_line_error(result)


# ---- demo ------------------------------------------------------------------------------------


def test_demo_replaces_planted_links_in_its_data_folder_instead_of_writing_through_them(tmp_path):
    data = tmp_path / "demo-data"
    data.mkdir()
    targets = {}
    for name in OUTPUT_TABLES:
        targets[name] = victim(tmp_path, f"{name}.victim")
        (data / f"{name}.parquet").symlink_to(targets[name])
    db = tmp_path / "fleet.duckdb"
    result = run_gpufleet(
        tmp_path,
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
    )
    assert result.returncode == 0, result.stderr
    for name, target in targets.items():
        assert target.read_text() == VICTIM_TEXT, name
        assert (data / f"{name}.parquet").is_file() and not (data / f"{name}.parquet").is_symlink()


def test_demo_refuses_a_file_as_its_data_folder(tmp_path):
    data = victim(tmp_path, "notes.txt")
    result = run_gpufleet(
        tmp_path,
        "--db",
        str(tmp_path / "fleet.duckdb"),
        "demo",
        "--no-app",
        "--nodes",
        "1",
        "--days",
        "1",
        "--data",
        str(data),
    )
    assert "is a file, not a folder" in one_line_error(result)
    assert data.read_text() == VICTIM_TEXT


def test_export_week_keeps_a_link_planted_at_a_stale_partition(fixture_db, tmp_path):
    # A link where a partition of the week that the database no longer has would be (cluster c9 on
    # a W48 day) is neither followed nor deleted through.
    out = tmp_path / "lake"
    con = connect(fixture_db, read_only=True)
    export_week(con, W48, out, tables=["node_availability_daily"])
    target_dir = tmp_path / "elsewhere"
    target_dir.mkdir()
    (target_dir / "keep.txt").write_text(VICTIM_TEXT)
    (out / "node_availability_daily" / "cluster=c9").mkdir()
    os.symlink(
        target_dir,
        out / "node_availability_daily" / "cluster=c9" / "day=2026-11-24",
        target_is_directory=True,
    )
    export_week(con, W48, out, tables=["node_availability_daily"])
    con.close()
    assert (target_dir / "keep.txt").read_text() == VICTIM_TEXT


def test_export_week_refuses_directly_when_given_an_empty_database(tmp_path):
    empty = tmp_path / "empty.duckdb"
    con = open_store(empty)
    compute(con, Settings())
    with pytest.raises(GpufleetError, match="has nothing computed for 2026-W48"):
        export_week(con, W48, tmp_path / "lake")
    con.close()
