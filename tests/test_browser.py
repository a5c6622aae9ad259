"""The dashboard in a real headless Chromium: overview → node → job, by clicking rows.

Starts `gpufleet app` (`streamlit run`) on 127.0.0.1 (a free port), waits (bounded) for
/_stcore/health, drives Debian's Chromium with playwright, saves screenshots under
test-artifacts/, and always stops the server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from testkit.streamlit_server import CHROMIUM, ROOT, app_server, chromium
from tests.app_fixture import build_app_db
from tests.conftest import require

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Route

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts"


def require_chromium() -> None:
    require(Path(CHROMIUM).exists(), "Chromium (/usr/bin/chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        require(False, "playwright-python")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    require_chromium()
    db = build_app_db(tmp_path_factory.mktemp("browser") / "fleet.duckdb")
    with app_server(db, tmp_path_factory.mktemp("log") / "streamlit.log") as served:
        yield served.url, db


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as launched:
        yield launched


def settle(page) -> None:
    """Wait until Streamlit has finished the script run (no running indicator)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000
    )
    page.wait_for_timeout(500)


def screenshot(page, name: str) -> None:
    """The whole page: Streamlit scrolls inside its own container, so grow the viewport."""
    height = page.evaluate(
        '() => Math.max(...[...document.querySelectorAll(\'[data-testid="stMain"], '
        '[data-testid="stAppViewContainer"], section.main\')].map(e => e.scrollHeight), 1000)'
    )
    page.set_viewport_size({"width": 1500, "height": min(int(height) + 50, 6000)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / "browser" / name))
    page.set_viewport_size({"width": 1500, "height": 1000})


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in page.inner_text("body")


def click_first_row(page, table) -> None:
    """Select the first data row of a st.dataframe (its row-selection checkbox)."""
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box is not None
    # Glide data grid: a header row, then rows of the same height; the selection
    # marker is the leftmost column.
    row_h = 35
    page.mouse.click(box["x"] + 18, box["y"] + row_h + row_h / 2)


def test_overview_to_node_to_job(server, browser) -> None:
    base, db = server
    con = duckdb.connect(str(db), read_only=True)
    availability = con.execute(
        "SELECT node_availability FROM weekly_summary WHERE week = '2026-W48' AND coalesce(cluster, '*') = '*'"
    ).fetchall()[0][0]
    con.close()
    shutil.rmtree(ARTIFACTS / "browser", ignore_errors=True)
    (ARTIFACTS / "browser").mkdir(parents=True, exist_ok=True)

    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.goto(f"{base}/?week=2026-W48")
    page.get_by_role("heading", name="Fleet overview").wait_for(timeout=30_000)
    settle(page)
    kpi = page.locator('[data-testid="stMetric"]').filter(has_text="Node availability")
    assert f"{availability * 100:.2f} %" in kpi.inner_text()
    no_exception(page)
    screenshot(page, "1-overview.png")

    top_nodes = page.locator('[data-testid="stDataFrame"]').first
    click_first_row(page, top_nodes)
    page.get_by_role("heading", name="Node gpu-001").wait_for(timeout=30_000)
    settle(page)
    assert "node=gpu-001" in page.url and "/nodes" in page.url
    assert "Availability" in page.locator('[data-testid="stMetric"]').first.inner_text()
    no_exception(page)
    screenshot(page, "2-node.png")

    jobs_table = page.locator('[data-testid="stDataFrame"]').last
    click_first_row(page, jobs_table)
    page.get_by_role("heading", name="Job j-101").wait_for(timeout=30_000)
    settle(page)
    assert "job=j-101" in page.url
    assert "Goodput" in page.inner_text("body")
    no_exception(page)
    screenshot(page, "3-job.png")
    page.close()


def test_shareable_urls_open_the_drill_downs(server, browser) -> None:
    base, _ = server
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    for path, heading, shot in [
        ("/jobs?job=j-103", "Job j-103", "4-job-stragglers.png"),
        ("/anomalies?severity=critical&week=2026-W48", "Anomalies", "5-anomalies.png"),
        ("/nodes?week=2026-W48", "Nodes", "6-nodes.png"),
    ]:
        page.goto(base + path)
        page.get_by_role("heading", name=heading).wait_for(timeout=30_000)
        settle(page)
        no_exception(page)
        screenshot(page, shot)
    page.close()


def offline_page(browser: Browser) -> tuple[Page, list[str]]:
    """A page on which every request to anything but 127.0.0.1 fails, and is recorded."""
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    outside: list[str] = []

    def route(route: Route) -> None:
        from urllib.parse import urlsplit

        url = route.request.url
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", route)
    return page, outside


def test_every_page_renders_with_no_request_leaving_the_machine(server, browser) -> None:
    base, _ = server
    page, outside = offline_page(browser)
    for path, heading in [
        ("/?week=2026-W48", "Fleet overview"),
        ("/nodes?week=2026-W48", "Nodes"),
        ("/nodes?node=gpu-001&week=2026-W48", "Node gpu-001"),
        ("/jobs?week=2026-W48", "Jobs"),
        ("/jobs?job=j-103", "Job j-103"),
        ("/anomalies?week=2026-W48", "Anomalies"),
    ]:
        page.goto(base + path)
        page.get_by_role("heading", name=heading).wait_for(timeout=30_000)
        # The page's content, not only its title (bounded wait: the machine may be busy).
        page.locator('[data-testid="stMetric"], [data-testid="stDataFrame"]').first.wait_for(
            timeout=30_000
        )
        settle(page)
        no_exception(page)
    assert outside == []
    page.close()


def test_remediation_page_renders_with_no_request_leaving_the_machine(server, browser) -> None:
    base, _ = server
    page, outside = offline_page(browser)
    page.goto(base + "/remediation?week=2026-W48")
    page.get_by_role("heading", name="Remediation").wait_for(timeout=30_000)
    page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=30_000)
    settle(page)
    no_exception(page)
    # The first row's detail under the table: hand-made fleet, gpu-001's XID called for reset_gpu.
    page.get_by_role("heading", name="gpu-001: reset_gpu (ended)").wait_for(timeout=30_000)
    assert "cluster=" not in page.url and "week=2026-W48" in page.url
    screenshot(page, "7-remediation.png")
    assert outside == []
    page.close()


CRAFTED_WEEK = (
    "2026-W48) [Session expired, click to log in again](http://evil.example/login) "
    "![pixel](http://evil.example/pixel.png) <img src=http://evil.example/i.png> www.evil.example"
)


def test_a_crafted_url_renders_no_link_and_no_image(server, browser) -> None:
    from urllib.parse import quote

    base, _ = server
    page, outside = offline_page(browser)
    for path, heading in [
        (f"/?week={quote(CRAFTED_WEEK)}", "Fleet overview"),
        (f"/nodes?node={quote(CRAFTED_WEEK)}&week=2026-W48", "Node"),
        (f"/jobs?job={quote(CRAFTED_WEEK)}", "Job"),
        (f"/anomalies?cluster={quote(CRAFTED_WEEK)}", "Anomalies"),
    ]:
        page.goto(base + path)
        page.get_by_role("heading", name=heading).first.wait_for(timeout=30_000)
        settle(page)
        no_exception(page)
        main = page.locator('[data-testid="stMain"]')
        # The value is shown, as the text it is (bare URLs carry an invisible word joiner) ...
        shown = main.inner_text().replace("\u2060", "")
        assert "[Session expired, click to log in again](http://evil.example/login)" in shown, path
        # ... and nothing in it became a link or an image.
        # (A heading's own `#...` anchor stays on the page.)
        links = page.eval_on_selector_all(
            "a[href]", "els => els.map(e => [e.getAttribute('href'), e.innerText])"
        )
        assert [
            link
            for link in links
            if not link[0].startswith("#") and ("evil" in link[0] or "Session expired" in link[1])
        ] == [], path
        assert page.locator("img[src*='evil'], img[alt='pixel']").count() == 0, path
    screenshot(page, "7-crafted-url.png")
    assert not [url for url in outside if "evil" in url]
    page.close()


COMPUTE_THEN_WAIT = """
import sys
from pathlib import Path
from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.serving import writing
from pipelines.sources.files import ingest_files

# A scheduled update: load late data and compute, in one writer session; it publishes
# only when told to, so the pages below are served while the compute's copy is unpublished.
with writing(sys.argv[1], command="gpufleet compute") as session:
    ingest_files(session.con, Path(sys.argv[2]))
    compute(session.con, Settings(), force=True)
    print("computed", flush=True)
    sys.stdin.readline()
print("published", flush=True)
"""


def said(process: subprocess.Popen[str], word: str) -> bool:
    """Read the process's output up to the line `word` (DuckDB's progress bar writes there too)."""
    assert process.stdout is not None  # started with stdout=PIPE
    for line in process.stdout:
        if line.strip() == word:
            return True
    return False


PAGES = [
    ("/?week={week}", "Fleet overview"),
    ("/nodes?node={node}&week={week}", "Node {node}"),
    ("/jobs?job={job}", "Job {job}"),
    ("/anomalies?week={week}", "Anomalies"),
]


def test_every_page_is_served_during_a_compute(
    browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Pages stay served with the published numbers while a writer works; after it publishes,
    a reload shows the new version."""
    folder = tmp_path_factory.mktemp("browser-compute")
    db = build_app_db(folder / "fleet.duckdb", fleet="simulated")
    con = duckdb.connect(str(db), read_only=True)
    version = con.execute("SELECT max(batch_id) FROM load_log").fetchall()[0][0]
    week, node, job = con.execute(
        "SELECT strftime(min(start_ts), '%G-W%V'), (SELECT min(node) FROM nodes), (SELECT min(job_id) FROM jobs) "
        "FROM job_attempts"
    ).fetchall()[0]
    con.close()
    late = folder / "late"
    late.mkdir()
    (late / "maintenance.csv").write_text(
        f"node,start_ts,end_ts,reason\n{node},2026-11-24T10:00:00Z,2026-11-24T11:00:00Z,declared late\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = None
    with (
        app_server(db, folder / "streamlit.log") as served,
        (folder / "writer.log").open("w") as writer_log,
    ):
        base = served.url
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            writer = subprocess.Popen(
                [sys.executable, "-c", COMPUTE_THEN_WAIT, str(db), str(late)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                stderr=writer_log,
            )
            # Every page is served while the writer loads, computes, and holds its unpublished copy.
            for path, heading in PAGES:
                page.goto(base + path.format(week=week, node=node, job=job))
                page.get_by_role("heading", name=heading.format(node=node, job=job)).wait_for(
                    timeout=90_000
                )
                settle(page)
                no_exception(page)
                # An error message, not an info that mentions error counters (case-sensitive).
                assert (
                    page.locator('[data-testid="stAlert"]')
                    .filter(has_text=re.compile("Error"))
                    .count()
                    == 0
                )
                assert f"Data version {version}," in page.inner_text("body")
                assert writer.poll() is None  # still writing: it publishes only when told to
            assert said(writer, "computed"), (folder / "writer.log").read_text()[-3000:]
            assert writer.stdin is not None  # started with stdin=PIPE
            writer.stdin.write("\n")
            writer.stdin.flush()
            assert said(writer, "published")
            assert writer.wait(timeout=60) == 0
            page.goto(f"{base}/?week={week}")
            page.get_by_role("heading", name="Fleet overview").wait_for(timeout=60_000)
            settle(page)
            no_exception(page)
            assert f"Data version {version + 1}," in page.inner_text("body")
            page.close()
        finally:
            if writer is not None and writer.poll() is None:
                writer.kill()
                writer.wait(timeout=10)


CUT_METRICS = """() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
    .filter(e => [e, ...e.querySelectorAll('*')].some(d => d.scrollWidth > d.clientWidth + 1))
    .map(e => e.innerText)"""
"""The metric cards whose value does not fit its card (cut with an ellipsis)."""


def test_metric_cards_show_their_whole_value(server, browser) -> None:
    base, _ = server
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    for path, heading in [
        ("/?week=2026-W48", "Fleet overview"),
        ("/nodes?node=gpu-001&week=2026-W48", "Node gpu-001"),
        ("/jobs?job=j-103", "Job j-103"),
    ]:
        page.goto(base + path)
        page.get_by_role("heading", name=heading).wait_for(timeout=30_000)
        page.locator('[data-testid="stMetric"]').first.wait_for(timeout=30_000)
        settle(page)
        assert page.locator('[data-testid="stMetricValue"]').count() > 0
        assert page.evaluate(CUT_METRICS) == [], path
    page.close()
