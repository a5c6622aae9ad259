"""Global options before or after the command; `--version`; the environment named in `--help`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import global_options_first
from pipelines.store import open_store
from testkit.cli import run_gpufleet

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["report", "--week", "last", "--db", "f.duckdb"],
            ["--db", "f.duckdb", "report", "--week", "last"],
        ),
        (["ingest", "files", "d", "--config=g.toml"], ["--config=g.toml", "ingest", "files", "d"]),
        (["--db", "a", "compute", "--config", "c"], ["--db", "a", "--config", "c", "compute"]),
        (["compute"], ["compute"]),
        # After `--` nothing is an option.
        (["app", "--", "--db", "x"], ["app", "--", "--db", "x"]),
    ],
)
def test_global_options_are_moved_before_the_command(argv, expected):
    assert global_options_first(argv) == expected


def test_db_and_config_after_the_command(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text("[stragglers]\nalpha = 0.05\n")
    result = run_gpufleet(tmp_path, "config", "--db", "elsewhere.duckdb", "--config", "s.toml")
    assert result.returncode == 0, result.stderr
    assert "# database: elsewhere.duckdb (--db)" in result.stdout
    assert "alpha = 0.05  # file s.toml" in result.stdout
    missing = run_gpufleet(tmp_path, "report", "--week", "2026-W48", "--db", "nothing-here.duckdb")
    assert missing.returncode == 2
    assert "nothing-here.duckdb" in missing.stderr and "Traceback" not in missing.stderr


def test_version_and_help() -> None:
    version = run_gpufleet(ROOT, "--version")
    assert version.returncode == 0
    assert version.stdout.strip().startswith("gpufleet 0.")
    help_text = " ".join(run_gpufleet(ROOT, "--help").stdout.split())
    assert "GPUFLEET_CONFIG" in help_text and "GPUFLEET_DB" in help_text


def test_output_lines_are_never_wrapped_however_narrow_the_terminal(tmp_path: Path) -> None:
    """A scheduled run has no terminal: rich would wrap at 80 columns (COLUMNS here), splitting a
    message or a path across lines of the log."""
    narrow = {"COLUMNS": "30"}
    long_name = "a-database-with-a-rather-long-name-to-wrap.duckdb"
    open_store(tmp_path / long_name).close()
    migrated = run_gpufleet(tmp_path, "migrate", "--db", long_name, env=narrow)
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines() == [
        "Nothing to upgrade: the database has the current landing schema."
    ]
    missing = run_gpufleet(tmp_path, "report", "--week", "2026-W48", "--db", "x" * 60, env=narrow)
    assert missing.returncode == 2
    assert any("x" * 60 in line for line in missing.stderr.splitlines()), missing.stderr
