"""The node drill-down: condition colours follow each condition's polarity; the lost-time list
holds only unavailable and unknown intervals (degraded time is available)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.app_helpers import open_page, plotly_figures

T0 = datetime(2026, 11, 25, 0, 0, tzinfo=UTC)


@pytest.fixture
def node_db(app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """gpu-002 with MemoryPressure=False all day (healthy), cordoned (Unschedulable=True) for
    two hours, and one degraded interval besides an unavailable and an unknown one."""
    db = tmp_path / "fleet.duckdb"
    shutil.copy(app_db, db)
    con = duckdb.connect(str(db))
    for minute in range(0, 24 * 60, 5):
        t = T0 + timedelta(minutes=minute)
        cordoned = 10 * 60 <= minute < 12 * 60
        con.execute(
            "INSERT INTO node_conditions VALUES ((SELECT min(cluster) FROM nodes WHERE node = 'gpu-002'), ?, 'gpu-002', 'MemoryPressure', 'False', "
            "'KubeletHasSufficientMemory', NULL)",
            [t],
        )
        con.execute(
            "INSERT INTO node_conditions VALUES ((SELECT min(cluster) FROM nodes WHERE node = 'gpu-002'), ?, 'gpu-002', 'Unschedulable', ?, NULL, NULL)",
            [t, "True" if cordoned else "False"],
        )
    con.execute("DELETE FROM node_state_intervals WHERE node = 'gpu-002'")
    rows = [
        ("available", 0, 6),
        ("degraded", 6, 10),
        ("unavailable", 10, 12),
        ("unknown", 12, 13),
        ("maintenance", 13, 14),
        ("available", 14, 24),
    ]
    columns = [c[0] for c in con.execute("DESCRIBE node_state_intervals").fetchall()]
    for state, start_h, end_h in rows:
        values = {
            "cluster": "c2",  # gpu-002's (tests/app_fixture.py NODES)
            "node": "gpu-002",
            "state": state,
            "start_ts": T0 + timedelta(hours=start_h),
            "end_ts": T0 + timedelta(hours=end_h),
            "reason": state,
        }
        known = [c for c in columns if c in values]
        con.execute(
            f"INSERT INTO node_state_intervals ({', '.join(known)}) VALUES "
            f"({', '.join('?' for _ in known)})",
            [values[c] for c in known],
        )
    con.close()
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    return db


def _lanes_by_colour(figure: dict) -> dict[str, set[str]]:
    return {trace["name"]: set(trace["y"]) for trace in figure["data"]}


def test_condition_history_colours_by_polarity(node_db: Path) -> None:
    at = open_page("nodes", node="gpu-002", week="2026-W48")
    assert not at.exception, [e.message for e in at.exception]
    figure = next(
        f for f in plotly_figures(at) if f["layout"]["title"]["text"] == "Conditions (status runs)"
    )
    lanes = _lanes_by_colour(figure)
    # MemoryPressure=False is healthy; Unschedulable=True (a cordon) is not.
    assert "MemoryPressure" in lanes["healthy"] and "MemoryPressure" not in lanes.get(
        "unhealthy", set()
    )
    assert "Unschedulable" in lanes["unhealthy"]
    colours = {trace["name"]: trace["marker"]["color"] for trace in figure["data"]}
    assert colours["healthy"] == "#2ca02c" and colours["unhealthy"] == "#d62728"


def test_lost_intervals_count_only_unavailable_and_unknown(node_db: Path) -> None:
    at = open_page("nodes", node="gpu-002", week="2026-W48")
    labels = [e.label for e in at.expander]
    # 6 intervals: available x2, degraded, unavailable, unknown, maintenance -> 2 lost.
    assert "2 intervals unavailable or unknown" in labels, labels
