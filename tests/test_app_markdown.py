"""Values from the URL and from the data are text on every page: never a link, image or HTML.

A shared link with a crafted `?week=` (or node, job, cluster) and node, job, user and team names
in the data go through Streamlit's Markdown; each must arrive there escaped. The browser test
(tests/test_browser.py) checks what Chromium renders from the same kind of URL.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.markdown import escape_markdown
from tests.app_helpers import open_page

CRAFTED = [
    (
        "2026-W48) [Session expired, click to log in again](http://evil.example/login) "
        "![x](http://evil.example/pixel.png)"
    ),
    "<img src=http://evil.example/p.png onerror=alert(1)> <a href='http://evil.example'>x</a>",
    "`x` :red[evil.example] $x^2$ <http://evil.example> www.evil.example",
    "x\n\n# evil.example\n\n- [a](http://evil.example)",
]


def live_markdown(text: str) -> list[str]:
    """The Markdown syntax characters left unescaped in `text` (escaped pairs `\\x` removed)."""
    bare = re.sub(r"\\.", "", text)
    bare = re.sub(
        r"`[a-z_ ]+`", "", bare
    )  # the page's own code spans (`table nodes`), no value in them
    found = [c for c in "[]<>!&$`" if c in bare]
    return found + [m for m in ("www.", "://") if m in bare.lower()]


def markdown_texts(at) -> list[str]:
    """Every Markdown string the page sent that holds the crafted value."""
    texts = [
        e.value
        for kind in ("title", "warning", "info", "error", "success", "caption", "markdown")
        for e in getattr(at, kind)
    ]
    return [t for t in texts if "evil" in t]


def check(at) -> None:
    assert not at.exception, [e.message for e in at.exception]
    shown = markdown_texts(at)
    assert shown, "the crafted value is not shown at all"
    for text in shown:
        assert not live_markdown(text), text


@pytest.mark.parametrize("crafted", CRAFTED)
def test_crafted_week_in_a_shared_link_is_text(use_db: Path, crafted: str) -> None:
    at = open_page(week=crafted)
    check(at)
    assert any(escape_markdown(crafted) in w.value for w in at.warning)


@pytest.mark.parametrize("crafted", CRAFTED)
def test_crafted_cluster_node_and_job_in_a_shared_link_are_text(use_db: Path, crafted: str) -> None:
    check(open_page(cluster=crafted, week="2026-W48"))
    check(open_page("nodes", node=crafted, week="2026-W48"))
    check(open_page("jobs", job=crafted))


def test_names_in_the_data_are_text(
    app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "fleet.duckdb"
    shutil.copy(app_db, db)
    con = duckdb.connect(str(db))
    link = "[Session expired](http://evil.example/login)"
    image = "![x](http://evil.example/pixel.png)"
    con.execute(
        "UPDATE jobs SET name = ?, \"user\" = ?, team = ? WHERE job_id = 'j-101'",
        [link, image, "<img src=http://evil.example/t.png>"],
    )
    con.execute(
        "UPDATE nodes SET gpu_model = ?, instance_type = ? WHERE node = 'gpu-001'", [image, link]
    )
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    job = open_page("jobs", job="j-101")
    check(job)
    assert any(
        escape_markdown(link) in c.value and escape_markdown(image) in c.value for c in job.caption
    )
    node = open_page("nodes", node="gpu-001", week="2026-W48")
    check(node)
    assert any(escape_markdown(image) in c.value for c in node.caption)


def test_names_in_charts_are_text(
    app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plotly draws `<a href>` in labels and hovers: a condition reason or name from the data
    reaches the chart as entities."""
    from tests.app_helpers import plotly_figures

    db = tmp_path / "fleet.duckdb"
    shutil.copy(app_db, db)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE node_conditions SET reason = ? WHERE node = 'gpu-001'",
        ["<a href='http://evil.example'>click</a>"],
    )
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    figure = next(
        f for f in plotly_figures(at) if f["layout"]["title"]["text"] == "Conditions (status runs)"
    )
    hovers = [str(v) for trace in figure["data"] for v in trace.get("customdata") or []]
    assert any("&lt;a href='http://evil.example'&gt;click&lt;/a&gt;" in h for h in hovers)
    assert not any("<a " in h for h in hovers)


def test_the_remediation_page_shows_findings_and_links_as_text(
    use_db: Path, app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `why` comes from the findings (their kind, evidence): shown under the table as Markdown.
    check(open_page("remediation", cluster=CRAFTED[0], week="2026-W48"))
    db = tmp_path / "fleet.duckdb"
    shutil.copy(app_db, db)
    con = duckdb.connect(str(db))
    crafted = "[Session expired](http://evil.example/login) <img src=http://evil.example/p.png>"
    con.execute("UPDATE node_remediation_history SET why = ? WHERE node = 'gpu-001'", [crafted])
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    at = open_page("remediation", week="2026-W48")
    check(at)
    assert f"**Why:** {escape_markdown(crafted)}" in [m.value for m in at.markdown]
