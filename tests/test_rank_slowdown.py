"""Per-rank slowdown: ratios, drag, the U test, Holm, NVIDIA's relative score, the verdict."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from pipelines.config import Settings
from pipelines.rank_slowdown import holm, lower_median, mann_whitney_greater
from tests.goodput_fleet import at, attempt, compute_with_node_states, job, load, steps


@pytest.mark.parametrize("seed", range(6))
def test_u_test_from_one_ranking_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    groups_n = int(rng.integers(2, 6))
    sizes = rng.integers(1, 12, size=groups_n)
    # rounded values so that ties occur, as they do in logged step times
    values = np.round(rng.normal(1.0, 0.05, size=int(sizes.sum())), 2)
    groups = np.repeat(np.arange(groups_n), sizes)
    u, p = mann_whitney_greater(values, groups, groups_n)
    for g in range(groups_n):
        mine, rest = values[groups == g], values[groups != g]
        expected = stats.mannwhitneyu(mine, rest, alternative="greater", method="asymptotic")
        assert u[g] == pytest.approx(expected.statistic, rel=1e-12)
        assert p[g] == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(
    "raw, adjusted",
    [
        # sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04; running max 0.03, 0.06, 0.06
        ([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),
        # 0.2 x 2 = 0.4, 0.5 x 1 = 0.5; NaN is no test (m = 2)
        ([0.5, float("nan"), 0.2], [0.5, float("nan"), 0.4]),
        # capped at 1
        ([0.6, 0.9], [1.0, 1.0]),
    ],
)
def test_holm(raw, adjusted):
    np.testing.assert_allclose(holm(np.array(raw)), np.array(adjusted), equal_nan=True)


@pytest.mark.parametrize("values, expected", [([4, 1, 3, 2], 2), ([5, 1, 3], 3), ([7], 7)])
def test_lower_median(values, expected):
    assert lower_median(np.array(values, dtype=float)) == expected


def test_hand_made_straggler(con):
    # 4 ranks, 30 steps of compute 8 s; rank 2 takes 9.6 s (20 % slower).
    # Step median of [8, 8, 9.6, 8] = 8: rank 2's ratio 1.2, the others 1.0.
    # Drag per step 9.6 - 8 = 1.6 s, all charged to rank 2: 30 x 1.6 = 48 s.
    # Relative score: fastest lower median 8 / 9.6 = 0.8333 (nvidia-resiliency-ext flags < 0.75: missed).
    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [job("j", start=0, end=400, state="succeeded", gpus=4)],
            "job_attempts": [attempt("j", 0, start=0, end=400, state="succeeded")],
            "rank_steps": steps(
                "j", 0, first_end=20, step_s=10, count=30, ranks=4, compute=True, slow={2: 1.2}
            ),
        },
    )
    compute_with_node_states(con, Settings())
    rows = con.execute(
        "SELECT rank, steps, median_ratio, p95_ratio, slowest_share, drag_s, relative_score, "
        "relative_flagged, is_straggler FROM rank_slowdown ORDER BY rank"
    ).fetchall()
    expected = [
        (0, 30, 1.0, 1.0, 0.0, Decimal(0), 1.0, False, False),
        (1, 30, 1.0, 1.0, 0.0, Decimal(0), 1.0, False, False),
        (2, 30, 1.2, 1.2, 1.0, Decimal(48), 8 / 9.6, False, True),
        (3, 30, 1.0, 1.0, 0.0, Decimal(0), 1.0, False, False),
    ]
    assert [r[:2] for r in rows] == [e[:2] for e in expected]
    for got, want in zip(rows, expected, strict=True):
        assert got[2:5] == pytest.approx(want[2:5], abs=1e-12)
        assert got[5] == want[5]
        assert got[6] == pytest.approx(want[6], abs=1e-12)
        assert got[7:] == want[7:]
    drag = con.execute("SELECT straggler_drag_s FROM job_goodput").fetchall()
    assert drag == [(Decimal(48),)]
    # rank 2: U = 30 x 90 (every one of its ratios beats every other), p tiny even after Holm x 4
    p = con.execute("SELECT u_statistic, p_value FROM rank_slowdown WHERE rank = 2").fetchall()[0]
    assert p[0] == 2700 and p[1] < 1e-10


def test_a_compute_recomputes_only_the_jobs_whose_steps_changed(con):
    # Job "done" ended; job "running" logs 20 steps, then 10 more after the first compute.
    import dataclasses

    from pipelines.compute import compute

    load(
        con,
        {
            "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
            "jobs": [
                job("done", start=0, end=400, state="succeeded", gpus=4),
                job("running", start=0, end=None, state="running", gpus=4),
            ],
            "job_attempts": [
                attempt("done", 0, start=0, end=400, state="succeeded"),
                attempt("running", 0, start=0, end=None, state="running"),
            ],
            "rank_steps": steps(
                "done", 0, first_end=20, step_s=10, count=30, ranks=4, compute=True, slow={2: 1.2}
            )
            + steps("running", 0, first_end=20, step_s=10, count=20, ranks=4, compute=True),
        },
    )
    compute(con, Settings())

    def marked() -> dict[str, tuple]:
        rows = con.execute(
            "SELECT job_id, min(median_ratio), max(steps) FROM rank_slowdown GROUP BY 1"
        ).fetchall()
        return {job_id: rest for job_id, *rest in rows}

    assert marked() == {"done": [1.0, 30], "running": [1.0, 20]}
    # A mark on every row: a compute that recomputes a job erases its mark.
    con.execute("UPDATE rank_slowdown SET median_ratio = -1")
    con.execute("UPDATE rank_episodes SET rows = -1")
    load(
        con,
        {
            "rank_steps": steps(
                "running",
                0,
                first_end=220,
                step_s=10,
                count=10,
                first_step=21,
                ranks=4,
                compute=True,
            )
        },
    )
    compute(con, Settings())
    assert marked() == {"done": [-1.0, 30], "running": [1.0, 30]}
    assert con.execute(
        "SELECT DISTINCT rows FROM rank_episodes WHERE job_id = 'done'"
    ).fetchall() == [(-1,)]  # rank 2's episode, kept
    # Steps of a job whose scheduler record comes later: no attempt places them yet, so no rows;
    # the record alone (no new step) then changes the job's inputs.
    load(con, {"rank_steps": steps("late", 0, first_end=20, step_s=10, count=20, ranks=4)})
    compute(con, Settings())
    assert "late" not in marked()
    load(
        con,
        {
            "jobs": [job("late", start=0, end=400, state="succeeded", gpus=4)],
            "job_attempts": [attempt("late", 0, start=0, end=400, state="succeeded")],
        },
    )
    compute(con, Settings())
    assert marked()["late"] == [1.0, 20]
    assert marked()["done"] == [-1.0, 30]
    # Other settings recompute every job, as does --force.
    stricter = dataclasses.replace(
        Settings(),
        stragglers=dataclasses.replace(Settings().stragglers, median_ratio_threshold=1.5),
    )
    compute(con, stricter)
    assert marked() == {"done": [1.0, 30], "running": [1.0, 30], "late": [1.0, 20]}
    assert con.execute("SELECT count(*) FROM rank_slowdown WHERE is_straggler").fetchall() == [
        (0,)
    ]  # 1.2 is under the stricter 1.5
    con.execute("UPDATE rank_slowdown SET median_ratio = -1")
    compute(con, stricter, force=True)
    assert marked() == {"done": [1.0, 30], "running": [1.0, 30], "late": [1.0, 20]}


def noisy_job(
    con, *, ranks: int, steps_n: int, slow: dict[int, float], seed: int, sigma: float = 0.02
):
    """One attempt with lognormal noise on every rank's compute_s (mean 1 s)."""
    rng = np.random.default_rng(seed)
    factors = np.exp(rng.normal(0, sigma, size=(steps_n, ranks)))
    rows = []
    for s in range(steps_n):
        for r in range(ranks):
            compute_s = float(factors[s, r] * slow.get(r, 1.0))
            rows.append(
                {
                    "job_id": "noisy",
                    "attempt": 0,
                    "step": s + 1,
                    "rank": r,
                    "node": f"n{r // 8}",
                    "gpu": r % 8,
                    "end_ts": at(10 + 2 * s),
                    "step_s": 2.0,
                    "compute_s": compute_s,
                }
            )
    load(
        con,
        {
            "jobs": [job("noisy", start=0, end=10 + 2 * steps_n, state="succeeded", gpus=ranks)],
            "job_attempts": [attempt("noisy", 0, start=0, end=10 + 2 * steps_n, state="succeeded")],
            "rank_steps": rows,
        },
    )
    compute_with_node_states(con, Settings())
    return con.execute(
        "SELECT rank, is_straggler, relative_flagged, median_ratio FROM rank_slowdown ORDER BY rank"
    ).fetchall()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rank_five_percent_slow_is_found_within_200_steps(con, seed):
    rows = noisy_job(con, ranks=8, steps_n=200, slow={5: 1.05}, seed=seed)
    assert [r[0] for r in rows if r[1]] == [5]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rank_ten_percent_slow_is_found_where_the_relative_score_misses_it(con, seed):
    rows = noisy_job(con, ranks=8, steps_n=100, slow={3: 1.10}, seed=seed)
    assert [r[0] for r in rows if r[1]] == [3]
    assert not any(r[2] for r in rows)  # score ~ 1 / 1.1 = 0.91, above nvidia-resiliency-ext's 0.75


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_healthy_ranks_are_not_stragglers(con, seed):
    rows = noisy_job(con, ranks=16, steps_n=200, slow={}, seed=seed)
    assert not any(r[1] for r in rows)


def test_too_few_steps_gives_no_verdict(con):
    # 10 steps < min_steps (20): even a rank 50 % slow gets no verdict
    rows = noisy_job(con, ranks=4, steps_n=10, slow={1: 1.5}, seed=1)
    assert not any(r[1] for r in rows)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The simulator's 16-node, 2-day fleet (jobs and step timings only), computed."""
    import polars as pl

    from pipelines.simulate import SimulationConfig, simulate
    from pipelines.store import TableInput, load_batch, open_store

    fleet = simulate(SimulationConfig.create(nodes=16, days=2, seed=5, start="2026-11-23"))
    con = open_store(tmp_path_factory.mktemp("sim") / "fleet.duckdb")
    tables = ["nodes", "jobs", "job_attempts", "rank_steps", "checkpoints"]
    load_batch(
        con,
        [TableInput(t, fleet[t].with_row_index("__row", offset=1), t) for t in tables],
        "simulator",
    )
    compute_with_node_states(con, Settings())
    truth = fleet["ground_truth"].filter(
        pl.col("kind").is_in(["thermal_throttle", "nic_links_down"])
    )
    con.register("truth", truth)
    yield con
    con.close()


def test_simulated_throttled_gpu_rank_is_a_straggler(simulated):
    # Every attempt in which the throttled GPU ran a rank for mostly (>= 60 % of steps) throttled
    # steps has that rank as a straggler. (Attempts it joins mid-run need change-point detection:
    # their median ratio stays below the threshold.)
    affected = simulated.execute("""
        SELECT r.job_id, r.attempt, r.rank, bool_or(s.is_straggler) AS found
        FROM truth t
        JOIN rank_steps r ON r.node = t.node AND r.gpu = t.gpu
        JOIN rank_slowdown s ON s.job_id = r.job_id AND s.attempt = r.attempt AND s.rank = r.rank
        WHERE t.kind = 'thermal_throttle'
        GROUP BY r.job_id, r.attempt, r.rank
        HAVING avg(CASE WHEN r.end_ts - to_microseconds(CAST(r.step_s * 1e6 AS BIGINT)) >= t.start_ts
                         AND r.end_ts <= t.end_ts THEN 1 ELSE 0 END) >= 0.6
    """).fetchall()
    assert len(affected) >= 3  # 700036, 700117 (attempts 1 and 2), 700179 with seed 5
    assert all(found for *_, found in affected), affected


def test_simulated_stragglers_all_sit_on_injected_faults(simulated):
    # Precision: every straggler verdict is on a node (nic_links_down) or GPU (thermal_throttle)
    # with an injected fault during that attempt.
    unexplained = simulated.execute("""
        SELECT s.job_id, s.attempt, s.rank, s.node, s.gpu
        FROM rank_slowdown s
        JOIN goodput_attempts a USING (job_id, attempt)
        WHERE s.is_straggler AND NOT EXISTS (
            SELECT 1 FROM truth t
            WHERE t.node = s.node AND (t.gpu IS NULL OR t.gpu = s.gpu)
              AND epoch_us(t.start_ts) < a.end_us AND a.start_us < epoch_us(t.end_ts))
    """).fetchall()
    assert unexplained == []
    assert (
        simulated.execute("SELECT count(*) FROM rank_slowdown WHERE is_straggler").fetchall()[0][0]
        > 0
    )


@pytest.mark.parametrize("batch_rows", [997, 50_000])
def test_streaming_in_small_batches_gives_the_same_table(simulated, monkeypatch, batch_rows):
    # Batches that split jobs (and even single rows) must give exactly the one-batch answer.
    import polars as pl

    from pipelines import rank_slowdown

    whole = rank_slowdown.rank_slowdown_frame(
        pl.from_arrow(
            simulated.sql(
                rank_slowdown.load_sql("derived/rank_step_times"), params={"jobs": None}
            ).to_arrow_table()
        ),
        Settings(),
    ).sort(["job_id", "attempt", "rank"])
    monkeypatch.setattr(rank_slowdown, "STREAM_BATCH_ROWS", batch_rows)
    streamed = rank_slowdown.stream_rank_slowdown(simulated, Settings())
    assert streamed.height > 0 and streamed.height == whole.height
    assert streamed.equals(whole)
