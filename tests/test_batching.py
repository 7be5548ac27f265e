"""Length buckets: exact cover, optimal split, and the same update as the
whole padded batch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.batching import (
    MAX_BUCKETS,
    MAX_PADDING,
    MIN_BUCKET_TOKENS,
    _padded_width,
    length_buckets,
    training_batches,
)
from benchmark.presets import get_preset
from benchmark.train import batch_tensors, build_model
from tasks import IGNORE, get_task, make_batch


def padded_share(buckets) -> float:
    real = sum(_padded_width(b).sum() for b in buckets)
    padded = sum(_padded_width(b.max()) * len(b) for b in buckets)
    return 1 - real / padded


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 60), min_size=1, max_size=200))
def test_buckets_cover_the_batch_in_ascending_order(lengths):
    buckets = length_buckets(np.array(lengths))
    assert np.array_equal(np.concatenate(buckets), np.sort(lengths))
    assert all(b[-1] < c[0] for b, c in zip(buckets, buckets[1:]))  # contiguous, disjoint lengths
    allowed = max(1, min(MAX_BUCKETS, len(set(lengths)),
                         _padded_width(max(lengths)) * len(lengths) // MIN_BUCKET_TOKENS))
    assert len(buckets) <= allowed
    assert padded_share(buckets) <= MAX_PADDING + 1e-12 or len(buckets) == allowed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=40), st.integers(1, 4))
def test_split_is_optimal_for_its_bucket_count(lengths, max_buckets):
    """Against brute force over every set of cut points."""
    buckets = length_buckets(np.array(lengths), max_padding=0.0, max_buckets=max_buckets,
                             min_bucket_tokens=1)
    values = sorted(set(lengths))
    ordered = np.sort(lengths)

    def cost(parts):
        return sum(_padded_width(p.max()) * len(p) for p in parts)

    best = min(
        cost([ordered[(ordered >= lo) & (ordered <= hi)] for lo, hi in
              zip([values[0]] + [values[c] for c in cuts], [values[c - 1] for c in cuts] + [values[-1]])])
        for k in range(len(buckets))
        for cuts in itertools.combinations(range(1, len(values)), k)
    )
    assert cost(buckets) == best


def test_buckets_keep_the_examples_of_one_padded_batch():
    task, lengths = get_task("reverse_string"), np.random.default_rng(0).integers(1, 41, size=128)
    whole = make_batch(task, np.random.default_rng(5), lengths)
    parts = training_batches(task, np.random.default_rng(5), lengths)
    assert len(parts) > 1
    rows = [row[: n] for b in parts for row, n in zip(b.tokens, b.seq_lens)]
    assert all(np.array_equal(a, whole.tokens[i, : whole.seq_lens[i]]) for i, a in enumerate(rows))
    padding = 1 - sum(b.seq_lens.sum() for b in parts) / sum(b.tokens.size for b in parts)
    assert padding <= MAX_PADDING + 0.03 and 1 - whole.seq_lens.sum() / whole.tokens.size > 0.4


@pytest.mark.parametrize("encoding", ["rope", "alibi"])
def test_bucketed_loss_and_gradient_equal_the_padded_batch(encoding):
    torch.set_default_dtype(torch.float64)
    try:
        config = get_preset("smoke").run_config("copy", encoding, 0)
        task = get_task("copy")
        model = build_model(config, task, torch.device("cpu"))
        lengths = np.random.default_rng(1).integers(1, 41, size=128)
        assert len(training_batches(task, np.random.default_rng(2), lengths)) > 1

        def loss_and_grads(batches):
            model.zero_grad()
            tensors = [batch_tensors(b, torch.device("cpu")) for b in batches]
            n = sum(int((t["targets"] != IGNORE).sum()) for t in tensors)
            total = 0.0
            for t in tensors:
                logits = model(t["tokens"], t["position_ids"], t["seq_lens"])
                part = F.cross_entropy(logits.flatten(0, 1), t["targets"].flatten(),
                                       ignore_index=IGNORE, reduction="sum") / n
                part.backward()
                total += part.item()
            return total, [p.grad.clone() for p in model.parameters()]

        loss_a, grads_a = loss_and_grads([make_batch(task, np.random.default_rng(2), lengths)])
        loss_b, grads_b = loss_and_grads(training_batches(task, np.random.default_rng(2), lengths))
        assert loss_b == pytest.approx(loss_a, rel=1e-12)
        for a, b in zip(grads_a, grads_b):
            torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)
