"""Ranking many methods over many tasks (Demšar, JMLR 2006): average ranks,
the Friedman test (its chi-square and the Iman-Davenport F, each with its own
p, each named), the Nemenyi critical difference, and its diagram. The
chi-square is Demšar's, without scipy's correction for tied ranks (so it is
the same as scipy's where no task ties, and no larger where some do: the
conservative side); the pairs the critical difference separates are those
scikit-posthocs' Nemenyi test finds at alpha (tests/test_against_references.py).
Where the critical difference separates no pair, the order of the average
ranks is descriptive, and the text says so.

Ranks are taken within each task (1 = best OOD exact match; ties share the
average rank) over the *complete block* (``aggregate.complete_block``):
methods that each have a score on every task of the block (a method that is
n/a or failed on one is left out, and said so), on tasks where every one of
them is judged (``aggregate.judged``: it fit), since the Friedman test needs
every method on every task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lengthbench.benchmark.files import as_written
from lengthbench.leaderboard.aggregate import complete_block
from lengthbench.leaderboard.statistics import scipy_stats

ALPHA = 0.05


@dataclass(frozen=True)
class Ranking:
    """The Friedman test and the Nemenyi critical difference over ``n_tasks`` tasks."""

    average_ranks: pd.Series  # per method, ascending (best first)
    n_tasks: int
    chi2: float  # Friedman's chi-square
    f_statistic: float  # Iman-Davenport F, with (k - 1, (k - 1)(N - 1)) degrees of freedom
    p_value: float  # of the F statistic
    chi2_p_value: float  # of the chi-square, with k - 1 degrees of freedom
    critical_difference: float  # Nemenyi, at ALPHA
    left_out: tuple[str, ...]  # methods without a score on every task of the block
    unfit_tasks: tuple[str, ...] = ()  # tasks left out: some method of the block did not fit there
    few_ran_tasks: tuple[str, ...] = ()  # tasks left out: fewer methods ran them (``aggregate.complete_block``)

    @property
    def n_methods(self) -> int:
        return len(self.average_ranks)

    def separated_pairs(self) -> int:
        """How many pairs of methods the critical difference tells apart."""
        ranks = self.average_ranks.to_numpy()
        return int(sum(abs(a - b) >= self.critical_difference for i, a in enumerate(ranks) for b in ranks[i + 1:]))

    def groups(self) -> list[tuple[str, ...]]:
        """Maximal runs of methods (in rank order) whose average ranks differ by
        less than the critical difference: no pair inside one is told apart."""
        names, ranks = list(self.average_ranks.index), self.average_ranks.to_numpy()
        runs = []
        for i in range(len(names)):
            j = max(k for k in range(i, len(names)) if ranks[k] - ranks[i] < self.critical_difference)
            if j > i and not any(a <= i and j <= b for a, b in runs):
                runs.append((i, j))
        return [tuple(names[a:b + 1]) for a, b in runs]


def nemenyi_q(k: int, alpha: float = ALPHA) -> float:
    """The Nemenyi test's critical value for k methods: the studentized range
    quantile at infinite degrees of freedom over sqrt(2) (Demšar's table:
    2.343, 2.569, 2.728, 2.850 for k = 3..6 at alpha 0.05)."""
    return float(scipy_stats().studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)


def friedman(scores: pd.DataFrame, alpha: float = ALPHA) -> Ranking:
    """``scores``: one row per task, one column per method, higher is better,
    no missing value. Needs at least two tasks and two methods."""
    n, k = scores.shape
    ranks = scores.rank(axis=1, ascending=False, method="average")
    average = ranks.mean().sort_values()
    chi2 = 12 * n / (k * (k + 1)) * (float((average ** 2).sum()) - k * (k + 1) ** 2 / 4)
    denominator = n * (k - 1) - chi2
    f_statistic = (n - 1) * chi2 / denominator if denominator > 0 else math.inf
    # chi2 reaches its maximum n(k-1) only when every task ranks the methods alike, without ties: the F
    # approximation then has no value, and the exact chance of that agreement is (1/k!)^(n-1) (with
    # two tasks and two methods, 1/2: not the 0 an infinite F would give)
    p_value = (float(scipy_stats().f.sf(f_statistic, k - 1, (k - 1) * (n - 1))) if denominator > 0
               else (1 / math.factorial(k)) ** (n - 1))
    cd = nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6 * n))
    return Ranking(average, n, chi2, f_statistic, p_value, float(scipy_stats().chi2.sf(chi2, k - 1)), cd, ())


def board_ranking(board: pd.DataFrame, metric: str = "ood_exact_match_mean") -> Ranking | None:
    """The Friedman ranking of a leaderboard's complete block, or None when it
    has fewer than two tasks or two methods."""
    ok = board[board.status == "ok"]
    every, fit_tasks, unfit, few_ran = complete_block(board)
    if len(fit_tasks) < 2 or len(every) < 2:
        return None
    scores = ok[ok.method.isin(every) & ok.task.isin(fit_tasks)].pivot(index="task", columns="method",
                                                                      values=metric)[every].apply(as_written)
    ranking = friedman(scores)
    left_out = tuple(m for m in dict.fromkeys(board.method) if m not in every)
    return Ranking(ranking.average_ranks, ranking.n_tasks, ranking.chi2, ranking.f_statistic, ranking.p_value,
                   ranking.chi2_p_value, ranking.critical_difference, left_out, unfit, few_ran)


def _p(p: float) -> str:
    return f"p = {p:.2g}" if p >= 1e-3 else f"p = {p:.1e}"


def _separated_text(ranking: Ranking) -> str:
    """How much of the order the critical difference supports: none of it (descriptive), or how many pairs."""
    pairs = ranking.n_methods * (ranking.n_methods - 1) // 2
    separated = ranking.separated_pairs()
    if not separated:
        return "It separates no pair: the order of the average ranks below is descriptive, not a finding."
    return (f"It separates {separated} of the {pairs} pairs (the diagram joins the rest); any other order below "
            "is descriptive.")


def ranking_text(ranking: Ranking) -> str:
    """The markdown section ``leaderboard.md`` ends with."""
    lines = [f"Ranking over the {ranking.n_tasks} tasks every method below ran (Friedman test, Demšar 2006): "
             f"average rank per method (1 = best OOD exact match in a task; ties share the average rank). "
             f"Friedman's chi-square {ranking.chi2:.2f} ({_p(ranking.chi2_p_value)}, {ranking.n_methods - 1} degrees "
             "of freedom); "
             + (f"its Iman-Davenport F {ranking.f_statistic:.2f} ({_p(ranking.p_value)}); " if
                math.isfinite(ranking.f_statistic) else f"every task ranks the methods alike (exact p = "
                f"{ranking.p_value:.3g}); ") +
             f"Nemenyi critical difference at alpha {ALPHA}: {ranking.critical_difference:.2f} (two methods differ "
             f"when their average ranks differ by at least that). {_separated_text(ranking)}", ""]
    lines += ["| method | average rank |", "|---|---|"]
    lines += [f"| `{m}` | {r:.2f} |" for m, r in ranking.average_ranks.items()]
    groups = ranking.groups()
    lines += ["", "Not told apart by the Nemenyi test: "
              + ("; ".join(", ".join(f"`{m}`" for m in g) for g in groups) if groups else "none (every pair differs)")
              + "."]
    if ranking.left_out:
        lines += ["", "Left out (no score on every task of the block): "
                  + ", ".join(f"`{m}`" for m in ranking.left_out) + "."]
    if ranking.few_ran_tasks:
        lines += ["", "Tasks left out (fewer methods ran them; ranking the methods that did on them would push every "
                  "other method out): " + ", ".join(f"`{t}`" for t in ranking.few_ran_tasks) + "."]
    if ranking.unfit_tasks:
        lines += ["", "Tasks left out (some method above did not fit there, so its score says nothing about "
                  "length): " + ", ".join(f"`{t}`" for t in ranking.unfit_tasks) + "."]
    return "\n".join(lines) + "\n"
