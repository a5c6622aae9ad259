"""The Utilisation page in a real headless Chromium, on the hand-made utilisation fleet of
tests/test_utilisation.py: `gpufleet app` on 127.0.0.1 (a free port), Debian's Chromium, no
request leaving the machine, a screenshot under test-artifacts/browser/, the server always stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import open_store
from tests.conftest import require
from tests.test_browser import (  # noqa: F401
    ARTIFACTS,
    CHROMIUM,
    ROOT,
    browser,
    free_port,
    no_exception,
    offline_page,
    screenshot,
    settle,
    wait_until_serving,
)
from tests.test_utilisation import build_fleet

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    require(Path(CHROMIUM).exists(), "Chromium (/usr/bin/chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        require(False, "playwright-python")
    db = tmp_path_factory.mktemp("browser-util") / "fleet.duckdb"
    con = open_store(db)
    build_fleet(con)
    compute(con, Settings(), force=True)
    con.close()
    port = free_port()
    log = (tmp_path_factory.mktemp("log") / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines", "--db", str(db), "app", "--port", str(port)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base, proc, log.name)
        yield base, db
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def test_utilisation_page_from_a_shared_url(server, browser) -> None:  # noqa: F811
    base, _ = server
    (ARTIFACTS / "browser").mkdir(parents=True, exist_ok=True)
    page, outside = offline_page(browser)
    page.goto(f"{base}/utilisation?week=2026-W48")
    page.get_by_role("heading", name="Utilisation", exact=True).wait_for(timeout=30_000)
    page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=30_000)
    settle(page)
    no_exception(page)
    text = page.inner_text("body")
    for heading in ("Teams and queues", "Idle jobs", "MIG packing", "By GPU model"):
        assert heading in text, heading
    assert "7.1 GPU-h" in text  # allocated but idle: j8's 7 + 4712's 1/7
    assert page.locator('[data-testid="stDataFrame"]').count() == 4
    assert "week=2026-W48" in page.url
    screenshot(page, "8-utilisation.png")
    assert outside == []
    page.close()


def test_the_overview_links_to_the_utilisation_page(server, browser) -> None:  # noqa: F811
    base, _ = server
    page, outside = offline_page(browser)
    page.goto(f"{base}/?week=2026-W48")
    page.get_by_role("heading", name="Fleet overview").wait_for(timeout=30_000)
    settle(page)
    page.get_by_text("Utilisation: 12.64 % of allocated GPU-hours busy").click()
    page.get_by_role("heading", name="Utilisation", exact=True).wait_for(timeout=30_000)
    settle(page)
    no_exception(page)
    assert "/utilisation" in page.url
    assert outside == []
    page.close()
