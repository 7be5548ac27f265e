"""Length buckets and packed rows: exact cover, optimal split, and the same
update as the whole padded batch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench.benchmark.batching import (
    MAX_BUCKETS,
    MAX_PACK_GROUPS,
    MAX_PADDING,
    MIN_BUCKET_TOKENS,
    PACK_GROUP_TOKENS,
    length_buckets,
    pack,
    packed_groups,
)
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.train import batch_tensors, forward_passes
from lengthbench.tasks import IGNORE, get_task, make_batch


def padded_share(widths, buckets) -> float:
    padded = sum(widths[hi - 1] * (hi - lo) for lo, hi in buckets)
    return 1 - widths.sum() / padded


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 120), min_size=1, max_size=200))
def test_buckets_cover_the_rows_in_order(widths):
    widths = np.sort(widths)
    buckets = length_buckets(widths)
    assert buckets[0][0] == 0 and buckets[-1][1] == len(widths)
    assert all(a[1] == b[0] for a, b in zip(buckets, buckets[1:]))  # contiguous
    assert all(widths[a[1] - 1] < widths[b[0]] for a, b in zip(buckets, buckets[1:]))  # never split equal widths
    allowed = max(1, min(MAX_BUCKETS, len(set(widths)), widths[-1] * len(widths) // MIN_BUCKET_TOKENS))
    assert len(buckets) <= allowed
    assert padded_share(widths, buckets) <= MAX_PADDING + 1e-12 or len(buckets) == allowed


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


def test_reference_batches_waste_little():
    task, rng = get_task("reverse_string"), np.random.default_rng(0)
    for _ in range(3):
        lens = make_batch(task, rng, rng.integers(1, 41, size=128)).seq_lens
        padded = sum((hi - lo) * int(lens[hi - 1]) for lo, hi in length_buckets(lens))
        assert 1 - lens.sum() / padded <= MAX_PADDING and 1 - lens.sum() / (lens.max() * 128) > 0.4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 90), min_size=1, max_size=130))
def test_packing_holds_every_real_token_once_in_order(lengths):
    lengths = np.sort(lengths)
    width = int(lengths.max()) + 3  # the padded batch may be wider than its longest example
    packing = pack(lengths, width)
    assert packing.source.shape[1] == lengths.max()
    real = packing.source[packing.source >= 0]
    expected = np.concatenate([b * width + np.arange(n) for b, n in enumerate(lengths)])
    assert sorted(real.tolist()) == expected.tolist()  # every real token exactly once, no padding token
    assert ((packing.source >= 0) == (packing.segment >= 0)).all()
    for row, segments in zip(packing.source, packing.segment):
        for s in set(segments[segments >= 0].tolist()):
            slots = row[segments == s]
            example = slots[0] // width
            assert (slots == example * width + np.arange(lengths[example])).all()  # one example, in order
        used = segments >= 0
        assert not used[np.argmin(used):].any() or used.all()  # padding only at the end
    assert 1 - lengths.sum() / packing.source.size <= 0.5  # best fit: no row less than half full but one


def _loss_and_grads(model, passes, n_targets):
    """The summed token loss of ``(logits, targets)`` passes over a batch, and the gradients it leaves."""
    model.zero_grad()
    total = 0.0
    for logits, targets in passes:
        part = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="sum") / n_targets
        part.backward()
        total += part.item()
    return total, [p.grad.clone() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("packs", [True, False], ids=["packed", "buckets"])
@pytest.mark.parametrize("encoding", ["rope", "alibi", "randomized-rope", "learned", "t5", "fire", "cope", "xpos",
                                      "coupled", "abacus"])
def test_the_trainers_passes_give_the_padded_batchs_loss_and_gradient(encoding, packs):
    """In float64, the trainer's passes over a step (packed rows for the
    transformer, length buckets for a model that cannot pack) give the loss
    and gradient of one pass over the whole padded batch."""
    torch.set_default_dtype(torch.float64)
    try:
        task = get_task("addition")  # coupled and abacus read its position ids
        config = get_preset("quick").run_config("addition", encoding, 0)
        model = config.build_model(task.vocab_size).train()
        model.packs_sequences = packs
        lengths = np.sort(np.random.default_rng(1).integers(1, 9, size=128 if packs else 256))
        batch = make_batch(task, np.random.default_rng(2), lengths)
        t = batch_tensors(batch, torch.device("cpu"))
        pos = model.positions(t["tokens"], t["position_ids"], t["seq_lens"], torch.Generator().manual_seed(0))
        n_targets = int((batch.targets != IGNORE).sum())
        padded = _loss_and_grads(model, [(model(t["tokens"], pos), t["targets"])], n_targets)
        passes = list(forward_passes(model, batch, t, pos, torch.device("cpu")))
        widths = [logits.shape[:2] for logits, _ in passes]
        if packs:
            assert sum(rows for rows, _ in widths) < len(lengths)  # rows really hold several examples
        else:
            assert len(passes) > 1  # several buckets
        loss, grads = _loss_and_grads(model, passes, n_targets)
        assert loss == pytest.approx(padded[0], rel=1e-12)
        for a, b in zip(padded[1], grads):
            torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 90), min_size=1, max_size=200))
def test_packed_groups_hold_every_real_token_once(lengths):
    """Large batches pack in groups of shorter and longer examples; together they hold each real token once."""
    lengths = np.sort(lengths)
    width = int(lengths.max())
    groups = packed_groups(lengths, width)
    assert len(groups) == min(MAX_PACK_GROUPS, max(1, int(lengths.sum()) // PACK_GROUP_TOKENS))
    real = np.concatenate([g.source[g.source >= 0] for g in groups])
    expected = np.concatenate([b * width + np.arange(n) for b, n in enumerate(lengths)])
    assert sorted(real.tolist()) == expected.tolist()
    assert [g.source.shape[1] for g in groups] == sorted(g.source.shape[1] for g in groups)  # short rows first
