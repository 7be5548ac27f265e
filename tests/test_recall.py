"""Multi-query associative recall (``mqar``): the structure of every instance, its training targets, and its
statistics against Zoology's generator (``zoology/data/multiquery_ar.py``), restated below from its source
since the package does not install from an index."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench.tasks import IGNORE, get_task, make_batch
from lengthbench.tasks.base import N_SPECIAL
from lengthbench.tasks.recall import KEYS, VALUES

TASK = get_task("mqar")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 64), seed=st.integers(0, 2**32 - 1))
def test_every_instance_stores_distinct_pairs_and_queries_each_key_once(n, seed):
    sample = TASK.sample(np.random.default_rng(seed), n, 4)
    assert sample.inputs.shape == (4, 4 * n - 1) and sample.outputs.shape == (4, 1)
    for x, answer, targets in zip(sample.inputs, sample.outputs, sample.input_targets):
        keys, values, queries = x[0:2 * n:2], x[1:2 * n:2], x[2 * n::2]
        assert len(set(keys)) == n and keys.max() < KEYS  # distinct keys from the key half
        assert len(set(values)) == n and values.min() >= KEYS and values.max() < KEYS + VALUES
        assert sorted(queries) == sorted(keys)  # every key asked once
        assert ((x[2 * n + 1::2] >= 0) & (x[2 * n + 1::2] < KEYS + VALUES)).all()  # filler: any symbol
        stored = dict(zip(keys, values))
        assert answer[0] == stored[queries[-1]] == TASK.solve(list(x))[0]
        asked = np.arange(2 * n, 4 * n - 2, 2)  # every query but the last, trained on its value where it stands
        assert [targets[i] for i in asked] == [stored[x[i]] for i in asked]
        assert (np.delete(targets, asked) == -1).all()


def test_a_batch_trains_each_earlier_query_on_its_value_and_scores_only_the_answer():
    batch = make_batch(TASK, np.random.default_rng(3), np.array([5, 5, 9]))
    for row, n in enumerate(batch.lengths):
        tokens, targets = batch.tokens[row], batch.targets[row]
        queries = np.arange(1 + 2 * n, 4 * n - 2, 2)  # input symbol i sits at position i + 1 (after BOS)
        trained = np.flatnonzero(targets != IGNORE)
        assert list(trained) == [*queries, 4 * n, 4 * n + 1]  # the earlier queries, then SEP -> answer, -> EOS
        stored = dict(zip(tokens[1:2 * n:2], tokens[2:2 * n + 1:2]))
        assert all(targets[q] == stored[tokens[q]] for q in queries)
        assert list(np.flatnonzero(batch.scored[row])) == [4 * n]  # the last query's value alone is scored
        assert targets[4 * n] == stored[tokens[4 * n - 1]] >= N_SPECIAL


def test_chance_is_one_value_in_the_value_half():
    answers = np.concatenate([TASK.sample(np.random.default_rng(s), 6, 4000).outputs[:, 0] for s in range(3)])
    share = np.bincount(answers - KEYS, minlength=VALUES) / len(answers)
    assert TASK.answer_chance(6) == 1 / VALUES and abs(share.max() - 1 / VALUES) < 0.01


def zoology_mqar(rng: np.random.Generator, vocab_size: int, input_seq_len: int, num_kv_pairs: int,
                 num_examples: int, power_a: float = 0.01):
    """Zoology's ``multiquery_ar`` (one pass, ``random_non_queries``), restated: keys from 1..V/2-1 and
    values from V/2..V-1, each drawn without replacement; the pairs first; each key queried once at an
    even slot of the rest, slots drawn without replacement with weights i**(a-1); a query's label is its
    value; every other position a token drawn from the whole vocabulary. Returns the inputs (before the
    final shift) and, per example, the position and value of each query."""
    d = num_kv_pairs
    keys = np.stack([rng.choice(np.arange(1, vocab_size // 2), d, replace=False) for _ in range(num_examples)])
    values = np.stack([rng.choice(np.arange(vocab_size // 2, vocab_size), d, replace=False)
                       for _ in range(num_examples)])
    space = (input_seq_len - 2 * d) // 2
    weights = power_a * np.arange(1, space + 1) ** (power_a - 1)
    gaps = np.stack([rng.choice(space, d, replace=False, p=weights / weights.sum()) for _ in range(num_examples)])
    x = rng.integers(0, vocab_size, size=(num_examples, input_seq_len))
    x[:, 0:2 * d:2], x[:, 1:2 * d:2] = keys, values
    query_at = 2 * d + 2 * gaps
    np.put_along_axis(x, query_at, keys, axis=1)
    return x, keys, query_at


def test_the_instances_have_zoologys_statistics_at_its_densest_setting():
    """At Zoology's densest setting (input_seq_len = 4 x pairs, as its 256-token, 64-pair run), with a
    vocabulary of our size: which stored pair the final query asks (uniform over the pairs), how far back its
    pair is, and how often the asked key appears in the input (filler drawn from every symbol can repeat
    it) are distributed alike, within sampling noise of 6,000 examples each."""
    n, examples = 8, 6000
    ours = TASK.sample(np.random.default_rng(0), n, examples).inputs
    z, z_keys, z_query_at = zoology_mqar(np.random.default_rng(1), 2 * (KEYS + 1), 4 * n, n, examples)
    last = z_query_at.argmax(axis=1)  # the last query in Zoology's sequence (at 4n - 2), the one our framing scores
    assert (z_query_at.max(axis=1) == 4 * n - 2).all() and sorted(set(z_query_at[0] - 2 * n)) == list(range(0, 2 * n, 2))
    our_pair = np.array([list(x[0:2 * n:2]).index(x[-1]) for x in ours])  # keys are written in the order drawn
    share = [np.bincount(pair, minlength=n) / examples for pair in (our_pair, last)]
    assert 0.5 * np.abs(share[0] - share[1]).sum() < 0.04  # total variation; both uniform over the pairs
    z_asked = z_keys[np.arange(examples), last]
    repeats = [(ours[:, :4 * n - 2] == ours[:, -1:]).sum(axis=1), (z[:, :4 * n - 2] == z_asked[:, None]).sum(axis=1)]
    assert abs(repeats[0].mean() - repeats[1].mean()) < 0.015, [r.mean() for r in repeats]  # 1 + (2n - 1)/V: ~5 s.e.
