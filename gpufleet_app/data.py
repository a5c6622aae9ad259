"""Read-only database access for the app: short-lived connections and cached results.

gpufleet's writers never write the database in place: each publishes a new file at the
path (pipelines/serving.py), so the app reads while an ingest or compute runs. A page
run opens one read-only connection to the newest published version on its first cache
miss and closes it when the run ends. Results are cached by (query, parameters, the
file's fingerprint: inode, size and mtime of the file and of its WAL), so a publish
invalidates them. Only another program holding the file open for writing can keep
the app out; then it shows the last numbers it read (and says who holds the file).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, cast

import duckdb
import polars as pl
import streamlit as st

from pipelines.config import db_path
from pipelines.errors import DatabaseBusyError, DatabaseMissingError, GpufleetError
from pipelines.serving import open_snapshot
from pipelines.sql import query_pl

Fingerprint = tuple[int, int, int, int, int]

READ_RETRIES = 3
"""Retries while another program holds the file open for writing (0.2 + 0.4 + 0.8 s), then
show the last numbers read. gpufleet's own writers never hold it."""

LAST_GOOD_ENTRIES = 512

COMPUTE_HINT = "Run `gpufleet compute` (or `gpufleet demo --no-app` to build a demo fleet)."


def database_path() -> Path:
    """`$GPUFLEET_DB`, else `fleet.duckdb`, as the CLI resolves it."""
    return db_path(None).resolve()


def fingerprint(path: Path) -> Fingerprint | None:
    """(inode, size, mtime) of the file and (size, mtime) of its WAL; None when there is no file."""
    try:
        main = path.stat()
    except FileNotFoundError:
        return None
    try:
        wal = path.with_name(path.name + ".wal").stat()
        wal_sig = (wal.st_size, wal.st_mtime_ns)
    except FileNotFoundError:
        wal_sig = (0, 0)
    return (main.st_ino, main.st_size, main.st_mtime_ns, *wal_sig)


class Reader:
    """One page run's view of the database: opens a read-only connection lazily, once."""

    def __init__(self, path: Path, retries: int = READ_RETRIES) -> None:
        self.path = path
        self.retries = retries
        self.fingerprint = fingerprint(path)
        self.stale = False
        """True when another program held the file open for writing and some results shown are from before."""
        self.busy_title: str | None = None
        """What holds the file (names the process), when `stale`."""
        self._con: duckdb.DuckDBPyConnection | None = None
        self._busy: DatabaseBusyError | None = None

    def connection(self) -> duckdb.DuckDBPyConnection:
        if self.fingerprint is None:
            raise DatabaseMissingError(
                f"Database `{self.path}` does not exist.",
                "Create it with `gpufleet demo --no-app`, or point GPUFLEET_DB at your database.",
            )
        if self._busy is not None:
            raise self._busy
        if self._con is None:
            delay = 0.2
            for attempt in range(self.retries + 1):
                try:
                    self._con = open_snapshot(self.path)
                    break
                except DatabaseBusyError as e:
                    if attempt == self.retries:
                        self._busy = e
                        raise
                    time.sleep(delay)
                    delay *= 2
        return cast(duckdb.DuckDBPyConnection, self._con)  # set above, or the loop raised

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def query(self, name: str, params: dict[str, Any] | None = None) -> pl.DataFrame:
        """Rows of `queries/app/<name>.sql`, from the cache when the file has not changed."""
        params = dict(params or {})
        key = (str(self.path), name, _freeze(params))
        try:
            frame = _cached_query(name, params, str(self.path), self.fingerprint, self)
        except DatabaseBusyError as e:
            last_good = _last_good_get(key)
            if last_good is None:
                raise DatabaseBusyError(
                    e.title,
                    "Reload the page once it is closed; the dashboard reads the file again then.",
                ) from None
            self.stale = True
            self.busy_title = e.title
            return last_good
        _last_good_put(key, frame)
        return frame


@st.cache_data(show_spinner=False, max_entries=2048)
def _cached_query(
    name: str, params: dict[str, Any], db: str, db_fingerprint: Fingerprint | None, _reader: Reader
) -> pl.DataFrame:
    # Keyed by (name, params, db path, fingerprint); `_reader` is not hashed (leading underscore).
    return _run(_reader, name, params)


def _run(reader: Reader, name: str, params: dict[str, Any]) -> pl.DataFrame:
    try:
        return query_pl(reader.connection(), f"app/{name}", params)
    except duckdb.CatalogException as e:
        raise GpufleetError(
            "The database has not been computed yet (a derived table is missing).", COMPUTE_HINT
        ) from e
    except duckdb.BinderException as e:
        # A derived table from an older gpufleet lacks a column this version reads.
        raise GpufleetError(
            "The database was computed by an older gpufleet (a derived table lacks a column).",
            "Run `gpufleet compute --force` to rebuild the derived tables.",
        ) from e


_last_good: OrderedDict[tuple, pl.DataFrame] = OrderedDict()
_last_good_lock = threading.Lock()


def _last_good_get(key: tuple) -> pl.DataFrame | None:
    with _last_good_lock:
        return _last_good.get(key)


def _last_good_put(key: tuple, frame: pl.DataFrame) -> None:
    with _last_good_lock:
        _last_good[key] = frame
        _last_good.move_to_end(key)
        while len(_last_good) > LAST_GOOD_ENTRIES:
            _last_good.popitem(last=False)


def _freeze(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


_current: ContextVar[Reader | None] = ContextVar("gpufleet_reader", default=None)


@contextmanager
def page_run(path: Path | None = None) -> Iterator[Reader]:
    """The reader for one page run; its connection is closed when the run ends."""
    reader = Reader(path or database_path())
    token = _current.set(reader)
    try:
        yield reader
    finally:
        _current.reset(token)
        reader.close()


def reader() -> Reader:
    current = _current.get()
    if current is None:
        raise RuntimeError("gpufleet_app.data.reader() called outside page_run().")
    return current


def query(name: str, **params: Any) -> pl.DataFrame:
    """Rows of `queries/app/<name>.sql` with `params` bound, for the current page run."""
    return reader().query(name, params)
