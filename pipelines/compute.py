"""`gpufleet compute`: (re)build the derived tables from the landing tables.

Each step is either a `queries/derived/<name>.sql` statement
(`CREATE OR REPLACE TABLE <name> AS ...`) or a Python function for the parts
SQL cannot do (statistical tests). Steps run in order, in one transaction, so
readers never see half-computed tables. A run on an unchanged database (same
data version, same settings) is skipped.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import duckdb

from pipelines.config import Settings
from pipelines.contract import LANDING_TABLES, STORAGE_TABLES
from pipelines.errors import DatabaseMissingError
from pipelines.serving import out_of_memory
from pipelines.sql import execute, execute_script, quote_ident, quote_literal
from pipelines.store import data_version, ensure_schema

PythonStep = Callable[[duckdb.DuckDBPyConnection, Settings], None]


@dataclass(frozen=True)
class Step:
    name: str
    run: PythonStep | None = None
    """None: run `queries/derived/<name>.sql`."""
    table: bool = True
    """False: the step updates tables of earlier steps instead of building its own."""
    kept: bool = False
    """True: the table is kept between computes and brought up to date from the loads since, once
    for every cluster before (gpu_scrapes) or after (gpu_samples_15m) the per-cluster passes
    (pipelines/sample_rollups.py)."""
    kept_per_pass: bool = False
    """True: the table is kept between computes and holds every cluster's rows; each pass updates
    its cluster's (gpu_activity_windows: pipelines/activity_windows.py), and the pass's later
    steps see only those."""


# The Python steps, imported when they run: scipy takes seconds to import, and a skipped compute
# (or a reader of DERIVED_TABLES) never needs it.
def build_rank_slowdown(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.rank_slowdown import build_rank_slowdown as run

    run(con, settings)


def detect_anomalies(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.detectors import detect_anomalies as run

    run(con, settings)


def follow_up_anomalies(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.detectors import follow_up_anomalies as run

    run(con, settings)


def create_shared_scrapes(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.detectors import create_shared_views

    create_shared_views(con)


def kept_rows(
    table: str,
    basis_settings: tuple[str, ...],
    changed_from_queries: tuple[str, ...] = ("derived/kept_samples_from",),
    basis_queries: tuple[str, ...] = (),
) -> PythonStep:
    """The step that brings the pass's rows of a kept table up to date (pipelines/kept_rows.py)."""

    def run(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
        from pipelines.kept_rows import update_kept_rows

        update_kept_rows(con, settings, table, basis_settings, changed_from_queries, basis_queries)

    return run


def note_job_record_changes(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    execute_script(con, "derived/job_records_changed", settings.sql_params())


def summarise_steps(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.step_summaries import update_step_summaries

    update_step_summaries(con, settings)


def narrow_goodput_jobs(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.goodput_kept import narrow_to_changed_jobs

    narrow_to_changed_jobs(con, settings)


def add_kept_goodput_rows(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    from pipelines.goodput_kept import add_kept_goodput_rows as add_rows

    add_rows(con, settings)


def build_activity_windows(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """The pass's rows of gpu_activity_windows brought up to date, then the per-scrape table
    goes: its last reader."""
    from pipelines.activity_windows import update_activity_windows
    from pipelines.detectors import drop_shared_views

    update_activity_windows(con, settings)
    drop_shared_views(con)


def _steps() -> list[Step]:
    """Derived tables in dependency order."""
    return [
        # Kept between computes (pipelines/sample_rollups.py): one row per GPU and scrape, which
        # the detectors and utilisation read; updated before the per-cluster passes.
        Step("gpu_scrapes", kept=True),
        Step("xid_catalogue"),
        # Read by most steps below: "now" (the data horizon) and who ran where.
        Step("data_horizon"),
        Step("attempt_clusters"),
        # Kept between computes, per cluster (pipelines/step_summaries.py): one row per logged
        # step, what goodput_attempts (which attempts logged steps) and goodput_steps read of
        # the step's ranks.
        Step("rank_step_summaries", run=summarise_steps, table=False),
        Step("goodput_attempts"),
        Step("goodput_checkpoints"),
        # Kept per job (pipelines/goodput_kept.py): the next four steps build only the jobs whose
        # inputs changed since the last compute, then the others' rows are added back.
        Step("goodput_jobs", run=narrow_goodput_jobs, table=False),
        Step("goodput_steps"),
        Step(
            "job_stalls"
        ),  # hangs from the step logs; goodput_segments counts failed ones as wasted
        Step("goodput_segments"),
        Step("job_goodput"),
        Step("goodput_kept_rows", run=add_kept_goodput_rows, table=False),
        Step("rank_slowdown", run=build_rank_slowdown),
        # The pass's cluster's rows of the kept per-scrape table gpu_scrapes (updated before the
        # passes, below), as the temporary view `detect_gpu_scrapes` the detectors and
        # gpu_activity_windows share.
        Step("detect_gpu_scrapes", run=create_shared_scrapes, table=False),
        # Kept between computes, per cluster: each GPU's silences between scrapes and each node
        # condition's changes of status (the telemetry-gap and flapping detectors read them).
        Step(
            "gpu_scrape_gaps",  # the telemetry-gap detector's silences
            run=kept_rows("gpu_scrape_gaps", ("det_gap_s",)),
            kept_per_pass=True,
        ),
        Step(
            "node_condition_changes",  # what the flapping detector counts
            run=kept_rows(
                "node_condition_changes", (), changed_from_queries=("derived/kept_conditions_from",)
            ),
            kept_per_pass=True,
        ),
        # Which scheduler runs each cluster (the remediation plan's commands): after
        # node_condition_changes, which tells whether its nodes report the kubelet's Ready.
        Step("cluster_schedulers"),
        # After xid_catalogue and rank_slowdown (the detectors read them); before node state
        # and job outcomes, which read the anomalies.
        Step("anomalies", run=detect_anomalies),
        # Utilisation: who held which GPU or MIG instance, and how busy it was. Read goodput_attempts,
        # attempt_clusters, the per-scrape table and the landing tables; goodput_stack and
        # weekly_summary read them.
        Step("mig_profiles"),
        Step("gpu_job_assignments"),
        Step("gpu_activity_windows", run=build_activity_windows, kept_per_pass=True),
        Step(
            "gpu_utilisation_daily",  # kept per UTC day: the days whose windows changed are summed again
            run=kept_rows(
                "gpu_utilisation_daily",
                ("util_idle_activity",),
                changed_from_queries=("derived/activity_windows_changed_from",),
            ),
            kept_per_pass=True,
        ),
        # Kept per job: the jobs with windows from the earliest changed one on are summed again.
        Step(
            "job_activity",
            run=kept_rows(
                "job_activity",
                ("util_idle_activity",),
                changed_from_queries=("derived/activity_windows_changed_from",),
            ),
            table=False,
            kept_per_pass=True,
        ),
        Step("job_utilisation"),
        # Kept per ISO week: the weeks whose windows changed, or that hold windows of a job whose
        # name, team or queue changed since the last compute (job_records_changed), are summed again.
        Step("job_records_changed", run=note_job_record_changes, table=False),
        Step(
            "team_utilisation_weekly",
            run=kept_rows(
                "team_utilisation_weekly",
                ("util_idle_activity",),
                changed_from_queries=("derived/activity_windows_changed_from",),
            ),
            kept_per_pass=True,
        ),
        Step(
            "mig_packing",
            run=kept_rows(
                "mig_packing",
                ("util_packing_max_activity", "util_packing_headroom"),
                changed_from_queries=("derived/activity_windows_changed_from",),
                # The profiles and the nodes' GPU models are not kept by week: a change to either
                # builds every week again.
                basis_queries=("derived/mig_packing_basis",),
            ),
            kept_per_pass=True,
        ),
        Step(
            "node_state_intervals",
            run=kept_rows(
                "node_state_intervals",
                (
                    "staleness_s",
                    "require_gpu_telemetry",
                    "required_conditions",
                    "good_when_true_suffixes",
                ),
                changed_from_queries=("derived/kept_samples_from", "derived/kept_conditions_from"),
            ),
            kept_per_pass=True,
        ),
        Step("node_availability_daily"),
        Step("fleet_availability_daily"),
        Step("attempt_outcomes"),
        Step("job_outcomes"),
        # Needs node states and job outcomes: holds hardware findings open while their node stays
        # unavailable (the states above only read them as `degraded`, which `unavailable` outranks),
        # escalates repeats, and weighs each finding's impact and goodput lost.
        Step("anomaly_follow_up", run=follow_up_anomalies, table=False),
        Step("node_remediation"),
        Step("node_remediation_history"),
        Step("goodput_stack"),
        # Fleet failures against the signals open before them, the checkpoint interval model and
        # the cost of each node: read attempt_outcomes, anomalies, node states and the goodput tables.
        Step("failure_escapes"),
        Step("checkpoint_advice"),
        Step("node_cost"),
        Step("gpu_samples_15m", kept=True),  # the dashboard's chart rollup; reads only gpu_samples
        # GPU index -> UUID per node, for the node page: summed from gpu_inventory_days, kept between
        # computes per cluster and UTC day (pipelines/kept_rows.py), which reads gpu_samples and the
        # rows of pruned ones.
        Step("gpu_inventory_days", run=kept_rows("gpu_inventory_days", ()), table=False),
        Step("gpu_inventory"),
        # Reads every metric table above: keep it last.
        Step("weekly_summary"),
    ]


DERIVED_TABLES: tuple[str, ...] = tuple(step.name for step in _steps() if step.table)
"""Every table `gpufleet compute` builds, in the order it builds them: the one list the tables
the report, the dashboard and the exports read are chosen from (`derived`)."""


def run_step(con: duckdb.DuckDBPyConnection, settings: Settings, name: str) -> None:
    """The step `name` of a pass, run as `compute` runs it (a test building one table from
    hand-made inputs; the pass's cluster must be set)."""
    (step,) = [step for step in _steps() if step.name == name]
    if step.run is None:
        execute(con, f"derived/{step.name}", settings.sql_params())
    else:
        step.run(con, settings)


def derived(*names: str) -> tuple[str, ...]:
    """`names`, each checked to be a table of DERIVED_TABLES (a reader's list of what it needs)."""
    unknown = [name for name in names if name not in DERIVED_TABLES]
    if unknown:
        raise ValueError(
            f"not built by `gpufleet compute`: {', '.join(unknown)} (see DERIVED_TABLES)"
        )
    return names


BOOKKEEPING_TABLES = frozenset(
    {
        "load_log",
        "ingest_watermarks",
        "gpu_devices",
        "ingest_incomplete",
        "ingest_partial_log",
        "compute_log",
        "gpu_samples_loaded",
        "node_conditions_loaded",
        "kept_tables",
        "rank_slowdown_inputs",
        "goodput_inputs",
        "kept_candidates",
        "kept_candidates_basis",
        "kept_rows_basis",
        "rank_steps_loaded",
        "rank_step_summaries",
        "rank_gpus",
        "gpu_inventory_days",
        "node_state_inputs",
        "job_records_computed",
        "job_activity",
        "raw_retention",
        "gpu_inventory_pruned",
    }
)
"""Tables of the database that are neither landing nor derived."""

KEPT_TABLES = frozenset(step.name for step in _steps() if step.kept or step.kept_per_pass)
"""Derived tables brought up to date rather than rebuilt; each holds every cluster's rows."""

REFERENCE_TABLES = frozenset({"xid_catalogue", "mig_profiles", "anomaly_kinds"})
"""Derived tables that are reference data, the same for every cluster: each pass builds them, the
database keeps one copy, without `cluster`."""

# Derived tables whose own `cluster` column already names the cluster (or '*' for all of them).
_OWN_CLUSTER = "cluster"


def _clusters(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The clusters the landing tables name; one pass of the derived steps runs per cluster.

    The same list as the dashboard's cluster filter, from the same query: nodes' and jobs' clusters.
    """
    found = [r[0] for r in execute(con, "app/clusters").fetchall()]
    return found or ["default"]


def _database(con: duckdb.DuckDBPyConnection) -> str:
    return execute(con, "compute/current_database").fetchall()[0][0]


def _scope_to(con: duckdb.DuckDBPyConnection, cluster: str) -> None:
    """Temp views shadowing every landing table with one cluster's rows (SPEC "Fleet-wide identity").

    Node names and job ids repeat across clusters, so the derived steps run once per cluster, each
    seeing only its cluster: every (cluster, node) and (cluster, job) is its own entity, and a
    cluster's numbers are those of the cluster loaded alone.
    """
    for table in _SCOPED_TABLES:
        _scope_table(con, table, cluster)


def _scope_table(con: duckdb.DuckDBPyConnection, table: str, cluster: str) -> None:
    """A temp view shadowing `table` with one cluster's rows."""
    db = quote_ident(_database(con))
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {quote_ident(table)} AS "
        f"SELECT * FROM {db}.main.{quote_ident(table)} WHERE cluster = {quote_literal(cluster)}"
    )


# The landing tables, gpu_series (steps that read the sample storage directly, by integer series
# id, find their cluster's series through it), the kept per-scrape table and the inventory of
# pruned samples.
_SCOPED_TABLES: tuple[str, ...] = (
    *LANDING_TABLES,
    "gpu_series",
    "gpu_scrapes",
    "gpu_inventory_pruned",
)


_KEPT_PER_PASS: tuple[str, ...] = tuple(step.name for step in _steps() if step.kept_per_pass)


def _unscope(con: duckdb.DuckDBPyConnection) -> None:
    for table in (*_SCOPED_TABLES, *_KEPT_PER_PASS):
        con.execute(f"DROP VIEW IF EXISTS temp.main.{quote_ident(table)}")


def _derived_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = execute(con, "compute/main_tables").fetchall()
    kept = LANDING_TABLES + tuple(STORAGE_TABLES) + tuple(BOOKKEEPING_TABLES)
    return [r[0] for r in rows if r[0] not in kept]


def _collect(con: duckdb.DuckDBPyConnection, cluster: str, *, first: bool, only: bool) -> None:
    """Give every derived table of this pass its `cluster`; with several clusters, set the rows aside."""
    for table in _derived_tables(con):
        if table in REFERENCE_TABLES or table in KEPT_TABLES:
            continue
        name = quote_ident(table)
        columns = [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall()]
        has_cluster = _OWN_CLUSTER in columns
        if only:
            if not has_cluster:
                con.execute(
                    f"ALTER TABLE {name} ADD COLUMN cluster VARCHAR DEFAULT {quote_literal(cluster)}"
                )
            continue
        select = (
            f"SELECT * FROM {name}"
            if has_cluster
            else f"SELECT *, {quote_literal(cluster)} AS cluster FROM {name}"
        )
        if table == "weekly_summary":
            select += " WHERE cluster <> '*'" if has_cluster else ""
        target = quote_ident(f"__collected_{table}")
        if first:
            con.execute(f"CREATE OR REPLACE TABLE {target} AS {select}")
        else:
            con.execute(f"INSERT INTO {target} BY NAME {select}")


def _publish_collected(con: duckdb.DuckDBPyConnection) -> None:
    for (collected,) in execute(con, "compute/collected_tables").fetchall():
        table = collected.removeprefix("__collected_")
        con.execute(f"DROP TABLE IF EXISTS {quote_ident(table)}")
        con.execute(f"ALTER TABLE {quote_ident(collected)} RENAME TO {quote_ident(table)}")


QUALIFIER = "/"
"""Joins a cluster and a name into one fleet-unique name while the all-clusters rows are built."""


def _all_clusters_weekly(con: duckdb.DuckDBPyConnection, params: dict) -> None:
    """weekly_summary's all-clusters rows ('*'), over every cluster's rows at once.

    The per-cluster rows come from the passes. For the '*' rows the summary runs once more over
    temp views in which every node and job name is qualified by its cluster, so its joins by
    name never pair one cluster's node or job with another's.
    """
    db = quote_ident(_database(con))
    con.execute("ALTER TABLE weekly_summary RENAME TO __weekly_per_cluster")
    shadowed = []
    try:
        for table in [*LANDING_TABLES, *_derived_tables(con)]:
            if table.startswith("__"):
                continue
            columns = [
                r[0] for r in con.execute(f"DESCRIBE {db}.main.{quote_ident(table)}").fetchall()
            ]
            if "cluster" not in columns:
                continue
            replace = [
                f"cluster || '{QUALIFIER}' || {c} AS {c}"
                for c in ("node", "job_id")
                if c in columns
            ]
            if table == "job_attempts":
                replace.append(
                    f"list_transform(nodes, lambda n: cluster || '{QUALIFIER}' || n) AS nodes"
                )
            if not replace:
                continue
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {quote_ident(table)} AS "
                f"SELECT * REPLACE ({', '.join(replace)}) FROM {db}.main.{quote_ident(table)}"
            )
            shadowed.append(table)
        execute(con, "derived/weekly_summary", params)
    except BaseException:
        shadowed = []  # an aborted transaction takes the temp views with it on rollback
        raise
    finally:
        for table in shadowed:
            con.execute(f"DROP VIEW IF EXISTS temp.main.{quote_ident(table)}")
    execute(con, "compute/weekly_all_clusters")
    con.execute("DROP TABLE weekly_summary")
    con.execute("DROP TABLE __weekly_per_cluster")
    con.execute("ALTER TABLE __weekly_all RENAME TO weekly_summary")


@dataclass(frozen=True)
class ComputeResult:
    skipped: bool
    data_version: int
    timings_s: dict[str, float]


def settings_fingerprint(settings: Settings) -> str:
    payload = json.dumps(settings.sql_params(), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _last_compute(con: duckdb.DuckDBPyConnection) -> tuple[int, str] | None:
    execute(con, "compute/compute_log_create")
    rows = execute(con, "compute/last_compute").fetchall()
    return (rows[0][0], rows[0][1]) if rows else None


def stale_data(con: duckdb.DuckDBPyConnection) -> tuple[int, int] | None:
    """(data version the derived tables were built from, current data version) when raw data
    changed since the last compute (or a compute was killed); None when they match.

    Reads only, so it works on a read-only connection. A database without a compute log
    (derived tables made by hand) is taken as current.
    """
    if execute(con, "compute/logs_present").fetchall()[0][0] < 2:
        return None
    computed = execute(con, "compute/last_compute").fetchall()
    if not computed:
        return None
    current = data_version(con)
    return (computed[0][0], current) if current != computed[0][0] else None


def require_tables(con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> None:
    """Fail with the command to run when a derived table has not been computed yet."""
    present = {row[0] for row in execute(con, "compute/present_tables").fetchall()}
    missing = [t for t in tables if t not in present]
    if missing:
        raise DatabaseMissingError(
            f"The database has no `{missing[0]}` table yet.",
            "Run `gpufleet compute` first (or `gpufleet demo --no-app` for a demo database).",
        )


def is_current(con: duckdb.DuckDBPyConnection, settings: Settings) -> bool:
    """True when the last compute used this data version and these settings (read-only check)."""
    if execute(con, "compute/logs_present").fetchall()[0][0] < 2:
        return False
    rows = execute(con, "compute/last_compute").fetchall()
    return bool(rows) and (rows[0][0], rows[0][1]) == (
        data_version(con),
        settings_fingerprint(settings),
    )


def compute(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ComputeResult:
    """Build every derived table; skip when nothing changed since the last run."""
    ensure_schema(con)
    version = data_version(con)
    fingerprint = settings_fingerprint(settings)
    last = _last_compute(con)  # also creates compute_log on a new database
    if not force and last == (version, fingerprint):
        return ComputeResult(True, version, {})
    from pipelines.detectors import check_detect_files

    check_detect_files()  # a detector file that would silently not run stops the compute here
    params = settings.sql_params()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    running = "setup"  # the step under way, named if it runs out of memory

    def begin(step_name: str) -> None:
        nonlocal running
        running = step_name
        if progress:
            progress(step_name)

    con.execute("BEGIN TRANSACTION")
    try:
        from pipelines.activity_windows import (
            drop_previous_assignments,
            keep_previous_assignments,
        )
        from pipelines.goodput_kept import drop_previous_goodput, keep_previous_goodput
        from pipelines.rank_slowdown import drop_previous, keep_previous
        from pipelines.sample_rollups import update_gpu_samples_15m, update_gpu_scrapes

        begin("gpu_scrapes")
        t0 = time.perf_counter()
        update_gpu_scrapes(con, rebuild=force)
        timings["gpu_scrapes"] = time.perf_counter() - t0
        begin("set aside")  # the last compute's rows kept per job, copied aside
        keep_previous(con, rebuild=force)
        keep_previous_goodput(con, rebuild=force)
        keep_previous_assignments(con)
        if force:
            # Every kept table's rows are built again from all samples, in the shape their SQL
            # gives now.
            execute(con, "compute/kept_rows_forget_all")
            for table in _KEPT_PER_PASS:
                con.execute(f"DROP TABLE IF EXISTS main.{quote_ident(table)}")
            from pipelines.detectors import forget_kept_candidates

            forget_kept_candidates(con)
        clusters = _clusters(con)
        for i, cluster in enumerate(clusters):
            execute(con, "compute/pass_cluster", {"cluster": cluster})
            # Refilled every run; recreated so each pass starts from the fixed shape (no `cluster`).
            con.execute("DROP TABLE IF EXISTS anomalies")
            execute_script(con, "schema/derived")
            # No try/finally around the pass: after a failed statement the transaction is
            # aborted, a cleanup statement would fail too and hide the real error, and the
            # rollback below takes the temp views with it.
            if len(clusters) > 1:
                _scope_to(con, cluster)
            for step in _steps():
                if step.kept:
                    continue
                begin(step.name)
                t0 = time.perf_counter()
                if step.run is None:
                    execute(con, f"derived/{step.name}", params)
                else:
                    step.run(con, settings)
                timings[step.name] = timings.get(step.name, 0.0) + time.perf_counter() - t0
                if step.kept_per_pass and len(clusters) > 1:
                    # The table holds every cluster's rows; the pass's later steps read its own.
                    _scope_table(con, step.name, cluster)
            if len(clusters) > 1:
                _unscope(con)
            _collect(con, cluster, first=i == 0, only=len(clusters) == 1)
        drop_previous(con)
        drop_previous_goodput(con)
        drop_previous_assignments(con)
        execute(con, "derived/kept_conditions_done")
        execute_script(con, "derived/job_records_done")
        execute(con, "compute/rank_steps_loaded_clear")
        if len(clusters) > 1:
            _publish_collected(con)
            begin("weekly_summary")
            t0 = time.perf_counter()
            _all_clusters_weekly(con, params)
            timings["weekly_summary"] += time.perf_counter() - t0
        begin("gpu_samples_15m")
        t0 = time.perf_counter()
        update_gpu_samples_15m(con, rebuild=force)
        timings["gpu_samples_15m"] = time.perf_counter() - t0
        execute(
            con,
            "compute/compute_log_add",
            {
                "data_version": version,
                "settings": fingerprint,
                "duration_s": time.perf_counter() - started,
            },
        )
        con.execute("COMMIT")
    except BaseException as e:
        con.execute("ROLLBACK")
        if isinstance(e, (MemoryError, duckdb.OutOfMemoryException)):
            raise out_of_memory(e, f"compute step `{running}`") from None
        raise
    return ComputeResult(False, version, timings)
