"""The floor stage: one DuckDB aggregate pass over gpu_samples and rank_steps (prints JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb

if __name__ == "__main__":
    sql = (Path(__file__).parent / "floor.sql").read_text()
    with duckdb.connect(os.environ["GPUFLEET_DB"], read_only=True) as con:
        gpu_series, steps = con.execute(sql).fetchall()[0]
    print(json.dumps({"gpu_series": gpu_series, "steps": steps}))
