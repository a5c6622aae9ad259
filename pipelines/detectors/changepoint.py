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


def best_split(cumsum: np.ndarray, lo: int, hi: int, min_segment: int) -> tuple[int, float]:
    """The split k (lo < k < hi) of x[lo:hi] that most reduces the sum of squared errors.

    `cumsum` = np.concatenate([[0], np.cumsum(x)]). Returns (k, reduction); (-1, 0.0) when the
    segment is too short to leave `min_segment` elements on either side. For a mean shift the
    reduction is n1 n2 / n (mean1 - mean2)^2, from cumulative sums in O(n).
    """
    n = hi - lo
    if n < 2 * min_segment:
        return -1, 0.0
    k = np.arange(lo + min_segment, hi - min_segment + 1)
    left = cumsum[k] - cumsum[lo]
    right = cumsum[hi] - cumsum[k]
    n1 = (k - lo).astype(float)
    n2 = n - n1
    gain = n1 * n2 / n * (left / n1 - right / n2) ** 2
    best = int(np.argmax(gain))
    return int(k[best]), float(gain[best])


def binary_segmentation(x: np.ndarray, *, penalty: float, min_segment: int = 10) -> list[int]:
    """Change points of the mean of `x` (sorted split indices), by binary segmentation.

    A segment is split at its best split while that split's SSE reduction exceeds `penalty`
    (in the units of x squared: callers pass a multiple of the noise variance). Each side keeps
    at least `min_segment` elements. A spell that starts and ends gives two change points; a
    series with no shift gives none.
    """
    x = np.asarray(x, dtype=float)
    cumsum = np.concatenate([[0.0], np.cumsum(x)])
    found: list[int] = []
    pending = [(0, x.size)]
    while pending:
        lo, hi = pending.pop()
        k, gain = best_split(cumsum, lo, hi, min_segment)
        if k < 0 or gain <= penalty:
            continue
        found.append(k)
        pending += [(lo, k), (k, hi)]
    return sorted(found)
