"""The dashboard in a real headless Chromium on two clusters with the same node names: a click in
the node list opens the node of the row's cluster (SPEC "Fleet-wide identity").

The database is tests/app_fixture.py `fleet="two-clusters"`: cluster c1 copied as c9, c9's gpu-001
unavailable 12 h on 2026-11-25, so it leads the node list (the copies' node costs tie).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.streamlit_server import app_server, chromium
from tests.app_fixture import SECOND_CLUSTER, build_app_db
from tests.test_browser import click_first_row, no_exception, require_chromium, settle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_chromium()
    db = build_app_db(tmp_path_factory.mktemp("browser-two") / "fleet.duckdb", "two-clusters")
    with app_server(db, tmp_path_factory.mktemp("log") / "streamlit.log") as served:
        yield served.url


def test_a_click_in_the_node_list_opens_the_second_clusters_node(server: str) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(f"{server}/nodes?week=2026-W48")
        page.get_by_role("heading", name="Nodes").wait_for(timeout=30_000)
        settle(page)
        no_exception(page)

        click_first_row(page, page.locator('[data-testid="stDataFrame"]').first)
        page.get_by_role("heading", name=f"Node {SECOND_CLUSTER}/gpu-001").wait_for(timeout=30_000)
        settle(page)
        no_exception(page)
        assert "node=gpu-001" in page.url and f"cluster={SECOND_CLUSTER}" in page.url
        # c9's gpu-001, not c1's: (168 h - 12 h unavailable) / 168 h = 92.86 % (c1's: 98.51 %)
        availability = page.locator('[data-testid="stMetric"]').filter(has_text="Availability")
        assert "92.86 %" in availability.inner_text()
