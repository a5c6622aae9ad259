"""`gpufleet remediation`: the week's remediation plan for automation, as JSON or CSV.

The rows are `queries/app/remediation_plan.sql`, the query the dashboard's Remediation page reads,
so the file and the page never disagree. gpufleet only writes the plan; it never acts on a cluster.
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from pipelines.compute import require_tables
from pipelines.errors import GpufleetError
from pipelines.sql import execute, query_pl
from pipelines.weeks import IsoWeek

FORMATS = ("json", "csv")
TABLES = ["node_remediation_history", "node_remediation", "node_cost", "nodes"]


def remediation_plan(
    con: duckdb.DuckDBPyConnection, week: IsoWeek, cluster: str = "*"
) -> pl.DataFrame:
    """One row per node with a step recommended during `week` (docs/detection.md "Remediation plan")."""
    try:
        require_tables(con, ["cluster_schedulers"])
    except GpufleetError as missing:
        require_tables(con, TABLES)  # nothing computed at all: the general hint
        # Computed by a gpufleet from before the table existed: an unchanged database skips compute.
        raise GpufleetError(missing.title, "Run `gpufleet compute --force` to build it.") from None
    require_tables(con, TABLES)
    if cluster != "*":
        known = [r[0] for r in execute(con, "app/clusters").fetchall()]
        if cluster not in known:
            raise GpufleetError(
                f"Unknown cluster `{cluster}`.",
                f"Known clusters: {', '.join(known) or 'none'} (or * for all).",
            )
    return query_pl(
        con,
        "app/remediation_plan",
        {
            "week": week.label,
            "week_start": week.start,
            "week_end": week.end,
            "cluster": cluster,
        },
    )


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def render_plan(plan: pl.DataFrame, fmt: str, week: IsoWeek, cluster: str) -> str:
    """JSON: `{"week", "cluster", "dry_run": true, "nodes": [...]}`, timestamps ISO 8601 UTC.
    CSV: one row per node, every text column quoted (so `007` stays text), timestamps ISO 8601."""
    if fmt == "json":
        rows = [{k: _iso(v) for k, v in row.items()} for row in plan.iter_rows(named=True)]
        document = {"week": week.label, "cluster": cluster, "dry_run": True, "nodes": rows}
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        plan.write_csv(buffer, datetime_format="%Y-%m-%dT%H:%M:%S%z", quote_style="non_numeric")
        return buffer.getvalue()
    raise GpufleetError(f"Unknown format `{fmt}`.", f"Use one of: {', '.join(FORMATS)}.")
