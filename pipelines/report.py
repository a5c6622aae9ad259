"""`gpufleet report`: the weekly reliability review as Markdown, JSON or a self-contained HTML page.

Content (SQL in `queries/report/`): the weekly summary with week-over-week deltas, the goodput
stack in GPU-hours, failed attempts by class and cause (state or XID), and the nodes that lost
the most GPU-hours. Every number comes from the derived tables `gpufleet compute` builds.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.config import Settings
from pipelines.errors import DatabaseMissingError, GpufleetError
from pipelines.sql import query_pl
from pipelines.weeks import IsoWeek

FORMATS = ("md", "json", "html")
ALL_CLUSTERS = "*"
"""The `cluster` value of all-clusters rows in weekly_summary and of the report's default scope."""


def open_read_only(db: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the newest published version (writers never block it)."""
    from pipelines.serving import open_snapshot

    return open_snapshot(db)


def require_tables(con: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    """Fail with the command to run when a derived table has not been computed yet."""
    present = {
        row[0]
        for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()
    }
    missing = [t for t in tables if t not in present]
    if missing:
        raise DatabaseMissingError(
            f"The database has no `{missing[0]}` table yet.",
            "Run `gpufleet compute` first (or `gpufleet demo --no-app` for a demo database).",
        )


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
    """failure_class, cause, attempts, jobs, gpu_h, share, cumulative_share."""
    top_nodes: pl.DataFrame
    """node, cluster, gpu_model, gpu_count, down_gpu_h, unavailable_gpu_h, unknown_gpu_h, ..."""


REPORT_TABLES = [
    "weekly_summary", "goodput_stack", "attempt_outcomes", "attempt_clusters",
    "node_availability_daily", "node_state_intervals",
]


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
            r[0]
            for r in con.execute(
                "SELECT DISTINCT week FROM weekly_summary WHERE cluster = ? ORDER BY week", [cluster]
            ).fetchall()
        ]
        scope = "all clusters" if cluster == ALL_CLUSTERS else f"cluster `{cluster}`"
        raise GpufleetError(
            f"No data for week {week.label} ({scope}).",
            f"Weeks with data: {', '.join(weeks)}." if weeks else
            "The weekly summary is empty: load data and run `gpufleet compute`.",
        )
    return WeeklyReport(
        week=week,
        cluster=cluster,
        summary=summary,
        goodput_stack=query_pl(con, "report/goodput_stack", params),
        failures=query_pl(con, "report/failures", params),
        top_nodes=query_pl(con, "report/top_nodes", params),
    )


# ---------------------------------------------------------------- formatting

def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_value(value: float | None, unit: str) -> str:
    """A metric value as people read it: ratios in %, hours with one decimal, counts whole."""
    if _missing(value):
        return "n/a"
    if unit == "ratio":
        return f"{value * 100:.2f} %"
    if unit == "hours":
        return f"{value:,.1f} h"
    if unit == "attempts":
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def format_delta(value: float | None, unit: str) -> str:
    """A week-over-week change: ratios in percentage points, others in their unit, signed."""
    if _missing(value):
        return "n/a"
    if unit == "ratio":
        return f"{value * 100:+.2f} pp"
    if unit == "hours":
        return f"{value:+,.1f} h"
    if unit == "attempts":
        return f"{value:+,.0f}"
    return f"{value:+,.1f}"


def _gpu_h(value: float | None) -> str:
    return "n/a" if _missing(value) else f"{value:,.1f}"


def _pct(value: float | None) -> str:
    return "n/a" if _missing(value) else f"{value * 100:.2f} %"


def _shorten(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_NUMBER = re.compile(r"^([+-]?[\d,.]+( %| pp| h)?|n/a|-)$")


def _title(report: WeeklyReport) -> str:
    scope = "all clusters" if report.cluster == ALL_CLUSTERS else f"cluster {report.cluster}"
    return (
        f"Weekly reliability report {report.week.label} "
        f"(Mon {report.week.monday} to Sun {report.week.sunday}, UTC), {scope}"
    )


def _tables(report: WeeklyReport) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(heading, header, rows, note) of every section, shared by Markdown and HTML."""
    summary = [
        [r["label"], format_value(r["value"], r["unit"]), format_value(r["previous"], r["unit"]),
         format_delta(r["delta"], r["unit"])]
        for r in report.summary.iter_rows(named=True)
    ]
    stack = [
        [r["level"], _gpu_h(r["gpu_h"]), _pct(r["share_of_capacity"])]
        for r in report.goodput_stack.iter_rows(named=True)
    ]
    failures = [
        [r["failure_class"], r["cause"], str(r["attempts"]), str(r["jobs"]), _gpu_h(r["gpu_h"]),
         _pct(r["share"]), _pct(r["cumulative_share"])]
        for r in report.failures.iter_rows(named=True)
    ]
    nodes = [
        [r["node"], r["cluster"], r["gpu_model"] or "", _gpu_h(r["down_gpu_h"]),
         _gpu_h(r["unavailable_gpu_h"]), _gpu_h(r["unknown_gpu_h"]), _pct(r["availability"]),
         str(r["failed_attempts"]), ", ".join(str(c) for c in r["xid_codes"]) or "-",
         _shorten(r["top_reason"] or "")]
        for r in report.top_nodes.iter_rows(named=True)
    ]
    return [
        ("Summary", ["Metric", "This week", "Previous week", "Change"], summary,
         ("Ratios are summed numerators over summed denominators; n/a: nothing to measure "
          "(MTBF n/a: no failure this week).")),
        ("Goodput stack (GPU-hours)", ["Level", "GPU-hours", "Share of capacity"], stack,
         ("capacity = unavailable + unknown + idle + allocated; "
          "allocated = init + checkpoint + wasted + other + productive.")),
        ("Failures by class and cause",
         ["Class", "Cause", "Attempts", "Jobs", "GPU-hours", "Share", "Cumulative"], failures,
         ("Failed attempts that ended this week; cause is the XID seen on the attempt's nodes "
          "around its end, else its final state.")),
        (f"Top {len(nodes)} nodes by lost GPU-hours",
         ["Node", "Cluster", "GPU model", "Lost GPU-h", "Unavailable GPU-h", "Unknown GPU-h",
          "Availability", "Failed attempts", "XIDs", "Top reason"], nodes,
         "Lost = unavailable + unknown (telemetry gaps count as lost: fail closed)."),
    ]


def to_markdown(report: WeeklyReport) -> str:
    """The report as GitHub-flavoured Markdown."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [f"# {_title(report)}", ""]
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
        "top_nodes": _records(report.top_nodes),
    }
    return json.dumps(payload, indent=2, default=str, allow_nan=False)


def _figures(report: WeeklyReport) -> list[Any]:
    import plotly.graph_objects as go

    figures = []
    stack = report.goodput_stack
    if not stack.is_empty():
        figures.append(
            go.Figure(
                go.Waterfall(
                    x=stack["level"].to_list(),
                    y=[v if k == "total" else -v
                       for v, k in zip(stack["gpu_h"].to_list(), stack["kind"].to_list())],
                    measure=["absolute" if lvl == "capacity" else "total" if k == "total" else "relative"
                             for lvl, k in zip(stack["level"].to_list(), stack["kind"].to_list())],
                    text=[_gpu_h(v) for v in stack["gpu_h"].to_list()],
                    textposition="outside",
                ),
                layout={"title": "Goodput stack (GPU-hours)", "yaxis_title": "GPU-hours",
                        "showlegend": False},
            )
        )
    failures = report.failures
    if not failures.is_empty():
        labels = [f"{c}: {k}" for c, k in zip(failures["failure_class"], failures["cause"])]
        fig = go.Figure(
            [
                go.Bar(x=labels, y=failures["attempts"].to_list(), name="attempts"),
                go.Scatter(x=labels, y=[v * 100 for v in failures["cumulative_share"].to_list()],
                           name="cumulative %", yaxis="y2", mode="lines+markers"),
            ],
            layout={"title": "Failures by class and cause (Pareto)", "yaxis_title": "attempts",
                    "yaxis2": {"overlaying": "y", "side": "right", "range": [0, 105],
                               "title": "cumulative %"}},
        )
        figures.append(fig)
    nodes = report.top_nodes
    if not nodes.is_empty():
        figures.append(
            go.Figure(
                [
                    go.Bar(y=nodes["node"].to_list(), x=nodes["unavailable_gpu_h"].to_list(),
                           name="unavailable", orientation="h"),
                    go.Bar(y=nodes["node"].to_list(), x=nodes["unknown_gpu_h"].to_list(),
                           name="unknown", orientation="h"),
                ],
                layout={"title": "Nodes by lost GPU-hours", "barmode": "stack",
                        "xaxis_title": "GPU-hours", "yaxis": {"autorange": "reversed"}},
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
            "<tr>" + "".join(f"<td{' class=n' if n else ''}>{esc(c)}</td>"
                             for c, n in zip(row, numeric)) + "</tr>"
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
    """Write `path` via a temporary file in the same folder, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
