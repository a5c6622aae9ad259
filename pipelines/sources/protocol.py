"""What every source provides: the one interface `gpufleet ingest <name>` runs.

A source reads one outside format and hands the landing tables' inputs (`store.TableInput`) to
`store.load_batch`, which validates them in full and loads them in one transaction. Each source
module ends with a class that subclasses `Source` and fills in the members below; its per-run
options (a file, a URL, a delimiter) are the class's fields, set by the command line. See
"Adding a source" in docs/sources.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import duckdb

from pipelines.store import LoadResult


@dataclass
class SourceReport:
    """What one ingest run did, in the same shape for every source."""

    source: str
    """The run's `load_log.source` (`sacct:jobs.txt`, `prometheus:https://prom:9090`)."""
    loads: list[LoadResult]
    """One row per landing table of the batch: rows read, new, updated, unchanged."""
    warnings: list[str] = field(default_factory=list)
    """Plain sentences for the operator: what was read but not loaded, and why."""
    notes: list[str] = field(default_factory=list)
    """What was read, beyond the rows loaded (`1,204 Xid lines read.`)."""
    detail: Any = None
    """The source's own account, for what only it has (the Prometheus ingest's requests,
    samples and partial answers: `prometheus.IngestReport`)."""


class Source(ABC):
    """One source: a format read, the landing tables it fills, where it resumes, one report."""

    name: ClassVar[str]
    """The command (`gpufleet ingest <name>`) and the first part of its `load_log.source`."""

    reads: ClassVar[str]
    """What it reads, in a few words (the first column of docs/sources.md's table)."""

    tables: ClassVar[tuple[str, ...]]
    """The landing tables its inputs to `store.load_batch` fill (`queries/schema/landing.sql`)."""

    settings_section: ClassVar[str | None] = None
    """The `gpufleet.toml` section it reads (`prometheus`), whose model is its `settings` field;
    None when it reads no settings (its options all come from the command line). A source never
    reads `gpufleet.toml` or `GPUFLEET_*` variables itself: the command line passes the section."""

    cluster: str | None
    """The ingest's `--cluster`: the cluster every record of the run belongs to. None: each record's
    own `cluster`, else its node's or job's (`pipelines.cluster_resolution`). Every source has it
    as a dataclass field defaulting to None."""

    @property
    @abstractmethod
    def source_id(self) -> str:
        """This run's `load_log.source`: the name and what was read (a file name, a node, a URL).

        Watermarks are kept per source id, so two runs over the same input resume together."""

    @abstractmethod
    def watermark(self, con: duckdb.DuckDBPyConnection) -> datetime | None:
        """Where the next run starts reading: the oldest stored watermark of this source id.

        None for a source that reads what it is given whole (a file): loads are idempotent by
        natural key, so reading the same file again changes nothing."""

    @abstractmethod
    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        """Read, build the landing inputs and load them with `store.load_batch` (one transaction,
        all or nothing; a bad cell raises `InputError` naming file, line or row, and column)."""


class WholeFileSource(Source):
    """A source that reads one file (or folder) whole each run: no watermark, since loads are
    idempotent by natural key; its id names the file. Subclasses are dataclasses with a `path`."""

    path: Path

    @property
    def source_id(self) -> str:
        return f"{self.name}:{Path(self.path).name}"

    def watermark(self, con: duckdb.DuckDBPyConnection) -> None:
        return None
