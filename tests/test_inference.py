"""The inference layer (``leaderboard.inference``): two questions, one Holm
family per question over a report's comparisons, untestable designs left out,
what "not told apart" could have detected, and a report written twice."""

from __future__ import annotations

import numpy as np
import pytest

from lengthbench.leaderboard.inference import (
    ComparisonFamily,
    holm_thresholds,
    sign_flip_smallest_p,
    write_report,
)
from lengthbench.leaderboard.statistics import ImprovementNull, adjust_p_values, sign_flip_p_value, t_interval


def _seeds(k: int, shift: float, seed: int, spread: float = 0.2) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    a = {f"t{i}": list(0.4 + shift + spread * rng.standard_normal(3)) for i in range(k)}
    b = {f"t{i}": list(0.4 + spread * rng.standard_normal(3)) for i in range(k)}
    return a, b


def _closed(*pairs) -> ComparisonFamily:
    family = ComparisonFamily()
    for a, b in pairs:
        family.compare(a, b, ("A", "B"))
    family.close()
    return family


def test_each_questions_adjusted_p_is_holm_over_its_testable_comparisons():
    pairs = [_seeds(k, shift, seed) for seed, (k, shift) in enumerate([(8, 0.3), (9, 0.1), (7, 0.0), (4, 0.5),
                                                                       (10, 0.2)])]
    family = _closed(*pairs)
    across = [c.across_test for c in family.comparisons]
    assert [t.testable for t in across] == [True, True, True, False, True]  # 4 tasks: 2/2^4 > 0.05
    kept = [t for t in across if t.testable]
    assert [t.adjusted for t in kept] == pytest.approx(list(adjust_p_values([t.raw for t in kept], "holm")))
    these = [c.these_test for c in family.comparisons]
    assert all(t.testable for t in these)  # seeds within tasks: small p's are attainable with 4 tasks
    assert [t.adjusted for t in these] == pytest.approx(list(adjust_p_values([t.raw for t in these], "holm")))


def test_a_family_too_large_for_its_designs_leaves_none_testable_and_the_weakest_leave_first():
    """12 comparisons over 9 tasks (smallest p 2/512 each) pass Holm at best 12 x 0.0039 = 0.047; a 13th makes
    it 0.051 for all. One over 5 tasks can never pass and leaves first, so the twelve stay testable."""
    assert holm_thresholds([2 / 2 ** 9] * 13) == [0.0] * 13
    family = _closed(*[_seeds(9, 0.3, seed) for seed in range(12)], _seeds(5, 0.3, 99))
    assert [c.across_test.testable for c in family.comparisons] == [True] * 12 + [False]
    family = _closed(*[_seeds(9, 0.3, seed) for seed in range(13)])
    assert not any(c.across_test.testable for c in family.comparisons)
    row = family.row(*_seeds(9, 0.3, 0), ("A", "B"))
    assert "across tasks: not testable with 9 tasks" in row[3]


def test_a_raw_p_under_005_that_holm_lifts_over_it_decides_nothing():
    """Two comparisons over 8 tasks, each with a raw sign-flip p between 0.025 and 0.05: Holm makes both
    0.05 or more, so neither is better across tasks."""
    d = [0.3, 0.25, 0.2, 0.35, 0.28, 0.22, -0.04, -0.09]
    pairs = [({f"t{i}": [0.5 + x] for i, x in enumerate(d)}, {f"t{i}": [0.5] for i in range(8)}) for _ in range(2)]
    family = ComparisonFamily()
    for a, b in pairs:
        family.row(a, b, ("A", "B"))
    family.close()
    rows = [family.row(a, b, ("A", "B")) for a, b in pairs]
    for c, row in zip(family.comparisons, rows):
        assert 0.025 < c.across_test.raw < 0.05 <= c.across_test.adjusted
        assert "across tasks: not told apart" in row[3] and not row[3].endswith("better across tasks")


def test_the_thresholds_are_the_most_lenient_level_holm_allows():
    smallest = [0.001, 0.004, 0.03]
    for i, threshold in enumerate(holm_thresholds(smallest)):
        others = [p for j, p in enumerate(smallest) if j != i]
        assert adjust_p_values([threshold * 0.999, *others], "holm")[0] < 0.05
        assert adjust_p_values([threshold * 1.01, *others], "holm")[0] >= 0.05


def test_the_verdict_names_the_question_that_decided_it():
    strong = _seeds(10, 0.5, 1, spread=0.05)  # every task, every seed: A far ahead
    these_only = _seeds(5, 0.5, 2, spread=0.05)  # the same, over 5 tasks: across tasks cannot pass
    none = _seeds(10, 0.0, 3)
    family = ComparisonFamily()
    for pair in (strong, these_only, none):
        family.row(*pair, ("A", "B"))
    family.close()
    rows = [family.row(*pair, ("A", "B")) for pair in (strong, these_only, none)]
    assert rows[0][3] == "A better across tasks"
    assert rows[1][3] == "A better on these 5 tasks (across tasks: not testable with 5 tasks)"
    assert rows[2][3].startswith("not told apart (across tasks: not told apart, ±")
    assert "points detectable; on these tasks: P beyond" in rows[2][3]
    assert "→" in rows[0][1] and "→" in rows[0][2] and rows[1][1].endswith("not testable")


def test_the_detectable_difference_is_where_the_test_starts_to_pass():
    """The reported shift is the larger of the two directions' least passing shifts: the observed spread moved
    by it passes both ways; moved by a little less, it fails in the direction that needed it."""
    c = _closed(_seeds(10, 0.0, 3)).comparisons[0]
    shift, threshold = c.detectable_points(), c.across_test.threshold
    spread = c.differences - c.differences.mean()

    def passes(d, sign):
        low, high = t_interval(d, bounds=None)
        return sign_flip_p_value(d) <= threshold and (low > 0 if sign > 0 else high < 0)

    assert passes(spread + shift, 1) and passes(spread - shift, -1)
    assert not (passes(spread + 0.99 * shift, 1) and passes(spread - 0.99 * shift, -1))


def test_the_detectable_probability_is_the_permutation_tests_critical_value():
    pairs = [(np.array([0.1, 0.5, 0.9]), np.array([0.2, 0.4, 0.8])) for _ in range(4)]
    null = ImprovementNull(pairs)
    threshold = 0.05
    distance = null.detectable(threshold)
    reach = round(distance * null.n_tasks * null.scale)
    assert null.p(reach) <= threshold < null.p(reach - 1)
    assert null.smallest_p() == pytest.approx(2 * (1 / 20) ** 4)  # all A above all B in each task, or below: 1/20 a task
    assert ImprovementNull(pairs[:1]).detectable(0.05) is None  # one task of 3 seeds a side: p >= 0.1


def test_the_sign_flip_floor():
    assert sign_flip_smallest_p(5) == 0.0625 and sign_flip_smallest_p(6) == 2 / 64
    d = np.full(5, 0.3)
    assert sign_flip_p_value(d) == sign_flip_smallest_p(5)


def test_a_report_written_twice_must_ask_for_the_same_comparisons():
    calls = []

    def report(records, family):
        calls.append(family.closed)
        a, b = _seeds(8, 0.2 if not family.closed else 0.3, 4)  # the second writing asks for another comparison
        return " | ".join(family.row(a, b, ("A", "B")))

    with pytest.raises(RuntimeError, match="second writing"):
        write_report(report, [])
    assert calls == [False, True]

    def steady(records, family):
        return " | ".join(family.row(*_seeds(8, 0.3, 4), ("A", "B")))

    text = write_report(steady, [])
    assert "→" in text and text.endswith(("tasks", "detectable)", ")"))
