"""Which cluster each landed record belongs to (SPEC "Fleet-wide identity").

Per record, in this order: its own `cluster` value; else `--cluster NAME` given to the ingest
(a record whose own value differs is refused); else from `nodes`: a node name that maps to exactly
one cluster in the batch's `nodes` plus the stored `nodes` takes it, a job takes the cluster of
its attempts' nodes (steps and checkpoints take their job's); else, when the database and the batch
know exactly one cluster, that one. Anything else is refused (fail closed), naming the record.

The big tables get their cluster as a constant or by a join on the small node -> cluster map,
never per row in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from pipelines.contract import JOB_KEYED_TABLES, NODE_KEYED_TABLES
from pipelines.errors import InputError
from pipelines.sql import execute, quote_literal

DEFAULT_CLUSTER = "default"
"""The cluster of records loaded while neither the database nor the batch names any cluster."""

HINT = "Pass --cluster NAME to the ingest, or add a `cluster` column. Nothing was loaded."


@dataclass
class Item:
    """What resolution needs of one input: its table, where it came from, its registered view."""

    table: str
    origin: str
    position: str
    view: str


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    return list(con.sql(f"SELECT * FROM {view} LIMIT 0").columns)


def _where(item: Item, row: int) -> dict[str, int]:
    return {"line": row} if item.position == "line" else {"row": row}


def _own(view_has_cluster: bool) -> str:
    """The record's own cluster (NULL when the file has no such column or the cell is empty)."""
    return "nullif(CAST(cluster AS VARCHAR), '')" if view_has_cluster else "CAST(NULL AS VARCHAR)"


def resolve_clusters(
    con: duckdb.DuckDBPyConnection, items: list[Item], given: str | None
) -> list[str]:
    """Temp views over `items`' views, each with a resolved, non-empty `cluster` column.

    Raises `InputError` naming the file, line and node or job of the first record that
    cannot be resolved. The caller drops the views with `drop_resolution(con, views)`.
    """
    has = {item.view: "cluster" in _columns(con, item.view) for item in items}
    # One scan per input with the column: its clusters, and whether any record lacks one. An input
    # whose every record names its cluster (the common case) passes through untouched: no per-row work.
    named: dict[str, list[str]] = {}
    complete: set[str] = set()
    for item in items:
        if has[item.view]:
            values, missing = con.execute(
                f"SELECT list(DISTINCT c) FILTER (WHERE c IS NOT NULL AND c <> ''), "
                f"bool_or(c IS NULL OR c = '') FROM (SELECT CAST(cluster AS VARCHAR) AS c FROM {item.view})"
            ).fetchall()[0]
            named[item.view] = sorted(values or [])
            if not missing:
                complete.add(item.view)
    if given is not None:
        given = given.strip()
        if not given:
            raise InputError(
                "--cluster cannot be empty", hint="Give the cluster's name, e.g. --cluster east."
            )
        for item in items:
            if not has[item.view] or named[item.view] in ([], [given]):
                continue
            found = con.execute(
                f"SELECT __row, CAST(cluster AS VARCHAR) FROM {item.view} WHERE {_own(True)} IS NOT NULL "
                f"AND {_own(True)} <> $given ORDER BY __row LIMIT 1",
                {"given": given},
            ).fetchall()
            if found:
                row, value = found[0]
                raise InputError(
                    f"the record's cluster `{value}` differs from --cluster `{given}`",
                    file=item.origin,
                    column="cluster",
                    value=value,
                    hint="Load each cluster's files with "
                    "its own --cluster (or without it). Nothing was loaded.",
                    **_where(item, row),
                )
        fixed = quote_literal(given)
        views = []
        for i, item in enumerate(items):
            name = f"__resolved_{i}"
            if item.view in complete:
                con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {item.view}")
                views.append(name)
                continue
            expr = f"coalesce({_own(True)}, {fixed})" if has[item.view] else fixed
            replace = "* EXCLUDE (cluster)" if has[item.view] else "*"
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {replace}, {expr} AS cluster FROM {item.view}"
            )
            views.append(name)
        return views

    by_table = {item.table: item for item in items}
    # Node -> cluster pairs the batch states itself, plus the stored ones.
    pairs = ["SELECT node, cluster FROM nodes"]
    explicit_clusters = ["SELECT DISTINCT cluster FROM nodes", "SELECT DISTINCT cluster FROM jobs"]
    for item in items:
        if has[item.view]:
            explicit_clusters.extend(f"SELECT {quote_literal(c)}" for c in named[item.view])
            if item.table == "nodes":
                pairs.append(
                    f"SELECT DISTINCT CAST(node AS VARCHAR), {_own(True)} FROM {item.view} "
                    f"WHERE {_own(True)} IS NOT NULL"
                )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE __node_pairs AS SELECT DISTINCT * FROM ("
        + " UNION ALL ".join(pairs)
        + ") p(node, cluster)"
    )
    execute(con, "store/cluster_node_map")
    known = (
        con.execute(
            "SELECT list(DISTINCT c) FILTER (WHERE c IS NOT NULL) FROM ("
            + " UNION ALL ".join(explicit_clusters)
            + ") k(c)"
        ).fetchall()[0][0]
        or []
    )
    if not known:
        # Nothing names a cluster yet (one scheduler's jobs into a new database): the fleet is one cluster.
        known = [DEFAULT_CLUSTER]
    single_value = known[0] if len(known) == 1 else None
    single = quote_literal(known[0]) if len(known) == 1 else "CAST(NULL AS VARCHAR)"

    # Job -> cluster: a job's explicit value in the batch, else the clusters every node of its
    # attempts belongs to, else the stored job's.
    job_pairs = []
    for table in ("jobs", "job_attempts"):
        job_item = by_table.get(table)
        if job_item is not None and has[job_item.view]:
            job_pairs.append(
                f"SELECT DISTINCT CAST(job_id AS VARCHAR) AS job_id, {_own(True)} AS cluster "
                f"FROM {job_item.view} WHERE {_own(True)} IS NOT NULL"
            )
    no_jobs = "SELECT NULL::VARCHAR AS job_id, NULL::VARCHAR AS cluster WHERE false"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE __job_explicit AS "
        + (" UNION ".join(job_pairs) if job_pairs else no_jobs)
    )
    attempts = by_table.get("job_attempts")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE __job_nodes AS "
        + (
            "SELECT DISTINCT CAST(job_id AS VARCHAR) AS job_id, "
            f"unnest(CAST(nodes AS VARCHAR[])) AS node FROM {attempts.view}"
            if attempts is not None
            else "SELECT NULL::VARCHAR AS job_id, NULL::VARCHAR AS node WHERE false"
        )
    )
    execute(con, "store/cluster_job_pairs")
    execute(con, "store/cluster_job_map")

    views = []
    for i, item in enumerate(items):
        name = f"__resolved_{i}"
        if item.view in complete:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {item.view}")
            views.append(name)
            continue
        own = _own(has[item.view])
        replace = "* EXCLUDE (cluster)" if has[item.view] else "*"
        key: str | None
        map_table: str | None
        if item.table in NODE_KEYED_TABLES:
            key, map_table = "node", "__node_cluster"
        elif item.table in JOB_KEYED_TABLES:
            key, map_table = "job_id", "__job_cluster"
        else:
            key = map_table = None
        if key is None or key not in _columns(con, item.view):
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {replace}, coalesce({own}, {single}) AS cluster "
                f"FROM {item.view}"
            )
            views.append(name)
            _refuse_unresolved(con, item, name, key)
            continue
        # The distinct names of the input (few even for millions of samples) decide the cost:
        # all in one cluster -> a constant; otherwise a join on the small map.
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE __names AS SELECT k.name, m.cluster, m.n, m.clusters FROM "
            f"(SELECT DISTINCT CAST({key} AS VARCHAR) AS name FROM {item.view}"
            + (f" WHERE {own} IS NULL" if has[item.view] else "")
            + f") k LEFT JOIN {map_table} m ON m.{key} = k.name"
        )
        problem = execute(con, "store/cluster_name_problem", {"single": single_value}).fetchall()
        if problem:
            problem_name, problem_clusters = problem[0]
            _refuse_name(con, item, key, own, problem_name, problem_clusters, known)
        resolved = (
            execute(con, "store/cluster_names_resolved", {"single": single_value}).fetchall()[0][0]
            or []
        )
        if len(resolved) <= 1:
            fallback = quote_literal(resolved[0]) if resolved else single
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {replace}, coalesce({own}, {fallback}) AS cluster "
                f"FROM {item.view}"
            )
        else:
            map_name = f"__map_{i}"
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE {map_name} AS SELECT name, coalesce(cluster, {single}) AS cluster "
                "FROM __names"
            )
            own_v = own.replace("CAST(cluster", "CAST(v.cluster")
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT v.{replace}, coalesce({own_v}, m.cluster) AS cluster "
                f"FROM {item.view} v LEFT JOIN {map_name} m ON m.name = CAST(v.{key} AS VARCHAR)"
            )
        views.append(name)
    con.execute("DROP TABLE IF EXISTS __names")
    return views


def _refuse_unresolved(
    con: duckdb.DuckDBPyConnection, item: Item, view: str, key: str | None
) -> None:
    found = con.execute(f"SELECT min(__row) FROM {view} WHERE cluster IS NULL").fetchall()[0][0]
    if found is not None:
        raise InputError(
            "the record's cluster is unknown: the database and this batch know several clusters (or none)",
            file=item.origin,
            column="cluster",
            hint=HINT,
            **_where(item, found),
        )


def _refuse_name(
    con: duckdb.DuckDBPyConnection,
    item: Item,
    key: str,
    own: str,
    name: str,
    clusters: list[str] | None,
    known: list[str],
) -> None:
    row = con.execute(
        f"SELECT min(__row) FROM {item.view} WHERE CAST({key} AS VARCHAR) = $name AND {own} IS NULL",
        {"name": name},
    ).fetchall()[0][0]
    what = "node" if key == "node" else "job"
    if clusters and len(clusters) > 1:
        message = f"{what} `{name}` is in several clusters ({', '.join(clusters)}): which one is ambiguous"
    else:
        where = ", ".join(known) if known else "none yet"
        message = (
            f"{what} `{name}` is in no known cluster, and the database and this batch know "
            f"{'several clusters' if len(known) > 1 else 'no cluster'} ({where})"
        )
    raise InputError(
        message, file=item.origin, column=key, value=name, hint=HINT, **_where(item, row or 0)
    )


def drop_resolution(con: duckdb.DuckDBPyConnection, views: list[str]) -> None:
    """Drop the temp views and tables `resolve_clusters` made."""
    for i, view in enumerate(views):
        con.execute(f"DROP VIEW IF EXISTS {view}")
        con.execute(f"DROP TABLE IF EXISTS __map_{i}")
    for table in (
        "__node_pairs",
        "__node_cluster",
        "__job_explicit",
        "__job_nodes",
        "__job_pairs",
        "__job_cluster",
        "__names",
    ):
        con.execute(f"DROP TABLE IF EXISTS {table}")
