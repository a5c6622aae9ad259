"""The weekly metrics catalogue (`queries/data/weekly_metrics.csv`) against what it describes: the
columns of a computed weekly_summary, docs/metrics.md, the report's summary and the overview's cards."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpufleet_app.kpis import ESCAPE_KPIS, KPIS
from pipelines.sql import bind, query_pl
from pipelines.store import connect
from pipelines.weekly_metrics import WEEKLY_METRICS, read_catalogue, weekly_metrics_path

ROOT = Path(__file__).resolve().parent.parent

KEYS = {"week", "cluster", "week_start"}
NUMERATORS_AND_DENOMINATORS = {
    "fleet_failures",
    "escaped_failures",
    "jobs_ended",
    "eligible_jobs",
    "succeeded_jobs",
    "interruptions",
    "node_failures",
    "up_h",
    "allocated_gpu_h",
    "productive_gpu_h",
    "measured_allocated_gpu_h",
    "busy_allocated_gpu_h",
}
"""weekly_summary columns kept to re-aggregate weeks and clusters exactly: not metrics of their own.
A new weekly_summary column goes into the catalogue or, if it is one of these, here."""

CATALOGUED = [m.metric for m in WEEKLY_METRICS]


@pytest.fixture(scope="module")
def summary_columns(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The columns of weekly_summary as `gpufleet compute` builds it (the hand-made fleet)."""
    from tests.report_fixture import computed_fixture

    con = connect(computed_fixture(tmp_path_factory.mktemp("w") / "fleet.duckdb"), read_only=True)
    columns = [r[0] for r in con.execute("DESCRIBE weekly_summary").fetchall()]
    con.close()
    return columns


def test_every_weekly_summary_metric_is_in_the_catalogue(summary_columns):
    uncatalogued = set(summary_columns) - KEYS - NUMERATORS_AND_DENOMINATORS - set(CATALOGUED)
    assert not uncatalogued, (
        f"weekly_summary columns missing from queries/data/weekly_metrics.csv: {sorted(uncatalogued)}"
    )


def test_every_catalogue_metric_is_a_weekly_summary_column(summary_columns):
    unknown = set(CATALOGUED) - set(summary_columns)
    assert not unknown, (
        f"the catalogue names columns weekly_summary does not have: {sorted(unknown)}"
    )
    assert not set(CATALOGUED) & (KEYS | NUMERATORS_AND_DENOMINATORS)


def _documented_columns() -> set[str]:
    """The columns the table of docs/metrics.md's "Weekly summary" section names (first cells)."""
    text = (ROOT / "docs" / "metrics.md").read_text()
    section = text.split("\n## Weekly summary\n", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in first_cells for name in re.findall(r"`([a-z0-9_]+)`", cell)}


def test_docs_define_every_catalogue_metric():
    undocumented = set(CATALOGUED) - _documented_columns()
    assert not undocumented, (
        f'docs/metrics.md, "Weekly summary", does not define: {sorted(undocumented)}'
    )


def test_the_catalogue_is_one_row_per_metric_in_order():
    assert len(set(CATALOGUED)) == len(CATALOGUED)
    assert [m.position for m in WEEKLY_METRICS] == list(range(1, len(WEEKLY_METRICS) + 1))


def test_the_cards_are_the_catalogue_rows_marked_as_cards():
    # By hand: the overview's KPI row and Escapes section as they read on the page.
    assert [(k.column, k.label, k.higher_is_better) for k in KPIS] == [
        ("node_availability", "Node availability", True),
        ("job_success_rate", "Job success rate", True),
        ("job_success_rate_gpu_h", "Job success (GPU-h weighted)", True),
        ("goodput", "Goodput", True),
        ("ettr", "ETTR", True),
        ("mtbf_h", "MTBF", True),
        ("mttr_h", "MTTR", False),
        ("interruptions_per_1k_gpu_days", "Interruptions / 1,000 GPU-days", False),
    ]
    assert [(k.column, k.label, k.higher_is_better) for k in ESCAPE_KPIS] == [
        ("escape_rate", "Escape rate", False),
        ("jobs_placed_on_flagged", "Jobs placed on flagged nodes", False),
        ("median_lead_time_s", "Median lead time", True),
    ]
    assert all(k.help for k in KPIS + ESCAPE_KPIS)


@pytest.fixture
def fixture_con(fixture_db):
    con = connect(fixture_db)
    yield con
    con.close()


def _summary(con, catalogue: str | Path) -> dict[str, dict]:
    rows = query_pl(
        con,
        "report/summary",
        {"week": "2026-W48", "cluster": "*", "weekly_metrics": str(catalogue)},
    )
    return {r["metric"]: r for r in rows.iter_rows(named=True)}


def test_the_report_summary_is_the_catalogue(fixture_con, tmp_path):
    rows = _summary(fixture_con, weekly_metrics_path())
    assert [(r["metric"], r["label"]) for r in rows.values()] == [
        (m.metric, m.label) for m in WEEKLY_METRICS
    ]
    # A row added to the catalogue is a row of the report, with no other change: eligible jobs
    # of the hand-made fleet, 4 in W48 (j1, j2, j3, j5) against 2 in W47 (+2).
    lines = Path(weekly_metrics_path()).read_text().splitlines()
    extended = tmp_path / "weekly_metrics.csv"
    extended.write_text(
        "\n".join([*lines, f"{len(lines)},eligible_jobs,Eligible jobs,,jobs,higher,,Jobs."]) + "\n"
    )
    added = _summary(fixture_con, extended)["eligible_jobs"]
    assert (added["label"], added["value"], added["previous"], added["delta"]) == (
        "Eligible jobs",
        4.0,
        2.0,
        2.0,
    )
    assert list(_summary(fixture_con, extended))[-1] == "eligible_jobs"


def test_a_metric_the_database_lacks_reads_unknown(fixture_con):
    # A database computed before the utilisation metrics existed: no busy_share_allocated column.
    fixture_con.execute("ALTER TABLE weekly_summary DROP COLUMN busy_share_allocated")
    row = _summary(fixture_con, weekly_metrics_path())["busy_share_allocated"]
    assert (row["value"], row["previous"], row["delta"]) == (None, None, None)
    assert _summary(fixture_con, weekly_metrics_path())["goodput"]["value"] is not None


@pytest.mark.parametrize(
    ("field", "bad"), [("better", "highr"), ("card", "kpi")], ids=["better", "card"]
)
def test_a_misspelt_direction_or_card_is_refused(tmp_path, field, bad):
    catalogue = tmp_path / "weekly_metrics.csv"
    header, first = Path(weekly_metrics_path()).read_text().splitlines()[:2]
    cells = first.split(",")
    cells[header.split(",").index(field)] = bad
    catalogue.write_text("\n".join([header, ",".join(cells)]) + "\n")
    with pytest.raises(ValueError, match=f"{field} is '{bad}'"):
        read_catalogue(str(catalogue))


def test_the_bundled_catalogue_is_bound_unless_a_caller_names_another():
    sql = "SELECT * FROM read_csv($weekly_metrics) WHERE metric = $metric"
    assert bind(sql, {"metric": "goodput"}) == {
        "weekly_metrics": weekly_metrics_path(),
        "metric": "goodput",
    }
    assert bind(sql, {"metric": "goodput", "weekly_metrics": "/srv/mine.csv"}) == {
        "weekly_metrics": "/srv/mine.csv",
        "metric": "goodput",
    }
    assert bind("SELECT $metric", {"metric": "goodput"}) == {"metric": "goodput"}


def test_the_trends_are_the_catalogue_rows_with_a_trend_title():
    from pipelines.trend_metrics import TREND_METRICS

    assert [
        (t.column, t.title, t.report_label, t.unit, t.only_when_present) for t in TREND_METRICS
    ] == [
        (m.metric, m.trend_title, m.trend_label or None, m.unit, m.trend_when_present)
        for m in WEEKLY_METRICS
        if m.trend_title
    ]
    # What the dashboard and the report showed before the catalogue held them.
    assert [t.column for t in TREND_METRICS] == [
        "node_availability",
        "job_success_rate",
        "job_success_rate_gpu_h",
        "goodput",
        "ettr",
        "mtbf_h",
        "mttr_h",
        "interruptions_per_1k_gpu_days",
        "escape_rate",
    ]
    dashboard_only = [t.column for t in TREND_METRICS if t.report_label is None]
    assert dashboard_only == ["job_success_rate_gpu_h"]
    assert [t.column for t in TREND_METRICS if t.only_when_present] == ["escape_rate"]


def test_a_catalogue_row_may_stop_before_its_trend(tmp_path):
    header, first = Path(weekly_metrics_path()).read_text().splitlines()[:2]
    short = ",".join(first.split(",")[: header.split(",").index("help") + 1])
    catalogue = tmp_path / "weekly_metrics.csv"
    catalogue.write_text(f"{header}\n{short}\n")
    (metric,) = read_catalogue(str(catalogue))
    assert (metric.trend_title, metric.trend_label, metric.trend_when_present) == ("", "", False)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"trend_when_present": "sometimes"}, "trend_when_present is 'sometimes'"),
        ({"trend_title": "", "trend_label": "Availability"}, "a trend_label needs a trend_title"),
    ],
    ids=["when_present", "label_without_title"],
)
def test_a_malformed_trend_is_refused(tmp_path, cells, message):
    header, first = Path(weekly_metrics_path()).read_text().splitlines()[:2]
    names = header.split(",")
    row = first.split(",")
    for name, value in cells.items():
        row[names.index(name)] = value
    catalogue = tmp_path / "weekly_metrics.csv"
    catalogue.write_text("\n".join([header, ",".join(row)]) + "\n")
    with pytest.raises(ValueError, match=message):
        read_catalogue(str(catalogue))


def test_a_trend_in_a_unit_the_panels_cannot_draw_is_refused():
    from pipelines.trend_metrics import trend_metric

    attempts = next(m for m in WEEKLY_METRICS if m.unit == "attempts")
    with pytest.raises(ValueError, match="not 'attempts'"):
        trend_metric(attempts)
