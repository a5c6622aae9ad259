"""Stages that exist once their commands do: report, export, the app's page queries."""

from __future__ import annotations

from pathlib import Path


def optional_stages(cli: list[str], py: list[str], workdir: Path, week: str) -> list[tuple[str, list[str]]]:
    return []
