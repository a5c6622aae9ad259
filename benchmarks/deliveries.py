"""The deliveries stage: cut the simulated landing folder into the week and the updates after it.

`python -m benchmarks.deliveries LANDING WORKDIR DAYS` writes WORKDIR/history (the first
DAYS days, jobs as the scheduler saw them at the end of them), WORKDIR/next_hour (the hour
after) and WORKDIR/next_day (the 23 hours after that), and prints their row counts as JSON.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.simulator.deliveries import deliver


def cut(landing: Path, workdir: Path, days: int, start: datetime) -> dict[str, dict[str, int]]:
    week_end = start + timedelta(days=days)
    hour_end = week_end + timedelta(hours=1)
    return {
        "history": deliver(landing, workdir / "history", start, week_end),
        "next_hour": deliver(landing, workdir / "next_hour", week_end, hour_end),
        "next_day": deliver(landing, workdir / "next_day", hour_end, week_end + timedelta(days=1)),
    }


if __name__ == "__main__":
    from benchmarks.run import WEEK_START

    landing, workdir, days = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    start = datetime.fromisoformat(WEEK_START).replace(tzinfo=UTC)
    print(json.dumps(cut(landing, workdir, days, start)))
