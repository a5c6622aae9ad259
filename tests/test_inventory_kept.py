"""gpu_inventory_days kept between computes (queries/derived/gpu_inventory_days.sql): a compute sums
again only the UTC days from the earliest newly loaded sample on.

Node n1 (1 GPU) in cluster c1, from 2026-11-23 00:00 UTC (minute m, 1440 a day); GPU_TEMP every
10 minutes. Loads, each followed by a compute whose rows must equal `compute --force`:
1. day 1 (m 0-1430) from GPU-A: one day row, 144 samples; the inventory GPU-A from m 0 to 1430.
2. day 2 (m 1440-2870): GPU-A until noon (m 1440-2150, 72 samples), then GPU-B (m 2160-2870, 72),
   a swapped GPU. Day 1's row is not summed again (same row id).
3. late GPU-A samples at m 705 (day 1) and m 2155 (day 2): both days are summed again, 145 and
   73 samples; GPU-A's last sample is now m 2155.
"""

from __future__ import annotations

from pipelines.compute import compute
from pipelines.config import Settings
from pipelines.store import open_store
from tests.kept_cases import at, computed_equals_a_rebuild, load, one_node

TEMP = "DCGM_FI_DEV_GPU_TEMP"
INVENTORY = "SELECT node, gpu, uuid, first_ts, last_ts, samples FROM gpu_inventory ORDER BY ALL"
DAYS = "SELECT uuid, day, first_ts, last_ts, samples FROM gpu_inventory_days ORDER BY ALL"


def _temp(uuid: str, minutes) -> list[dict]:
    return [
        {"ts": at(m), "node": "n1", "gpu": 0, "uuid": uuid, "metric": TEMP, "value": 40.0}
        for m in minutes
    ]


def test_days_before_the_new_samples_stand_and_late_days_are_summed_again(tmp_path):
    con = open_store(tmp_path / "kept.duckdb")
    load(con, {"nodes": one_node(1), "gpu_samples": _temp("GPU-A", range(0, 1440, 10))})
    inventory, days = computed_equals_a_rebuild(con, INVENTORY, DAYS)
    assert inventory == [("n1", 0, "GPU-A", at(0), at(1430), 144)]
    day1, day2 = at(0).date(), at(1440).date()
    assert days == [("GPU-A", day1, at(0), at(1430), 144)]

    day_1_row = "SELECT rowid FROM gpu_inventory_days WHERE day = ?"
    before = con.execute(day_1_row, [day1]).fetchall()
    load(
        con,
        {
            "gpu_samples": _temp("GPU-A", range(1440, 2160, 10))
            + _temp("GPU-B", range(2160, 2880, 10))
        },
    )
    compute(con, Settings())
    assert con.execute(day_1_row, [day1]).fetchall() == before
    inventory, days = computed_equals_a_rebuild(con, INVENTORY, DAYS)
    assert inventory == [
        ("n1", 0, "GPU-A", at(0), at(2150), 144 + 72),
        ("n1", 0, "GPU-B", at(2160), at(2870), 72),
    ]
    assert days == [
        ("GPU-A", day1, at(0), at(1430), 144),
        ("GPU-A", day2, at(1440), at(2150), 72),
        ("GPU-B", day2, at(2160), at(2870), 72),
    ]

    load(con, {"gpu_samples": _temp("GPU-A", [705, 2155])})
    inventory, days = computed_equals_a_rebuild(con, INVENTORY, DAYS)
    assert inventory == [
        ("n1", 0, "GPU-A", at(0), at(2155), 145 + 73),
        ("n1", 0, "GPU-B", at(2160), at(2870), 72),
    ]
    assert days == [
        ("GPU-A", day1, at(0), at(1430), 145),
        ("GPU-A", day2, at(1440), at(2155), 73),
        ("GPU-B", day2, at(2160), at(2870), 72),
    ]
