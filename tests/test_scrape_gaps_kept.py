"""gpu_scrape_gaps kept between computes (queries/derived/gpu_scrape_gaps.sql), on a hand-made node
whose loads hit each case the update must see; every expected row is worked out below.

Node n1 (2 GPUs), one GPU_UTIL sample a minute from 2026-11-23 00:00 UTC (minute m); the
telemetry-gap threshold is 300 s, so only silences longer than 5 minutes are pairs, and each
GPU's last scrape is a row with no next one. Loads, each followed by a compute whose rows (and
telemetry-gap findings) must equal `compute --force`:
1. minutes 0-119: GPU 0 reports 0-59 and 100-119, GPU 1 all of them.
   GPU 0: (59, 100), (119, -); GPU 1: (119, -).
2. minutes 120-239: GPU 0 reports 120-149, GPU 1 all. The new data start at 120: (59, 100)
   ends before and is kept; (119, 120) is a minute, no pair.
   GPU 0: (59, 100), (149, -); GPU 1: (239, -).
3. minutes 240-359: GPU 0 reports 300-359, GPU 1 all. GPU 0's last scrape before the new data,
   149, is 91 minutes before them, far outside the 5 minutes the update reads back: it comes
   from its last row, which the update takes out and finds again as (149, 300).
   GPU 0: (59, 100), (149, 300), (359, -); GPU 1: (359, -).
4. a late batch: GPU 0's minute 80 alone. It splits (59, 100) in two, both still longer than
   5 minutes; the update starts at its 15-minute bucket, minute 75.
   GPU 0: (59, 80), (80, 100), (149, 300), (359, -); GPU 1: (359, -).
5. Ready=True every minute 0-359 and no sample: the rows stand, and the three closed silences of
   GPU 0 become telemetry-gap findings, each from the first missed scrape to the next sample.
"""

from __future__ import annotations

from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

UTIL = "DCGM_FI_DEV_GPU_UTIL"


def _samples(gpu: int, minutes) -> list[dict]:
    return [
        {"ts": at(m), "node": "n1", "gpu": gpu, "uuid": f"GPU-{gpu}", "metric": UTIL, "value": 50.0}
        for m in minutes
    ]


ROWS = "SELECT gpu, last_ts, next_ts FROM gpu_scrape_gaps ORDER BY ALL"
FINDINGS = (
    "SELECT gpu, start_ts, end_ts, score FROM anomalies WHERE kind = 'telemetry_gap' ORDER BY ALL"
)


def _computed_equals_a_rebuild(con) -> list[tuple]:
    return computed_equals_a_rebuild(con, ROWS, FINDINGS)[0]


def _pairs(*pairs: tuple[int, int, int | None]) -> list[tuple]:
    return [(gpu, at(last), None if nxt is None else at(nxt)) for gpu, last, nxt in pairs]


def test_kept_scrape_gaps_follow_new_hours_a_long_silence_and_a_late_sample(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    nodes = one_node(2)
    first_hours = [*range(60), *range(100, 120)]
    load(con, {"nodes": nodes, "gpu_samples": _samples(0, first_hours) + _samples(1, range(120))})
    assert _computed_equals_a_rebuild(con) == _pairs((0, 59, 100), (0, 119, None), (1, 119, None))

    load(con, {"gpu_samples": _samples(0, range(120, 150)) + _samples(1, range(120, 240))})
    assert _computed_equals_a_rebuild(con) == _pairs((0, 59, 100), (0, 149, None), (1, 239, None))

    load(con, {"gpu_samples": _samples(0, range(300, 360)) + _samples(1, range(240, 360))})
    assert _computed_equals_a_rebuild(con) == _pairs(
        (0, 59, 100), (0, 149, 300), (0, 359, None), (1, 359, None)
    )

    load(con, {"gpu_samples": _samples(0, [80])})
    after_late = _pairs((0, 59, 80), (0, 80, 100), (0, 149, 300), (0, 359, None), (1, 359, None))
    assert _computed_equals_a_rebuild(con) == after_late

    ready = [
        {
            "ts": at(m),
            "node": "n1",
            "condition": "Ready",
            "status": "True",
            "reason": None,
            "message": None,
        }
        for m in range(360)
    ]
    load(con, {"node_conditions": ready})
    assert _computed_equals_a_rebuild(con) == after_late
    findings = con.execute(FINDINGS).fetchall()
    # From the first missed scrape (last + 60 s) to the next sample; score in minutes.
    assert findings == [
        (0, at(60), at(80), 20.0),
        (0, at(81), at(100), 19.0),
        (0, at(150), at(300), 150.0),
    ]
