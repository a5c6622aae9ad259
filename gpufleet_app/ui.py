"""Shared page parts: filters kept in the URL, the computed-database check, errors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
import streamlit as st

from gpufleet_app import data, fmt
from pipelines.compute import derived
from pipelines.config import Settings, load_settings
from pipelines.errors import GpufleetError
from pipelines.fleet_names import QUALIFIER, SharedNames
from pipelines.weeks import IsoWeek

ALL_CLUSTERS = "*"
REQUIRED_VIEWS = derived(
    "node_state_intervals",
    "node_availability_daily",
    "fleet_availability_daily",
    "job_outcomes",
    "attempt_outcomes",
    "job_goodput",
    "goodput_segments",
    "goodput_stack",
    "rank_slowdown",
    "anomalies",
    "node_cost",
)

PAGES_DIR = Path(__file__).resolve().parent / "views"
OVERVIEW = PAGES_DIR / "overview.py"
NODES = PAGES_DIR / "nodes.py"
JOBS = PAGES_DIR / "jobs.py"
ANOMALIES = PAGES_DIR / "anomalies.py"
TELEMETRY = PAGES_DIR / "telemetry.py"
REMEDIATION = PAGES_DIR / "remediation.py"
UTILISATION = PAGES_DIR / "utilisation.py"


class NothingToShow(GpufleetError):
    """The database holds nothing this page can show yet (shown as info, not as an error)."""


def show_error(error: GpufleetError) -> None:
    if isinstance(error, NothingToShow):
        st.info(fmt.text(error.title))
    else:
        st.error(fmt.text(error.title))
    if error.hint:
        st.markdown(error.hint)


def settings() -> Settings:
    """`gpufleet.toml` (or `$GPUFLEET_CONFIG`), as the pipeline reads it: the app's rules match."""
    return load_settings()


def url_param(name: str) -> str | None:
    value = st.query_params.get(name)
    return value or None


def choice_from_url(name: str, options: list[str], what: str, shown_as: str | None = None) -> int:
    """The index of the URL's `name` among `options`; an unknown value says so and picks the first.

    `what` names the parameter for the reader ("severity"); `shown_as` the first option's label.
    """
    value = url_param(name)
    if value is None:
        return 0
    if value in options:
        return options.index(value)
    known = [o for o in options if o != "*"]
    st.warning(
        f"Unknown {what} “{fmt.text(value)}” in the link; showing {shown_as or fmt.text(options[0])}. "
        f"Known: {', '.join(fmt.text(o) for o in known[:20])}{' …' if len(known) > 20 else ''}."
    )
    return 0


def set_url(**params: str | None) -> None:
    """Write the page's state into the URL (None removes a parameter)."""
    for name, value in params.items():
        if value is None:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != value:
            st.query_params[name] = value


def has_table(name: str) -> bool:
    return name in set(data.query("tables")["table_name"].to_list())


def require_computed() -> None:
    """Stop with the command to run when the derived views are missing."""
    present = set(data.query("tables")["table_name"].to_list())
    missing = [v for v in REQUIRED_VIEWS if v not in present]
    if missing:
        raise NothingToShow(
            f"The database has no computed metrics yet (`{missing[0]}` is missing).",
            "Run `gpufleet compute` to build them, or `gpufleet demo --no-app` for a demo fleet.",
        )


@dataclass(frozen=True)
class Filters:
    week: IsoWeek
    cluster: str
    """A cluster name, or `*` for all clusters."""

    def params(self) -> dict[str, object]:
        """The app queries' named parameters; `$week_start`/`$week_end` are UTC instants."""
        return {
            "week": self.week.label,
            "week_start": self.week.start,
            "week_end": self.week.end,
            "prev_week": self.week.previous.label,
            "cluster": self.cluster,
        }

    @property
    def cluster_label(self) -> str:
        """For Markdown: the cluster name is escaped."""
        return (
            "all clusters" if self.cluster == ALL_CLUSTERS else f"cluster {fmt.text(self.cluster)}"
        )


def default_week(weeks: list[tuple[str, int]]) -> str:
    """The newest full week (7 days of data), else the newest week."""
    full = [w for w, days in weeks if days >= 7]
    return full[0] if full else weeks[0][0]


def week_and_cluster(*, with_cluster: bool = True) -> Filters:
    """The ISO week picker and cluster filter, initialised from and written back to the URL."""
    require_computed()
    weeks_df = data.query("weeks")
    if weeks_df.is_empty():
        raise NothingToShow(
            "The database holds no node availability data yet.",
            "Load data and compute: `gpufleet demo --no-app`, or `gpufleet ingest ...` then "
            "`gpufleet compute`.",
        )
    weeks = list(zip(weeks_df["week"].to_list(), weeks_df["days"].to_list()))
    names = [w for w, _ in weeks]
    wanted = url_param("week")
    if wanted and wanted not in names:
        st.warning(
            f"No data for week “{fmt.text(wanted)}”; showing {default_week(weeks)}. "
            f"Weeks with data: {', '.join(names)}."
        )
        wanted = None
    chosen = wanted or default_week(weeks)
    left, right, _ = st.columns([3, 2, 4])
    week = left.selectbox(
        "ISO week (UTC)",
        names,
        index=names.index(chosen),
        format_func=week_label,
    )
    cluster = ALL_CLUSTERS
    if with_cluster:
        clusters = data.query("clusters")["cluster"].to_list()
        options = [ALL_CLUSTERS, *clusters]
        asked = url_param("cluster")
        if asked and asked not in options:
            st.warning(f"Unknown cluster “{fmt.text(asked)}”; showing all clusters.")
            asked = None
        cluster = right.selectbox(
            "Cluster",
            options,
            index=options.index(asked or ALL_CLUSTERS),
            format_func=lambda c: "All clusters" if c == ALL_CLUSTERS else c,
        )
    if with_cluster:
        set_url(week=week, cluster=None if cluster == ALL_CLUSTERS else cluster)
    else:  # a node page: `cluster` names the node's cluster, not a filter
        set_url(week=week)
    return Filters(IsoWeek.parse(week), cluster)


def shared_names() -> SharedNames:
    """The node names and job ids more than one cluster holds: shown as `cluster/name`."""
    return SharedNames.from_frame(data.query("shared_names"))


@dataclass(frozen=True)
class Located:
    """Where a node or job named in a link is: its cluster, or why there is none."""

    name: str
    cluster: str | None
    """The one cluster meant: named by `?cluster=`, or the only one holding the name."""
    clusters: list[str]
    """Every cluster holding the name."""
    asked: str | None
    """`?cluster=` of the link, if any."""


def locate(kind: str, name: str) -> Located:
    """The cluster of the node (`kind` `node`) or job (`job`) a link names: `?cluster=` when it
    holds the name, else the only cluster holding it (an old link without `?cluster=`)."""
    if kind == "node":
        clusters = data.query("node_clusters", node=name)["cluster"].to_list()
    else:
        clusters = data.query("job_clusters", job=name)["cluster"].to_list()
    asked = url_param("cluster")
    if asked is not None:
        cluster = asked if asked in clusters else None
    else:
        cluster = clusters[0] if len(clusters) == 1 else None
    return Located(name, cluster, clusters, asked)


def explain_unlocated(
    located: Located,
    kind: str,
    unknown: str,
    page: Path | None = None,
    keep: tuple[str, ...] | None = None,
) -> None:
    """Say why a link's node or job has no page: `unknown` when no cluster holds the name; the
    clusters that do (each a link) when it is ambiguous or not in the link's cluster.

    Each link opens `page` (the node's or job's own page unless another page filters by it) for
    that cluster, keeping the URL's `keep` parameters (a node page keeps its week)."""
    own, label = (NODES, "Node") if kind == "node" else (JOBS, "Job")
    if keep is None:
        keep = ("week",) if kind == "node" else ()
    name = fmt.text(located.name)
    if not located.clusters:
        st.warning(unknown)
        return
    listed = ", ".join(fmt.text(c) for c in located.clusters)
    if located.asked is not None:
        st.warning(
            f"{label} “{name}” is not in cluster {fmt.text(located.asked)}; clusters with a "
            f"{kind} of that name: {listed}."
        )
    else:
        st.warning(
            f"{label} “{name}” is ambiguous: clusters {listed} each have a {kind} of that name. "
            "Choose one:"
        )
    kept = {name: value for name in keep if (value := url_param(name)) is not None}
    for cluster in located.clusters:
        query = {kind: located.name, "cluster": cluster, **kept}
        st.page_link(
            page or own,
            label=fmt.text(f"{label} {cluster}{QUALIFIER}{located.name}"),
            icon=":material/arrow_forward:",
            query_params=query,
        )


def node_link(node: pl.Expr, cluster: pl.Expr, week: str) -> pl.Expr:
    """The URL of a node's page for a link column: `/nodes?node=N&cluster=C&week=W`."""
    return pl.format("/nodes?node={}&cluster={}&week={}", node, cluster, pl.lit(week))


def job_link(job_id: pl.Expr, cluster: pl.Expr) -> pl.Expr:
    """The URL of a job's page for a link column: `/jobs?job=J&cluster=C`."""
    return pl.format("/jobs?job={}&cluster={}", job_id, cluster)


def open_node(node: str, cluster: str, week: str) -> None:
    """Go to a node's page in `week` (a clicked table row)."""
    st.switch_page(NODES, query_params={"node": node, "cluster": cluster, "week": week})


def open_finding(row: dict, week: str) -> None:
    """Go to the page of a finding's job, else of its node (a clicked anomaly row)."""
    if row["job_id"]:
        st.switch_page(JOBS, query_params={"job": row["job_id"], "cluster": row["cluster"]})
    open_node(row["node"], row["cluster"], week)


def week_label(week: str) -> str:
    """`2026-W48 · 23 Nov–29 Nov 2026`."""
    iso_week = IsoWeek.parse(week)
    return f"{week} · {iso_week.monday:%d %b}–{iso_week.sunday:%d %b %Y}"


def sidebar_status() -> None:
    """Where the numbers come from and how fresh they are."""
    reader = data.reader()
    st.sidebar.caption(f"Database: {fmt.text(reader.path.name)} (read-only)")
    try:
        status = data.query("data_status").row(0, named=True)
    except GpufleetError:
        return
    if status["loaded_at"] is not None:
        st.sidebar.caption(
            f"Data version {status['data_version']}, last load {status['loaded_at']:%Y-%m-%d %H:%M} UTC"
        )
    if reader.stale:
        st.sidebar.warning(
            "Another program holds the database open for writing; these are the numbers from before."
        )
    try:
        versions = data.query("derived_version").row(0, named=True)
    except GpufleetError:  # no compute log: derived tables made by hand, nothing to compare
        versions = None
    if (
        versions
        and versions["computed_version"] is not None
        and versions["computed_version"] != versions["data_version"]
    ):
        st.sidebar.warning(
            f"Raw data changed since the last compute (the numbers were built from data version "
            f"{versions['computed_version']}; the database holds version {versions['data_version']}). "
            "They leave the newest data out until `gpufleet compute` runs."
        )
    try:
        incomplete = data.query("incomplete_windows")
    except GpufleetError:  # a database from before the table existed
        return
    if not incomplete.is_empty():
        windows = "; ".join(
            f"{r['start_ts']:%Y-%m-%d %H:%M}–{r['end_ts']:%H:%M} UTC ({r['queries']})"
            for r in incomplete.head(5).iter_rows(named=True)
        )
        more = f" and {incomplete.height - 5} more" if incomplete.height > 5 else ""
        st.sidebar.warning(
            f"Telemetry incomplete from the store for {incomplete.height} windows: {windows}{more}. "
            "Gaps there may be the store's, not the fleet's; the next complete ingest fills them.",
            icon=None,
        )


def stale_notice() -> None:
    reader = data.reader()
    if reader.stale:
        holder = reader.busy_title or "Another program holds the database open for writing."
        st.info(fmt.text(holder) + " Showing the numbers read before it; reload once it is closed.")


NODE_LOSS_COLUMNS = {
    "cost_gpu_h": st.column_config.NumberColumn(
        "cost GPU-h",
        format="%.1f",
        help="GPU-hours jobs lost because of the node this week (node_cost): failures, straggler drag, "
        "time it was down while jobs waited.",
    ),
    "availability_pct": st.column_config.NumberColumn("availability", format="%.2f %%"),
    "unavailable_gpu_h": st.column_config.NumberColumn("unavailable GPU-h", format="%.1f"),
    "unknown_gpu_h": st.column_config.NumberColumn("unknown GPU-h", format="%.1f"),
}
"""How the node tables (overview's worst nodes, the nodes page) show availability and lost GPU-hours."""


def table(frame: pl.DataFrame, *, container=None, column_config: dict | None = None, **kwargs):
    """st.dataframe with the house style: full width, no index, UTC timestamps to the minute,
    a missing value shown as `—` in every column (as on the metric cards), never `None`."""
    config = {
        name: st.column_config.DatetimeColumn(
            name.removesuffix("_ts") + " (UTC)" if name != "ts" else "time (UTC)",
            format="YYYY-MM-DD HH:mm",
        )
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Datetime)
    }
    config.update(column_config or {})
    target = container or st
    return target.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_config=config,
        placeholder=fmt.MISSING,
        **kwargs,
    )
