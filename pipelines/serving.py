"""One database path, read while it is written: writers publish, readers keep their version.

DuckDB lets one process write a file only while no other process has it open, even
read-only. So no gpufleet command ever writes the database at `--db PATH` in place:

- Every writing command (each ingest, compute, demo) takes one advisory lock, `flock`
  on the sidecar `.<name>.lock` beside PATH, waiting for it the same bounded way
  (`GPUFLEET_LOCK_WAIT_S`). The lock file names the command that holds it.
- It copies PATH into a private folder beside it (same file system; a reflink clone
  where the file system supports one), works on that copy, commits, CHECKPOINTs, and
  renames the copy onto PATH (`os.replace`, then fsync of the folder). A failed or
  killed command leaves PATH exactly as it was.
- A reader that has PATH open (a notebook's `duckdb.connect(PATH, read_only=True)`,
  the dashboard, a BI tool) keeps the file it opened: a complete version that no one
  writes. A new connection opens the newest published version.

An old database at PATH needs no migration: the first write copies it like any other.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import stat
import struct
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.errors import (
    DatabaseBusyError,
    DatabaseCorruptError,
    DatabaseMissingError,
    GpufleetError,
    OutOfMemoryError,
    StorageError,
)
from pipelines.sql import execute, quote_ident

LOCK_WAIT_S = 120.0
"""How long a writing command waits for another one to finish (`GPUFLEET_LOCK_WAIT_S`)."""

WORK_SUFFIX = ".writing"

_FICLONE = 0x40049409
"""ioctl that shares a file's blocks with a new file (btrfs, XFS, bcachefs, ZFS 2.2)."""


def lock_path(db: Path) -> Path:
    return db.with_name(f".{db.name}.lock")


def lock_wait_s() -> float:
    raw = os.environ.get("GPUFLEET_LOCK_WAIT_S")
    if raw is None:
        return LOCK_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise GpufleetError(
            f"GPUFLEET_LOCK_WAIT_S must be a number of seconds >= 0, not `{raw}`.",
            "Unset it for the default (120 s).",
        )
    return value


def process_name(pid: int) -> str:
    """The command line of a running process, or `process <pid>` when it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"process {pid}"
    words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
    if not words:
        return f"process {pid}"
    text = " ".join(words)
    return text if len(text) <= 160 else text[:157] + "..."


def duckdb_writer_pid(db: Path) -> int | None:
    """The pid of a process holding DuckDB's write lock on `db` (an fcntl lock), if any.

    gpufleet never opens PATH for writing, so such a holder is another program (or an
    older gpufleet) with a read-write connection.
    """
    try:
        fd = os.open(db, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        # struct flock: l_type, l_whence, l_start, l_len, l_pid (+ padding). A read lock
        # conflicts only with a write lock, so read-only connections do not show up.
        query = struct.pack("hhqqi4x", fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        l_type, _, _, _, pid = struct.unpack("hhqqi4x", answer)
        return pid if l_type != fcntl.F_UNLCK and pid > 0 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def foreign_writer_error(db: Path, pid: int | None) -> DatabaseBusyError:
    holder = f"{process_name(pid)} (pid {pid})" if pid else "another process"
    return DatabaseBusyError(
        f"Database `{db}` is held open for writing by {holder}.",
        "gpufleet commands never open it for writing; close that program's read-write connection "
        "(open it with read_only=True), then run the command again.",
    )


# ---- the writers' lock ----------------------------------------------------------------------


def _open_lock_file(path: Path) -> int:
    try:
        # O_NOFOLLOW: a link planted at the lock's name is refused, never followed. No O_TRUNC.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise StorageError(
                f"`{path}` is a symbolic link; refusing to use it as the database's lock file.",
                "Remove the link; gpufleet creates the lock file itself.",
            ) from None
        raise storage_error(e, path.parent, "create the lock file in") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StorageError(
            f"`{path}` is not a regular file.", "Remove it; gpufleet creates the lock file itself."
        )
    return fd


def _holder(fd: int) -> str:
    """What the lock file says about the command holding it."""
    try:
        text = os.pread(fd, 512, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text or "another gpufleet command"


@contextmanager
def writer_lock(db: Path, command: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold the database's one writer lock; wait (bounded) while another command holds it."""
    wait_s = lock_wait_s() if wait_s is None else wait_s
    fd = _open_lock_file(lock_path(db))
    try:
        deadline = time.monotonic() + wait_s
        delay = 0.1
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DatabaseBusyError(
                        f"Database `{db}` is being written by {_holder(fd)}; waited {wait_s:.0f} s.",
                        "Run again when it has finished (readers are never blocked by it), or raise "
                        "GPUFLEET_LOCK_WAIT_S.",
                    ) from None
                time.sleep(min(delay, max(deadline - time.monotonic(), 0.01)))
                delay = min(delay * 2, 2.0)
        since = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        note = f"`{command}` (pid {os.getpid()}, since {since})".encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, note, 0)
        except OSError:
            pass  # the note only improves the busy message; a full disk must not stop here
        try:
            yield
        finally:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
    finally:
        os.close(fd)  # releases the flock


# ---- copying and publishing -----------------------------------------------------------------


def clone_file(src: Path, dst: Path) -> str:
    """Copy `src` to the new file `dst` (mode kept); return how: `reflink` or `copy`."""
    with open(src, "rb") as fin:
        mode = stat.S_IMODE(os.fstat(fin.fileno()).st_mode)
        out_fd = os.open(
            dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
        )
        with open(out_fd, "wb") as fout:
            try:
                fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
                return "reflink"
            except OSError:
                pass
            size = os.fstat(fin.fileno()).st_size
            copied = 0
            try:
                while copied < size:
                    n = os.copy_file_range(fin.fileno(), fout.fileno(), size - copied)
                    if n == 0:
                        break
                    copied += n
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise
                fin.seek(copied)
                fout.seek(copied)
                shutil.copyfileobj(fin, fout, 16 << 20)
            return "copy"


class EarlyFlush:
    """An fsync of a fresh copy, started in a thread as soon as the copy is made.

    A plain copy leaves the whole file's pages dirty, and the command's CHECKPOINT would write
    them all to disk at its end (about 1 s for a 4 GB file). Started at once, that write-back runs
    while the command works. Durability never depends on it: the CHECKPOINT and the fsync before
    publishing sync the file as before; `wait` only surfaces a failed write early.
    """

    def __init__(self, path: Path) -> None:
        self.error: OSError | None = None
        # A daemon: an interrupted command must never wait on it to exit.
        self._thread = threading.Thread(
            target=self._flush, args=(path,), name="gpufleet-early-flush", daemon=True
        )
        self._thread.start()

    def _flush(self, path: Path) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            self.error = e

    def wait(self) -> OSError | None:
        """Block until the flush has finished; the error it met, if any."""
        self._thread.join()
        return self.error


def fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, (os.O_RDONLY | os.O_DIRECTORY) if directory else os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_work(db: Path) -> None:
    """Private copies left by killed writers (only called while holding the lock)."""
    for leftover in db.parent.glob(f".{db.name}.*{WORK_SUFFIX}"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)


@dataclass
class WriteSession:
    """A writing command's connection to its private copy of the database."""

    con: duckdb.DuckDBPyConnection
    path: Path
    copy: Path
    publish: bool = True
    """Set False when the command changed nothing: PATH is then left as it was."""
    cloned_with: str | None = None
    clone_s: float = 0.0
    publish_s: float = 0.0
    upgraded: list[str] = field(default_factory=list)
    """Landing tables the open upgraded: the copy is then rewritten compactly before publishing."""
    compact: bool = False
    """Set True when the command deleted much (a prune): the copy is rewritten compactly too."""
    computed: object = None
    """What a `gpufleet compute` run in the same write returned (`ingest ... --compute`)."""


@contextmanager
def writing(db: str | Path, *, command: str, create: bool = False) -> Iterator[WriteSession]:
    """Lock, copy PATH beside it, yield a writable connection to the copy, then publish it.

    `create`: only `ingest` and `demo` may create a database that does not exist yet.
    Any exception leaves PATH untouched and removes the copy.
    """
    from pipelines.store import ensure_schema

    db = Path(db).absolute()
    if not db.parent.is_dir():
        raise DatabaseMissingError(
            f"Folder `{db.parent}` of database `{db}` does not exist.",
            "Create the folder, or fix --db / GPUFLEET_DB.",
        )
    if not create and not db.exists():
        raise missing_error(db)
    with writer_lock(db, command):
        if not create and not db.exists():
            raise missing_error(db)  # removed while we waited
        _remove_stale_work(db)
        try:
            work = Path(tempfile.mkdtemp(prefix=f".{db.name}.", suffix=WORK_SUFFIX, dir=db.parent))
        except OSError as e:
            raise storage_error(e, db.parent, "write in") from None
        early_flush: EarlyFlush | None = None
        try:
            copy = work / db.name
            cloned_with, clone_s = None, 0.0
            if db.exists():
                if (pid := duckdb_writer_pid(db)) is not None:
                    raise foreign_writer_error(db, pid)
                began = time.perf_counter()
                cloned_with = _guarded(lambda: clone_file(db, copy), db.parent)
                wal = db.with_name(db.name + ".wal")
                if wal.exists():
                    # Left by a program that wrote PATH in place and stopped uncleanly: the copy
                    # replays it, and the published file then has it checkpointed.
                    _guarded(lambda: clone_file(wal, copy.with_name(copy.name + ".wal")), db.parent)
                clone_s = time.perf_counter() - began
            if cloned_with == "copy":
                early_flush = EarlyFlush(copy)
            try:
                con = open_database(copy, writable=True)
            except DatabaseCorruptError:
                raise corrupt_error(db) from None
            session = WriteSession(con, db, copy, cloned_with=cloned_with, clone_s=clone_s)
            try:
                session.upgraded = _guarded(lambda: ensure_schema(con), db.parent)
                yield session
                if session.publish:
                    _guarded(lambda: con.execute("CHECKPOINT"), db.parent)
            finally:
                con.close()
            if session.publish and (session.upgraded or session.compact):
                _guarded(lambda: _rewrite_compactly(copy), db.parent)
            if session.publish:
                if early_flush is not None and (error := early_flush.wait()) is not None:
                    raise storage_error(error, db.parent) from None
                began = time.perf_counter()
                _guarded(lambda: _publish(copy, db), db.parent)
                session.publish_s = time.perf_counter() - began
        finally:
            if early_flush is not None:
                early_flush.wait()
            shutil.rmtree(work, ignore_errors=True)


def _rewrite_compactly(copy: Path) -> None:
    """Rewrite `copy` into a new file holding only live data, and put it in its place.

    DuckDB reuses the blocks of dropped tables and deleted rows but never shrinks its file: after
    an upgrade rebuilt the landing tables, or a prune dropped most samples, the file would keep
    their size as free space.
    """
    fresh = copy.with_name(f"compact-{copy.name}")
    con = duckdb.connect(str(fresh))
    try:
        no_progress_bar_on_stdout(con)
        con.execute("ATTACH ? AS upgraded (READ_ONLY)", [str(copy)])
        (name,) = execute(con, "compute/current_database").fetchall()[0]
        con.execute(f"COPY FROM DATABASE upgraded TO {quote_ident(name)}")
        con.execute("DETACH upgraded")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(fresh, copy)


def _publish(copy: Path, db: Path) -> None:
    fsync_path(copy)
    stale_wal = db.with_name(db.name + ".wal")
    if stale_wal.exists():
        # The copy already holds what it recorded; left beside the new file it would be replayed.
        stale_wal.unlink()
    os.replace(copy, db)
    fsync_path(db.parent, directory=True)


# ---- opening -------------------------------------------------------------------------------


def open_database(path: Path, *, writable: bool) -> duckdb.DuckDBPyConnection:
    """A connection with UTC as time zone; faults become one-line errors."""
    from pipelines.store import connect

    try:
        con = connect(path, read_only=not writable)
    except duckdb.Error as e:
        raise explain(e, path) or GpufleetError(
            f"Cannot open database `{path}`: {first_line(e)}"
        ) from None
    return con


def corrupt_error(db: Path | None, detail: str = "") -> DatabaseCorruptError:
    """The one error for a truncated, damaged or foreign database file (`db` None: unknown)."""
    return DatabaseCorruptError(
        f"Database `{db}` is damaged or not a DuckDB file."
        if db
        else f"The database is damaged or not a DuckDB file: {detail}",
        "Restore it from a backup (or rebuild it: ingest the landing files again into a new --db).",
    )


DUCKDB_HEADER_BYTES = 3 * 4096
"""DuckDB's file header and its two alternating database headers, before the first block."""


def refuse_truncated(
    con: duckdb.DuckDBPyConnection, path: Path, catalog: str | None = None
) -> None:
    """A file too short to hold the blocks in use is cut off, whatever reads succeed.

    DuckDB reads blocks lazily: a command that touches only the first part of a truncated file
    would otherwise run and report nothing wrong. The check is a necessary condition only (free
    blocks may lie anywhere, and a checkpoint trims those at the end of the file). With a WAL
    beside the file, the count includes blocks still only in the log, so there is nothing to
    compare.
    """
    if path.with_name(path.name + ".wal").exists():
        return
    rows = execute(con, "store/database_size", {"name": catalog}).fetchall()
    if not rows or not rows[0][1]:
        return
    block_size, used_blocks = rows[0]
    if path.stat().st_size < DUCKDB_HEADER_BYTES + block_size * used_blocks:
        con.close()
        raise corrupt_error(path)


def no_progress_bar_on_stdout(con: duckdb.DuckDBPyConnection) -> None:
    """Keep DuckDB's progress bar off stdout.

    DuckDB prints it, terminal or not, once a query runs 2 s in a process it takes for an
    interactive one (`python -c`, a REPL): it would land in a report or export written to stdout,
    or in a scheduled run's log. In Jupyter the bar is a widget, not printed, and DuckDB refuses
    any change to its settings there without ipywidgets: nothing to turn off.
    """
    try:
        con.execute("SET enable_progress_bar_print = false")
    except duckdb.InvalidInputException:
        pass


def open_snapshot(db: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the newest published version of `db`.

    Attached into a fresh in-memory database: DuckDB hands `duckdb.connect(PATH)` in one
    process the instance already open on PATH, which after a publish is the old file.
    """
    db = Path(db).absolute()
    if not db.exists():
        raise missing_error(db)
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        no_progress_bar_on_stdout(con)
        con.execute("ATTACH $path AS fleet (READ_ONLY)", {"path": str(db)})
        con.execute("USE fleet")
        refuse_truncated(con, db, "fleet")
    except duckdb.Error as e:
        con.close()
        if "lock" in str(e).lower():
            raise foreign_writer_error(db, duckdb_writer_pid(db)) from None
        raise explain(e, db) or GpufleetError(
            f"Cannot open database `{db}`: {first_line(e)}"
        ) from None
    return con


def missing_error(db: Path) -> DatabaseMissingError:
    return DatabaseMissingError(
        f"Database `{db}` does not exist.",
        "Only `gpufleet ingest` and `gpufleet demo` create one: load data first, or fix --db / GPUFLEET_DB.",
    )


# ---- faults as one line ---------------------------------------------------------------------


def first_line(e: BaseException, limit: int = 200) -> str:
    text = str(e).strip().splitlines()
    line = text[0] if text else type(e).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


_DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def storage_error(e: OSError, where: Path, doing: str = "write in") -> StorageError:
    if e.errno in _DISK_FULL:
        return StorageError(
            f"No space left to {doing} `{where}` ({os.strerror(e.errno)}).",
            "Free disk space (or raise the file size limit) and run again; what was there before is unchanged.",
        )
    if e.errno in _READ_ONLY:
        return StorageError(
            f"Cannot {doing} `{where}`: {os.strerror(e.errno)}.",
            "gpufleet writes a lock file and a private copy beside the database: make the folder "
            "writable for this user, or point --db at a writable folder.",
        )
    return StorageError(
        f"Cannot {doing} `{where}`: {e.strerror or e}.", "The database is unchanged."
    )


def out_of_memory(e: BaseException, during: str | None = None) -> OutOfMemoryError:
    """The one-line error for DuckDB or Python running out of memory (`during`: in what)."""
    limit = os.environ.get("GPUFLEET_MEMORY_LIMIT")
    return OutOfMemoryError(
        "Out of memory"
        + (f" in {during}" if during else "")
        + (f" under GPUFLEET_MEMORY_LIMIT={limit}" if limit else "")
        + (f": {first_line(e)}" if str(e) else "."),
        "Raise GPUFLEET_MEMORY_LIMIT (or free memory) and run again; the database is unchanged.",
    )


def explain(e: BaseException, where: Path | None = None) -> GpufleetError | None:
    """A one-line error for a fault of the machine or the file, or None for anything else."""
    if isinstance(e, GpufleetError):
        return e
    if isinstance(e, OSError) and e.errno in _DISK_FULL + _READ_ONLY:
        return storage_error(e, Path(e.filename) if e.filename else (where or Path(".")))
    if isinstance(e, (MemoryError, duckdb.OutOfMemoryException)):
        return out_of_memory(e)
    if isinstance(e, duckdb.Error):
        text = str(e)
        lower = text.lower()
        if "no space left" in lower or "file too large" in lower or "disk quota" in lower:
            # DuckDB nests the OS error in its own text (sometimes as JSON): name the file and the cause.
            found = re.search(r'write file \\?"([^"\\]+)\\?": ([A-Za-z ]+)', text)
            what = f"`{found[1]}` ({found[2].strip()})" if found else first_line(e)
            return StorageError(
                f"No space left to write {what}.",
                "Free disk space (or raise the file size limit) and run again; what was there before is unchanged.",
            )
        if "read-only file system" in lower or "permission denied" in lower:
            return StorageError(
                f"Cannot write: {first_line(e)}", "Make the folder writable and run again."
            )
        if (
            "not a valid duckdb database file" in lower
            or "corrupt" in lower
            or "checksum" in lower
            or "could not read enough bytes" in lower
            or "database file is truncated" in lower
            or (
                "serialization" in lower
                and isinstance(e, (duckdb.IOException, duckdb.SerializationException))
            )
        ):
            return corrupt_error(where, first_line(e))
        if isinstance(e, duckdb.IOException) and "lock" in lower:
            return foreign_writer_error(where, None) if where else None
    return None


def _guarded(action, where: Path):
    """Run `action`, turning a fault of the disk or the file into a one-line error."""
    try:
        return action()
    except (OSError, MemoryError, duckdb.Error) as e:
        err = explain(e, where)
        if err is None:
            raise
        raise err from None
