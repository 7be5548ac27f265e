"""Statistics over seeds, and the Student-t machinery behind comparisons.

Only numpy: the t distribution's CDF is the regularized incomplete beta
function, evaluated with a continued fraction (Lentz's method).
"""

from __future__ import annotations

import math

import numpy as np

GENERALIZE_THRESHOLD = 0.9  # a seed / length "generalizes" at exact match >= this
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def bootstrap_ci(values, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (deterministic: fixed seed).
    With one value the interval is that value (no spread to resample)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    if values.size == 1:
        return float(values[0]), float(values[0])
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def generalization_length(lengths, scores, threshold: float = GENERALIZE_THRESHOLD) -> int:
    """Largest tested length up to which every tested length scores >= threshold
    (0 when even the shortest fails)."""
    best = 0
    for length, score in sorted(zip(lengths, scores)):
        if not score >= threshold:
            break
        best = length
    return int(best)


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1 - math.exp(log_front) * _betacf(b, a, 1 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    if math.isnan(t) or math.isnan(df):
        return math.nan
    if math.isinf(t):
        return 0.0
    return betainc(df / 2, 0.5, df / (df + t * t))


def t_quantile(q: float, df: float) -> float:
    """Inverse CDF of Student's t (bisection on the two-sided p-value)."""
    target = 2 * (1 - q)  # two-sided tail mass for the upper quantile q > 0.5
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def welch(mean_a, std_a, n_a, mean_b, std_b, n_b, level: float = 0.95) -> dict:
    """Welch's unequal-variance t-test of B - A from summary statistics.

    Returns delta, its standard error, Welch-Satterthwaite df, t, the
    two-sided p-value and a ``level`` confidence interval of the delta; all
    NaN but ``delta`` when either side has fewer than two seeds.
    """
    delta = mean_b - mean_a
    out = {"delta": delta, "se": math.nan, "df": math.nan, "t": math.nan, "p_value": math.nan,
           "ci_low": math.nan, "ci_high": math.nan}
    if n_a < 2 or n_b < 2 or math.isnan(std_a) or math.isnan(std_b):
        return out
    va, vb = std_a**2 / n_a, std_b**2 / n_b
    se = math.sqrt(va + vb)
    if se == 0:
        p = 1.0 if delta == 0 else 0.0
        return {**out, "se": 0.0, "df": n_a + n_b - 2, "t": 0.0 if delta == 0 else math.copysign(math.inf, delta),
                "p_value": p, "ci_low": delta, "ci_high": delta}
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    t = delta / se
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return {"delta": delta, "se": se, "df": df, "t": t, "p_value": t_two_sided_p(t, df),
            "ci_low": delta - half, "ci_high": delta + half}
