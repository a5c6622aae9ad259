"""Slurm source: `sacct --parsable2` output → `jobs` and `job_attempts`.

Ask sacct for exactly this (UTC times, every user, requeued attempts as separate rows):

    TZ=UTC sacct --allusers --duplicates --parsable2 \\
        --starttime 2026-11-23T00:00:00 --endtime 2026-11-30T00:00:00 \\
        --format=JobID,JobName,User,Account,Partition,Submit,Start,End,State,ExitCode,AllocTRES,NodeList,Reason,Restarts

Columns may come in any order (the header names them); JobID, Submit, Start, End and
State are required. Job steps (`123.batch`, `123.extern`, `123.0`) are folded into their
job: a step that ran out of memory makes its job `oom`. With `--duplicates` each requeued
attempt of a job is its own row (state `REQUEUED`, or what ended it); attempts are
numbered 0, 1, ... in start order. `ExitCode` is `exit:signal`; a job killed by a signal
gets exit code 128 + signal, as a shell reports it. `NodeList` in Slurm's compressed
form (`gpu-[01-04,07],cpu-a[1-2]`) is expanded. Jobs still pending are skipped.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import duckdb
import polars as pl

from pipelines.errors import InputError
from pipelines.sources.protocol import SourceReport, WholeFileSource
from pipelines.sources.scheduler_rows import ATTEMPT_SCHEMA, JOB_SCHEMA, with_cluster
from pipelines.store import ROW_COLUMN, LoadResult, TableInput, load_batch

REQUIRED = ("JobID", "Submit", "Start", "End", "State")

# sacct state (first word) → contract.JOB_STATES. None: the job has not started, skip it.
STATES: dict[str, str | None] = {
    "COMPLETED": "succeeded",
    "FAILED": "failed",
    "SPECIAL_EXIT": "failed",
    "NODE_FAIL": "node_fail",
    "BOOT_FAIL": "node_fail",  # the allocated node failed to boot
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",  # did not finish before its --deadline
    "OUT_OF_MEMORY": "oom",
    "CANCELLED": "cancelled",
    "REVOKED": "cancelled",  # a federated sibling ran it instead
    "PREEMPTED": "preempted",
    "REQUEUED": "preempted",  # an attempt the system interrupted and put back in the queue
    "REQUEUE_FED": "preempted",
    "REQUEUE_HOLD": "preempted",
    "RUNNING": "running",
    "COMPLETING": "running",
    "CONFIGURING": "running",
    "SUSPENDED": "running",
    "RESIZING": "running",
    "SIGNALING": "running",
    "STAGE_OUT": "running",
    "STOPPED": "running",
    "PENDING": None,
}

_STEP = re.compile(r"^(?P<job>[^.]+)\.(?P<step>.+)$")
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu(?::[^=,]+)?=(\d+)")
_GPU_TRES_UNTYPED = re.compile(r"(?:^|,)gres/gpu=(\d+)")


def expand_nodelist(text: str) -> list[str]:
    """Slurm's compressed host list → host names, in order.

    `gpu-[01-03,07]` → gpu-01, gpu-02, gpu-03, gpu-07 (zero padding kept);
    `a[1-2],b5` → a1, a2, b5; `rack[1-2]-n[1-2]` → rack1-n1, rack1-n2, rack2-n1, rack2-n2.
    `None assigned` and empty → [].
    """
    text = text.strip()
    if not text or text.lower().startswith("none"):
        return []
    pieces, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced `]` in `{text}`")
        if ch == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += ch
    if depth != 0:
        raise ValueError(f"unbalanced `[` in `{text}`")
    pieces.append(current)
    hosts: list[str] = []
    for piece in pieces:
        parts = re.split(r"(\[[^\]]*\])", piece)
        options: list[list[str]] = []
        for part in parts:
            if part.startswith("["):
                options.append(_expand_range(part[1:-1], text))
            elif part:
                options.append([part])
        hosts.extend("".join(combo) for combo in itertools.product(*options))
    return hosts


def _expand_range(spec: str, whole: str) -> list[str]:
    out: list[str] = []
    for item in spec.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", item.strip())
        if not match:
            raise ValueError(f"`[{spec}]` in `{whole}` is not a list of numbers and ranges")
        lo, hi = match.group(1), match.group(2) or match.group(1)
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        if int(hi) < int(lo) or int(hi) - int(lo) > 100_000:
            raise ValueError(f"range `{item}` in `{whole}` is not ascending or too long")
        out.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
    return out


def parse_exit_code(text: str) -> int | None:
    """`exit:signal` → the exit status, or 128 + signal when a signal ended the job."""
    text = text.strip()
    if not text:
        return None
    match = re.fullmatch(r"(\d+):(\d+)", text)
    if not match:
        raise ValueError(f"`{text}` is not `exit:signal`")
    code, signal = int(match.group(1)), int(match.group(2))
    return 128 + signal if signal else code


def normalise_state(text: str) -> tuple[str | None, str | None]:
    """(contract state or None for pending, reason) from an sacct State such as `CANCELLED by 1234`."""
    words = text.strip().split(None, 1)
    if not words:
        raise ValueError("the state is empty")
    word = words[0].rstrip("+")  # sacct appends `+` when the state was cut short
    if word not in STATES:
        raise ValueError(f"`{text}` is not a Slurm job state")
    reason = words[1] if len(words) > 1 else None
    return STATES[word], reason


def parse_time(text: str) -> datetime | None:
    """sacct's `2026-11-23T10:00:00` (taken as UTC: run sacct with TZ=UTC); `Unknown`/`None` → None."""
    text = text.strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def gpus_of(tres: str) -> int:
    """GPUs in an AllocTRES string: `gres/gpu=8` (or the typed `gres/gpu:h100=8`); 0 if none."""
    untyped = _GPU_TRES_UNTYPED.findall(tres)
    if untyped:
        return sum(int(n) for n in untyped)
    return sum(int(n) for n in _GPU_TRES.findall(tres))


@dataclass
class _Attempt:
    line: int
    start: datetime | None
    end: datetime | None
    state: str | None
    reason: str | None
    exit_code: int | None
    nodes: list[str]
    steps_oom: bool = False


@dataclass
class _Job:
    job_id: str
    cluster: str | None
    line: int
    fields: dict[str, str]
    submit: datetime | None
    gpus: int
    attempts: list[_Attempt] = field(default_factory=list)
    restarts: int = 0


@dataclass
class SacctResult:
    jobs: pl.DataFrame
    job_attempts: pl.DataFrame
    skipped_pending: int = 0
    warnings: list[str] = field(default_factory=list)


DELIMITER = "|"
"""sacct's field separator unless `--delimiter` sets another."""


def parse_sacct(text: str, origin: str = "<sacct>", delimiter: str = DELIMITER) -> SacctResult:
    """Parse `sacct --parsable2` text (with its header line) into landing frames.

    `delimiter` is the field separator sacct was run with (`sacct --delimiter`).
    """
    if not delimiter or delimiter.strip() != delimiter or "\n" in delimiter:
        raise InputError(
            f"`{delimiter}` cannot separate sacct fields",
            hint="Pass --delimiter the exact string given to `sacct --delimiter` (no spaces or newlines).",
        )
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError(
            "is empty; expected sacct --parsable2 output with its header line", file=origin
        )
    header = lines[0].removesuffix(delimiter).split(delimiter)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"the header has no `{missing[0]}` column",
            file=origin,
            line=1,
            hint="Run sacct with --parsable2 and the --format given in docs/sources.md.",
        )
    jobs: dict[tuple[str | None, str], _Job] = {}
    last_attempt: dict[tuple[str | None, str], _Attempt] = {}
    for number, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        values = raw.split(delimiter)
        if len(values) == len(header) + 1 and values[-1] == "":
            values = values[:-1]  # --parsable (not 2) ends every line with the delimiter
        if len(values) != len(header):
            raise InputError(
                f"has {len(values)} fields, the header has {len(header)}",
                file=origin,
                line=number,
                hint=f"A `{delimiter}` inside a job name breaks the format: rerun sacct with --delimiter set to "
                "a character names never hold (e.g. `--delimiter=$'\\x1f'`), and pass the same "
                "--delimiter to `gpufleet ingest sacct`.",
            )
        row = dict(zip(header, values, strict=True))

        def cell(column: str, convert: Callable, row: dict = row, number: int = number):
            try:
                return convert(row.get(column, ""))
            except ValueError as e:
                raise InputError(
                    str(e), file=origin, line=number, column=column, value=row.get(column)
                ) from None

        job_id = row["JobID"].strip()
        # `sacct -M all` lists every cluster's jobs, whose ids repeat: the job is (Cluster, JobID).
        cluster = row.get("Cluster", "").strip() or None
        step = _STEP.match(job_id)
        if step:
            parent = last_attempt.get((cluster, step.group("job")))
            state, _ = cell("State", normalise_state)
            if parent is not None and state == "oom":
                parent.steps_oom = True
            continue
        state, reason = cell("State", normalise_state)
        start = cell("Start", parse_time)
        if state is None or start is None and state == "running":
            continue  # pending: not an outcome yet
        if (cluster, job_id) not in jobs:
            jobs[(cluster, job_id)] = _Job(
                job_id=job_id,
                cluster=cluster,
                line=number,
                fields=row,
                submit=cell("Submit", parse_time),
                gpus=gpus_of(row.get("AllocTRES", "")),
            )
        job = jobs[(cluster, job_id)]
        job.gpus = max(job.gpus, gpus_of(row.get("AllocTRES", "")))
        job.fields = row  # the newest attempt's name, user, ... win
        restarts = row.get("Restarts", "").strip()
        job.restarts = max(job.restarts, int(restarts) if restarts.isdigit() else 0)
        if row.get("Reason", "").strip() not in ("", "None") and reason is None:
            reason = row["Reason"].strip()
        attempt = _Attempt(
            line=number,
            start=start,
            end=cell("End", parse_time),
            state=state,
            reason=reason,
            exit_code=cell("ExitCode", parse_exit_code) if "ExitCode" in row else None,
            nodes=cell("NodeList", expand_nodelist) if "NodeList" in row else [],
        )
        job.attempts.append(attempt)
        last_attempt[(cluster, job_id)] = attempt
    return _frames(jobs, origin)


def _frames(jobs: dict[tuple[str | None, str], _Job], origin: str) -> SacctResult:
    job_rows, attempt_rows = [], []
    warnings = []
    under_reported = 0
    for job in jobs.values():
        attempts = sorted(
            job.attempts,
            key=lambda a: (a.start is None, a.start or datetime.max.replace(tzinfo=UTC), a.line),
        )
        for a in attempts:
            if a.steps_oom and a.state in ("failed", "cancelled"):
                a.state = "oom"
        started = [a for a in attempts if a.start is not None]
        final = attempts[-1]
        if job.restarts and len(started) < job.restarts + 1:
            under_reported += 1
        job_rows.append(
            {
                ROW_COLUMN: job.line,
                "cluster": job.cluster,
                "job_id": job.job_id,
                "name": job.fields.get("JobName") or None,
                "user": job.fields.get("User") or None,
                "team": job.fields.get("Account") or None,
                "queue": job.fields.get("Partition") or None,
                "submit_ts": job.submit,
                "start_ts": started[0].start if started else None,
                "end_ts": final.end if final.state != "running" else None,
                "num_gpus": job.gpus,
                "state": final.state,
                "exit_code": final.exit_code,
                "reason": final.reason,
            }
        )
        for i, a in enumerate(started):
            attempt_rows.append(
                {
                    ROW_COLUMN: a.line,
                    "cluster": job.cluster,
                    "job_id": job.job_id,
                    "attempt": i,
                    "start_ts": a.start,
                    "end_ts": a.end if a.state != "running" else None,
                    "state": a.state,
                    "exit_code": a.exit_code,
                    "reason": a.reason,
                    "nodes": a.nodes,
                }
            )
    if under_reported:
        warnings.append(
            f"{under_reported} jobs were requeued more often than their rows show: run sacct with --duplicates "
            "to see every attempt."
        )
    jobs_frame = pl.DataFrame(job_rows, schema=with_cluster(JOB_SCHEMA))
    attempts_frame = pl.DataFrame(attempt_rows, schema=with_cluster(ATTEMPT_SCHEMA))
    return SacctResult(jobs_frame, attempts_frame, warnings=warnings)


def ingest_sacct(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    delimiter: str = DELIMITER,
    cluster: str | None = None,
) -> tuple[list[LoadResult], SacctResult]:
    """Load one sacct file as one batch."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the file: {e}", file=str(path)) from e
    result = parse_sacct(text, str(path), delimiter)
    items = [
        TableInput("jobs", result.jobs, str(path), position="line"),
        TableInput("job_attempts", result.job_attempts, str(path), position="line"),
    ]
    return load_batch(con, items, source=f"sacct:{path.name}", cluster=cluster), result


@dataclass(frozen=True)
class SacctSource(WholeFileSource):
    """`gpufleet ingest sacct FILE`: one sacct file, one batch."""

    path: Path
    delimiter: str = DELIMITER
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "sacct"
    reads: ClassVar[str] = "Slurm `sacct --parsable2` output"
    tables: ClassVar[tuple[str, ...]] = ("jobs", "job_attempts")

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        loads, parsed = ingest_sacct(con, self.path, self.delimiter, self.cluster)
        return SourceReport(self.source_id, loads, warnings=list(parsed.warnings), detail=parsed)
