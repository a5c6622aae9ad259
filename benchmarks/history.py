"""`make bench-history [SCALE=S]`: the same next-hour update after 1, 2 and 4 weeks of history.

An update's cost should follow the new data, not the history. For each history length
the database is built from scratch (ingest + compute of the weeks before the update, not
timed), then the first hour after them is loaded and computed (`first_hour_*`: it also pays
DuckDB's one-time merge of the row groups the build left under-full, docs/performance.md), then
the second hour, the one compared across histories, as an hourly schedule runs every hour after
the first. Each is timed as the bench stages are (own process, CPU seconds from `wait4`): on one
copy of the database as a scheduled run does it (`ingest files ... --compute`: one private copy
of the file, published once), and the second hour also on another copy as two commands
(`ingest`, then `compute`). Output: a table and `bench-results/history-<scale>.json` (with the
scheduled update's compute step by step, `update_steps_s`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.run import SCALES, WEEK_START, compute_steps, run_measured
from pipelines.simulator.deliveries import deliver

HISTORY_WEEKS = (1, 2, 4)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=list(SCALES), default="S")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--results", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    nodes = SCALES[args.scale]["nodes"]
    workdir = (args.workdir or Path(f"bench-results/history-{args.scale}")).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    # The update hour is the first hour of the bench week; the history is the weeks before it.
    update_start = datetime.fromisoformat(WEEK_START).replace(tzinfo=UTC)
    first = update_start - timedelta(weeks=max(HISTORY_WEEKS))
    root = Path(__file__).resolve().parent.parent
    env = {
        # DuckDB's buffers capped at 5 GB keep every stage at M under 6 GiB of RSS (the target).
        "GPUFLEET_MEMORY_LIMIT": "5GB",
        **os.environ,
        "BENCH_TMP": str(workdir),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    cli = [sys.executable, "-m", "pipelines"]
    landing = workdir / "landing"
    subprocess.run(
        cli
        + [
            "simulate",
            "--nodes",
            str(nodes),
            "--days",
            str(7 * max(HISTORY_WEEKS) + 1),
            "--seed",
            "1",
            "--start",
            first.date().isoformat(),
            "--no-inference",  # the fleet the recorded numbers were measured on
            "--out",
            str(landing),
        ],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    first_hour, next_hour = workdir / "first_hour", workdir / "next_hour"
    deliver(landing, first_hour, update_start, update_start + timedelta(hours=1))
    deliver(
        landing, next_hour, update_start + timedelta(hours=1), update_start + timedelta(hours=2)
    )
    rows: list[dict[str, Any]] = []
    for weeks in HISTORY_WEEKS:
        history, db = workdir / f"history-{weeks}w", workdir / f"fleet-{weeks}w.duckdb"
        deliver(landing, history, update_start - timedelta(weeks=weeks), update_start)
        run_env = {**env, "GPUFLEET_DB": str(db)}
        build_s, build_cpu, _, _ = run_measured(
            f"build_{weeks}w",
            ["sh", "-c", " ".join([*cli, "ingest", "files", str(history), "&&", *cli, "compute"])],
            run_env,
        )
        first_hour_run = run_measured(
            f"first_hour_{weeks}w",
            cli + ["ingest", "files", str(first_hour), "--compute"],
            run_env,
        )
        two_commands_db = db.with_name(f"two-commands-{weeks}w.duckdb")
        shutil.copyfile(db, two_commands_db)
        one = run_measured(
            f"update_{weeks}w", cli + ["ingest", "files", str(next_hour), "--compute"], run_env
        )
        two_env = {**env, "GPUFLEET_DB": str(two_commands_db)}
        ingest = run_measured(
            f"update_ingest_{weeks}w", cli + ["ingest", "files", str(next_hour)], two_env
        )
        compute = run_measured(f"update_compute_{weeks}w", cli + ["compute"], two_env)
        two_commands_db.unlink()
        rows.append(
            {
                "history_weeks": weeks,
                "build_s": round(build_s, 2),
                "build_cpu_s": round(build_cpu, 2),
                "first_hour_s": round(first_hour_run[0], 2),
                "first_hour_cpu_s": round(first_hour_run[1], 2),
                "update_s": round(one[0], 2),
                "update_cpu_s": round(one[1], 2),
                "two_commands_s": round(ingest[0] + compute[0], 2),
                "two_commands_cpu_s": round(ingest[1] + compute[1], 2),
                "update_ingest_cpu_s": round(ingest[1], 2),
                "update_compute_cpu_s": round(compute[1], 2),
                "db_bytes": db.stat().st_size,
                "load_1m": round(os.getloadavg()[0], 2),
                # What grows with the history, step by step (`ingest --compute`'s compute).
                "update_steps_s": compute_steps(one[3]),
            }
        )
        shutil.rmtree(history)
        db.unlink()
        print(json.dumps(rows[-1]), flush=True)
    base, base_two = rows[0]["update_cpu_s"], rows[0]["two_commands_cpu_s"]
    print(f"\nScale {args.scale}, the same second hour after each history:")
    print(
        "| history | first hour CPU s | `ingest --compute` wall s | CPU s | x 1 week (CPU) "
        "| two commands wall s | CPU s | x 1 week (CPU) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['history_weeks']} week(s) | {r['first_hour_cpu_s']:.2f} "
            f"| {r['update_s']:.2f} | {r['update_cpu_s']:.2f} | "
            f"{r['update_cpu_s'] / base:.2f} | {r['two_commands_s']:.2f} | "
            f"{r['two_commands_cpu_s']:.2f} | {r['two_commands_cpu_s'] / base_two:.2f} |"
        )
    out = args.results / f"history-{args.scale}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"scale": args.scale, "nodes": nodes, "runs": rows}, indent=2))
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nWrote {out}")
    return out


if __name__ == "__main__":
    main()
