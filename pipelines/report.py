"""`gpufleet report`: the weekly reliability review as Markdown, JSON or a self-contained HTML page.

Content (SQL in `queries/report/`): the weekly summary with week-over-week deltas, the goodput
stack in GPU-hours, failed attempts by class and cause (state or XID), and the nodes that lost
the most GPU-hours, failure escapes by detector, checkpoint advice and node cost.
The 12-week trend table, goodput per team and per queue and utilisation per team and queue are
the dashboard's own queries (`queries/app/trends.sql`, `queries/app/goodput_groups.sql`,
`queries/app/utilisation_teams.sql`) and its trend metrics (`pipelines/trend_metrics.py`), so
the report and the dashboard show the same numbers. Every number comes from the derived tables
`gpufleet compute` builds.
"""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines import presentation
from pipelines.compute import derived, require_tables
from pipelines.config import Settings
from pipelines.errors import GpufleetError
from pipelines.fleet_names import SharedNames
from pipelines.markdown import escape_markdown_cell
from pipelines.presentation import NOT_AVAILABLE, change_in, in_unit
from pipelines.sql import execute, query_pl
from pipelines.trend_metrics import TREND_WEEKS, shown_trend_metrics
from pipelines.weeks import IsoWeek

FORMATS = ("md", "json", "html")
ALL_CLUSTERS = "*"
"""The `cluster` value of all-clusters rows in weekly_summary and of the report's default scope."""


def open_read_only(db: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the newest published version (writers never block it)."""
    from pipelines.serving import open_snapshot

    return open_snapshot(db)


@dataclass(frozen=True)
class WeeklyReport:
    """The report's content; every frame is one query of `queries/report/`."""

    week: IsoWeek
    cluster: str
    summary: pl.DataFrame
    """metric, label, unit, better, value, previous, delta."""
    goodput_stack: pl.DataFrame
    """level, kind, parent, gpu_h, share_of_capacity."""
    failures: pl.DataFrame
    """Fleet failures: failure_class, cause, attempts, jobs, gpu_h, share, cumulative_share."""
    not_failures: pl.DataFrame
    """User and scheduler-policy attempts, shown apart: failure_class, cause, attempts, jobs, gpu_h."""
    top_nodes: pl.DataFrame
    """node, cluster, gpu_model, gpu_count, down_gpu_h, unavailable_gpu_h, unknown_gpu_h, ..."""
    findings: pl.DataFrame
    """The costliest findings: node, cluster, gpu, job_id, kind, xid, severity, action, start_ts,
    end_ts, goodput_lost_gpu_h, impact_gpu_h."""
    remediation: pl.DataFrame
    """What the ladder recommended during the week: node, cluster, step, since, until, severity, why."""
    trends: pl.DataFrame
    """week, cluster, week_start, node_availability, job_success_rate, goodput, ettr, mtbf_h, ...:
    the TREND_WEEKS weeks to the report's week, of its cluster (all clusters: each and '*')."""
    goodput_groups: pl.DataFrame
    """grouping ('team' / 'queue'), name, jobs, allocated_gpu_h, productive_gpu_h, ..., goodput."""
    escapes: pl.DataFrame
    """detector, catches, escapes, placed_on_flagged, median_lead_h, late_remediation_gpu_h."""
    checkpoints: pl.DataFrame
    """job_key, jobs, gpus, nodes, save_cost_s, current_interval_s, optimal_interval_s, ..."""
    node_cost: pl.DataFrame
    """node, cluster, lost_gpu_h, failure_gpu_h, straggler_gpu_h, waiting_gpu_h, ..."""
    incomplete: pl.DataFrame | None = None
    """start_ts, end_ts, queries, store_said: telemetry incomplete from the store during the week."""
    utilisation: pl.DataFrame | None = None
    """team, queue, jobs, measured_gpu_h, busy_gpu_h, busy_share, idle_gpu_h, top_idle_jobs,
    top_idle_job_clusters (the cluster of each of those jobs)."""
    mig_packing: pl.DataFrame | None = None
    """workload, cluster, gpu_model, jobs, gpu_h, p95_activity, peak_memory_gib, profile, freed_gpu_h, gpus_freed."""
    names: SharedNames = field(default_factory=SharedNames)
    """Node names and job ids more than one cluster holds: the tables show them as cluster/name."""


REPORT_TABLES = derived(
    "weekly_summary",
    "goodput_stack",
    "attempt_outcomes",
    "node_availability_daily",
    "node_state_intervals",
    "anomalies",
    "node_remediation_history",
    "goodput_segments",
    "failure_escapes",
    "checkpoint_advice",
    "node_cost",
    "team_utilisation_weekly",
    "mig_packing",
)


def build_report(
    con: duckdb.DuckDBPyConnection,
    week: IsoWeek,
    *,
    cluster: str = ALL_CLUSTERS,
    settings: Settings | None = None,
    top: int = 10,
) -> WeeklyReport:
    """Run the report queries for one ISO week and cluster ('*' = all clusters)."""
    require_tables(con, REPORT_TABLES)
    params: dict[str, Any] = {
        **(settings or Settings()).sql_params(),
        "week": week.label,
        "week_start": week.monday,  # the report queries take a DATE
        "cluster": cluster,
        "limit": top,
    }
    summary = query_pl(con, "report/summary", params)
    if summary.is_empty():
        weeks = [
            r[0] for r in execute(con, "report/weeks_with_data", {"cluster": cluster}).fetchall()
        ]
        scope = "all clusters" if cluster == ALL_CLUSTERS else f"cluster `{cluster}`"
        raise GpufleetError(
            f"No data for week {week.label} ({scope}).",
            f"Weeks with data: {', '.join(weeks)}."
            if weeks
            else "The weekly summary is empty: load data and run `gpufleet compute`.",
        )
    return WeeklyReport(
        week=week,
        cluster=cluster,
        summary=summary,
        goodput_stack=query_pl(con, "report/goodput_stack", params),
        failures=query_pl(con, "report/failures", params),
        not_failures=query_pl(con, "report/not_failures", params),
        top_nodes=query_pl(con, "report/top_nodes", params),
        incomplete=_incomplete_windows(con, params),
        findings=query_pl(con, "report/findings", params),
        remediation=query_pl(con, "report/remediation", params),
        trends=trend_rows(con, week, cluster),
        goodput_groups=query_pl(con, "app/goodput_groups", params),
        escapes=query_pl(con, "report/escapes", params),
        checkpoints=query_pl(con, "report/checkpoints", params),
        node_cost=query_pl(con, "report/node_cost", params),
        utilisation=query_pl(con, "app/utilisation_teams", params).head(top),
        mig_packing=query_pl(con, "report/mig_packing", params),
        names=SharedNames.from_frame(query_pl(con, "app/shared_names")),
    )


def _incomplete_windows(
    con: duckdb.DuckDBPyConnection, params: dict[str, Any]
) -> pl.DataFrame | None:
    # A database from before the table existed has none (the next ingest creates it).
    present = execute(con, "report/incomplete_windows_present").fetchall()[0][0]
    return query_pl(con, "report/incomplete_windows", params) if present else None


def trend_rows(con: duckdb.DuckDBPyConnection, week: IsoWeek, cluster: str) -> pl.DataFrame:
    """The dashboard's trend query for the report's scope: one cluster, or every cluster and '*'."""
    rows = query_pl(con, "app/trends", {"week": week.label, "weeks": TREND_WEEKS})
    return rows if cluster == ALL_CLUSTERS else rows.filter(pl.col("cluster") == cluster)


# ---------------------------------------------------------------- formatting


# Every number goes through pipelines.presentation, as on the dashboard; `n/a` when missing.
def _ts(value: Any) -> str:
    """A timestamp in UTC, to the minute ("" when missing)."""
    return presentation.timestamp(value, suffix="", missing="")


def _gpu_h(value: float | None) -> str:
    return presentation.number(value, missing=NOT_AVAILABLE)


def _pct(value: float | None) -> str:
    return presentation.pct(value, missing=NOT_AVAILABLE)


def _seconds(value: float | None) -> str:
    return presentation.seconds(value, missing=NOT_AVAILABLE)


def _shorten(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_NUMBER = re.compile(r"^([+-]?[\d,.]+( %| pp| h| s)?|n/a|-)$")


def _title(report: WeeklyReport) -> str:
    scope = "all clusters" if report.cluster == ALL_CLUSTERS else f"cluster {report.cluster}"
    return (
        f"Weekly reliability report {report.week.label} "
        f"(Mon {report.week.monday} to Sun {report.week.sunday}, UTC), {scope}"
    )


def _tables(report: WeeklyReport) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(heading, header, rows, note) of every section, shared by Markdown and HTML."""
    summary = [
        [
            r["label"],
            in_unit(r["value"], r["unit"]),
            in_unit(r["previous"], r["unit"]),
            change_in(r["delta"], r["unit"]),
        ]
        for r in report.summary.iter_rows(named=True)
    ]
    stack = [
        [r["level"], _gpu_h(r["gpu_h"]), _pct(r["share_of_capacity"])]
        for r in report.goodput_stack.iter_rows(named=True)
    ]
    failures = [
        [
            r["failure_class"],
            r["cause"],
            str(r["attempts"]),
            str(r["jobs"]),
            _gpu_h(r["gpu_h"]),
            _pct(r["share"]),
            _pct(r["cumulative_share"]),
        ]
        for r in report.failures.iter_rows(named=True)
    ]
    not_failures = [
        [r["failure_class"], r["cause"], str(r["attempts"]), str(r["jobs"]), _gpu_h(r["gpu_h"])]
        for r in report.not_failures.iter_rows(named=True)
    ]
    names = report.names
    nodes = [
        [
            names.node(r["node"], r["cluster"]),
            r["cluster"],
            r["gpu_model"] or "",
            _gpu_h(r["down_gpu_h"]),
            _gpu_h(r["unavailable_gpu_h"]),
            _gpu_h(r["unknown_gpu_h"]),
            _pct(r["availability"]),
            str(r["failed_attempts"]),
            ", ".join(str(c) for c in r["xid_codes"]) or "-",
            _shorten(r["top_reason"] or ""),
        ]
        for r in report.top_nodes.iter_rows(named=True)
    ]
    findings = [
        [
            names.node(r["node"], r["cluster"]) if r["node"] else "",
            r["cluster"] or "",
            "" if r["gpu"] is None else str(r["gpu"]),
            r["kind"] + (f" {r['xid']}" if r["xid"] else ""),
            r["severity"],
            r["action"] or "",
            _ts(r["start_ts"]),
            _ts(r["end_ts"]) or "open",
            _gpu_h(r["goodput_lost_gpu_h"]),
            _gpu_h(r["impact_gpu_h"]),
        ]
        for r in report.findings.iter_rows(named=True)
    ]
    remediation = [
        [
            names.node(r["node"], r["cluster"]),
            r["cluster"] or "",
            r["step"],
            _ts(r["since"]),
            _ts(r["until"]) or "in force",
            r["severity"],
            _shorten(r["why"] or "", 120),
        ]
        for r in report.remediation.iter_rows(named=True)
    ]
    shown_trends = [
        (m.column, m.report_label, m.unit)
        for m in shown_trend_metrics(report.trends)
        if m.report_label is not None
    ]
    trends = [
        [
            r["week"],
            "all" if r["cluster"] == ALL_CLUSTERS else r["cluster"],
            *[in_unit(r[column], unit) for column, _, unit in shown_trends],
        ]
        for r in report.trends.iter_rows(named=True)
    ]
    groups = [
        [
            r["grouping"],
            r["name"],
            str(r["jobs"]),
            _gpu_h(r["allocated_gpu_h"]),
            _gpu_h(r["productive_gpu_h"]),
            _gpu_h(r["init_gpu_h"]),
            _gpu_h(r["checkpoint_gpu_h"]),
            _gpu_h(r["wasted_gpu_h"]),
            _gpu_h(r["other_gpu_h"]),
            _pct(r["goodput"]),
        ]
        for r in report.goodput_groups.iter_rows(named=True)
    ]
    escapes = [
        [
            r["detector"],
            str(r["catches"]),
            str(r["escapes"]),
            str(r["placed_on_flagged"]),
            in_unit(r["median_lead_h"], "hours"),
            _gpu_h(r["late_remediation_gpu_h"]),
        ]
        for r in report.escapes.iter_rows(named=True)
    ]
    checkpoints = [
        [
            r["job_key"],
            str(r["jobs"]),
            str(r["gpus"]),
            _seconds(r["save_cost_s"]),
            _seconds(r["current_interval_s"]),
            _seconds(r["optimal_interval_s"]),
            _pct(r["lost_fraction_current"]),
            _pct(r["lost_fraction_optimal"]),
            _gpu_h(r["regained_gpu_h"]),
        ]
        for r in report.checkpoints.iter_rows(named=True)
    ]
    costs = [
        [
            names.node(r["node"], r["cluster"]),
            r["cluster"] or "",
            _gpu_h(r["lost_gpu_h"]),
            _gpu_h(r["failure_gpu_h"]),
            _gpu_h(r["straggler_gpu_h"]),
            _gpu_h(r["waiting_gpu_h"]),
            _pct(r["fleet_goodput_without"]),
            change_in(r["goodput_regained"], "ratio"),
        ]
        for r in report.node_cost.iter_rows(named=True)
    ]
    empty = pl.DataFrame()
    teams = [
        [
            r["team"],
            r["queue"],
            str(r["jobs"]),
            _gpu_h(r["measured_gpu_h"]),
            _pct(r["busy_share"]),
            _gpu_h(r["idle_gpu_h"]),
            ", ".join(r["top_idle_jobs"] or []) or "-",
        ]
        for r in names.qualify(
            report.utilisation if report.utilisation is not None else empty,
            "top_idle_jobs",
            "job",
            "top_idle_job_clusters",
        ).iter_rows(named=True)
    ]
    packing = [
        [
            r["workload"],
            r["cluster"],
            r["gpu_model"],
            str(r["jobs"]),
            _gpu_h(r["gpu_h"]),
            _pct(r["p95_activity"]),
            f"{r['peak_memory_gib']:,.1f} GiB",
            r["profile"],
            _gpu_h(r["freed_gpu_h"]),
            f"{r['gpus_freed']:,.2f}",
        ]
        for r in (report.mig_packing if report.mig_packing is not None else empty).iter_rows(
            named=True
        )
    ]
    sections = [
        (
            "Summary",
            ["Metric", "This week", "Previous week", "Change"],
            summary,
            (
                "Ratios are summed numerators over summed denominators; n/a: nothing to measure "
                "(MTBF n/a: no failure this week)."
            ),
        ),
        (
            "Goodput stack (GPU-hours)",
            ["Level", "GPU-hours", "Share of capacity"],
            stack,
            (
                "capacity = unavailable + unknown + idle + allocated; "
                "allocated = init + checkpoint + wasted + other + productive."
            ),
        ),
        (
            "Failures by class and cause",
            ["Class", "Cause", "Attempts", "Jobs", "GPU-hours", "Share", "Cumulative"],
            failures,
            (
                "Fleet failures (failed / node_fail attempts of class hardware, infrastructure by evidence, "
                "software, unknown) that ended this week; cause: the hardware XID seen on the attempt's nodes "
                "around its end, else node_fail, the anomaly or node state, else the exit code."
            ),
        ),
        (
            "Not fleet failures: user and scheduler policy",
            ["Class", "Cause", "Attempts", "Jobs", "GPU-hours"],
            not_failures,
            (
                "Cancelled, timed out, out of memory (user) and preempted or evicted (infrastructure by policy): "
                "never counted as failures of the fleet, whatever else happened on the node."
            ),
        ),
        (
            f"Trends ({TREND_WEEKS} weeks)",
            ["Week", "Cluster", *[t for _, t, _ in shown_trends]],
            trends,
            (
                "Per ISO week and cluster, from the weekly summary; a week without data has no row. "
                "MTBF n/a: no failure that week."
            ),
        ),
        (
            "Goodput by team and queue",
            [
                "By",
                "Name",
                "Jobs",
                "Allocated GPU-h",
                "Productive GPU-h",
                "Init GPU-h",
                "Checkpoint GPU-h",
                "Wasted GPU-h",
                "Other GPU-h",
                "Goodput",
            ],
            groups,
            (
                "Allocated GPU-hours of the week split as the goodput stack splits them; goodput = "
                "productive / allocated, summed over the group's jobs."
            ),
        ),
        (
            f"Top {len(nodes)} nodes by lost GPU-hours",
            [
                "Node",
                "Cluster",
                "GPU model",
                "Lost GPU-h",
                "Unavailable GPU-h",
                "Unknown GPU-h",
                "Availability",
                "Failed attempts",
                "XIDs",
                "Top reason",
            ],
            nodes,
            "Lost = unavailable + unknown (telemetry gaps count as lost: fail closed).",
        ),
        (
            f"Top {len(findings)} findings by goodput lost",
            [
                "Node",
                "Cluster",
                "GPU",
                "Finding",
                "Severity",
                "Action",
                "Start (UTC)",
                "End (UTC)",
                "Goodput lost GPU-h",
                "Impact GPU-h",
            ],
            findings,
            (
                "Goodput lost: wasted progress + recovery of the job attempts the finding ended (hardware "
                "failures on its node around it). Impact: GPU-hours of jobs on the entity while it was open."
            ),
        ),
        (
            "Remediation recommended this week",
            ["Node", "Cluster", "Step", "Since (UTC)", "Until (UTC)", "Severity", "Why"],
            remediation,
            (
                "From node_remediation_history: every step in force at some time of the week, "
                "also those whose findings closed before its end."
            ),
        ),
        (
            "Failure escapes by detector",
            [
                "Detector",
                "Caught",
                "Escaped",
                "Placed on flagged",
                "Median lead",
                "Late remediation GPU-h",
            ],
            escapes,
            (
                "Fleet failures (hardware or infrastructure) that ended this week. Caught: a finding or bad "
                "condition was open before the failure; escaped: it opened only after (none: nothing saw it). "
                "Late remediation: GPU-hours the caught failures still lost."
            ),
        ),
        (
            f"Checkpoint advice (top {len(checkpoints)})",
            [
                "Job (team/name)",
                "Runs",
                "GPUs",
                "Save cost",
                "Interval now",
                "Optimal interval",
                "Lost now",
                "Lost at optimum",
                "GPU-h regained",
            ],
            checkpoints,
            (
                "Young/Daly optimum for the fleet's interruptions per node-hour times the job's nodes; "
                "intervals are work time between saves."
            ),
        ),
        (
            f"Node cost (top {len(costs)})",
            [
                "Node",
                "Cluster",
                "Lost GPU-h",
                "Failures GPU-h",
                "Straggler GPU-h",
                "Down while jobs waited GPU-h",
                "Fleet goodput without it",
                "Goodput regained",
            ],
            costs,
            "GPU-hours jobs lost because of the node; goodput had it been replaced on Monday.",
        ),
        (
            f"Utilisation by team and queue (top {len(teams)} by idle GPU-hours)",
            [
                "Team",
                "Queue",
                "Jobs",
                "Allocated GPU-h (telemetry)",
                "Busy share",
                "Idle GPU-h",
                "Top idle jobs",
            ],
            teams,
            (
                "Allocated GPU-hours seen in DCGM telemetry (MIG instances by their share of a GPU); busy share = "
                "graphics-engine-active GPU-hours / allocated; idle: activity below the idle threshold for the "
                "whole scrape window."
            ),
        ),
        (
            f"MIG packing (top {len(packing)})",
            [
                "Workload",
                "Cluster",
                "GPU model",
                "Jobs",
                "GPU-h",
                "p95 activity",
                "Peak memory",
                "MIG profile",
                "GPU-h freed",
                "GPUs freed",
            ],
            packing,
            (
                "Workloads holding whole GPUs whose p95 activity and peak memory fit a MIG profile with headroom; "
                "GPUs freed: GPU-hours freed / 168, on average over the week."
            ),
        ),
    ]
    if report.incomplete is not None and not report.incomplete.is_empty():
        windows = [
            [
                f"{r['start_ts']:%Y-%m-%d %H:%M}",
                f"{r['end_ts']:%Y-%m-%d %H:%M}",
                r["queries"],
                _shorten(r["store_said"]),
            ]
            for r in report.incomplete.iter_rows(named=True)
        ]
        sections.insert(
            0,
            (
                "Telemetry incomplete from the store",
                ["From (UTC)", "To (UTC)", "Queries", "The store said"],
                windows,
                (
                    "Telemetry incomplete from the store for these windows: it answered only in part (loaded with "
                    "--allow-partial). Gaps and unknown hours there may be the store's, not the fleet's; the next "
                    "complete ingest fills them."
                ),
            ),
        )
    return sections


def to_markdown(report: WeeklyReport) -> str:
    """The report as GitHub-flavoured Markdown."""

    # Node, GPU-model, cluster and cause names come from the data: text, never HTML or links.
    cell = escape_markdown_cell
    lines = [f"# {cell(_title(report))}", ""]
    for heading, header, rows, note in _tables(report):
        lines += [f"## {heading}", ""]
        if not rows:
            lines += ["None this week.", ""]
            continue
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
        lines += ["", f"_{note}_", ""]
    return "\n".join(lines)


def _records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts()


def to_json(report: WeeklyReport) -> str:
    """The report as JSON: raw values (ratios 0-1, hours, GPU-hours), nulls where unknown."""
    payload = {
        "week": report.week.label,
        "week_start": report.week.monday.isoformat(),
        "week_end": report.week.end.date().isoformat(),
        "cluster": report.cluster,
        "summary": _records(report.summary),
        "goodput_stack": _records(report.goodput_stack),
        "failures": _records(report.failures),
        "not_failures": _records(report.not_failures),
        "top_nodes": _records(report.top_nodes),
        "incomplete_windows": _records(report.incomplete) if report.incomplete is not None else [],
        "findings": _records(report.findings),
        "remediation": _records(report.remediation),
        "trends": _records(report.trends),
        "goodput_groups": _records(report.goodput_groups),
        "escapes": _records(report.escapes),
        "checkpoints": _records(report.checkpoints),
        "node_cost": _records(report.node_cost),
        "utilisation": _records(report.utilisation) if report.utilisation is not None else [],
        "mig_packing": _records(report.mig_packing) if report.mig_packing is not None else [],
    }
    return json.dumps(payload, indent=2, default=str, allow_nan=False)


def _figures(report: WeeklyReport) -> list[Any]:
    import plotly.graph_objects as go

    from pipelines import charts

    figures = []
    # The dashboard's waterfall and Pareto, from the report's rows: `part` rows (allocated but
    # idle) are part of a level, not a step of the waterfall.
    stack = report.goodput_stack.filter(pl.col("kind") != "part")
    if not stack.is_empty():
        levels = dict(zip(stack["level"].to_list(), stack["gpu_h"].to_list()))
        figures.append(charts.goodput_waterfall({f"{k}_gpu_h": v for k, v in levels.items()}))
    if not report.failures.is_empty():
        figures.append(
            charts.failure_pareto(report.failures.rename({"cumulative_share": "cum_share"}))
        )
    nodes = report.names.qualify(report.top_nodes, "node", "node")
    if not nodes.is_empty():
        figures.append(
            go.Figure(
                [
                    go.Bar(
                        y=nodes["node"].to_list(),
                        x=nodes["unavailable_gpu_h"].to_list(),
                        name="unavailable",
                        orientation="h",
                    ),
                    go.Bar(
                        y=nodes["node"].to_list(),
                        x=nodes["unknown_gpu_h"].to_list(),
                        name="unknown",
                        orientation="h",
                    ),
                ],
                layout={
                    "title": "Nodes by lost GPU-hours",
                    "barmode": "stack",
                    "xaxis_title": "GPU-hours",
                    "yaxis": {"autorange": "reversed"},
                },
            )
        )
    return figures


def to_html(report: WeeklyReport) -> str:
    """A self-contained page: the same tables plus plotly charts, plotly.js inlined (no network)."""
    from plotly.offline import get_plotlyjs

    esc = html.escape
    body = [f"<h1>{esc(_title(report))}</h1>"]
    for heading, header, rows, note in _tables(report):
        body.append(f"<h2>{esc(heading)}</h2>")
        if not rows:
            body.append("<p>None this week.</p>")
            continue
        numeric = [all(_NUMBER.match(row[i]) for row in rows) for i in range(len(header))]
        head = "".join(
            f"<th{' class=n' if n else ''}>{esc(h)}</th>" for h, n in zip(header, numeric)
        )
        cells = "".join(
            "<tr>"
            + "".join(f"<td{' class=n' if n else ''}>{esc(c)}</td>" for c, n in zip(row, numeric))
            + "</tr>"
            for row in rows
        )
        body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
        body.append(f"<p class='note'>{esc(note)}</p>")
    body.append("<h2>Charts</h2>")
    body += [fig.to_html(full_html=False, include_plotlyjs=False) for fig in _figures(report)]
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
        ".n{text-align:right;font-variant-numeric:tabular-nums}.note{color:#666;font-size:.9em}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(_title(report))}</title><style>{style}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        + "\n".join(body)
        + "</body></html>"
    )


def render(report: WeeklyReport, fmt: str) -> str:
    """The report in `fmt` (md, json or html)."""
    renderers = {"md": to_markdown, "json": to_json, "html": to_html}
    if fmt not in renderers:
        raise GpufleetError(f"Unknown report format `{fmt}`.", f"Use one of: {', '.join(FORMATS)}.")
    return renderers[fmt](report)


def write_atomically(path: Path, text: str) -> None:
    """Write `path` via a temporary file in the same folder, so readers never see half a file.

    The temporary file has a random name and is created exclusively (`tempfile.mkstemp`), and the
    rename replaces whatever is at `path` (a planted link included) instead of writing through it.
    """
    if path.resolve() == Path("/") or path.is_dir():
        raise GpufleetError(
            f"`{path}` is a folder.", "Pass --out a file name, e.g. report-2026-W48.md."
        )
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise GpufleetError(
            f"Cannot write into `{folder}`: {e.strerror}.",
            "Pass --out a file in a folder you can write.",
        ) from None
    try:
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), 0o644)  # mkstemp makes 0600; a report is meant to be shared
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise GpufleetError(
            f"Cannot write `{path}`: {e.strerror}.",
            "Check the disk and the folder, then run again.",
        ) from None
