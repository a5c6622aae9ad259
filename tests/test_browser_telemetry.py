"""The Fleet telemetry page and the node page's telemetry sections in a real headless Chromium
(the server and browser of tests/test_browser.py: `gpufleet app` on 127.0.0.1, Debian's Chromium)."""

from __future__ import annotations

import pytest

from tests.test_browser import ARTIFACTS, browser, no_exception, screenshot, server, settle  # noqa: F401

pytestmark = pytest.mark.browser


def test_fleet_telemetry_heatmap_from_a_shared_url(server, browser) -> None:  # noqa: F811
    # The module's server is fresh: this deep link is its very first request. (With the page files
    # in a folder named `pages/` beside the entry script, Streamlit ran that file on its own, outside
    # the app's read session, and the first visitor of a shared link saw an error.)
    base, _ = server
    (ARTIFACTS / "browser").mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.goto(f"{base}/telemetry?week=2026-W48&field=DCGM_FI_DEV_POWER_USAGE&stat=max")
    page.get_by_role("heading", name="Fleet telemetry").wait_for(timeout=30_000)
    settle(page)
    no_exception(page)
    # the heatmap is drawn (plotly's heatmap layer) with one row per reporting node
    plot = page.locator('[data-testid="stPlotlyChart"]').first
    plot.scroll_into_view_if_needed()
    assert plot.locator(".heatmaplayer").count() == 1
    text = page.inner_text("body")
    assert "Power (W) per node and hour" in text
    assert "2 nodes" in text  # fixture: gpu-000 and gpu-001 report DCGM fields
    # the choice stays in the URL, so the view can be shared
    assert "field=DCGM_FI_DEV_POWER_USAGE" in page.url and "stat=max" in page.url
    screenshot(page, "7-fleet-telemetry.png")
    page.close()


def test_node_page_shows_counter_rates_and_clock_reasons(server, browser) -> None:  # noqa: F811
    base, _ = server
    (ARTIFACTS / "browser").mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.goto(f"{base}/nodes?node=gpu-000&week=2026-W48")
    page.get_by_role("heading", name="Node gpu-000").wait_for(timeout=30_000)
    settle(page)
    no_exception(page)
    for heading in (
        "Error counters (rate per hour)",
        "NVLink",
        "Network (InfiniBand / EFA)",
        "Clock-event (throttle) reasons",
        "GPUs (for an RMA ticket)",
    ):
        page.get_by_role("heading", name=heading).wait_for(timeout=30_000)
    assert "Error counters, rate per hour" in page.inner_text("body")
    screenshot(page, "8-node-telemetry.png")
    page.close()
