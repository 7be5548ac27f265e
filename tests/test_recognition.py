"""Recognition (FLaRe's framing): each language's membership test against a definition written apart from
it, its positives members and its negatives not, balanced labels, and the negatives FLaRe's recipe makes."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench.tasks import get_task
from lengthbench.tasks.recognition import EDIT_PROBABILITY

LANGUAGES = ("recognize_first", "recognize_parity", "recognize_even_pairs", "recognize_repeat_01",
             "recognize_majority", "recognize_dyck_2_3", "recognize_marked_reversal", "recognize_marked_copy",
             "recognize_unmarked_reversal")


def dyck_by_reduction(text: str) -> bool:
    """Dyck-(2, 3) the textbook way: erase innermost pairs until none is left, and no prefix opens a 4th level."""
    depth = 0
    for c in text:
        depth += 1 if c in "([" else -1
        if depth > 3 or depth < 0:
            return False
    while "()" in text or "[]" in text:
        text = text.replace("()", "").replace("[]", "")
    return text == ""


DEFINITIONS = {  # each language as a regular expression or a count over its written symbols
    "recognize_first": lambda s: re.fullmatch("1[01]*", s) is not None,
    "recognize_parity": lambda s: s.count("1") % 2 == 1,
    "recognize_even_pairs": lambda s: (s.count("ab") + s.count("ba")) % 2 == 0 if len(s) < 2 else s[0] == s[-1],
    "recognize_repeat_01": lambda s: re.fullmatch("(01)*", s) is not None,
    "recognize_majority": lambda s: s.count("1") > s.count("0"),
    "recognize_dyck_2_3": dyck_by_reduction,
    "recognize_marked_reversal": lambda s: s.count("#") == 1 and s.split("#")[0] == s.split("#")[1][::-1],
    "recognize_marked_copy": lambda s: s.count("#") == 1 and s.split("#")[0] == s.split("#")[1],
    "recognize_unmarked_reversal": lambda s: len(s) % 2 == 0 and s == s[::-1],
}


@pytest.mark.parametrize("name", LANGUAGES)
def test_membership_is_the_languages_definition_on_every_short_string(name):
    task = get_task(name)
    for n in range(0, 9):
        for string in itertools.product(range(len(task.alphabet)), repeat=n):
            text = "".join(task.alphabet[s] for s in string)
            assert task.member(list(string)) == DEFINITIONS[name](text), (name, text)


@pytest.mark.parametrize("name", LANGUAGES)
@settings(max_examples=20, deadline=None)
@given(length=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_positives_are_members_and_negatives_are_not(name, length, seed):
    task = get_task(name)
    if length < task.min_length:
        return
    rng = np.random.default_rng(seed)
    for _ in range(5):
        assert task.member(task.positive(rng, length)) and len(task.positive(rng, length)) == task.input_length(length)
        negative, edits = task.negative(rng, length)
        assert not task.member(negative) and len(negative) == task.input_length(length) and edits >= 0


@pytest.mark.parametrize("name", LANGUAGES)
def test_labels_are_a_fair_coin(name):
    task = get_task(name)
    answers = task.sample(np.random.default_rng(0), 6, 4000).outputs[:, 0]
    assert abs((answers == len(task.alphabet) + 1).mean() - 0.5) < 0.03 and task.answer_chance(6) == 0.5


def test_an_edited_negative_is_its_positive_with_that_many_replacements():
    """repeat_01 has one member per length: an edited negative differs from it at most at ``edits`` places, an
    odd number fewer when two replacements met at one place (a binary replacement flips a bit); about half the
    negatives are edited (FLaRe's perturbation probability, before rejection removes edits that undo themselves)."""
    task = get_task("recognize_repeat_01")
    rng = np.random.default_rng(0)
    edited = 0
    for _ in range(2000):
        negative, edits = task.negative(rng, 8)
        if edits:
            edited += 1
            distance = sum(a != b for a, b in zip(negative, [0, 1] * 8))
            assert 0 < distance <= edits and (edits - distance) % 2 == 0
    assert abs(edited / 2000 - EDIT_PROBABILITY) < 0.05


def test_dyck_positives_are_uniform_over_the_members_of_their_length():
    task = get_task("recognize_dyck_2_3")
    members = [s for s in itertools.product(range(4), repeat=6) if task.member(list(s))]
    rng = np.random.default_rng(0)
    counts = {}
    for _ in range(12000):
        key = tuple(task.positive(rng, 3))
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) == set(members)  # 40 strings of 3 pairs nested at most 3 deep
    share = np.array([counts[m] for m in members]) / 12000
    assert np.abs(share - 1 / len(members)).max() < 0.006  # 4 standard errors of one share
