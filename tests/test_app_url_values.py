"""Shared links: a value that names nothing says so (a warning), instead of being ignored; tables show a missing value as `—`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_helpers import open_page


@pytest.mark.parametrize(
    ("page", "query", "message"),
    [
        (
            "anomalies",
            {"severity": "bogus"},
            "Unknown severity “bogus” in the link; showing all severities.",
        ),
        (
            "anomalies",
            {"kind": "bogus"},
            "Unknown anomaly kind (none of that kind in the database) “bogus”",
        ),
        (
            "anomalies",
            {"status": "bogus"},
            "Unknown status “bogus” in the link; showing open and closed.",
        ),
        (
            "jobs",
            {"outcome": "bogus"},
            "Unknown outcome “bogus” in the link; showing all outcomes.",
        ),
        (
            "nodes",
            {"node": "gpu-001", "metric": "DCGM_FI_BOGUS"},
            "Unknown DCGM field “DCGM\\_FI\\_BOGUS”",
        ),
        ("nodes", {"node": "gpu-999"}, "Node “gpu-999” is not in the fleet inventory"),
        ("jobs", {"job": "j-999"}, "Job “j-999” is not in the database"),
        (
            "anomalies",
            {"node": "gpu-999"},
            "Unknown node “gpu-999” in the link; showing every node.",
        ),
        ("remediation", {"cluster": "c9"}, "Unknown cluster “c9”; showing all clusters."),
        (None, {"cluster": "c9"}, "Unknown cluster “c9”; showing all clusters."),
        (None, {"week": "2025-W01"}, "No data for week “2025-W01”"),
    ],
)
def test_an_unknown_url_value_says_so(use_db: Path, page, query, message) -> None:
    at = open_page(page, **({"week": "2026-W48"} | query))
    assert not at.exception, [e.message for e in at.exception]
    assert any(message in w.value for w in at.warning), [w.value for w in at.warning]


def test_a_known_url_value_warns_nothing(use_db: Path) -> None:
    at = open_page("anomalies", week="2026-W48", severity="critical", status="open")
    assert not at.warning, [w.value for w in at.warning]


@pytest.mark.parametrize(
    ("page", "query"),
    [
        (None, {}),
        ("nodes", {}),
        ("nodes", {"node": "gpu-001"}),
        ("jobs", {}),
        ("jobs", {"job": "j-103"}),
        ("anomalies", {}),
        ("remediation", {}),
    ],
)
def test_every_table_shows_a_missing_value_as_a_dash(use_db: Path, page, query) -> None:
    at = open_page(page, **({"week": "2026-W48"} | query))
    assert at.dataframe, "no table on the page"
    for table in at.dataframe:
        # The placeholder Streamlit draws for a missing cell, in every column type.
        assert table.proto.placeholder == "—"
