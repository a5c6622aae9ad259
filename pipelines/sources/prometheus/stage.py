"""Staging: fetched chunks kept (spilled to temporary tables past a size) until the one load
transaction, then handed to the loader as one input per table, unique by natural key."""

from __future__ import annotations

from collections import defaultdict

import duckdb
import polars as pl

from pipelines.contract import NATURAL_KEYS
from pipelines.sql import bind, load_sql, quote_ident
from pipelines.store import ROW_COLUMN, TableInput

_STAGE_COLUMNS = {
    "gpu_samples": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, gpu SMALLINT, uuid VARCHAR, metric VARCHAR, value DOUBLE",
    "gpu_instance_samples": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, gpu SMALLINT, uuid VARCHAR, gpu_i_id SMALLINT, "
    "gpu_i_profile VARCHAR, job_id VARCHAR, metric VARCHAR, value DOUBLE",
    "node_samples": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, metric VARCHAR, value DOUBLE",
    "node_conditions": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, condition VARCHAR, status VARCHAR, reason VARCHAR, message VARCHAR",
    # `since`: set on last-XID gauge events only (see queries/ingest/xid_events_staged.sql).
    "gpu_events": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, gpu SMALLINT, uuid VARCHAR, kind VARCHAR, code INTEGER, message VARCHAR, source VARCHAR, since TIMESTAMPTZ",
}


# Tables whose chunks are deduplicated as they land (one query per metric, chunks disjoint
# in time), so the staged rows are already unique by natural key.
_UNIQUE_PER_CHUNK = frozenset({"gpu_samples", "gpu_instance_samples", "node_samples"})


class Stage:
    """Collects fetched chunks until the one load transaction.

    Frames are buffered in memory and spilled to temporary tables every
    `SPILL_ROWS` rows, so a long backfill does not have to fit in memory.
    """

    SPILL_ROWS = 2_000_000

    def __init__(self, con: duckdb.DuckDBPyConnection, cluster: str | None = None) -> None:
        self.con = con
        self.cluster = cluster  # the ingest's `--cluster`
        self.rows: dict[str, int] = defaultdict(int)
        self.buffer: dict[str, list[pl.DataFrame]] = defaultdict(list)
        self.buffered: dict[str, int] = defaultdict(int)
        self.spilled: set[str] = set()
        self.views: list[str] = []
        self.finals: list[str] = []

    def add(self, table: str, frame: pl.DataFrame) -> None:
        if frame.is_empty():
            return
        frame = frame.with_row_index(ROW_COLUMN, offset=self.rows[table] + 1)
        self.buffer[table].append(frame)
        self.buffered[table] += frame.height
        self.rows[table] += frame.height
        if self.buffered[table] >= self.SPILL_ROWS:
            self._spill(table)

    def _frame(self, table: str) -> pl.DataFrame:
        frame = pl.concat(self.buffer[table], how="diagonal_relaxed")
        self.buffer[table], self.buffered[table] = [], 0
        return frame

    def _spill(self, table: str) -> None:
        if not self.buffer[table]:
            return
        frame = self._frame(table)
        if table not in self.spilled:
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE __stage_{table} ({_STAGE_COLUMNS[table]}, {ROW_COLUMN} BIGINT)"
            )
            self.spilled.add(table)
        self.con.register("__chunk", frame)
        try:
            columns = ", ".join(quote_ident(c) for c in frame.columns)
            self.con.execute(
                f"INSERT INTO __stage_{table} ({columns}) SELECT {columns} FROM __chunk"
            )
        finally:
            self.con.unregister("__chunk")

    def inputs(self, origin: str) -> list[TableInput]:
        items = []
        for table in _STAGE_COLUMNS:
            if not self.rows[table]:
                continue
            if table in self.spilled:
                self._spill(table)
                source = f"__stage_{table}"
            else:
                source = f"__staged_{table}"
                self.con.register(source, self._frame(table))
                self.views.append(source)
            if table in _UNIQUE_PER_CHUNK:
                items.append(
                    TableInput(
                        table, self.con.sql(f"SELECT * FROM {source}"), origin, position="row"
                    )
                )
                continue
            # The same event or condition seen by two queries lands once.
            # Materialised once: the loader scans its input twice (validate, merge).
            if table == "gpu_events":
                self.con.execute(
                    f"CREATE OR REPLACE TEMP VIEW __gpu_events_staged AS FROM {source}"
                )
                unique = load_sql("ingest/xid_events_staged")
                params = bind(unique, {"cluster": self.cluster})
            else:
                keys = ", ".join(quote_ident(k) for k in NATURAL_KEYS[table])
                unique = (
                    f"SELECT * FROM {source} "
                    f"QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY {ROW_COLUMN}) = 1"
                )
                params = {}
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE __final_{table} AS {unique}", params or None
            )
            self.con.execute("DROP VIEW IF EXISTS __gpu_events_staged")
            self.finals.append(f"__final_{table}")
            relation = self.con.sql(f"SELECT * FROM __final_{table}")
            items.append(TableInput(table, relation, origin, position="row"))
        return items

    def drop(self) -> None:
        for view in self.views:
            self.con.unregister(view)
        for table in self.spilled:
            self.con.execute(f"DROP TABLE IF EXISTS __stage_{table}")
        for final in self.finals:
            self.con.execute(f"DROP TABLE IF EXISTS {final}")
