"""`make bench [SCALE=XS|S|M]`: time every pipeline stage against the floor.

Each stage runs as its own process so its peak RSS and CPU time are its own (from
`wait4`). Wall seconds depend on what else the machine runs, so the 1-minute load
average is recorded before each stage, and CPU seconds (user + system, all threads)
are reported beside wall seconds: they are the stable measure on a shared machine.
Output: a table on stdout and `bench-results/<scale>.json`, so two runs compare.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SCALES = {
    "XS": {"nodes": 4, "days": 1},
    "S": {"nodes": 64, "days": 7},
    "M": {"nodes": 512, "days": 7},
}
WEEK_START = "2026-11-23"
WEEK = "2026-W48"
GPUS_PER_NODE = 8  # every simulated node
EXTRA_DAYS = 2
"""Simulated past the week: the update stages load the next hour, then the day after it."""
# Stages whose work is proportional to the landing rows (gpu_samples + rank_steps).
ROW_STAGES = {"ingest", "floor", "compute"}
ONE_WRITE_STAGE = "update_next_hour_one_write"
"""The next hour loaded and computed in one write, as a scheduled run does it."""
STAGES_LOG = "stages.jsonl"  # one finished stage per line, so --resume can pick up after a failure


@dataclass
class StageResult:
    stage: str
    seconds: float
    cpu_s: float
    peak_rss_mib: float
    load_1m: float
    rows: int | None = None
    rows_per_s: float | None = None
    rows_per_cpu_s: float | None = None
    ratio_to_floor: float | None = None
    cpu_ratio_to_floor: float | None = None
    detail: dict = field(default_factory=dict)


def compute_steps(stdout: str) -> dict[str, float]:
    """`gpufleet compute`'s per-step lines (`name   12.34 s`) as {name: seconds}."""
    steps = {}
    for line in stdout.splitlines():
        match = re.fullmatch(r"(\w+)\s+([0-9.]+) s", line.strip())
        if match:
            steps[match[1]] = float(match[2])
    return steps


def run_measured(
    stage: str, argv: list[str], env: dict[str, str]
) -> tuple[float, float, float, str]:
    """Run a command; return (wall s, CPU s, peak RSS MiB, stdout). Linux reports maxrss in KiB."""
    started = time.perf_counter()
    out_path = Path(env["BENCH_TMP"]) / f"{stage}.out"
    with open(out_path, "w") as out, open(out_path.with_suffix(".err"), "w") as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"stage {stage} failed:\n{out_path.with_suffix('.err').read_text()[-4000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out_path.read_text()


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=list(SCALES), default="S")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="Where data and the database go."
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="Reuse landing files simulated earlier for this scale (skips the simulate stage).",
    )
    parser.add_argument(
        "--results", type=Path, default=Path("bench-results"), help="Folder for <scale>.json."
    )
    parser.add_argument(
        "--keep", action="store_true", help="Keep the data and database afterwards."
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Keep the stages a failed run of the same --workdir completed; run the rest.",
    )
    args = parser.parse_args(argv)
    scale = SCALES[args.scale]
    workdir = (args.workdir or Path(f"bench-results/work-{args.scale}")).resolve()
    done: dict[str, StageResult] = {}
    if args.resume and (workdir / STAGES_LOG).is_file():
        for line in (workdir / STAGES_LOG).read_text().splitlines():
            r = StageResult(**json.loads(line))
            done[r.stage] = r
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
    data, db = (args.data.resolve() if args.data else workdir / "landing"), workdir / "fleet.duckdb"
    root = Path(__file__).resolve().parent.parent
    env = {
        # DuckDB's buffers capped at 5 GB keep every stage at M under 6 GiB of RSS (the target).
        "GPUFLEET_MEMORY_LIMIT": "5GB",
        **os.environ,
        "BENCH_TMP": str(workdir),
        "GPUFLEET_DB": str(db),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    cli = [sys.executable, "-m", "pipelines"]
    py = [sys.executable, "-m"]

    stages: list[tuple[str, list[str]]] = []
    if args.data is None:
        days = scale["days"] + EXTRA_DAYS
        stages.append(
            (
                "simulate",
                cli
                + [
                    "simulate",
                    "--nodes",
                    str(scale["nodes"]),
                    "--days",
                    str(days),
                    "--seed",
                    "1",
                    "--start",
                    WEEK_START,
                    # The fleet the recorded numbers were measured on (docs/performance.md).
                    "--no-inference",
                    "--out",
                    str(data),
                ],
            )
        )
    history = workdir / "history"
    stages += [
        ("deliveries", py + ["benchmarks.deliveries", str(data), str(workdir), str(scale["days"])]),
        ("ingest", cli + ["ingest", "files", str(history)]),
        ("floor", py + ["benchmarks.floor"]),
        ("compute", cli + ["compute", "--force"]),
        ("compute_unchanged", cli + ["compute"]),
    ]
    from benchmarks.optional import optional_stages

    extra, unavailable = optional_stages(cli, py, workdir, WEEK)
    stages += extra
    # Last: they add data to the database the stages above read. The next hour first as a
    # scheduled run loads it (`ingest ... --compute`, one write: deploy/crontab), on a copy of the
    # database as it is before the hour, then as two commands on the database itself.
    one_write_db = workdir / "one-write.duckdb"
    stages.append(
        (ONE_WRITE_STAGE, cli + ["ingest", "files", str(workdir / "next_hour"), "--compute"])
    )
    for update in ("next_hour", "next_day"):
        stages += [
            (f"update_{update}_ingest", cli + ["ingest", "files", str(workdir / update)]),
            (f"update_{update}_compute", cli + ["compute"]),
        ]

    results: list[StageResult] = []
    rows = None
    for stage, stage_argv in stages:
        if stage in done:
            results.append(done[stage])
            rows = done[stage].rows if done[stage].rows is not None else rows
            print(f"{stage:<22} (kept from the interrupted run)", flush=True)
            continue
        stage_env = env
        if stage == ONE_WRITE_STAGE:
            shutil.copyfile(db, one_write_db)
            stage_env = {**env, "GPUFLEET_DB": str(one_write_db)}
        load = os.getloadavg()[0]
        seconds, cpu, rss, stdout = run_measured(stage, stage_argv, stage_env)
        if stage == ONE_WRITE_STAGE:
            one_write_db.unlink()
        if stage == "deliveries" or (stage == "ingest" and rows is None):
            rows = _landing_rows(history)
        detail = json.loads(stdout) if stage.startswith("app_") else {}
        if stage == "floor":
            detail = json.loads(stdout)
        if stage == "compute" or stage.endswith("_compute") or stage == ONE_WRITE_STAGE:
            detail = {"steps_s": compute_steps(stdout)}
        if stage == "ingest":
            # The week's landing data alone, before any derived table: disk per GPU-day.
            gpu_days = scale["nodes"] * GPUS_PER_NODE * scale["days"]
            size = db.stat().st_size
            detail = {"db_bytes": size, "bytes_per_gpu_day": round(size / gpu_days)}
        counted = rows if stage in ROW_STAGES else None
        # Rates from the recorded (rounded) times, so the JSON is consistent with itself.
        seconds, cpu = round(seconds, 3), round(cpu, 3)
        results.append(
            StageResult(
                stage,
                seconds,
                cpu,
                round(rss, 1),
                round(load, 2),
                counted,
                round(counted / seconds) if counted and seconds else None,
                round(counted / cpu) if counted and cpu else None,
                detail=detail,
            )
        )
        with open(workdir / STAGES_LOG, "a") as log:
            log.write(json.dumps(asdict(results[-1])) + "\n")
        print(
            f"{stage:<26} {seconds:9.2f} s wall {cpu:9.2f} s CPU {rss:9.0f} MiB  load {load:5.1f}",
            flush=True,
        )

    floor = next(r for r in results if r.stage == "floor")
    for r in results:
        r.ratio_to_floor = round(r.seconds / floor.seconds, 2)
        r.cpu_ratio_to_floor = round(r.cpu_s / floor.cpu_s, 2) if floor.cpu_s else None
    _print_table(args.scale, results, unavailable)
    out = args.results / f"{args.scale}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "scale": args.scale,
                **scale,
                "rows": rows,
                "cores": os.cpu_count(),
                "unavailable": unavailable,
                "stages": [asdict(r) for r in results],
            },
            indent=2,
        )
    )
    print(f"\nWrote {out}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def _landing_rows(data: Path) -> int:
    """gpu_samples + rank_steps rows in the landing Parquet files (from the footers)."""
    import pyarrow.parquet as pq

    return sum(
        pq.ParquetFile(data / f"{t}.parquet").metadata.num_rows
        for t in ("gpu_samples", "rank_steps")
        if (data / f"{t}.parquet").is_file()
    )


def _print_table(scale: str, results: list[StageResult], unavailable: list[str]) -> None:
    print(f"\nScale {scale}:")
    print(
        f"| {'stage':<26} | {'wall s':>8} | {'CPU s':>8} | {'peak MiB':>8} | {'rows/s':>11} | "
        f"{'rows/CPU s':>11} | {'x floor':>7} | {'CPU x floor':>11} | {'load':>5} |"
    )
    print("|" + "|".join("-" * w for w in (28, 10, 10, 10, 13, 13, 9, 13, 7)) + "|")
    for r in results:
        rate = f"{r.rows_per_s:,.0f}" if r.rows_per_s else "-"
        cpu_rate = f"{r.rows_per_cpu_s:,.0f}" if r.rows_per_cpu_s else "-"
        print(
            f"| {r.stage:<26} | {r.seconds:8.2f} | {r.cpu_s:8.2f} | {r.peak_rss_mib:8.0f} | {rate:>11} | "
            f"{cpu_rate:>11} | {r.ratio_to_floor:7.2f} | {r.cpu_ratio_to_floor or 0:11.2f} | {r.load_1m:5.1f} |"
        )
    for r in results:
        if r.stage == "ingest" and "bytes_per_gpu_day" in r.detail:
            print(
                f"  database after ingest: {r.detail['db_bytes'] / 2**20:,.0f} MiB, "
                f"{r.detail['bytes_per_gpu_day'] / 1024:,.0f} KiB per GPU-day"
            )
        if r.stage.startswith("app_"):
            print(
                f"  {r.stage}: warm {r.detail['warm_s']:.3f} s, slowest query {r.detail['slowest_query_s']:.3f} s"
            )
        if r.stage == "compute" and r.detail.get("steps_s"):
            slowest = sorted(r.detail["steps_s"].items(), key=lambda kv: -kv[1])
            print("  compute steps: " + ", ".join(f"{name} {secs:.1f} s" for name, secs in slowest))
    by_stage = {r.stage: r for r in results}
    for update in ("next_hour", "next_day"):
        ingest = by_stage.get(f"update_{update}_ingest")
        compute = by_stage.get(f"update_{update}_compute")
        if ingest is not None and compute is not None:
            print(
                f"  update_{update} (ingest + compute): {ingest.seconds + compute.seconds:.2f} s wall, "
                f"{ingest.cpu_s + compute.cpu_s:.2f} s CPU"
            )
    one_write = by_stage.get(ONE_WRITE_STAGE)
    if one_write is not None:
        print(
            f"  update_next_hour in one write (ingest --compute): {one_write.seconds:.2f} s wall, "
            f"{one_write.cpu_s:.2f} s CPU"
        )
    if unavailable:
        print(f"Not in this checkout yet: {', '.join(unavailable)}.")


if __name__ == "__main__":
    main()
