"""Stages that exist once their commands do: report, export, the app's page queries."""

from __future__ import annotations

from pathlib import Path

from benchmarks.app_queries import pages

ROOT = Path(__file__).resolve().parent.parent


def _cli_commands() -> set[str]:
    from pipelines.cli import app

    return {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}


def optional_stages(
    cli: list[str], py: list[str], workdir: Path, week: str
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(stages to run, names of stages not available in this checkout)."""
    stages: list[tuple[str, list[str]]] = []
    missing: list[str] = []
    commands = _cli_commands()
    if "report" in commands:
        stages.append(
            ("report", cli + ["report", "--week", week, "--out", str(workdir / "report.md")])
        )
    else:
        missing.append("report")
    if "export" in commands:
        stages.append(
            (
                "export",
                cli
                + [
                    "export",
                    "--week",
                    week,
                    "--format",
                    "parquet",
                    "--out",
                    str(workdir / "export"),
                ],
            )
        )
    else:
        missing.append("export")
    found = pages(ROOT) if (ROOT / "queries" / "app").is_dir() else {}
    for page in found:
        stages.append((f"app_{page}", py + ["benchmarks.app_queries", page, week]))
    if not found:
        missing.append("app pages")
    return stages, missing
