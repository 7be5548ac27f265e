"""Protocol v2 (``horizon``): log-spaced test lengths, the fit judged on the
top of the trained range, checks that only log, cells refused when their
encoding cannot place the longest evaluated sequence, per-task parameter matching."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench.benchmark.applicable import not_applicable
from lengthbench.benchmark.config import Cut
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.tools.matching import MATCH_TOLERANCE, mismatches, parameters
from lengthbench.benchmark.presets import COPY_TASKS, get_preset
from lengthbench.benchmark.records import summarize
from lengthbench.benchmark.runner import execute_run
from lengthbench.benchmark.train import train_run
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.tasks import get_task, make_batch

CPU = torch.device("cpu")


def _smoke(**settings):
    return replace(get_preset("smoke").run_config("copy", "rope", 0), **settings)


@settings(max_examples=60, deadline=None)
@given(train=st.integers(1, 30), gap=st.integers(0, 5), factor=st.integers(2, 12), points=st.integers(2, 12))
def test_log_spaced_test_lengths_span_the_band_evenly_in_log_length(train, gap, factor, points):
    config = _smoke(train_length=train, validation_length=train + gap if gap else 0,
                    test_length=(train + gap) * factor, test_points=points)
    lengths = config.log_spaced_test_lengths()
    lo, hi = config.test_start, config.test_length
    assert lengths[0] == lo and lengths[-1] == hi and lengths == sorted(set(lengths))
    assert len(lengths) == min(points, hi - lo + 1)
    if len(lengths) == points and points > 2:  # each within rounding of its ideal log-spaced place
        ideal = [lo * (hi / lo) ** (i / (points - 1)) for i in range(points)]
        assert all(abs(n - want) <= 0.5 + i for i, (n, want) in enumerate(zip(lengths, ideal)))
    evaluated = config.eval_lengths()
    assert [n for n in evaluated if config.split(n) == "ood"] == lengths
    assert [n for n in evaluated if config.split(n) != "ood"] == list(range(1, config.test_start))


def test_the_horizon_preset_tests_to_four_times_at_eight_lengths():
    config = get_preset("horizon-pilot").run_config("reverse_string", "rope", 100)
    assert config.log_spaced_test_lengths() == [21, 25, 29, 34, 40, 47, 55, 64]
    assert config.fit_lengths() == [13, 14, 15, 16]
    ratios = [b / a for a, b in zip([21, 25, 29, 34, 40, 47, 55], [25, 29, 34, 40, 47, 55, 64])]
    assert max(ratios) / min(ratios) < 1.15


def _rows(config, exact):
    return [{"length": n, "status": "ok", "exact_match": exact.get(n, 1.0), "token_accuracy": exact.get(n, 1.0),
             "n_samples": 8} for n in config.eval_lengths()]


def test_the_fit_is_judged_on_every_length_of_the_top_quarter():
    """Mean in-distribution exact match 0.99, but 0.8 at length 16: not fit
    under fit_from (the first protocol's mean would have called it fit)."""
    config = replace(get_preset("horizon-pilot").run_config("copy", "rope", 100), fit_check_every=0)
    summary = summarize(_rows(config, {16: 0.8}), config)
    assert summary["fit_exact_match"] == 0.8 and summary["id_exact_match"] > 0.9
    assert "fit_exact_match" not in summarize(_rows(_smoke(), {}), _smoke())
    assert summarize(_rows(config, {12: 0.1}), config)["fit_exact_match"] == 1.0  # below the quarter: not judged


def test_the_board_counts_a_seed_fit_by_its_fit_lengths(tmp_path):
    from lengthbench.benchmark.records import RunRecord

    config = replace(get_preset("horizon-pilot").run_config("copy", "rope", 100), fit_check_every=0)
    records = []
    for seed, low in ((100, 0.8), (101, 0.95)):
        cell = replace(config, seed=seed)
        record = RunRecord.start(cell, CPU)
        record.status, record.per_length = "ok", _rows(cell, {16: low})
        record.summary = summarize(record.per_length, cell)
        records.append(record)
    board = leaderboard_frame(records)
    assert int(board.n_fit.iloc[0]) == 1 and board.fit_status.iloc[0] == "partly_fit"


def test_checks_without_patience_are_logged_and_never_stop_the_run():
    config = _smoke(steps=30, fit_check_every=10, fit_patience=0, fit_threshold=0.5)
    model = config.build_model(get_task("copy").vocab_size)
    result = train_run(model, get_task("copy"), config, CPU, fit_check=lambda: 1.0)
    assert (result.stopped, result.steps_done) == ("max_steps", 30)
    assert result.fit_checks == [[10, 1.0], [20, 1.0]]


def test_an_encoding_that_cannot_place_the_longest_sequence_refuses_its_cell():
    """A randomized range shorter than the longest evaluated sequence: the
    cell is n/a with the reason, never trained and scored 0 at long lengths."""
    config = replace(get_preset("smoke").run_config("copy", "randomized-rope", 0), encoding_params={"max_len": 16})
    reason = not_applicable(config)
    assert "randomized max_len 16 < sequence length 22" in reason and "task length 10" in reason
    record = execute_run(config, CPU)
    assert record.status == "not_applicable" and record.per_length is None
    assert not_applicable(replace(config, encoding_params={"max_len": 22})) is None


def test_no_horizon_cell_is_refused_for_its_range():
    """Every randomized range and position table of the horizon protocol covers every evaluated sequence."""
    preset = get_preset("horizon-pilot").with_grid(encodings=[e for e in get_preset("standard").encodings])
    for task in preset.tasks:
        for encoding in preset.encodings:
            reason = not_applicable(preset.run_config(task, encoding, 100))
            assert reason is None or "cannot place" not in reason, reason


def test_the_horizon_coupled_table_is_the_smallest_that_holds_every_evaluated_id():
    """Cho et al.'s rule: a larger table spreads the training offsets over rows
    no test reads, so the low rows every test starts at are trained less."""
    configs = [c for c in grid_configs(get_preset("horizon"))
               if c.encoding == "coupled" and c.seed == 0 and get_task(c.task).has_coupled_ids]
    largest = 0
    for config in configs:
        length = max(config.eval_lengths())
        batch = make_batch(get_task(config.task), np.random.default_rng(0), np.array([length]))
        largest = max(largest, int(batch.position_ids.max()))
    assert len(configs) >= 7
    assert {c.encoding_params["max_positions"] for c in configs} == {largest + 1}


def test_the_horizon_grid_leaves_out_its_cuts_and_trains_every_method_to_one_budget():
    preset = get_preset("horizon")
    configs = grid_configs(preset)
    cells = {(c.task, c.method) for c in configs}
    assert not any(task == "addition-index-hints" for task, _ in cells)
    assert {m for t, m in cells if t == "multiplication"} == {
        "transformer/coupled", "transformer/abacus", "transformer/nope", "transformer/rope"}
    assert {t for t, m in cells if m == "ssm"} == set(COPY_TASKS)
    assert not any(m == "transformer/randomized-fire" for _, m in cells)
    assert ("copy", "transformer/randomized-rope") in cells and ("parity_check", "lstm") in cells
    assert "Chomsky tasks" in preset.cut_reason("copy", "lstm") and preset.cut_reason("copy", "rnn") is not None
    assert preset.cut_reason("parity_check", "lstm") is None
    # one budget for every method, never stopped at fit, 3 reported seeds (none of the pilot's)
    assert {(c.steps, c.fit_patience) for c in configs} == {(4000, 0)}
    assert {c.seed for c in configs} == {0, 1, 2}
    assert len(configs) == 3 * len(cells)


def test_the_views_of_horizon_are_made_of_its_cells():
    """horizon-suite, -chomsky, -nope, -coupling, -copying: every cell a cell of horizon (same run id), its cuts
    included, so each view reads its records out of the reference's folder."""
    horizon = {c.run_id for c in grid_configs(get_preset("horizon"))}
    for view in ("horizon-suite", "horizon-chomsky", "horizon-nope", "horizon-coupling", "horizon-copying"):
        ids = {c.run_id for c in grid_configs(get_preset(view))}
        assert ids and ids <= horizon, view
    coupling = {c.method for c in grid_configs(get_preset("horizon-coupling")) if c.task == "multiplication"}
    assert coupling == {"transformer/coupled", "transformer/abacus", "transformer/nope", "transformer/rope"}


def test_a_cut_naming_an_unknown_task_or_method_is_refused():
    """A misspelt cut would cut nothing, silently: the grid refuses it, naming the valid choices."""
    for cut in (Cut("x", methods=("transformer/ropee",)), Cut("x", methods=("lstn",)),
                Cut("x", methods=("lstm",), tasks=("copyy",))):
        with pytest.raises(InputError, match="ropee|lstn|copyy"):
            grid_configs(replace(get_preset("smoke"), cuts=(cut,)))


def test_cell_settings_override_the_family_for_one_task():
    preset = get_preset("full")
    changed = replace(preset, cell_settings={"copy": {"lstm": {"model": {"d_model": 40}, "steps": 7}}})
    assert changed.run_config("copy", "", 0, "lstm").model.d_model == 40
    assert changed.run_config("copy", "", 0, "lstm").steps == 7
    assert changed.run_config("parity_check", "", 0, "lstm") == preset.run_config("parity_check", "", 0, "lstm")
    assert changed.run_config("copy", "", 0, "rnn") == preset.run_config("copy", "", 0, "rnn")


def test_horizon_families_are_matched_in_parameters_on_every_task():
    assert mismatches(get_preset("horizon-pilot")) == []
    # the first protocol's one width per family is not (index hints: 527 tokens)
    assert any("addition-index-hints/rnn" in m for m in mismatches(get_preset("full")))


def test_the_looped_transformer_is_matched_by_width_at_its_own_depth():
    """One looped layer at width 104 against two fixed-depth layers of 64, on every task of its preset;
    the matching tool searches each family's width at that family's own settings (its one layer)."""
    from lengthbench.benchmark.tools.matching import matched_widths

    preset = get_preset("horizon-looped")
    assert mismatches(preset) == []
    assert {w["looped"] for w in matched_widths(preset).values()} == {104}


def test_a_mismatch_is_reported_with_its_size():
    preset = get_preset("horizon-pilot")
    wide = replace(preset, families=("transformer", "lstm"), tasks=("copy",),
                   cell_settings={"copy": {"lstm": {"model": {"d_model": 200}}}})
    (problem,) = mismatches(wide)
    target = parameters("transformer", "copy", preset.model, "nope")
    assert problem.startswith("copy/lstm:") and str(target) in problem
    assert MATCH_TOLERANCE == 0.10 and not math.isclose(parameters("lstm", "copy", replace(preset.model, d_model=200)),
                                                         target, rel_tol=MATCH_TOLERANCE)


@pytest.mark.parametrize("settings, message", [
    (dict(test_points=1), "test_points 1 must be 0"),
    (dict(test_points=-3), "test_points -3"),
    (dict(fit_from=6), "fit_from 6 must be 0 .* or a trained length, 1..5"),
    (dict(fit_check_every=-5), "fit_check_every -5"),
])
def test_bad_v2_settings_are_refused_by_name(settings, message):
    preset = get_preset("smoke")
    with pytest.raises(InputError, match=message):
        replace(preset, settings={**preset.settings, **settings}).run_config("copy", "rope", 0)


def _pilot_record(method_encoding, checks, final, steps=2000, every=250):
    from lengthbench.benchmark.records import RunRecord

    config = replace(get_preset("horizon-pilot").run_config("copy", method_encoding, 100), steps=steps,
                     fit_check_every=every)
    record = RunRecord.start(config, CPU)
    record.status, record.per_length = "ok", _rows(config, {16: final})
    record.summary = summarize(record.per_length, config)
    record.training = {"steps_done": steps, "fit_checks": [[s, v] for s, v in checks]}
    return record


def test_the_budget_is_the_fit_plateau_with_its_margin_from_the_pilot():
    """Runs first fit (to stay) at 500 and 1000, one never: as many fit from
    1000 on as at the ceiling, so the budget is 1000 x 1.25 on the check grid.
    A run that fit once and fell back does not count before it stays."""
    from lengthbench.benchmark.tools.budget import budget_table, pilot_budgets

    grid = range(250, 2000, 250)
    records = [
        _pilot_record("nope", [(s, 0.95 if s >= 500 and s != 750 else 0.5) for s in grid], 0.97),
        _pilot_record("rope", [(s, 0.95 if s >= 1000 else 0.3) for s in grid], 0.96),
        _pilot_record("alibi", [(s, 0.2) for s in grid], 0.4),
    ]
    (budget,) = pilot_budgets(records)
    assert (budget.fit_at_ceiling, budget.plateau, budget.budget) == (2, 1000, 1250)
    assert budget.first_fit == {"transformer/nope": 500, "transformer/rope": 1000, "transformer/alibi": None}
    assert "| copy | 3 | 2 of 3 at 2000 | 1000 | 1250 |" in budget_table([budget])
    late = [_pilot_record("nope", [(s, 0.95 if s >= 1750 else 0.5) for s in grid], 0.97)]
    assert pilot_budgets(late)[0].budget == 2000  # 1750 x 1.25, capped at the ceiling
    (unfit,) = pilot_budgets([records[2]])  # no pilot run fit: no plateau, the whole ceiling
    assert (unfit.plateau, unfit.budget) == (None, 2000) and "| none fit | 2000 |" in budget_table([unfit])
    with pytest.raises(InputError, match="no finished pilot run"):
        pilot_budgets([replace(records[0], status="error")])


def test_interquartile_mean_and_log_length_area_by_hand():
    from lengthbench.leaderboard.statistics import interquartile_mean, log_length_area

    assert interquartile_mean([1, 2, 3, 4]) == 2.5 and interquartile_mean([5, 1, 4, 2, 3]) == 3.0
    assert interquartile_mean([0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1]) == 0.5  # the outlying seeds dropped
    assert interquartile_mean([1, 2, 3, 4, 100, 200, 300, 400]) == 76.75  # exactly the middle four
    assert math.isnan(interquartile_mean([1, 2, 3]))
    assert log_length_area([21, 64], [1, 1]) == 1.0 and log_length_area([21, 64], [1, 0]) == 0.5
    # each doubling weighs the same: solving 16..32 of 16..64 is half the area
    assert log_length_area([16, 32, 64], [1, 1, 0]) == pytest.approx(0.75)
    assert log_length_area([64, 16, 32], [0, 1, 1]) == pytest.approx(0.75) and log_length_area([40], [0.3]) == 0.3


def test_probability_of_improvement_covers_a_tie_and_tells_a_real_difference():
    """Simulated tasks and seeds: with A and B drawn alike, the 95% interval
    holds 0.5 in nearly every repetition; A better by 0.2 on every task is told apart."""
    import numpy as np

    from lengthbench.leaderboard.statistics import probability_of_improvement

    rng = np.random.default_rng(0)
    covered = 0
    for rep in range(100):
        a = {t: rng.normal(0.5, 0.1, 3) for t in range(12)}
        b = {t: rng.normal(0.5, 0.1, 3) for t in range(12)}
        result = probability_of_improvement(a, b, seed=rep)
        covered += result["low"] <= 0.5 <= result["high"]
    assert covered >= 88  # nominal 95% (93 here)
    better = probability_of_improvement({t: [0.9, 0.8, 0.85] for t in range(5)}, {t: [0.6, 0.7, 0.65] for t in range(5)})
    assert (better["p"], better["n_tasks"]) == (1.0, 5) and better["p_value"] < 0.001
    tie = probability_of_improvement({t: [0.5, 0.5] for t in "xyz"}, {**{t: [0.5, 0.5] for t in "xyz"}, "w": [1.0]})
    assert (tie["p"], tie["n_tasks"], tie["p_value"]) == (0.5, 3, 1.0)


def _p_value_over_every_relabelling(pairs) -> float:
    """The stratified permutation p by brute force: every split of every task's pooled seeds, every
    combination of them across tasks, each combination's mean P(A > B) against the observed one's."""
    import itertools

    def under_every_split(a, b):
        pooled = np.concatenate([a, b])
        for chosen in itertools.combinations(range(pooled.size), a.size):
            mask = np.isin(np.arange(pooled.size), chosen)
            x, y = pooled[mask], pooled[~mask]
            yield ((x[:, None] > y[None]) + 0.5 * (x[:, None] == y[None])).mean()

    observed = np.mean([next(iter(under_every_split(a, b))) for a, b in pairs])  # the first split is the observed
    null = [np.mean(v) for v in itertools.product(*(list(under_every_split(a, b)) for a, b in pairs))]
    return float(np.mean([abs(v - 0.5) >= abs(observed - 0.5) - 1e-12 for v in null]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 3), min_size=1, max_size=3),
                          st.lists(st.integers(0, 3), min_size=1, max_size=3)), min_size=1, max_size=4))
def test_the_permutation_p_is_exact_whatever_each_task_s_seed_counts(tasks):
    """Tasks with different seed counts put the sum of their statistics on a fine common grid; the test sums
    them in two halves on grids only as fine as their values need and meets the halves (a pooled comparison
    went from minutes to seconds): every such case still gives brute force's p."""
    from lengthbench.leaderboard.statistics import improvement_p_value

    pairs = [(np.array(a) / 3, np.array(b) / 3) for a, b in tasks]
    assert improvement_p_value(pairs) == pytest.approx(_p_value_over_every_relabelling(pairs), abs=1e-9)


def test_a_probability_of_improvement_needs_its_permutation_test_too():
    """With 3 seeds a side on one task, every A seed above every B seed gives a bootstrap interval of one point
    ([1, 1]) but happens by chance 2 times in 20. On three such tasks p is 2/20^3. The exact stratified null
    matches brute force over every relabelling (and Mann-Whitney's exact test on one task, with more seeds than
    are enumerated); drawn alike, A and B reach p < 0.05 at most about 5% of the time."""
    import numpy as np
    from scipy import stats

    from lengthbench.leaderboard.statistics import improvement_p_value, probability_of_improvement

    one = probability_of_improvement({"x": [0.9, 0.8, 0.85]}, {"x": [0.1, 0.2, 0.3]})
    assert (one["low"], one["high"], one["p_value"]) == (1.0, 1.0, pytest.approx(0.1))
    three = probability_of_improvement({t: [0.9, 0.8, 0.85] for t in range(3)}, {t: [0.1, 0.2, 0.3] for t in range(3)})
    assert three["p_value"] == pytest.approx(2 / 20**3)
    edge = probability_of_improvement({0: [0, 0, 1], 1: [1, 1]}, {0: [0, 0, 0], 1: [0.5, 0.5, 0]})
    assert edge["p_value"] == 0.05  # exactly 0.05, not a float below it
    summed = probability_of_improvement({0: [0.5, 0.5], 1: [1, 0.5, 0], 2: [0, 0.5]},
                                        {0: [1, 1], 1: [0.5, 1, 0.5], 2: [0.5, 1, 0.5]})
    assert summed["p_value"] == 0.05  # its float sum is 0.0499...

    rng = np.random.default_rng(1)
    pairs = [(rng.integers(0, 4, 3) / 4, rng.integers(0, 4, n) / 4) for n in (3, 2, 4)]  # ties included
    assert improvement_p_value(pairs) == pytest.approx(_p_value_over_every_relabelling(pairs))

    a, b = rng.normal(0, 1, 10), rng.normal(0.8, 1, 10)  # 184756 splits: sampled
    assert improvement_p_value([(a, b)]) == pytest.approx(stats.mannwhitneyu(a, b, method="exact").pvalue, abs=0.02)

    told = sum(probability_of_improvement({t: rng.normal(0.5, 0.1, 3) for t in range(4)},
                                          {t: rng.normal(0.5, 0.1, 3) for t in range(4)}, seed=rep)["p_value"] < 0.05
               for rep in range(200))
    assert told <= 20  # nominal 5% of 200 = 10


def test_no_verdict_rests_on_fewer_than_three_tasks_and_no_difference_interval_is_clipped():
    """Two tasks where A beats B by 80 points with every seed: P's permutation p is 0.01, yet the rule
    withholds the verdict and says why; three tasks decide (on these tasks). Strata finer than tasks (a task and
    a base) count the tasks they span. A difference's t interval runs past +-100 points where the data put it
    there, and over 2 units is not given."""
    from lengthbench.leaderboard.inference import ComparisonFamily, across_text

    a, b = {t: [0.9, 0.95, 0.92] for t in range(3)}, {t: [0.1, 0.12, 0.15] for t in range(3)}
    by_base = {(t, base): a[t] for t in (0, 1) for base in ("rope", "alibi")}
    wide_a, wide_b = ({t: [v] for t, v in enumerate(values)} for values in ([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]))
    cases = [({t: a[t] for t in (0, 1)}, {t: b[t] for t in (0, 1)}, None), (a, b, None),
             (by_base, {k: b[k[0]] for k in by_base}, 2), (wide_a, wide_b, None),
             ({0: [0.9], 1: [0.8]}, {0: [0.1], 1: [0.2]}, None)]
    family = ComparisonFamily()
    for x, y, tasks in cases:
        family.compare(x, y, ("A", "B"), tasks)
    family.close()
    rows = [family.row(x, y, ("A", "B"), tasks) for x, y, tasks in cases]
    two = family.comparisons[0]
    assert two.these_test.raw < 0.05 and rows[0][3] == "not testable with 2 tasks (no verdict rests on fewer than 3)"
    assert rows[1][3] == "A better on these 3 tasks (across tasks: not testable with 3 tasks)"
    assert rows[2][3].startswith("not testable with 2 tasks")
    wide = family.comparisons[3]  # differences 1, -1, 1, 0
    assert wide.across["low"] < -1.0 and wide.across["high"] > 1.0 and "[-" in across_text(wide)
    assert "(2 units: no interval)" in rows[4][1]


def test_a_paired_difference_needs_its_sign_flip_test_too():
    """Differences that all agree give a t interval of zero width; the sign-flip test gives them p = 2/2^n, so
    2 to 5 units never decide (not testable) and 6 do. Its p matches brute force over every sign pattern (ties
    included) and scipy's paired permutation test; sampled beyond 16 units; drawn alike, A and B reach p < 0.05
    at most about 5% of the time."""
    import itertools

    import numpy as np
    from scipy import stats

    from lengthbench.leaderboard.inference import ComparisonFamily
    from lengthbench.leaderboard.statistics import sign_flip_p_value, t_interval

    for n in (3, 5):
        d = np.ones(n)
        assert t_interval(d, bounds=None) == (1.0, 1.0)  # the t interval alone would say "certain"
        assert sign_flip_p_value(d) == 2 / 2**n
    assert sign_flip_p_value(np.zeros(6)) == 1.0

    def verdict(a, b):
        family = ComparisonFamily()
        args = ({t: [x] for t, x in enumerate(a)}, {t: [y] for t, y in enumerate(b)}, ("A", "B"))
        family.compare(*args)
        family.close()
        return family.row(*args)[3]

    assert verdict([1.0] * 5, [0.0] * 5).startswith("not testable with 5 tasks")
    assert verdict([1.0] * 6, [0.0] * 6) == "A better across tasks"
    assert verdict([0.0] * 6, [0.3] * 6) == "B better across tasks"

    rng = np.random.default_rng(3)
    d = rng.integers(-2, 4, 9) / 4  # ties and zeros included
    observed = abs(d.sum())
    brute = np.mean([abs(np.dot(s, d)) >= observed - 1e-12 for s in itertools.product((-1, 1), repeat=d.size)])
    assert sign_flip_p_value(d) == pytest.approx(brute)
    x = rng.normal(0.3, 1, 8)
    scipy_p = stats.permutation_test((x,), np.mean, permutation_type="samples", n_resamples=10**6).pvalue
    assert sign_flip_p_value(x) == pytest.approx(scipy_p)
    y = rng.normal(0.4, 1, 30)  # 2^30 patterns: sampled
    assert sign_flip_p_value(y) == pytest.approx(stats.ttest_1samp(y, 0).pvalue, abs=0.02)

    told = sum(sign_flip_p_value(rng.normal(0.5, 0.1, 8) - rng.normal(0.5, 0.1, 8)) < 0.05 for _ in range(400))
    assert told <= 40  # nominal 5% of 400 = 20


def test_compare_tests_two_cells_without_spread_exactly():
    """Neither side varies: Welch's t is undefined; the exact permutation test over the pooled seeds gives
    p = 2/20 for 3 seeds a side (brute force agrees, for unequal sides too), and there is no interval."""
    import itertools

    import numpy as np

    from lengthbench.leaderboard.statistics import welch

    def brute(n_a, n_b):
        pooled = np.array([0.0] * n_a + [1.0] * n_b)
        splits = [np.isin(np.arange(n_a + n_b), c) for c in itertools.combinations(range(n_a + n_b), n_a)]
        return np.mean([abs(pooled[m].mean() - pooled[~m].mean()) >= 1 - 1e-12 for m in splits])

    for n_a, n_b in ((3, 3), (2, 3), (4, 2), (5, 5)):
        test = welch(0.0, 0.0, n_a, 1.0, 0.0, n_b)
        assert test["p_value"] == pytest.approx(brute(n_a, n_b))
        assert math.isnan(test["ci_low"]) and math.isnan(test["ci_high"])
    assert welch(0.0, 0.0, 3, 1.0, 0.0, 3)["p_value"] == pytest.approx(0.1)
    assert welch(0.4, 0.0, 3, 0.4, 0.0, 3)["p_value"] == 1.0


def test_the_board_reports_the_horizon_per_cell():
    """Two seeds trained 1..16: one solves every length to 40 then fails, the
    other fails from 21: half the seeds reach 2x (32), none 4x (64); the
    area is each seed's over log length, averaged; no IQM under 4 seeds."""
    from lengthbench.benchmark.records import RunRecord
    from lengthbench.leaderboard.statistics import log_length_area

    config = replace(get_preset("horizon-pilot").run_config("parity_check", "rope", 100), fit_check_every=0)
    test = config.log_spaced_test_lengths()
    records = []
    for seed, solved_to in ((100, 40), (101, 20)):
        cell = replace(config, seed=seed)
        record = RunRecord.start(cell, CPU)
        record.status = "ok"
        record.per_length = _rows(cell, {n: 0.0 for n in cell.eval_lengths() if n > solved_to})
        record.summary = summarize(record.per_length, cell)
        records.append(record)
    row = leaderboard_frame(records).iloc[0]
    assert row.frac_seeds_reach_2x_exact_match == 0.5 and row.frac_seeds_reach_4x_exact_match == 0.0
    first = log_length_area(test, [1.0 if n <= 40 else 0.0 for n in test])
    assert row.ood_exact_match_area == pytest.approx(first / 2)
    diverged = RunRecord.start(replace(config, seed=102), CPU)
    diverged.status = "diverged"  # a failed seed scores 0 everywhere: in the area and the reach too
    row = leaderboard_frame([*records, diverged]).iloc[0]
    assert row.ood_exact_match_area == pytest.approx(first / 3) and row.frac_seeds_reach_2x_exact_match == 1 / 3
    assert math.isnan(row.ood_exact_match_iqm)
    assert row.chance_exact_match == 0.5  # parity: one answer in two, exactly
    short = [replace(records[0], config=replace(config, test_length=30, test_points=0))]
    assert math.isnan(leaderboard_frame(short).iloc[0].frac_seeds_reach_2x_exact_match)  # 2x not tested


def test_per_token_chance_is_the_most_probable_token_at_each_answer_position():
    """A one-token answer: the same as exact match's chance. A long binary answer: no answer repeats, but each
    position's majority bit is right about half the time. bucket_sort's sorted answers: far more (its early
    positions are mostly the smallest symbol). (The distributions' own chance: tests/test_chance.py.)"""
    from lengthbench.leaderboard.chance import band_chance

    assert band_chance("parity_check", (21, 64), 256, "token_accuracy") == band_chance("parity_check", (21, 64), 256)
    assert band_chance("reverse_string", (21, 64), 256) < 0.01
    assert 0.49 <= band_chance("reverse_string", (21, 64), 256, "token_accuracy") < 0.51
    assert band_chance("bucket_sort", (21, 64), 256, "token_accuracy") > 0.6


@pytest.mark.parametrize("module, argv, needle", [
    ("budget", ["--results", "/no/such/folder"], "is not a folder"),
    ("matching", ["--preset", "no-such-preset"], "unknown preset 'no-such-preset'; valid choices"),
])
def test_the_protocol_tools_refuse_bad_input_in_one_line(module, argv, needle, capsys, tmp_path):
    import importlib

    main = importlib.import_module(f"lengthbench.benchmark.tools.{module}").main
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("lengthbench: error:") and needle in err
    assert len(err.strip().splitlines()) == 1
    if module == "budget":  # a folder without pilot runs: said in one line too
        with pytest.raises(SystemExit):
            main(["--results", str(tmp_path)])
        assert "no finished pilot run" in capsys.readouterr().err
