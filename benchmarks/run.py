"""`make bench [SCALE=S|M]`: time every pipeline stage against the floor.

Each stage runs as its own process so its peak RSS is its own (from `wait4`).
Output: a table on stdout and `bench-results/<scale>.json`, so two runs compare.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SCALES = {
    "S": {"nodes": 64, "days": 7},
    "M": {"nodes": 512, "days": 7},
}
WEEK_START = "2026-11-23"
WEEK = "2026-W48"


@dataclass
class StageResult:
    stage: str
    seconds: float
    peak_rss_mib: float
    rows: int | None = None
    rows_per_s: float | None = None
    ratio_to_floor: float | None = None


def run_measured(stage: str, argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run a command and read its own peak RSS with wait4 (Linux reports KiB)."""
    started = time.perf_counter()
    out_path = Path(env["BENCH_TMP"]) / f"{stage}.out"
    with open(out_path, "w") as out, open(out_path.with_suffix(".err"), "w") as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"stage {stage} failed:\n{out_path.with_suffix('.err').read_text()[-4000:]}")
    return seconds, usage.ru_maxrss / 1024, out_path.read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=sorted(SCALES), default="S")
    parser.add_argument("--workdir", type=Path, default=None, help="Where data and the database go.")
    parser.add_argument("--keep", action="store_true", help="Keep the data and database afterwards.")
    args = parser.parse_args()
    scale = SCALES[args.scale]
    workdir = args.workdir or Path(f"bench-results/work-{args.scale}")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    data, db = workdir / "landing", workdir / "fleet.duckdb"
    env = {**os.environ, "BENCH_TMP": str(workdir), "GPUFLEET_DB": str(db)}
    cli = [sys.executable, "-m", "pipelines"]
    py = [sys.executable, "-m"]

    stages: list[tuple[str, list[str]]] = [
        ("simulate", cli + ["simulate", "--nodes", str(scale["nodes"]), "--days", str(scale["days"]),
                            "--seed", "1", "--start", WEEK_START, "--out", str(data)]),
        ("ingest", cli + ["ingest", "files", str(data)]),
        ("floor", py + ["benchmarks.floor"]),
        ("compute", cli + ["compute", "--force"]),
        ("compute_unchanged", cli + ["compute"]),
    ]
    from benchmarks.optional import optional_stages

    stages += optional_stages(cli, py, workdir, WEEK)

    results: list[StageResult] = []
    sample_rows = None
    for stage, argv in stages:
        seconds, rss, stdout = run_measured(stage, argv, env)
        if stage == "ingest":
            sample_rows = _ingested_rows(db)
        rows = sample_rows if stage in {"simulate", "ingest", "floor", "compute"} else None
        results.append(StageResult(stage, round(seconds, 3), round(rss, 1), rows,
                                   round(rows / seconds) if rows else None))
        print(f"{stage:<22} {seconds:9.2f} s  {rss:9.0f} MiB", flush=True)

    floor = next(r.seconds for r in results if r.stage == "floor")
    for r in results:
        r.ratio_to_floor = round(r.seconds / floor, 2)
    _print_table(args.scale, results)
    out = Path("bench-results") / f"{args.scale}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"scale": args.scale, **scale, "stages": [asdict(r) for r in results]}, indent=2))
    print(f"\nWrote {out}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


def _ingested_rows(db: Path) -> int:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT (SELECT count(*) FROM gpu_samples) + (SELECT count(*) FROM rank_steps)").fetchall()[0][0]


def _print_table(scale: str, results: list[StageResult]) -> None:
    print(f"\nScale {scale}: {'stage':<22} {'seconds':>9} {'peak MiB':>9} {'rows/s':>13} {'x floor':>8}")
    for r in results:
        rate = f"{r.rows_per_s:,}" if r.rows_per_s else "-"
        print(f"         {r.stage:<22} {r.seconds:9.2f} {r.peak_rss_mib:9.0f} {rate:>13} {r.ratio_to_floor:8.2f}")


if __name__ == "__main__":
    main()
