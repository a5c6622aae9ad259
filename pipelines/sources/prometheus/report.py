"""What a run reports: per query, the chunks the store answered only in part, and the one
message that ends a run with partial answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pipelines.store import LoadResult


@dataclass
class QueryReport:
    key: str
    start: datetime
    end: datetime
    samples: int = 0
    series: int = 0


@dataclass(frozen=True)
class PartialChunk:
    """A chunk `[start, end)` of one query the store kept answering only in part."""

    query_key: str
    start: datetime
    end: datetime
    warning: str
    """What the store said (its first `warnings` entry, or `isPartial: true`)."""
    loaded: bool
    """True when what came was loaded and the window recorded as incomplete (--allow-partial)."""


@dataclass
class IngestReport:
    """What one run fetched and loaded; `warnings` are plain sentences for the operator."""

    loads: list[LoadResult] = field(default_factory=list)
    queries: list[QueryReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    partial: list[PartialChunk] = field(default_factory=list)
    """Chunks still partial after the retries: loaded as incomplete, or left for the next run."""
    refilled: int = 0
    """Windows recorded as incomplete by an earlier run that came back complete this run."""
    samples_fetched: int = 0
    requests_made: int = 0
    seconds: float = 0.0
    history: list[tuple[str, int]] = field(default_factory=list)
    """(PromQL, evaluation time in ms) of every query sent."""

    @property
    def partial_refused(self) -> list[PartialChunk]:
        return [p for p in self.partial if not p.loaded]

    @property
    def partial_loaded(self) -> list[PartialChunk]:
        return [p for p in self.partial if p.loaded]


def partial_summary(report: IngestReport) -> tuple[str, str]:
    """(title, hint) of the one message that ends a run with partial answers."""
    said = report.partial[0].warning
    keys = list(dict.fromkeys(p.query_key for p in report.partial))
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    refused, loaded = report.partial_refused, report.partial_loaded
    parts = []
    if loaded:
        parts.append(
            f"{len(loaded):,} {_were(len(loaded))} loaded as incomplete (--allow-partial) and will be "
            "fetched again"
        )
    if refused:
        parts.append(
            f"{len(refused):,} {_were(len(refused))} not loaded and will be fetched again by the next run"
        )
    title = (
        f"The store answered {count(len(report.partial), 'chunk')} only in part after the retries ({shown}): "
        f'it said "{said}". {"; ".join(parts)}.'
    )
    if refused:
        hint = (
            "Everything else was loaded. Run again when the store is healthy (the next run fetches those "
            "windows), or pass --allow-partial to load what it answers and fill it later."
        )
    else:
        hint = "The dashboard's data status and the report list the incomplete windows until a run fills them."
    return title, hint


def count(n: int, noun: str) -> str:
    """`1 chunk`, `2 chunks`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _were(n: int) -> str:
    return "was" if n == 1 else "were"
