"""Recognition (FLaRe's framing): each language's membership test against a definition written apart from
it, its positives members and its negatives not, balanced labels, and the negatives FLaRe's recipe makes."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torch

from lengthbench.benchmark.instances import evaluate_any
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import read_record
from lengthbench.benchmark.runner import execute_run
from lengthbench.tasks import get_task
from lengthbench.tasks.base import N_SPECIAL, every_string
from lengthbench.tasks.recognition import EDIT_PROBABILITY

LANGUAGES = ("recognize_first", "recognize_parity", "recognize_even_pairs", "recognize_repeat_01",
             "recognize_majority", "recognize_dyck_2_3", "recognize_marked_reversal", "recognize_marked_copy",
             "recognize_unmarked_reversal", "recognize_cycle_navigation", "recognize_modular_arithmetic",
             "recognize_stack_manipulation")
STRINGS_PER_LANGUAGE = 100_000  # the exhaustive checks stop at the length whose strings pass this


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


def cycle_navigation(text: str) -> bool:
    """Walk the moves on a 5-cycle from place 0; the last symbol names where they end."""
    return (re.fullmatch("[><=]*[0-4]", text) is not None
            and (text.count(">") - text.count("<")) % 5 == int(text[-1]))


def modular_arithmetic(text: str) -> bool:
    """Evaluate ``d op d ... = r`` left to right, reducing mod 5 after each operation."""
    if re.fullmatch(r"[0-4]([-+*][0-4])*=[0-4]", text) is None:
        return False
    value = int(text[0])
    for op, digit in zip(text[1:-2:2], text[2:-2:2]):
        value = eval(f"{value} {op} {digit}") % 5  # noqa: S307: only digits and + - * reach it
    return value == int(text[-1])


def stack_manipulation(text: str) -> bool:
    """Parse ``bits (PUSH b | POP)* # bits`` with a regular expression and replay the operations on a list."""
    match = re.fullmatch(r"([01]*)((?:PUSH[01]|POP)*)#([01]*)", text)
    if match is None:
        return False
    stack = list(match.group(1))
    for op in re.findall("PUSH[01]|POP", match.group(2)):
        if op == "POP" and not stack:
            return False
        stack.pop() if op == "POP" else stack.append(op[-1])
    return "".join(reversed(stack)) == match.group(3)


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
    "recognize_cycle_navigation": cycle_navigation,
    "recognize_modular_arithmetic": modular_arithmetic,
    "recognize_stack_manipulation": stack_manipulation,
}


def short_strings(task, budget=STRINGS_PER_LANGUAGE):
    """Every string over the task's alphabet, shortest first, while a length's strings stay within ``budget``."""
    k, n = len(task.alphabet), 0
    while k ** n <= budget:
        yield from itertools.product(range(k), repeat=n)
        n += 1


@pytest.mark.parametrize("name", LANGUAGES)
def test_membership_is_the_languages_definition_on_every_short_string(name):
    task = get_task(name)
    for string in short_strings(task):
        text = "".join(task.alphabet[s] for s in string)
        assert task.member(list(string)) == DEFINITIONS[name](text), (name, text)


@pytest.mark.parametrize("name", LANGUAGES)
def test_a_strings_distance_is_the_fewest_replacements_to_a_member_of_its_length(name):
    """Against every member of the length, by brute force: the least Hamming distance to one of them (a
    language whose distance is not measured gives 0 for members and -1 for the rest)."""
    task = get_task(name)
    measured = name != "recognize_stack_manipulation"
    for length in range(task.min_length, 12):
        width = task.input_length(length)
        if len(task.alphabet) ** width > 20_000:
            break
        strings = every_string(len(task.alphabet), width)
        members = strings[[task.member(list(s)) for s in strings.tolist()]]
        hamming = (strings[:, None, :] != members[None, :, :]).sum(-1).min(1) if len(members) else None
        expected = hamming if measured else np.where(hamming == 0, 0, -1)
        np.testing.assert_array_equal(task.distances(strings), expected, err_msg=f"{name} at length {length}")


def test_evaluation_reports_exact_match_by_distance_to_the_language():
    """A model that accepts everything is right on every member and wrong on every non-member, slice by slice;
    the slices' counts are the length's samples, and a task that slices nothing reports no slices."""
    task = get_task("recognize_dyck_2_3")
    accept = N_SPECIAL + len(task.alphabet) + 1

    def accept_all(tokens):
        return torch.nn.functional.one_hot(torch.full(tokens.shape, accept), task.vocab_size).float()

    rows = evaluate_any(accept_all, task.name, [3, 6], 400, 0, 1)
    for row in rows:
        slices = row["slices"]
        assert set(slices) == {"member", "distance 1", "distance 2", "distance 3+"}
        assert slices["member"]["exact_match"] == 1 and all(v["exact_match"] == 0 for k, v in slices.items()
                                                            if k != "member")
        assert sum(v["n"] for v in slices.values()) == row["n_samples"]
        assert row["exact_match"] == pytest.approx(slices["member"]["n"] / row["n_samples"], abs=1e-6)
    assert "slices" not in evaluate_any(accept_all, "parity_check", [3], 50, 0, 1)[0]


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


def test_a_runs_record_keeps_its_slices_and_a_record_whose_slices_miscount_is_refused(tmp_path):
    config = replace(get_preset("smoke").run_config("recognize_parity", "nope", 0), steps=3, eval_samples=32)
    record = execute_run(config, torch.device("cpu"))
    assert record.status == "ok" and all(sum(v["n"] for v in row["slices"].values()) == 32
                                         for row in record.per_length)
    path = tmp_path / f"{record.run_id}.json"
    path.write_text(json.dumps(record.to_json()))
    assert read_record(path).per_length == record.per_length
    record.per_length[0]["slices"]["member"]["n"] += 1
    path.write_text(json.dumps(record.to_json()))
    with pytest.raises(Exception, match="slices .* are not exact matches and counts of its samples"):
        read_record(path)
