"""One inference layer for every report: two questions kept apart, each
report's comparisons adjusted together, and what "not told apart" could have
detected.

A comparison of method A with method B over the tasks where both fit answers
two questions, each with its own test, and says which one a verdict answers:

- **across tasks** (the task the unit: a claim about tasks like these): each
  task's seed mean, the differences paired over the tasks; the exact
  sign-flip test (``statistics.sign_flip_p_value``) and the Student-t
  interval of the mean difference;
- **on these tasks** (these tasks fixed, seeds the replicates, stratified by
  task as rliable does): the probability of improvement, its stratified
  bootstrap interval and its stratified permutation test
  (``statistics.probability_of_improvement``).

The rule, written in the reference's PROTOCOL.md before it was applied to a
reference record: a report's comparisons are one family per question, Holm's
step-down adjustment over each, raw and adjusted p printed. The verdict is
"A better across tasks" when the across-tasks test passes (adjusted p below
``ALPHA``, t interval clear of 0); else "A better on these k tasks" when the
on-these-tasks test passes (adjusted p below ``ALPHA``, bootstrap interval
clear of 0.5), with the across-tasks result beside it; else "not told apart",
with the smallest difference each design could have told apart. A comparison
that no outcome could pass (its smallest attainable p, with every other
comparison of its family at theirs, fails Holm) is "not testable with k
tasks" for that question and leaves its family, so that it does not dilute
the others; so is one over fewer than ``MIN_TASKS`` tasks (the project's
rule). Testability depends on the design alone (how many tasks and seeds),
never on an outcome, so dropping such comparisons before testing is valid.

A report is written twice (``write_report``): the first writing gathers its
comparisons in order, the family is adjusted, and the second writing reads
each comparison's adjusted result back in the same order (it must ask for
the same comparisons, which ``row`` checks).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lengthbench.leaderboard.statistics import (
    EXACT_SIGN_UNITS,
    EXACT_SPLITS,
    MIN_INTERVAL_UNITS,
    MIN_TASKS,
    ImprovementNull,
    adjust_p_values,
    probability_of_improvement,
    sign_flip_p_value,
    t_interval,
)

ALPHA = 0.05
ACROSS, THESE = "across", "these"  # the two questions: across the units (tasks), on these units


def question(which: str, unit: str = "task") -> str:
    """``across tasks`` / ``on these tasks`` (or another unit's: ``across cells``)."""
    return f"across {unit}s" if which == ACROSS else f"on these {unit}s"


def p_text(p: float) -> str:
    """``p 0.08``; never rounded onto the other side of 0.05 (0.0496 is ``p 0.0496``, not ``p 0.05``)."""
    if p < 0.001:
        return "p < 0.001"
    short = f"{p:.2g}"
    return f"p {short}" if (float(short) < ALPHA) == (p < ALPHA) else f"p {p:.3g}"


def adjusted_text(raw: float, adjusted: float) -> str:
    """``p 0.0078 → 0.051`` (raw, then Holm-adjusted)."""
    return f"{p_text(raw)} → {p_text(adjusted)[2:]}"


def sign_flip_smallest_p(n_units: int) -> float:
    """The smallest p the sign-flip test over ``n_units`` units can give: 2 / 2^n
    (every difference of one sign), or one sampled split in ``EXACT_SPLITS`` + 1."""
    if n_units <= EXACT_SIGN_UNITS:
        return 2.0 / 2 ** n_units
    return 1.0 / (EXACT_SPLITS + 1)


def holm_thresholds(smallest: list[float], alpha: float = ALPHA) -> list[float]:
    """For each comparison of a family, the largest raw p that could still pass
    Holm's adjustment at ``alpha``, every other comparison at its own smallest
    p (``smallest``): the most lenient level the family allows it (0 when even
    its own smallest p cannot pass). Holm's adjusted p is non-decreasing in
    every raw p, so no outcome lets it pass above this."""
    thresholds = []
    for i, own in enumerate(smallest):
        others = [p for j, p in enumerate(smallest) if j != i]

        def passes(p: float) -> bool:
            return bool(adjust_p_values([p, *others], "holm")[0] < alpha)

        if not passes(own):
            thresholds.append(0.0)
            continue
        low, high = own, alpha  # passes(low); not passes(alpha): a raw p at alpha never passes
        for _ in range(50):
            middle = (low + high) / 2
            low, high = (middle, high) if passes(middle) else (low, middle)
        thresholds.append(low)
    return thresholds


@dataclass
class Question:
    """One question's test of one comparison: its raw p, the smallest p its design allows, and (once its family
    is adjusted) whether it is testable, its Holm-adjusted p and the most lenient raw p it could pass at."""

    raw: float
    smallest: float
    testable: bool = True
    adjusted: float = math.nan
    threshold: float = 0.0

    @property
    def passes(self) -> bool:
        return self.testable and self.adjusted < ALPHA


@dataclass
class Comparison:
    """A against B over the tasks both fit: the two questions' tests and their numbers."""

    names: tuple[str, str]
    n_tasks: int
    differences: np.ndarray  # per unit (a task's seed mean), A - B
    across: dict  # paired difference: mean, low, high (Student-t, 95%)
    these: dict  # probability of improvement: p, low, high (stratified bootstrap, 95%)
    across_test: Question
    these_test: Question
    these_null: ImprovementNull | None
    better: tuple[str, str]  # how a verdict names A better, B better
    key: tuple = field(default=(), repr=False)  # what was compared, for the second writing's check
    unit: str = "task"  # what the units are called (a task; the fit study's cells)

    def direction(self, question: str) -> int:
        """+1 when the question's estimate favours A, -1 when B, 0 when neither."""
        if question == ACROSS:
            return int(np.sign(self.across["mean"])) if self.across["low"] > 0 or self.across["high"] < 0 else 0
        return 1 if self.these["low"] > 0.5 else (-1 if self.these["high"] < 0.5 else 0)

    def detectable_points(self) -> float | None:
        """The smallest mean difference (a fraction; both signs, the larger) that the across-tasks test would have
        told apart at the most lenient level its family allows, the tasks' differences spread as observed:
        each unit's difference shifted by the same amount. None when no shift would."""
        test = self.across_test
        if not test.testable or test.threshold <= 0:
            return None
        spread = self.differences - self.differences.mean()
        return max(_least_shift(spread, test.threshold, sign) for sign in (1, -1))

    def detectable_probability(self) -> float | None:
        """The least distance of P(A > B) from 0.5 that the on-these-tasks test would have told apart at the most
        lenient level its family allows (its permutation test; None when none would)."""
        if not self.these_test.testable or self.these_null is None:
            return None
        return self.these_null.detectable(self.these_test.threshold)


def _least_shift(spread: np.ndarray, threshold: float, sign: int) -> float:
    """The least shift d >= 0 such that ``spread + sign * d`` passes: sign-flip p <= threshold and a t interval
    clear of 0. Both conditions are monotone in d (a sign pattern's |sum| grows more slowly than the observed
    sum, which is n * d), so bisection finds it."""
    def passes(shift: float) -> bool:
        d = spread + sign * shift
        low, high = t_interval(d, bounds=None)
        return sign_flip_p_value(d) <= threshold and (low > 0 if sign > 0 else high < 0)

    high = 1.0
    while not passes(high):
        high *= 2
    low = 0.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if passes(middle) else (middle, high)
    return high


class ComparisonFamily:
    """A report's comparisons: gathered on the first writing (``row`` returns provisional cells), adjusted
    together by ``close`` (one Holm family per question, and one for the fit shifts), read back in the same order
    on the second writing."""

    def __init__(self, unit: str = "task"):
        self.unit = unit  # what the comparisons' units are called in their verdicts
        self.comparisons: list[Comparison] = []
        self.shifts: list[tuple[tuple, Question]] = []  # (what was compared, its test): ``fit_shift``'s p values
        self.closed = False
        self._read = {"comparisons": 0, "shifts": 0}

    def _reread(self, kind: str, key: tuple):
        """On the second writing: the entry of ``kind`` the first writing made at this point (the same key)."""
        entries = getattr(self, kind)
        i = self._read[kind]
        if i >= len(entries) or (entries[i].key if kind == "comparisons" else entries[i][0]) != key:
            raise RuntimeError("a report's second writing asked for other comparisons than its first")
        self._read[kind] += 1
        return entries[i]

    def compare(self, a_by_task: dict, b_by_task: dict, names: tuple[str, str], tasks: int | None = None,
                better: tuple[str, str] | None = None, across_units: tuple[dict, dict] | None = None) -> Comparison:
        """A against B over the strata both have (task -> seed scores; a stratum's score for the across-tasks
        question: the mean of its seeds). ``tasks``: how many tasks the strata span, where they are not tasks
        (the methods of one task: 1), for the rule on too few tasks; ``across_units``: the across-tasks
        question's own paired unit values (unit -> value, A's and B's) where its units are not the strata (a
        task's mean gain over several strata of it). On the second writing, the comparison the first writing
        made at this point."""
        units = [u for u in a_by_task if u in b_by_task and len(a_by_task[u]) and len(b_by_task[u])]
        key = (names, tuple((u, tuple(map(float, a_by_task[u])), tuple(map(float, b_by_task[u]))) for u in units),
               None if across_units is None else tuple(tuple(sorted(x.items())) for x in across_units))
        if self.closed:
            return self._reread("comparisons", key)
        if across_units is None:
            a, b = np.array([np.mean(a_by_task[u]) for u in units]), np.array([np.mean(b_by_task[u]) for u in units])
        else:
            paired = [u for u in across_units[0] if u in across_units[1]]
            a, b = (np.array([x[u] for u in paired], dtype=float) for x in across_units)
        d = a - b
        n_tasks = len(units) if tasks is None else tasks
        low, high = t_interval(d, bounds=None) if d.size >= MIN_INTERVAL_UNITS else (math.nan, math.nan)
        across = {"mean": float(d.mean()) if d.size else math.nan, "low": low, "high": high, "n": int(d.size)}
        pairs = [(np.asarray(a_by_task[u], float), np.asarray(b_by_task[u], float)) for u in units]
        these = probability_of_improvement({u: a_by_task[u] for u in units}, {u: b_by_task[u] for u in units})
        comparison = Comparison(
            names=names, n_tasks=n_tasks, differences=d, across=across, these=these,
            across_test=Question(sign_flip_p_value(d) if d.size >= 2 else math.nan,
                                 sign_flip_smallest_p(d.size) if d.size >= 2 else 1.0),
            these_test=Question(these["p_value"], _smallest_improvement_p(pairs)),
            these_null=ImprovementNull(pairs) if pairs else None,
            better=better or (f"{names[0]} better", f"{names[1]} better"), key=key, unit=self.unit)
        self.comparisons.append(comparison)
        return comparison

    def shift(self, a_by_task: dict, b_by_task: dict, tasks: int | None = None) -> Question:
        """The stratified permutation test of a shift in the share of seeds that fit (each seed 1 or 0; the task
        the stratum), a member of the report's family of fit shifts."""
        units = [u for u in a_by_task if u in b_by_task and len(a_by_task[u]) and len(b_by_task[u])]
        key = tuple((u, tuple(map(float, a_by_task[u])), tuple(map(float, b_by_task[u]))) for u in units)
        if self.closed:
            return self._reread("shifts", key)[1]
        pairs = [(np.asarray(a_by_task[u], float), np.asarray(b_by_task[u], float)) for u in units]
        test = Question(probability_of_improvement(dict(zip(units, (a for a, _ in pairs))),
                                                   dict(zip(units, (b for _, b in pairs))))["p_value"]
                        if pairs else math.nan, _smallest_improvement_p(pairs))
        test.testable = (len(units) if tasks is None else tasks) >= 1 and bool(pairs)
        self.shifts.append((key, test))
        return test

    def close(self) -> None:
        """Adjust each family (Holm), its untestable members left out first."""
        for c in self.comparisons:
            for test in (c.across_test, c.these_test):
                test.testable = c.n_tasks >= MIN_TASKS and not math.isnan(test.raw)
        for tests in ([c.across_test for c in self.comparisons], [c.these_test for c in self.comparisons],
                      [test for _, test in self.shifts]):
            _adjust(tests)
        self.closed = True

    def row(self, a_by_task: dict, b_by_task: dict, names: tuple[str, str], tasks: int | None = None,
            better: tuple[str, str] | None = None, across_units: tuple[dict, dict] | None = None) -> list[str]:
        """The four cells of a comparison's row: tasks, the across-tasks difference, the on-these-tasks
        probability and the verdict (provisional on the first writing; arguments as ``compare``'s)."""
        c = self.compare(a_by_task, b_by_task, names, tasks, better, across_units)
        if not c.across["n"]:
            return ["0", "", "", f"not tested: no {self.unit} where both fit"]
        return [str(c.across["n"]), across_text(c, self.closed), these_text(c, self.closed), verdict_text(c)
                if self.closed else ""]


def _smallest_improvement_p(pairs: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The smallest p the stratified permutation test can give with these seed counts (no ties)."""
    if not pairs:
        return 1.0
    return ImprovementNull([(np.arange(a.size) + b.size, np.arange(b.size, dtype=float)) for a, b in pairs]
                           ).smallest_p()


def _adjust(tests: list[Question]) -> None:
    """Holm over the testable ``tests``: the weakest designs leave first, one smallest p at a time, until every
    one left could pass at some outcome; then each gets its adjusted p and the most lenient level it could pass at."""
    while True:
        family = [t for t in tests if t.testable]
        thresholds = holm_thresholds([t.smallest for t in family])
        for test, threshold in zip(family, thresholds):
            test.threshold = threshold
        if all(threshold > 0 for threshold in thresholds):
            break
        weakest = max(t.smallest for t, threshold in zip(family, thresholds) if threshold <= 0)
        for test in family:
            test.testable = test.smallest < weakest
    family = [t for t in tests if t.testable]
    for test, adjusted in zip(family, adjust_p_values([t.raw for t in family], "holm")):
        test.adjusted = float(adjusted)


def shift_text(test: Question, closed: bool = True) -> str:
    """A fit shift's ``p 0.012 → 0.05`` (raw → Holm over the report's fit shifts)."""
    return _p_cells(test, closed)


def comparison_headers(a: str, b: str, unit: str = "task", paired: str = "both fit") -> list[str]:
    """The headers of ``ComparisonFamily.row``'s four cells (``paired``: which units the comparison pairs)."""
    return [f"{unit}s ({paired})", f"{a} − {b}, {question(ACROSS, unit)} [95% interval]; p → Holm",
            f"P({a} > {b}), {question(THESE, unit)} [95% interval]; p → Holm", "verdict"]


def across_text(c: Comparison, closed: bool = True) -> str:
    """``+12.6 [+3.3, +21.9]; p 0.0078 → 0.051`` (points, 95% t interval, raw p → Holm)."""
    mean = f"{100 * c.across['mean']:+.1f}"
    interval = (f" [{100 * c.across['low']:+.1f}, {100 * c.across['high']:+.1f}]" if not math.isnan(c.across["low"])
                else f" ({c.across['n']} unit{'s' if c.across['n'] != 1 else ''}: no interval)")
    return f"{mean}{interval}; {_p_cells(c.across_test, closed)}"


def these_text(c: Comparison, closed: bool = True) -> str:
    """``0.78 [0.70, 0.85]; p 0.001 → 0.013`` (stratified bootstrap 95% interval, raw permutation p → Holm)."""
    return (f"{c.these['p']:.2f} [{c.these['low']:.2f}, {c.these['high']:.2f}]; "
            f"{_p_cells(c.these_test, closed)}")


def _p_cells(test: Question, closed: bool) -> str:
    if math.isnan(test.raw):
        return "no test"
    if not closed:
        return p_text(test.raw)
    return adjusted_text(test.raw, test.adjusted) if test.testable else f"{p_text(test.raw)}, not testable"


def not_testable(n: int, unit: str = "task") -> str:
    return f"not testable with {n} {unit}{'s' if n != 1 else ''}"


def verdict_text(c: Comparison) -> str:
    """The verdict, naming the question it answers (the module's rule)."""
    a_better, b_better = c.better
    across, these = question(ACROSS, c.unit), question(THESE, c.unit)
    if c.across_test.passes and c.direction(ACROSS):
        return f"{a_better if c.direction(ACROSS) > 0 else b_better} {across}"
    status = _across_status(c)
    if c.these_test.passes and c.direction(THESE):
        return (f"{a_better if c.direction(THESE) > 0 else b_better} on these {c.n_tasks} {c.unit}s "
                f"({across}: {status})")
    if not c.these_test.testable and not c.across_test.testable:
        return not_testable(c.n_tasks, c.unit) + (f" (no verdict rests on fewer than {MIN_TASKS})"
                                                  if c.n_tasks < MIN_TASKS else " in a family of this size")
    detectable = c.detectable_probability()
    on_these = (f"{these}: P beyond {0.5 - detectable:.2f}–{0.5 + detectable:.2f} detectable" if detectable is not None
                else f"{these}: {not_testable(c.n_tasks, c.unit)}")
    return f"not told apart ({across}: {status}; {on_these})"


def _across_status(c: Comparison) -> str:
    """The across question's result when it gave no verdict: not testable, or not told apart with what was
    detectable."""
    if not c.across_test.testable:
        return not_testable(c.n_tasks, c.unit)
    points = c.detectable_points()
    return "not told apart" + ("" if points is None else f", ±{100 * points:.1f} points detectable")


def write_report(report: Callable[[list, ComparisonFamily], str], records: list, unit: str = "task") -> str:
    """A report's text: written once to gather its comparisons, its family adjusted, then written again
    (``unit``: what its comparisons' units are called)."""
    family = ComparisonFamily(unit)
    report(records, family)
    family.close()
    return report(records, family)


def family_report(report: Callable[[list, ComparisonFamily], str]) -> Callable[[list], str]:
    """A study's report (``records -> text``) from one written against a family (``write_report``)."""
    @functools.wraps(report)
    def written(records: list) -> str:
        return write_report(report, records)
    return written


def family_rule(unit: str = "task") -> str:
    """The rule, said wherever a family's verdicts are shown."""
    across, these = question(ACROSS, unit), question(THESE, unit)
    return (f"Each comparison answers two questions. **{across.capitalize()}** (the {unit} the unit: a claim about "
            f"{unit}s like these): each {unit}'s seed mean, the differences paired over the {unit}s both have, with "
            f"a 95% Student-t interval and an exact sign-flip test. **{these.capitalize()}** (these {unit}s fixed, "
            f"seeds the replicates): the probability that a seed of A beats a seed of B, the {unit} the stratum, "
            "with a 95% stratified-bootstrap interval and a stratified permutation test. Each question's p values "
            "are adjusted together over the report's comparisons (Holm); raw → adjusted are printed. The verdict "
            f"says which question it answers: better {across} when that test's adjusted p is below {ALPHA} and its "
            f"interval clears 0; otherwise better on these k {unit}s when that test's adjusted p is below {ALPHA} "
            "and its interval clears 0.5; otherwise not told apart, with the smallest difference each test could "
            f"have told apart (at the most lenient level Holm allows it, the {unit}s' differences spread as "
            f"observed). A comparison that no outcome could pass (the sign-flip test over k {unit}s never goes below "
            f"2/2^k) is not testable and leaves its family; so is one over fewer than {MIN_TASKS} {unit}s.")


FAMILY_RULE = family_rule()
