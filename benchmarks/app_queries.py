"""The app's page queries, warm, without Streamlit: `python -m benchmarks.app_queries PAGE WEEK`.

Each page's queries are the `queries/app/*.sql` files its module passes to `data.query(...)`
(found by reading `gpufleet_app/views/<page>.py` and the `gpufleet_app` modules it imports, such
as `trends` and `telemetry`), run through `pipelines.sql.query_pl`,
the function the app's `data.query` calls, with the parameters a reviewer's first visit
uses: the week, all clusters, the busiest node, the job with the most ranks, no filters.
Each query runs once cold, then `WARM_RUNS` times; a page's warm time is the sum over its
queries of their median warm run, in seconds. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from pipelines.config import Settings
from pipelines.sql import load_sql, param_names, queries_dir, query_pl
from pipelines.store import connect

WARM_RUNS = 3
# What the pages pass beyond the shared parameters (see the `data.query` calls in the page modules).
PAGE_PARAMS: dict[str, dict[str, Any]] = {"anomalies": {"node": "*", "job": "*"}}
QUERY_PARAMS: dict[str, dict[str, Any]] = {
    "anomaly_list": {"job": "*"},
    "trends": {"weeks": 12},
    "node_counter_rates": {"bucket_s": 3600},
    "node_nvlink_traffic": {"bucket_s": 3600},
    "node_nic_links": {"bucket_s": 3600},
    # the page passes the setting ([availability] good_when_true_suffixes); the default here
    "node_conditions": {
        "good_when_true_suffixes": list(Settings().availability.good_when_true_suffixes)
    },
    "fleet_heatmap": {"metric": "DCGM_FI_DEV_GPU_TEMP"},
}
_QUERY_CALL = re.compile(r"""query\(\s*["']([a-z0-9_]+)["']""")
_APP_IMPORT = re.compile(r"^from gpufleet_app import ([a-z_, ]+)$", re.MULTILINE)


def pages(root: Path) -> dict[str, list[str]]:
    """Page name -> the app queries it runs, in order (every app query under `app` if no pages)."""
    available = sorted(p.stem for p in (queries_dir() / "app").glob("*.sql"))
    found: dict[str, list[str]] = {}
    page_dir = root / "gpufleet_app" / "views"
    # The shared page frame (week picker, cluster filter, data status) runs on every page.
    shared = root / "gpufleet_app" / "ui.py"
    common = _QUERY_CALL.findall(shared.read_text()) if shared.is_file() else []
    for module in sorted(page_dir.glob("*.py")) if page_dir.is_dir() else []:
        text = module.read_text()
        calls = common + _QUERY_CALL.findall(text)
        # Queries of the app modules the page imports (`from gpufleet_app import trends, ui`).
        for names in _APP_IMPORT.findall(text):
            for name in (n.strip() for n in names.split(",")):
                helper = root / "gpufleet_app" / f"{name}.py"
                if helper.is_file() and name != "ui":
                    calls += _QUERY_CALL.findall(helper.read_text())
        names = [n for n in dict.fromkeys(calls) if n in available]
        if names:
            found[module.stem] = names
    if not found and available:
        found["app"] = available
    return found


def representative_params(con, week: str) -> dict[str, Any]:
    """Parameter values a reviewer's first visit to each page uses."""
    year, number = int(week[:4]), int(week.split("W")[1])
    start = datetime.combine(date.fromisocalendar(year, number, 1), datetime.min.time(), UTC)
    prev = (start - timedelta(days=7)).isocalendar()
    node = con.execute(
        "SELECT node FROM job_attempts, unnest(nodes) AS u(node) GROUP BY node ORDER BY count(*) DESC, node LIMIT 1"
    ).fetchall()
    job = con.execute("SELECT job_id FROM jobs ORDER BY num_gpus DESC, job_id LIMIT 1").fetchall()
    return {
        "week": week,
        "week_start": start,
        "week_end": start + timedelta(days=7),
        "prev_week": f"{prev.year}-W{prev.week:02d}",
        "cluster": "*",
        "node": node[0][0] if node else "",
        "job": job[0][0] if job else "",
        "attempt": 0,
        "metric": "DCGM_FI_DEV_GPU_UTIL",
        "bucket_s": 300,
        "max_columns": 200,
        "kind": "*",
        "severity": "*",
        "status": "*",
        "outcome": "*",
        "all_time": False,
    }


def run_page(con, names: list[str], page_params: dict[str, Any]) -> dict[str, Any]:
    queries: dict[str, float | str] = {}
    for name in names:
        params = {**page_params, **QUERY_PARAMS.get(name, {})}
        sql = load_sql(f"app/{name}")
        missing = param_names(sql) - params.keys()
        if missing:
            queries[name] = f"skipped: no value for ${min(missing)}"
            continue
        query_pl(con, f"app/{name}", params)  # cold
        warm = []
        for _ in range(WARM_RUNS):
            t0 = time.perf_counter()
            query_pl(con, f"app/{name}", params)
            warm.append(time.perf_counter() - t0)
        queries[name] = round(statistics.median(warm), 4)
    timed = [v for v in queries.values() if isinstance(v, float)]
    return {
        "warm_s": round(sum(timed), 4),
        "slowest_query_s": max(timed, default=0.0),
        "queries": queries,
    }


def main() -> None:
    page, week = sys.argv[1], sys.argv[2]
    root = Path(__file__).resolve().parent.parent
    con = connect(os.environ["GPUFLEET_DB"], read_only=True)
    params = {**representative_params(con, week), **PAGE_PARAMS.get(page, {})}
    result = run_page(con, pages(root)[page], params)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
