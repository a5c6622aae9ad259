"""Screenshots of every dashboard page at 1500x1000 for docs/dashboard.md, from headless Chromium.

`make screenshots` (or `python -m tests.screenshots --db fleet.duckdb --out docs/screenshots`)
serves the database with `gpufleet app` on a free 127.0.0.1 port, opens each page in the week the
app picks by default (the newest full week), with the costliest node and the job with the most
straggler ranks for the drill-downs, and writes one PNG per page (the first 1000 pixels: what a
reader sees on opening it). Every request that would leave the machine fails, as in the browser
tests. The server is always stopped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb

from pipelines.sql import query_pl
from pipelines.weeks import IsoWeek
from testkit.streamlit_server import ROOT, app_server, chromium
from tests.test_browser import settle

WIDTH, HEIGHT = 1500, 1000


def drill_downs(db: Path) -> tuple[str, str, str]:
    """The default week, its costliest node and its job with the most straggler ranks."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        weeks = query_pl(con, "app/weeks")
        full = weeks.filter(weeks["days"] >= 7)
        week = (full if full.height else weeks)["week"][0]
        iso = IsoWeek.parse(week)
        params = {
            "week": week,
            "week_start": iso.start,
            "week_end": iso.end,
            "prev_week": iso.previous.label,
            "cluster": "*",
        }
        node = query_pl(con, "app/node_table", params)["node"][0]
        jobs = query_pl(con, "app/job_table", {**params, "outcome": "*"})
        job = jobs.sort(["straggler_ranks", "gpu_hours"], descending=True, nulls_last=True)[
            "job_id"
        ][0]
    finally:
        con.close()
    return week, node, job


def pages(week: str, node: str, job: str) -> list[tuple[str, str, str]]:
    """(file name, path, heading to wait for) of every page."""
    return [
        ("overview.png", f"/?week={week}", "Fleet overview"),
        ("nodes.png", f"/nodes?week={week}", "Nodes"),
        ("node.png", f"/nodes?node={node}&week={week}", f"Node {node}"),
        ("jobs.png", f"/jobs?week={week}", "Jobs"),
        ("job.png", f"/jobs?job={job}", f"Job {job}"),
        ("anomalies.png", f"/anomalies?week={week}", "Anomalies"),
        ("telemetry.png", f"/telemetry?week={week}", "Fleet telemetry"),
        ("remediation.png", f"/remediation?week={week}", "Remediation"),
        ("utilisation.png", f"/utilisation?week={week}", "Utilisation"),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("fleet.duckdb"))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument(
        "--full-page",
        action="store_true",
        help="The whole page, not the first 1000 pixels (for checking a layout).",
    )
    args = parser.parse_args(argv)
    week, node, job = drill_downs(args.db)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / "streamlit.log"
    with app_server(args.db.resolve(), log_path) as served, chromium() as browser:
        base = served.url
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith((base, "data:", "blob:"))
                else route.abort()
            ),
        )
        for name, path, heading in pages(week, node, job):
            page.goto(base + path)
            page.get_by_role("heading", name=heading).first.wait_for(timeout=60_000)
            settle(page)
            if args.full_page:  # Streamlit scrolls inside its own container: grow the viewport
                height = page.evaluate(
                    "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"
                )
                page.set_viewport_size({"width": WIDTH, "height": min(int(height) + 50, 8000)})
            page.wait_for_timeout(1500)  # plotly finishes drawing
            page.screenshot(path=str(args.out / name))
            page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
            print(f"{args.out / name}  {path}")
    log_path.unlink()


if __name__ == "__main__":
    main()
