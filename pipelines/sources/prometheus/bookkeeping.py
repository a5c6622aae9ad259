"""The bookkeeping tables of a source: per query, the watermark (`ingest_watermarks`, the end
of the last chunk loaded) and the windows loaded from partial answers (`ingest_incomplete`),
read before a run fetches and written in its load transaction, with a line in
`ingest_partial_log` when the run had partial answers."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from pipelines.sources.prometheus.plan import from_ms
from pipelines.sources.prometheus.report import IngestReport
from pipelines.sql import execute, execute_script


def read_incomplete(
    con: duckdb.DuckDBPyConnection, source: str
) -> dict[str, list[tuple[datetime, datetime]]]:
    """Windows of `source` loaded from partial answers, per query key, oldest first."""
    rows = execute(con, "ingest/incomplete_windows", {"source": source}).fetchall()
    out: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for key, a, b in rows:
        out[key].append((a, b))
    return dict(out)


def read_watermarks(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, datetime]:
    rows = execute(con, "ingest/watermarks", {"source": source}).fetchall()
    return {k: v for k, v in rows}


@dataclass
class Bookkeeping:
    """What one run of `source` changes in the bookkeeping tables, written by `write`."""

    source: str
    refilled: list[tuple[str, datetime]] = field(default_factory=list)
    """(query key, start) of recorded windows that came back complete: deleted."""
    still_incomplete: list[tuple[str, datetime, datetime, str]] = field(default_factory=list)
    """(query key, start, end, what the store said) of windows to (re)record as incomplete."""
    new_marks: dict[str, datetime] = field(default_factory=dict)

    def refetched(
        self, key: str, start: datetime, end: datetime, partial: list[tuple[int, int, str]]
    ) -> None:
        """A recorded window fetched again: filled, or still incomplete with what the store
        said first."""
        if partial:
            self.still_incomplete.extend((key, start, end, p[2]) for p in partial[:1])
        else:
            self.refilled.append((key, start))

    def fetched(
        self,
        key: str,
        start_ms: int,
        reached_ms: int,
        partial: list[tuple[int, int, str]],
        allow_partial: bool,
    ) -> None:
        """A query fetched from `start_ms`: its watermark moves to how far it got, and with
        `allow_partial` its partial chunks (loaded) are recorded as incomplete."""
        if allow_partial:
            self.still_incomplete.extend(
                (key, from_ms(a), from_ms(b), said) for a, b, said in partial
            )
        if reached_ms > start_ms:
            self.new_marks[key] = from_ms(reached_ms)

    def write(self, con: duckdb.DuckDBPyConnection, report: IngestReport) -> None:
        source = self.source
        for key, a in self.refilled:
            execute(con, "ingest/incomplete_forget", {"source": source, "key": key, "start_ts": a})
        for key, a, b, said in self.still_incomplete:
            window = {"source": source, "key": key, "start_ts": a}
            execute(con, "ingest/incomplete_forget", window)
            execute(con, "ingest/incomplete_add", window | {"end_ts": b, "said": said})
        if report.partial:
            # Kept with the load_log batch this transaction adds (the same id).
            execute(
                con,
                "ingest/partial_log_add",
                {
                    "source": source,
                    "partial": len(report.partial),
                    "loaded": len(report.partial_loaded),
                    "said": report.partial[0].warning,
                },
            )
        for key, mark in self.new_marks.items():
            execute_script(
                con, "ingest/watermark_set", {"source": source, "key": key, "mark": mark}
            )
