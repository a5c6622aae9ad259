"""Helpers the app tests share: run a page with AppTest, read what it shows, read the views."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
PAGES = {
    "nodes": "gpufleet_app/views/nodes.py",
    "jobs": "gpufleet_app/views/jobs.py",
    "anomalies": "gpufleet_app/views/anomalies.py",
    "telemetry": "gpufleet_app/views/telemetry.py",
    "remediation": "gpufleet_app/views/remediation.py",
    "utilisation": "gpufleet_app/views/utilisation.py",
}


def sql(db: Path, query: str, params: list | None = None) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.sql(query, params=params).pl()
    finally:
        con.close()


def open_page(page: str | None = None, **query: str) -> AppTest:
    """Run the app on `page` (None = the overview) with URL query parameters."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    if page is None:
        at.query_params.update(query)
        return at.run()
    at.run()
    at.switch_page(PAGES[page])
    at.query_params.clear()
    at.query_params.update(query)
    return at.run()


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def metrics(at: AppTest) -> dict[str, tuple[str, str]]:
    return {m.label: (m.value, m.delta) for m in at.metric}


def plotly_figures(at: AppTest) -> list[dict]:
    return [json.loads(element.proto.spec) for element in at.get("plotly_chart")]


def pct(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.2f} %"


def pp(cur: float | None, prev: float | None) -> str:
    return "" if cur is None or prev is None else f"{(cur - prev) * 100:+.2f} pp"


def values(array: list | dict) -> list:
    """A plotly trace array as a list (plotly encodes numpy arrays as base64 `bdata`)."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)
