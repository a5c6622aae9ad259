"""Change-point detection for a straggler's onset: an exact single mean-shift test.

A rank that turns slow mid-run has a per-step ratio series (rank time / median rank time) that
sits near 1 and then shifts up. The best split is found exactly (every candidate split, with
cumulative sums: O(n)); it is accepted when the later segment is slower by at least `min_shift`
and Welch's one-sided t-test says the shift is real at level `alpha`, and the steps before it
look normal. Otherwise the rank was slow from its first step (or the series is too short to
tell), and the onset is the first step.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def mean_shift_onset(
    ratios: np.ndarray,
    *,
    min_segment: int = 10,
    min_shift: float = 0.01,
    alpha: float = 0.001,
    normal_below: float | None = None,
) -> int:
    """Index of the first element after an upward mean shift, or 0 when there is none.

    `ratios`: per-step ratios (dimensionless), in step order; NaN entries are dropped by the caller.
    `min_segment`: fewest elements on either side of the split.
    `normal_below`: when given, the part before the split must look normal (median below this),
    so a rank slow from the start that slows down further later keeps onset 0.
    """
    x = np.asarray(ratios, dtype=float)
    n = x.size
    if n < 2 * min_segment:
        return 0
    cumsum = np.cumsum(x)
    cumsq = np.cumsum(x * x)
    total, total_sq = cumsum[-1], cumsq[-1]
    k = np.arange(min_segment, n - min_segment + 1)  # split: x[:k] | x[k:]
    left_sum, left_sq = cumsum[k - 1], cumsq[k - 1]
    right_sum, right_sq = total - left_sum, total_sq - left_sq
    sse = (left_sq - left_sum**2 / k) + (right_sq - right_sum**2 / (n - k))
    best = int(k[np.argmin(sse)])
    before, after = x[:best], x[best:]
    if after.mean() - before.mean() < min_shift:
        return 0
    if normal_below is not None and float(np.median(before)) >= normal_below:
        return 0
    test = stats.ttest_ind(after, before, equal_var=False, alternative="greater")
    return best if float(test.pvalue) < alpha else 0
