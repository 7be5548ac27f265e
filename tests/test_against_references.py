"""Our statistics against the field's references on identical inputs:
statsmodels (Holm, Benjamini-Hochberg), scipy (the paired t interval, the
sign-flip test, Friedman's chi-square), rliable (IQM, the probability of
improvement and its stratified bootstrap interval) and scikit-posthocs
(Nemenyi). Each is a dev extra; where ours differs on purpose, the test says
how."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lengthbench.leaderboard.ranking import friedman
from lengthbench.leaderboard.statistics import (
    adjust_p_values,
    interquartile_mean,
    probability_of_improvement,
    sign_flip_p_value,
    t_interval,
)

RNG = np.random.default_rng(7)


@contextlib.contextmanager
def _rliable_library():
    """rliable's bootstrap module, imported beside pandas 3: its dependency ``arch`` calls pandas'
    ``deprecate_kwarg`` with the signature pandas 2 had (no warning class first); the shim lasts the import."""
    import pandas.util._decorators as decorators

    original = decorators.deprecate_kwarg
    decorators.deprecate_kwarg = lambda old, new, *args, **kwargs: original(FutureWarning, old, new, *args, **kwargs)
    try:
        from rliable import library

        yield library
    finally:
        decorators.deprecate_kwarg = original


@pytest.mark.parametrize("method, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
@pytest.mark.slow
def test_corrections_are_statsmodels(method, theirs):
    from statsmodels.stats.multitest import multipletests

    for size in (1, 2, 5, 13, 40):
        p = RNG.uniform(0, 0.2, size) ** 2
        p[RNG.integers(0, size)] = p.min()  # a tie
        assert adjust_p_values(p, method) == pytest.approx(multipletests(p, method=theirs)[1], abs=1e-12)
    with_untested = np.array([0.01, np.nan, 0.04, 0.03])
    ours = adjust_p_values(with_untested, method)
    assert np.isnan(ours[1])
    assert ours[[0, 2, 3]] == pytest.approx(multipletests(with_untested[[0, 2, 3]], method=theirs)[1])


def test_the_t_interval_is_scipys():
    for n in (3, 5, 12):
        d = RNG.normal(0.1, 0.2, n)
        theirs = stats.ttest_1samp(d, 0).confidence_interval(0.95)
        assert t_interval(d, bounds=None) == pytest.approx((theirs.low, theirs.high))


def test_the_sign_flip_p_is_scipys_paired_permutation_test():
    """scipy's exact paired permutation test (each pair's two values swapped: a sign flip of its difference)."""
    for n in (2, 4, 6, 9):
        a, b = RNG.uniform(0, 1, n), RNG.uniform(0, 1, n)
        theirs = stats.permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                                        n_resamples=np.inf, alternative="two-sided").pvalue
        assert sign_flip_p_value(a - b) == pytest.approx(theirs, abs=1e-9), n


def test_the_interquartile_mean_is_rliables_where_a_quarter_is_whole_seeds():
    """rliable's IQM is scipy's trim_mean(0.25), which drops whole values; ours weighs the values cut by a
    quarter boundary fractionally (Agarwal et al.'s definition on a continuum), the same when 4 divides n."""
    from rliable import metrics

    for n in (4, 8, 12, 20):
        x = RNG.uniform(0, 1, n)
        assert interquartile_mean(x) == pytest.approx(metrics.aggregate_iqm(x.reshape(-1, 1)))
    x = np.arange(6.0)  # quarter = 1.5 values: ours keeps half of values 1 and 4, trim_mean drops them
    assert interquartile_mean(x) == pytest.approx(2.5) and metrics.aggregate_iqm(x.reshape(-1, 1)) == 2.5
    x = np.array([0.0, 0.0, 1.0, 5.0, 6.0, 100.0])
    assert interquartile_mean(x) == pytest.approx((0.5 * 0 + 1 + 5 + 0.5 * 6) / 3)
    assert metrics.aggregate_iqm(x.reshape(-1, 1)) == pytest.approx(3.0)


def _scores(n_tasks=6, seeds=5, shift=0.1):
    a = RNG.uniform(0, 1, (seeds, n_tasks)) + shift
    b = RNG.uniform(0, 1, (seeds, n_tasks))
    a[:, 0] = b[:, 0] = 0.5  # a task where every seed ties
    return a, b


def test_the_probability_of_improvement_is_rliables():
    from rliable import metrics

    a, b = _scores()
    ours = probability_of_improvement({t: a[:, t] for t in range(6)}, {t: b[:, t] for t in range(6)})
    assert ours["p"] == pytest.approx(metrics.probability_of_improvement(a, b))


@pytest.mark.slow
def test_the_stratified_bootstrap_interval_is_rliables_within_resampling_noise():
    """Both resample each method's seeds within each task, independently; the intervals' ends agree within
    what 2,000 and 4,000 resamples leave."""
    from rliable import metrics

    a, b = _scores(shift=0.15)
    ours = probability_of_improvement({t: a[:, t] for t in range(6)}, {t: b[:, t] for t in range(6)})
    with _rliable_library() as library:
        _, intervals = library.get_interval_estimates({"pair": (a, b)}, metrics.probability_of_improvement,
                                                      reps=4000, confidence_interval_size=0.95)
    low, high = np.ravel(intervals["pair"])
    assert ours["low"] == pytest.approx(float(low), abs=0.02)
    assert ours["high"] == pytest.approx(float(high), abs=0.02)


def test_friedmans_chi_square_is_scipys_without_ties_and_never_above_it_with_them():
    """Ours is Demšar's statistic, which does not correct for tied ranks; scipy's does, so with ties ours is
    the conservative one (smaller chi-square, larger p)."""
    untied = pd.DataFrame(RNG.random((10, 5)), columns=list("abcde"))
    ranking = friedman(untied)
    theirs = stats.friedmanchisquare(*untied.T.to_numpy())
    assert ranking.chi2 == pytest.approx(theirs.statistic) and ranking.chi2_p_value == pytest.approx(theirs.pvalue)
    tied = pd.DataFrame(np.round(RNG.random((10, 5)), 1), columns=list("abcde"))
    tied.iloc[:4, :3] = 0.0
    assert friedman(tied).chi2 <= stats.friedmanchisquare(*tied.T.to_numpy()).statistic + 1e-12


def test_the_pairs_the_critical_difference_separates_are_scikit_posthocs_nemenyi_pairs():
    import scikit_posthocs as sp

    for seed in range(5):
        rng = np.random.default_rng(seed)
        scores = pd.DataFrame(rng.normal([0.1, 0.3, 0.35, 0.6, 0.62], 0.15, size=(16, 5)), columns=list("abcde"))
        ranking = friedman(scores)
        # scikit-posthocs ranks ascending (1 = lowest): rank the negated scores so that 1 = best, as ours does
        theirs = sp.posthoc_nemenyi_friedman(-scores.to_numpy())
        theirs.index = theirs.columns = list("abcde")
        for x, y in itertools.combinations("abcde", 2):
            apart = abs(ranking.average_ranks[x] - ranking.average_ranks[y]) >= ranking.critical_difference
            assert apart == bool(theirs.loc[x, y] < 0.05), (seed, x, y, theirs.loc[x, y])
