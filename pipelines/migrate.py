"""Upgrade an older database's landing tables in place (`gpufleet migrate`, or the first writing command).

Databases built before cluster-scoped identity have `cluster` on `nodes` only. Each other
landing table is rebuilt with the column (first in its natural key): a node's record takes its
node's cluster; a job its attempts' nodes' cluster; steps and checkpoints their job's. A name
that `nodes` does not know takes the fleet's only cluster, or `unknown` when there are several.

Databases built before compact sample storage keep `gpu_samples` as a table of strings per
sample; it becomes series and values (queries/schema/landing.sql) behind a view of the same name.

One transaction: a failed upgrade leaves the database as it was.
"""

from __future__ import annotations

import duckdb

from pipelines.contract import LANDING_TABLES, NODE_KEYED_TABLES
from pipelines.sql import execute, execute_script, load_sql, quote_ident, quote_literal
from pipelines.store import insert_gpu_samples

UNKNOWN_CLUSTER = "unknown"
"""The cluster of a record whose node or job `nodes` does not place, in a fleet of several clusters."""


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in execute(con, "store/table_columns", {"table": table}).fetchall()]


def tables_to_migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Landing tables that exist without a `cluster` column."""
    return [t for t in LANDING_TABLES if (cols := _columns(con, t)) and "cluster" not in cols]


def pending_upgrades(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every landing table an upgrade would rebuild (reads only)."""
    todo = tables_to_migrate(con)
    if gpu_samples_to_compact(con) and "gpu_samples" not in todo:
        todo.append("gpu_samples")
    return todo


def gpu_samples_to_compact(con: duckdb.DuckDBPyConnection) -> bool:
    """True when `gpu_samples` is still a table (stored before compact sample storage)."""
    kind = execute(con, "store/table_type", {"table": "gpu_samples"}).fetchall()
    return bool(kind) and kind[0][0] == "BASE TABLE"


def migrate_landing(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Add `cluster` to every landing table that lacks it and store `gpu_samples` compactly;
    the tables upgraded (none: a no-op)."""
    todo = tables_to_migrate(con)
    compact = gpu_samples_to_compact(con)
    if not todo and not compact:
        return []
    upgraded = todo + (["gpu_samples"] if compact and "gpu_samples" not in todo else [])
    con.execute("BEGIN TRANSACTION")
    try:
        clusters = [r[0] for r in execute(con, "store/node_clusters_before_upgrade").fetchall()]
        fallback = clusters[0] if len(clusters) == 1 else UNKNOWN_CLUSTER
        params = {"fallback": fallback}
        for table in todo + (["gpu_samples"] if compact and "gpu_samples" not in todo else []):
            con.execute(
                f"ALTER TABLE {quote_ident(table)} RENAME TO {quote_ident('__old_' + table)}"
            )
        # Recreate the renamed tables with the current shape (the others exist and are skipped).
        execute_script(con, "schema/landing")
        if "job_attempts" in todo:
            execute(con, "store/migrate_job_cluster_from_attempts")
        else:
            execute(con, "store/migrate_job_cluster_from_jobs")
        for table in todo:
            old = _columns(con, f"__old_{table}")
            old_table = quote_ident(f"__old_{table}")
            names = ", ".join(f"o.{quote_ident(c)}" for c in old)
            target = ", ".join(quote_ident(c) for c in ["cluster", *old])
            if table in NODE_KEYED_TABLES:
                source = "nodes m ON m.node = o.node"
            else:
                source = "__job_cluster m ON m.job_id = o.job_id"
            if table == "gpu_samples":
                # Kept as a view over storage tables; a view holds no parameters.
                fallback_literal = quote_literal(fallback)
                insert_gpu_samples(
                    con,
                    f"SELECT coalesce(m.cluster, {fallback_literal}) AS cluster, {names} "
                    f"FROM {old_table} o LEFT JOIN {source}",
                )
                con.execute(f"DROP TABLE {old_table}")
                continue
            con.execute(
                f"INSERT INTO {quote_ident(table)} ({target}) "
                f"SELECT coalesce(m.cluster, $fallback), {names} "
                f"FROM {old_table} o LEFT JOIN {source}",
                params,
            )
            con.execute(f"DROP TABLE {old_table}")
        con.execute("DROP TABLE __job_cluster")
        if compact and "gpu_samples" not in todo:
            insert_gpu_samples(con, load_sql("store/migrate_old_gpu_samples"))
            con.execute("DROP TABLE __old_gpu_samples")
        # A new data version, so the next compute rebuilds every derived table per cluster.
        execute(
            con,
            "store/load_log_add",
            {
                "source": "migrate:cluster" if todo else "migrate:compact",
                "tables": upgraded,
                "rows_in": 0,
                "rows_new": 0,
            },
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return upgraded
