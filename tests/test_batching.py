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

from lengthbench.benchmark.batching import MAX_BUCKETS, MAX_PADDING, MIN_BUCKET_TOKENS, group_buckets, length_buckets
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.train import batch_tensors, build_group
from lengthbench.tasks import IGNORE, get_task, make_batch


def padded_share(widths, buckets, n_runs=1) -> float:
    padded = sum(widths[hi - 1] * (hi - lo) for lo, hi in buckets) * n_runs
    return 1 - widths.sum() * n_runs / padded


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 120), min_size=1, max_size=200), st.integers(1, 8))
def test_buckets_cover_the_rows_in_order(widths, n_runs):
    widths = np.sort(widths)
    buckets = length_buckets(widths, n_runs)
    assert buckets[0][0] == 0 and buckets[-1][1] == len(widths)
    assert all(a[1] == b[0] for a, b in zip(buckets, buckets[1:]))  # contiguous
    assert all(widths[a[1] - 1] < widths[b[0]] for a, b in zip(buckets, buckets[1:]))  # never split equal widths
    allowed = max(1, min(MAX_BUCKETS, len(set(widths)), widths[-1] * len(widths) * n_runs // MIN_BUCKET_TOKENS))
    assert len(buckets) <= allowed
    assert padded_share(widths, buckets, n_runs) <= MAX_PADDING + 1e-12 or len(buckets) == allowed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=40), st.integers(1, 4))
def test_split_is_optimal_for_its_bucket_count(widths, max_buckets):
    """Against brute force over every set of cut points."""
    widths = np.sort(widths)
    buckets = length_buckets(widths, max_padding=0.0, max_buckets=max_buckets, min_bucket_tokens=1)

    def cost(bounds):
        return sum(widths[hi - 1] * (hi - lo) for lo, hi in zip(bounds[:-1], bounds[1:]))

    best = min(cost([0, *cuts, len(widths)])
               for k in range(len(buckets)) for cuts in itertools.combinations(range(1, len(widths)), k))
    assert cost([0] + [hi for _, hi in buckets]) == best


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 64), st.integers(0, 2**31))
def test_group_buckets_hold_every_real_token_of_every_run(n_runs, batch, seed):
    task = get_task("binary_addition")  # output lengths vary within one task length
    rng = np.random.default_rng(seed)
    lens = [make_batch(task, rng, rng.integers(3, 30, size=batch)).seq_lens for _ in range(n_runs)]
    buckets = group_buckets(lens)
    assert buckets[0][0] == 0 and buckets[-1][1] == batch
    assert all(a[1] == b[0] for a, b in zip(buckets, buckets[1:]))
    for lo, hi, width in buckets:
        assert width == max(int(s[lo:hi].max()) for s in lens)


@pytest.mark.parametrize("n_runs, most", [(1, MAX_PADDING), (4, MAX_PADDING), (16, 0.14)])
def test_a_group_of_reference_batches_wastes_little(n_runs, most):
    task, rng = get_task("reverse_string"), np.random.default_rng(0)
    for _ in range(3):
        lens = [make_batch(task, rng, rng.integers(1, 41, size=128)).seq_lens for _ in range(n_runs)]
        padded = sum((hi - lo) * width * n_runs for lo, hi, width in group_buckets(lens))
        whole = max(int(s.max()) for s in lens) * 128 * n_runs
        real = sum(int(s.sum()) for s in lens)
        assert 1 - real / padded <= most + 0.01 and 1 - real / whole > 0.4


@pytest.mark.parametrize("encoding", ["rope", "alibi", "randomized-rope"])
def test_bucketed_loss_and_gradient_equal_the_padded_batch(encoding):
    torch.set_default_dtype(torch.float64)
    try:
        config = get_preset("quick").run_config("copy", encoding, 0)
        task = get_task("copy")
        model = build_group([config], task, torch.device("cpu")).train()
        batch = make_batch(task, np.random.default_rng(2), np.random.default_rng(1).integers(1, 21, size=128))
        t = batch_tensors(batch, torch.device("cpu"))
        pos = model.positions(0, t["tokens"], t["position_ids"], t["seq_lens"], torch.Generator().manual_seed(0))
        buckets = group_buckets([batch.seq_lens])
        assert len(buckets) > 1

        def loss_and_grads(parts):
            model.zero_grad()
            total = 0.0
            for lo, hi, width in parts:
                logits = model(t["tokens"][None, lo:hi, :width], [pos[lo:hi, :width] if len(pos) > 1 else
                                                                   pos[:, :width]])
                part = F.cross_entropy(logits.flatten(0, 2), t["targets"][lo:hi, :width].flatten(),
                                       ignore_index=IGNORE, reduction="sum") / int((batch.targets != IGNORE).sum())
                part.backward()
                total += part.item()
            return total, [p.grad.clone() for p in model.parameters() if p.grad is not None]

        loss_a, grads_a = loss_and_grads([(0, 128, batch.tokens.shape[1])])
        loss_b, grads_b = loss_and_grads(buckets)
        assert loss_b == pytest.approx(loss_a, rel=1e-12)
        for a, b in zip(grads_a, grads_b):
            torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)
