"""Per-rank slowdown: ratios, drag, the U test, Holm, NVIDIA's relative score, the verdict."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from pipelines.config import Settings
from pipelines.stragglers import holm, lower_median, mann_whitney_greater
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
    load(con, {
        "nodes": [{"node": "n1", "cluster": "c1", "gpu_count": 8}],
        "jobs": [job("j", start=0, end=400, state="succeeded", gpus=4)],
        "job_attempts": [attempt("j", 0, start=0, end=400, state="succeeded")],
        "rank_steps": steps("j", 0, first_end=20, step_s=10, count=30, ranks=4, compute=True, slow={2: 1.2}),
    })
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


def noisy_job(con, *, ranks: int, steps_n: int, slow: dict[int, float], seed: int, sigma: float = 0.02):
    """One attempt with lognormal noise on every rank's compute_s (mean 1 s)."""
    rng = np.random.default_rng(seed)
    factors = np.exp(rng.normal(0, sigma, size=(steps_n, ranks)))
    rows = []
    for s in range(steps_n):
        for r in range(ranks):
            compute_s = float(factors[s, r] * slow.get(r, 1.0))
            rows.append({"job_id": "noisy", "attempt": 0, "step": s + 1, "rank": r, "node": f"n{r // 8}",
                         "gpu": r % 8, "end_ts": at(10 + 2 * s),
                         "step_s": 2.0, "compute_s": compute_s})
    load(con, {
        "jobs": [job("noisy", start=0, end=10 + 2 * steps_n, state="succeeded", gpus=ranks)],
        "job_attempts": [attempt("noisy", 0, start=0, end=10 + 2 * steps_n, state="succeeded")],
        "rank_steps": rows,
    })
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
