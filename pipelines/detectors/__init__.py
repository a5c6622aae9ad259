"""Anomaly detection: every detector's findings become rows of the `anomalies` table.

Detectors are SQL files under `queries/detect/` (thresholds and episodes: counters, XIDs, peers,
NIC links, telemetry gaps, condition flapping, straggler episodes, stalled jobs, repeat
offenders); the statistics SQL cannot do (the straggler episodes' change points) are computed by
the rank_slowdown step (`pipelines/episodes.py`), which writes `rank_episodes`. Each returns anomaly candidates with the
columns of `CANDIDATE_SCHEMA`; `queries/detect/finalize.sql` turns them into `anomalies` rows
(stable id, UUID, impact). `detect_anomalies` is the `gpufleet compute` step.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
from typing import Any

import duckdb
import polars as pl

from pipelines.config import Settings
from pipelines.errors import GpufleetError
from pipelines.sql import bind, execute, execute_script, load_sql, param_names, queries_dir
from pipelines.times import FAR_PAST

SQL_DETECTORS: tuple[str, ...] = (
    "xid",
    "counters",
    "peers",
    "nic_links",
    "telemetry_gaps",
    "condition_flaps",
    "job_stalled",
)
"""`queries/detect/<name>.sql` files run before the stragglers, in this order: only `job_stalled`
needs to be last (it reads the hardware findings of the others)."""

KEPT_DETECTORS: dict[str, tuple[str, ...]] = {
    "peers": ("det_peer_merge_gap_s", "det_peer_window_s", "det_gap_s"),
    "counters": ("det_gap_s", "det_counter_window_s", "det_gap_s"),
}
"""SQL detectors whose candidates are kept between computes (`kept_candidates`), each with the
settings that bound how far back new data can change an episode: its merge gap, its trailing
window and the horizon's open margin. A compute re-finds only the episodes ending within that
margin (plus two scrape intervals) of the earliest newly loaded GPU sample, or open, and keeps
the rest (queries/detect/kept_cut.sql)."""

KEPT_PREPARE: dict[str, str] = {"counters": "counter_carry"}
"""`queries/detect/<file>.sql` a kept detector needs run after its cut: the counters' carry."""
CARRY_LOOK_BACK = dt.timedelta(hours=1)
"""How far before its samples the carry looks first (older storage is skipped by time)."""

KEPT_FILES: tuple[str, ...] = ("kept_cut", "kept_store", *KEPT_PREPARE.values())
"""`queries/detect/<name>.sql` that cut and store a kept detector's episodes."""


SHARED_VIEWS: tuple[str, ...] = ("gpu_scrapes",)
"""`queries/detect/<name>.sql` as temporary views `detect_<name>` while the detectors run: the
pass's cluster's rows of a kept table several detectors read. A view, not a copy: the readers
filter what they need (the peer and telemetry-gap detectors and gpu_activity_windows read from
their cut on, and the kept table's rows lie in time order), so an update does not copy every
scrape. `gpufleet compute` makes them before the detectors (`create_shared_views`) and keeps
them for gpu_activity_windows."""

CANDIDATE_SCHEMA: dict[str, str] = {
    "entity_type": "VARCHAR",
    "node": "VARCHAR",
    "gpu": "SMALLINT",
    "uuid": "VARCHAR",
    "job_id": "VARCHAR",
    "rank": "INTEGER",
    "kind": "VARCHAR",
    "start_ts": "TIMESTAMPTZ",
    "end_ts": "TIMESTAMPTZ",
    "detected_at": "TIMESTAMPTZ",
    "score": "DOUBLE",
    "severity": "VARCHAR",
    "evidence": "VARCHAR",
    "action": "VARCHAR",
}

LADDER: tuple[str, ...] = ("watch", "cordon", "drain", "reset_gpu", "reboot", "replace")
"""The remediation ladder, mildest first."""


STRAGGLER_DETECTOR = "straggler_episodes"
"""Runs after the other detectors, when the rank_slowdown step wrote `rank_episodes`."""
REPEAT_DETECTOR = "repeat_offenders"
"""Runs last among the detectors: it reads their candidates."""
FINALIZE = "finalize"
"""Candidates -> `anomalies` rows."""
KINDS = "anomaly_kinds"
"""The `anomaly_kinds` table, for SQL readers."""


def registered_detect_files() -> tuple[str, ...]:
    """Every `queries/detect/<name>.sql` the detection steps run, in the order they run."""
    return (
        *SHARED_VIEWS,
        *SQL_DETECTORS,
        STRAGGLER_DETECTOR,
        REPEAT_DETECTOR,
        FINALIZE,
        KINDS,
        *FOLLOW_UPS,
        *KEPT_FILES,
    )


def check_detect_files() -> None:
    """Fail when a `queries/detect/` file is not run, or a registered name has no file.

    A detector file left out of the lists above would otherwise never run, silently.
    """
    present = {path.stem for path in (queries_dir() / "detect").glob("*.sql")}
    registered = registered_detect_files()
    not_run = sorted(present - set(registered))
    no_file = [name for name in registered if name not in present]
    if not_run or no_file:
        problems = [f"`queries/detect/{name}.sql` is not run" for name in not_run]
        problems += [
            f"`{name}` is registered but `queries/detect/{name}.sql` does not exist"
            for name in no_file
        ]
        raise GpufleetError(
            f"The detectors do not match queries/detect/: {'; '.join(problems)}.",
            "Add each detector's name to SQL_DETECTORS (or the list its role needs) in "
            "pipelines/detectors/__init__.py, or remove the name whose file is gone.",
        )


def anomaly_kinds_path() -> str:
    return str(queries_dir() / "data" / "anomaly_kinds.csv")


def _kind_classes() -> dict[str, str]:
    with open(anomaly_kinds_path(), newline="") as f:
        return {row["kind"]: row["class"] for row in csv.DictReader(f)}


KIND_CLASSES: dict[str, str] = _kind_classes()
"""Anomaly kind -> class (hardware / infrastructure / straggler), from queries/data/anomaly_kinds.csv."""


def data_horizon(con: duckdb.DuckDBPyConnection) -> dt.datetime:
    """The data horizon (`data_horizon.horizon_ts`, an earlier compute step): open anomalies are open then."""
    rows = execute(con, "compute/detect_horizon").fetchall()
    horizon = rows[0][0] if rows else None
    return horizon if horizon is not None else dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def detection_params(con: duckdb.DuckDBPyConnection, settings: Settings) -> dict[str, Any]:
    """Settings' SQL parameters plus the data horizon and the anomaly kinds file."""
    return settings.sql_params() | {
        "horizon": data_horizon(con),
        "anomaly_kinds": anomaly_kinds_path(),
    }


def _create_candidates(con: duckdb.DuckDBPyConnection) -> None:
    columns = ", ".join(f"{name} {type_}" for name, type_ in CANDIDATE_SCHEMA.items())
    con.execute(f"CREATE OR REPLACE TEMP TABLE anomaly_candidates ({columns})")


def _insert_sql(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> None:
    sql = load_sql(f"detect/{name}").strip().rstrip(";")
    columns = ", ".join(CANDIDATE_SCHEMA)
    con.execute(
        f"INSERT INTO anomaly_candidates SELECT {columns} FROM ({sql}\n)", bind(sql, params)
    )


def _basis(name: str, params: dict[str, Any]) -> str:
    """What a kept detector's episodes depend on besides the samples: its code and settings."""
    digest = hashlib.sha256(load_sql(f"detect/{name}").encode())
    for helper in KEPT_FILES:
        digest.update(load_sql(f"detect/{helper}").encode())
    digest.update(repr(sorted(params.items())).encode())
    return digest.hexdigest()[:16]


def _kept_window(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any], basis: str
) -> dict[str, Any]:
    """The cut parameters of a kept detector: incremental when the last compute kept this
    cluster's candidates with the same basis, from all history otherwise."""
    previous = execute(con, "compute/detect_kept_basis", {"detector": name}).fetchall()
    if previous != [(basis,)]:
        return {"incremental": False, "settle_before": FAR_PAST, "flags_from": FAR_PAST}
    horizon = params["horizon"]
    since = execute(con, "derived/kept_samples_from", {"rebuild": False}).fetchall()[0][0]
    newest_change = min(since, horizon) if since is not None else horizon
    margin_s = sum(params[setting] for setting in KEPT_DETECTORS[name])
    margin_s += 2 * params["det_sample_interval_s"]
    settle_before = newest_change - dt.timedelta(seconds=margin_s)
    return {"incremental": True, "settle_before": settle_before, "flags_from": settle_before}


def _insert_kept(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> None:
    """A kept detector: the episodes new data can change re-found, the settled ones kept."""
    basis = _basis(name, {k: v for k, v in params.items() if k != "horizon"})
    cut = _kept_window(con, name, params, basis) | {"detector": name, "basis": basis}
    execute(con, "detect/kept_cut", cut)
    earliest = execute(con, "compute/detect_cut_earliest").fetchall()[0][0]
    look_back = dt.timedelta(seconds=max(params[s] for s in KEPT_DETECTORS[name]))
    scan_from = min(earliest or cut["flags_from"], cut["flags_from"])
    scan_from = scan_from - look_back if scan_from > FAR_PAST else FAR_PAST
    sql = load_sql(f"detect/{name}").strip().rstrip(";")
    columns = ", ".join(CANDIDATE_SCHEMA)
    run_params = params | cut | {"scan_from": scan_from}
    _prepare(con, name, run_params)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE detect_found AS SELECT {columns} FROM ({sql}\n) "
        "WHERE end_ts IS NULL OR end_ts >= $settle_before::TIMESTAMPTZ",
        bind(sql, run_params) | {"settle_before": cut["settle_before"]},
    )
    execute_script(con, "detect/kept_store", cut)
    con.execute("DROP TABLE detect_cut")
    _unprepare(con, name)


def _prepare(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> None:
    if name not in KEPT_PREPARE:
        return
    carry_from = params["scan_from"]
    carry_from = carry_from - CARRY_LOOK_BACK if carry_from > FAR_PAST else FAR_PAST
    execute_script(con, f"detect/{KEPT_PREPARE[name]}", params | {"carry_from": carry_from})


def _unprepare(con: duckdb.DuckDBPyConnection, name: str) -> None:
    if name in KEPT_PREPARE:
        con.execute("DROP TABLE detect_carry")


def forget_kept_candidates(con: duckdb.DuckDBPyConnection) -> None:
    """`compute --force`: every kept detector finds its episodes from all history again."""
    execute_script(con, "compute/detect_forget_kept")


def _insert_rows(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    frame = pl.DataFrame(rows).select(list(CANDIDATE_SCHEMA))  # noqa: F841 (read by DuckDB)
    casts = ", ".join(f"CAST({name} AS {type_})" for name, type_ in CANDIDATE_SCHEMA.items())
    con.execute(f"INSERT INTO anomaly_candidates SELECT {casts} FROM frame")


def _create_shared(con: duckdb.DuckDBPyConnection, name: str) -> None:
    sql = load_sql(f"detect/{name}").strip().rstrip(";")
    if param_names(sql):
        raise ValueError(f"queries/detect/{name}.sql is a view: it cannot take parameters")
    con.execute(f"CREATE OR REPLACE TEMP VIEW detect_{name} AS {sql}")


def create_shared_views(con: duckdb.DuckDBPyConnection) -> None:
    """The shared temporary views (`detect_<name>` of SHARED_VIEWS), for the detectors and later
    readers; `drop_shared_views` drops them after the last one."""
    for name in SHARED_VIEWS:
        _create_shared(con, name)


def drop_shared_views(con: duckdb.DuckDBPyConnection) -> None:
    for name in SHARED_VIEWS:
        con.execute(f"DROP VIEW IF EXISTS detect_{name}")


def _table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(execute(con, "compute/table_exists", {"name": name}).fetchall()[0][0])


def _insertion_order(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(execute(con, "compute/insertion_order").fetchall()[0][0])


def _set_insertion_order(con: duckdb.DuckDBPyConnection, on: bool) -> None:
    execute(con, "compute/insertion_order_set", {"on": on})


def _run_sql_detectors(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> None:
    """The shared views, then every SQL detector's candidates into `anomaly_candidates`."""
    # The candidates need no order (every window states its own): without it DuckDB
    # parallelises the large aggregations and materialisations freely.
    # No try/finally: after a failed statement the transaction is aborted and any cleanup would
    # fail too, hiding the real error; the caller rolls back and the temporary views go with it.
    # Shared views made before this step (by `gpufleet compute`, which keeps them for later
    # readers) stay; those made here are dropped here.
    made_here = [name for name in SHARED_VIEWS if not _table_exists(con, f"detect_{name}")]
    insertion_order = _insertion_order(con)
    _set_insertion_order(con, False)
    for name in made_here:
        _create_shared(con, name)
    for name in SQL_DETECTORS:
        if name in KEPT_DETECTORS:
            _insert_kept(con, name, params)
        else:
            _insert_sql(con, name, params)
    for name in made_here:
        con.execute(f"DROP VIEW detect_{name}")
    _set_insertion_order(con, insertion_order)


def detect_anomalies(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Refill `anomalies` from every detector (the `gpufleet compute` step)."""
    params = detection_params(con, settings)
    _create_candidates(con)
    _run_sql_detectors(con, params)
    if _table_exists(con, "rank_episodes"):
        _insert_sql(con, STRAGGLER_DETECTOR, params)
    _insert_sql(con, REPEAT_DETECTOR, params)
    final = load_sql(f"detect/{FINALIZE}").strip().rstrip(";")
    execute(con, "compute/detect_clear_anomalies")
    con.execute(f"INSERT INTO anomalies {final}", bind(final, params))
    con.execute("DROP TABLE anomaly_candidates")
    # The kinds and their class, for SQL readers (job failure classes read `hardware` ones).
    kinds = load_sql(f"detect/{KINDS}").strip().rstrip(";")
    con.execute(f"CREATE OR REPLACE TABLE anomaly_kinds AS {kinds}", bind(kinds, params))


FOLLOW_UPS: tuple[str, ...] = ("persist", "escalate", "impact")
"""`queries/detect/<name>.sql` updates of `anomalies` that need node states and job outcomes, in order:
a hardware finding held open while its node stays unavailable, escalation over past findings,
then the impact over the final open times."""


def follow_up_anomalies(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Hold, escalate and weigh the findings (the `gpufleet compute` step after job outcomes)."""
    params = detection_params(con, settings)
    for name in FOLLOW_UPS:
        sql = load_sql(f"detect/{name}").strip().rstrip(";")
        con.execute(sql, bind(sql, params))
