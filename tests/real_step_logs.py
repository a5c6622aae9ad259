"""Real per-worker step logs (tests/data/pai_minibatch, Alibaba PAI) as a gpufleet fleet.

Each worker of a trace job becomes one rank on a node of its own (`pai-w<worker>`), so a finding's
node names the worker. Iterations are logged every 10th one, as many jobs log: `step` keeps the
trace's iteration number, `step_s` is the normalised mini-batch time at 10 ms a unit, and a logged
step ends when its slowest worker does (the job is synchronous), ten iterations after the last.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from tests.detect_fleet import T0, Fleet

DATA = Path(__file__).parent / "data" / "pai_minibatch"
SECONDS_PER_UNIT = 0.01
LOGGED_EVERY = 10


def trace_steps(name: str) -> pl.DataFrame:
    """The trace file as (step, rank, step_s), sorted by step and rank."""
    raw = pl.read_csv(DATA / f"{name}.csv")
    return raw.select(
        pl.col("time").alias("step"),
        pl.col("worker").alias("rank"),
        (pl.col("batch_time_norm") * SECONDS_PER_UNIT).alias("step_s"),
    ).sort("step", "rank")


def trace_fleet(name: str, job_id: str = "pai") -> Fleet:
    """One succeeded job whose ranks ran the trace's steps, on one node per worker."""
    steps = trace_steps(name)
    ranks = sorted(steps["rank"].unique().to_list())
    nodes = [f"pai-w{rank}" for rank in ranks]
    fleet = Fleet(nodes=nodes, gpus=1, minutes=2)
    # The synchronous job advances by its slowest worker, LOGGED_EVERY iterations per logged step.
    slowest = steps.group_by("step").agg(pl.col("step_s").max()).sort("step")
    elapsed = (slowest["step_s"] * LOGGED_EVERY).cum_sum()
    step_end = {s: T0 + dt.timedelta(seconds=float(e)) for s, e in zip(slowest["step"], elapsed)}
    for step, rank, step_s in steps.iter_rows():
        fleet.steps.append(
            {
                "job_id": job_id,
                "attempt": 0,
                "step": step,
                "rank": rank,
                "node": f"pai-w{rank}",
                "gpu": 0,
                "end_ts": step_end[step],
                "step_s": step_s,
                "compute_s": None,
            }
        )
    end = max(step_end.values())
    fleet.jobs.append(
        {
            "job_id": job_id,
            "name": name,
            "user": "u",
            "team": "t",
            "queue": "q",
            "submit_ts": T0,
            "start_ts": T0,
            "end_ts": end,
            "num_gpus": len(ranks),
            "state": "succeeded",
            "exit_code": 0,
            "reason": None,
        }
    )
    fleet.attempts.append(
        {
            "job_id": job_id,
            "attempt": 0,
            "start_ts": T0,
            "end_ts": end,
            "state": "succeeded",
            "exit_code": 0,
            "reason": None,
            "nodes": nodes,
        }
    )
    return fleet
