"""Statistics over seeds and the tests behind comparisons, from ``scipy.stats``.

Welch's unequal-variance t-test works from summary statistics (mean, sample
std, number of seeds), so ``compare`` needs only the two CSVs; its p-values
are corrected for the many cells one comparison tests (``adjust_p_values``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

GENERALIZE_THRESHOLD = 0.9  # a seed / length "generalizes" at exact match >= this
REACH_FACTORS = (2, 4)  # the horizons (x the longest training length) whose share of seeds a board reports
# Multiple-comparison corrections of a family of p-values: Benjamini-Hochberg (false discovery
# rate, scipy's ``false_discovery_control``), Holm (family-wise error), or none.
CORRECTIONS = {"bh": "Benjamini-Hochberg (false discovery rate)",
               "holm": "Holm (family-wise error rate)",
               "none": "none (each cell tested alone)"}
DEFAULT_CORRECTION = "bh"


def scipy_stats():
    """``scipy.stats``, imported on first use: over a second of start-up that
    the commands which compute no statistic (``list``, ``check``, ``--plan``)
    and the grid's pool workers never pay."""
    from scipy import stats

    return stats


# No verdict rests on fewer than this many tasks where every compared method fits (``leaderboard.inference``:
# such a comparison is "not testable"); its numbers are still shown.
MIN_TASKS = 3
# A t interval over fewer units than this is not printed (over 2 units its half-width is 12.7 standard errors)
MIN_INTERVAL_UNITS = 3


def t_interval(values, level: float = 0.95, bounds: tuple[float, float] | None = (0.0, 1.0)) -> tuple[float, float]:
    """Student-t interval of the mean over seeds, ``mean +- t(1 - a/2, n - 1) s / sqrt(n)``,
    clipped to ``bounds``, the metrics' range [0, 1] (which keeps its coverage); ``None`` for
    a difference, never clipped (a clipped difference interval hides how wide it is). Exact
    under normality at any n; a percentile bootstrap of 3 values spans at most their range
    and covers ~76% of the time for a nominal 95%. Fewer
    than two values have no interval (NaN, NaN)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return math.nan, math.nan
    mean, half = float(values.mean()), float(scipy_stats().t.ppf(1 - (1 - level) / 2, values.size - 1)
                                             * values.std(ddof=1) / math.sqrt(values.size))
    if bounds is None:
        return mean - half, mean + half
    return max(bounds[0], mean - half), min(bounds[1], mean + half)


EXACT_SIGN_UNITS = 16  # up to this many units every sign pattern is tried (2^16); more are sampled


def sign_flip_p_value(differences, seed: int = 0) -> float:
    """Two-sided paired randomization test of a zero mean difference: each
    unit's difference keeps its size and takes either sign (every pattern for
    up to ``EXACT_SIGN_UNITS`` units, else ``EXACT_SPLITS`` random ones); p is
    the share of patterns whose |sum| reaches the observed one. It needs no
    normality, and its smallest p is 2 / 2^n: fewer than 6 units never reach
    0.05, however alike their differences."""
    d = np.asarray(differences, dtype=float)
    observed = abs(float(d.sum())) - 1e-9 * max(1.0, float(np.abs(d).sum()))  # float sums tie within rounding
    if d.size <= EXACT_SIGN_UNITS:
        signs = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        return float(np.mean(np.abs(signs @ d) >= observed))  # k / 2^n: exact in floating point
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], (EXACT_SPLITS, d.size))
    return round((int(np.sum(np.abs(signs @ d) >= observed)) + 1) / (EXACT_SPLITS + 1), 12)


def generalization_length(lengths, scores, threshold: float = GENERALIZE_THRESHOLD) -> int:
    """Largest tested length up to which every tested length scores >= threshold
    (0 when even the shortest fails)."""
    best = 0
    for length, score in sorted(zip(lengths, scores)):
        if not score >= threshold:
            break
        best = length
    return int(best)


def interquartile_mean(values) -> float:
    """Mean of the middle half of ``values`` (Agarwal et al. 2021's IQM: the
    lowest and highest quarter dropped, fractional weights at the cuts),
    robust to one outlying seed; NaN with fewer than 4 values, where a
    quarter is less than one value."""
    values = np.sort(np.asarray(values, dtype=float))
    n = values.size
    if n < 4:
        return math.nan
    position = np.arange(n)  # value i covers [i, i + 1) of n; keep the overlap with [n/4, 3n/4)
    weight = np.clip(np.minimum(position + 1, 0.75 * n) - np.maximum(position, 0.25 * n), 0, 1)
    return float((weight * values).sum() / weight.sum())


def log_length_area(lengths, scores) -> float:
    """Area under ``scores`` against log length between the first and last
    of ``lengths`` (trapezoids), over that log range: 1 when every length
    scores 1, the score itself for a single length; each doubling of length
    weighs the same, as the field plots length on a log axis."""
    order = np.argsort(np.asarray(lengths, dtype=float))
    x = np.log(np.asarray(lengths, dtype=float)[order])
    y = np.asarray(scores, dtype=float)[order]
    if x.size == 0:
        return math.nan
    if x.size == 1 or x[-1] == x[0]:
        return float(y.mean())
    return float(np.sum((y[1:] + y[:-1]) / 2 * np.diff(x)) / (x[-1] - x[0]))


def probability_of_improvement(a_by_task: dict, b_by_task: dict, level: float = 0.95, n_boot: int = 2000,
                               seed: int = 0) -> dict:
    """P(A > B) over tasks (Agarwal et al. 2021): per task, the chance that a
    random seed of A scores above a random seed of B (ties count half), averaged
    over the tasks both have; with a stratified bootstrap interval (seeds
    resampled with replacement within each task and method, tasks kept, as
    rliable's ``StratifiedIndependentBootstrap``). ``a_by_task``/``b_by_task``:
    task -> seed scores. Returns ``p``, ``low``, ``high``, ``n_tasks`` and the
    stratified permutation test's ``p_value`` (``improvement_p_value``); with 3
    seeds a side a bootstrap interval can shrink to one point, so the verdict
    (``leaderboard.inference``) reads the permutation test too."""
    strata = sorted(set(a_by_task) & set(b_by_task))
    pairs = [(np.asarray(a_by_task[t], dtype=float), np.asarray(b_by_task[t], dtype=float)) for t in strata]
    pairs = [(a, b) for a, b in pairs if a.size and b.size]
    if not pairs:
        return {"p": math.nan, "low": math.nan, "high": math.nan, "n_tasks": 0, "p_value": math.nan}
    rng = np.random.default_rng(seed)
    resampled = [_p_of(rng.choice(a, (n_boot, a.size)), rng.choice(b, (n_boot, b.size))) for a, b in pairs]
    boot = np.mean(resampled, axis=0)  # every resample's mean over tasks, at once
    low, high = (float(v) for v in np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2]))
    return {"p": float(np.mean([_p_of(a, b) for a, b in pairs])), "low": low, "high": high,
            "n_tasks": len(pairs), "p_value": improvement_p_value(pairs, seed=seed)}


def _p_of(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(a seed of A > a seed of B), ties half, of each row (the last axis holds its seeds)."""
    wins = (a[..., :, None] > b[..., None, :]) + 0.5 * (a[..., :, None] == b[..., None, :])
    return wins.mean(axis=(-2, -1))


EXACT_SPLITS = 20_000  # a task with more ways to split its seeds between A and B has its null sampled


def improvement_p_value(pairs: list[tuple[np.ndarray, np.ndarray]], seed: int = 0) -> float:
    """Two-sided stratified permutation test of P(A > B) = 0.5: within each
    task the seeds' A/B labels are exchanged (every split of the pooled seeds,
    or ``EXACT_SPLITS`` random ones where there are more), the tasks kept.
    Valid at any number of seeds: with 3 seeds a side on one task, every seed
    of A beating every seed of B has p = 2/20 = 0.1, never "certain"."""
    null = ImprovementNull(pairs, seed)
    return null.p(null.observed_reach)


class ImprovementNull:
    """The null distribution of the sum over tasks of P(A > B) (times a common
    ``scale``, so every value is an integer) under the stratified permutation
    of ``pairs``' seeds: what ``improvement_p_value`` reads the observed sum's
    tail from, and the design's smallest p and detectable P are read from."""

    def __init__(self, pairs: list[tuple[np.ndarray, np.ndarray]], seed: int = 0):
        rng = np.random.default_rng(seed)
        nulls = [_split_null(a, b, rng) for a, b in pairs]  # per task: its statistic under each split
        self.n_tasks = len(pairs)
        self.scale = math.lcm(*(2 * a.size * b.size for a, b in pairs))  # every P(A > B) * scale is an integer
        self.observed_reach = abs(sum(int(round(float(_p_of(a, b)) * self.scale)) for a, b in pairs) - self.centre)
        # The exact null of the sum is the convolution of the tasks' nulls. Where the tasks' seed counts differ
        # the common grid is fine (pooled strata: millions of points), so the tasks are summed in two halves and
        # the halves met through one's cumulative distribution, never convolved; within a half the tasks with
        # the most distinct values come first, while the half's sum is short and on a coarse grid.
        by_values = sorted(range(len(nulls)), key=lambda i: -np.unique(nulls[i]).size)
        (first, self._every), (self._second, other_every) = (
            _null_of_sum([nulls[i] for i in by_values[start::2]], self.scale) for start in (0, 1))
        self._below = np.concatenate([[0.0], np.cumsum(first)])  # below[k]: P(first half's sum < k * every)
        self._other = np.arange(self._second.size, dtype=np.int64) * other_every

    @property
    def centre(self) -> int:
        """The sum's null mean: each task's null has mean 0.5 (any two seeds fall either way round equally often)."""
        return self.n_tasks * self.scale // 2

    def p(self, reach: int) -> float:
        """P(|sum - centre| >= reach) under the null: the two-sided p of a sum that far from the centre."""
        if reach <= 0:
            return 1.0
        centre, every, size = self.centre, self._every, self._below.size - 1
        low = np.clip((centre - reach - self._other) // every + 1, 0, size)  # first + other <= centre - reach
        high = np.clip(-((self._other - centre - reach) // every), 0, size)  # first + other >= centre + reach
        p = float(np.sum(self._second * (self._below[low] + self._below[-1] - self._below[high])))
        return round(min(1.0, p), 12)  # 0.05, not 0.0499..

    def smallest_p(self) -> float:
        """The p of the most extreme outcome: every seed of one side above every seed of the other, in every task."""
        return self.p(self.centre)

    def detectable(self, threshold: float) -> float | None:
        """The least distance of P(A > B) from 0.5 whose p is at most ``threshold`` (None: no outcome is)."""
        if self.smallest_p() > threshold:
            return None
        low, high = 1, self.centre  # p(high) <= threshold; p is non-increasing in the reach
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if self.p(middle) <= threshold else (middle + 1, high)
        return low / (self.n_tasks * self.scale)


def _null_of_sum(nulls: list[np.ndarray], scale: int) -> tuple[np.ndarray, int]:
    """The distribution of the sum over tasks of P(A > B) * scale, each task's
    statistic drawn from its ``nulls`` values (equally likely): probabilities
    of the sums 0, every, 2 * every, ..., with ``every`` the greatest common
    divisor of the values it can take (the grid is only as fine as it must be)."""
    total, every = np.ones(1), 0  # before any task: the sum is 0
    for values in nulls:
        steps, counts = np.unique(np.rint(values * scale).astype(np.int64), return_counts=True)
        finer = math.gcd(every, *(int(step) for step in steps)) or 1
        spread = np.zeros((total.size - 1) * (every // finer) + 1)
        spread[::max(every // finer, 1)] = total
        grown = np.zeros(spread.size + scale // finer)
        for step, weight in zip(steps // finer, counts / counts.sum()):
            grown[step:step + spread.size] += weight * spread
        total, every = grown, finer
    return total, every or 1


def _split_null(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """P(A > B) of one task under every split of its pooled seeds into sizes
    |a| and |b| (or ``EXACT_SPLITS`` random splits where there are more)."""
    pooled = np.concatenate([a, b])
    if math.comb(pooled.size, a.size) <= EXACT_SPLITS:
        chosen = np.array(list(itertools.combinations(range(pooled.size), a.size)), dtype=np.int64)
    else:
        chosen = np.argsort(rng.random((EXACT_SPLITS, pooled.size)), axis=1)[:, :a.size]
    in_a = np.zeros((len(chosen), pooled.size), dtype=bool)
    np.put_along_axis(in_a, chosen, True, axis=1)
    order = np.argsort(~in_a, axis=1, kind="stable")  # each split's A seeds first, then its B seeds
    arranged = pooled[order]
    return _p_of(arranged[:, :a.size], arranged[:, a.size:])


def welch(mean_a, std_a, n_a, mean_b, std_b, n_b, level: float = 0.95) -> dict:
    """Welch's unequal-variance t-test of B - A from summary statistics.

    Returns delta, its standard error, Welch-Satterthwaite df, t, the
    two-sided p-value and a ``level`` confidence interval of the delta; all
    NaN but ``delta`` when either side has fewer than two seeds. Where
    neither side varies its seeds are known exactly, the t-test is undefined
    (t infinite), and the p is the exact permutation test's over every split
    of the pooled seeds by the difference of means: 2 / C(n_a + n_b, n_a) with
    equal sides (0.1 for 3 seeds a side; only the observed split and its
    mirror are as extreme), 1 / C(...) with unequal ones; no interval.
    """
    delta = mean_b - mean_a
    out = {"delta": delta, "se": math.nan, "df": math.nan, "t": math.nan, "p_value": math.nan,
           "ci_low": math.nan, "ci_high": math.nan}
    if n_a < 2 or n_b < 2 or math.isnan(std_a) or math.isnan(std_b):
        return out
    va, vb = std_a**2 / n_a, std_b**2 / n_b
    se = math.sqrt(va + vb)
    if se == 0:
        p = 1.0 if delta == 0 else min(1.0, (2 if n_a == n_b else 1) / math.comb(n_a + n_b, n_a))
        return {**out, "se": 0.0, "df": n_a + n_b - 2, "t": 0.0 if delta == 0 else math.copysign(math.inf, delta),
                "p_value": p}
    test = scipy_stats().ttest_ind_from_stats(mean_b, std_b, n_b, mean_a, std_a, n_a, equal_var=False)
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    half = float(scipy_stats().t.ppf(1 - (1 - level) / 2, df)) * se
    return {"delta": delta, "se": se, "df": df, "t": float(test.statistic), "p_value": float(test.pvalue),
            "ci_low": delta - half, "ci_high": delta + half}


def adjust_p_values(p_values, correction: str) -> np.ndarray:
    """``p_values`` adjusted for testing them all at once (NaN, an untested
    cell, stays NaN and does not count); a cell is significant when its
    adjusted p-value is below alpha."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r} is not known; valid: {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=float)
    out = p.copy()
    tested = ~np.isnan(p)
    if correction == "none" or not tested.any():
        return out
    if correction == "bh":
        out[tested] = scipy_stats().false_discovery_control(p[tested], method="bh")
        return out
    order = np.argsort(p[tested])
    m = order.size
    holm = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[tested][order]))
    adjusted = np.empty(m)
    adjusted[order] = holm
    out[tested] = adjusted
    return out
