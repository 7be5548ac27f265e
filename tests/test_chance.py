"""Chance levels (``leaderboard.chance``): the best input-ignoring predictor's
expected score under the task's distribution, exact where a task gives it,
else estimated on a sample that no run draws, chosen on one half and scored
on the other; the shipped table holds what the estimator computes."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from lengthbench.leaderboard import chance
from lengthbench.leaderboard.chance import TABLE, band_chance, length_chance, shipped_bands
from lengthbench.tasks import TASKS, get_task, make_batch

EXACT_TASKS = [name for name in TASKS.names() if get_task(name).answer_chance(3) is not None]


def _frequency_of_mode(name: str, length: int, n: int, seed: int) -> float:
    """The most frequent answer's share in a large sample: an independent check of a closed form."""
    batch = make_batch(get_task(name), np.random.default_rng(seed), np.full(n, length))
    answers = Counter(t[s].tobytes() for t, s in zip(batch.targets, batch.scored))
    return answers.most_common(1)[0][1] / n


def test_the_closed_forms_name_the_tasks_that_have_them():
    assert {"even_pairs", "parity_check", "cycle_navigation", "modular_arithmetic", "word_problem_s5",
            "word_problem_s3", "flip_flop"} <= set(EXACT_TASKS)  # a task added since may bring its own


@pytest.mark.parametrize("name", EXACT_TASKS)
@pytest.mark.parametrize("length", [1, 2, 3, 5, 8])
def test_each_closed_form_is_the_distributions_own(name, length):
    """Against the mode's share in 40,000 examples (the mode of a sample overshoots a flat distribution's
    maximum by a little: the tolerance allows 4 standard errors and that overshoot)."""
    task = get_task(name)
    if length < task.min_length:
        return
    exact = task.answer_chance(length)
    sampled = _frequency_of_mode(name, length, 40_000, seed=length)
    assert abs(sampled - exact) < 4 * math.sqrt(exact * (1 - exact) / 40_000) + 0.006, (name, length, exact, sampled)


def test_the_distributions_chance_not_the_samples_mode():
    """S5: 1/120 at every length (the test band's 256 examples a length had put it at 2.6%); parity 1/2."""
    assert band_chance("word_problem_s5", (21, 25, 64), 256) == pytest.approx(1 / 120, abs=1e-6)
    assert band_chance("parity_check", (21, 64), 256) == 0.5
    assert band_chance("word_problem_s3", (21, 64), 256, "token_accuracy") == pytest.approx(1 / 6, abs=1e-6)


def test_cycle_navigations_chance_falls_to_a_fifth():
    position = [get_task("cycle_navigation").answer_chance(n) for n in (1, 2, 5, 30)]
    assert position[0] == pytest.approx(1 / 3) and position[1] == pytest.approx(3 / 9)
    assert position[0] >= position[2] > position[3] > 0.2 and position[3] == pytest.approx(0.2, abs=1e-4)


def test_the_estimate_chooses_on_one_half_and_scores_on_the_other(monkeypatch):
    """A one-symbol answer's token accuracy is its exact match; a long answer's exact match is about 0, its
    token accuracy the per-position mode's share; the two halves are different draws."""
    exact, tokens = chance._estimate("modular_arithmetic_brackets", 21, 4000)
    assert exact == tokens and 0.2 < exact < 0.4
    exact, tokens = chance._estimate("reverse_string", 21, 4000)
    assert exact == 0 and tokens == pytest.approx(0.5, abs=0.02)
    first, second = (chance._answers("parity_check", 21, 50, half) for half in (0, 1))
    assert [a.tolist() for a in first] != [a.tolist() for a in second]


def test_a_sample_mode_read_on_its_own_examples_would_overstate_a_flat_distribution():
    """What this module replaces: S5's mode share over 256 examples sits far above 1/120."""
    assert _frequency_of_mode("word_problem_s5", 21, 256, seed=0) > 2 / 120


def test_the_shipped_table_covers_every_shipped_band_and_is_what_the_estimator_gives():
    table = json.loads(TABLE.read_text())
    for label, length, n in shipped_bands():
        task, fmt = label.partition("+")[::2]
        if not fmt and get_task(task).answer_chance(length) is not None and get_task(task).output_rule == "1":
            continue
        assert chance._key(label, length, n) in table, (label, length, n)
    for key in ("parity_check+scratchpad|task 1, format 1|21|25600", "copy|task 1, format 1|64|25600"):
        label, _, length, n = key.split("|")
        assert table[key] == [round(v, 6) for v in chance._estimate(label, int(length), int(n))], key


def test_a_length_outside_the_table_is_estimated_not_refused():
    length_chance.cache_clear()
    exact, tokens = length_chance("copy", 7, 2000)
    assert exact == 0 and 0.2 < tokens < 0.3
