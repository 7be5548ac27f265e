"""Encoding contract: causality for every encoding, randomized positions,
ALiBi slopes, RoPE relativity, out-of-range tables."""

import pytest
import torch

from models import ModelSize, Transformer, build_encoding, encoding_names
from models.encodings import PositionsOutOfRange
from models.encodings.alibi import alibi_slopes
from models.encodings.randomized import random_sorted_positions

SIZE = ModelSize(d_model=16, n_layers=2, n_heads=2, d_ff=32)


def make_model(name, **params):
    torch.manual_seed(0)
    return Transformer(12, SIZE, build_encoding(name, SIZE.d_model, SIZE.n_heads, params)).eval()


@pytest.mark.parametrize("name", encoding_names())
@pytest.mark.parametrize("t", [1, 5, 9])
def test_causality(name, t):
    """Changing tokens after position t never changes outputs at <= t."""
    model = make_model(name)
    torch.manual_seed(1)
    tokens = torch.randint(0, 12, (3, 10))
    pos = torch.arange(10).expand(3, 10)
    changed = tokens.clone()
    changed[:, t + 1:] = (changed[:, t + 1:] + 5) % 12
    seq_lens = torch.full((3,), 10)
    a = model(tokens, pos, seq_lens, torch.Generator().manual_seed(3))
    b = model(changed, pos, seq_lens, torch.Generator().manual_seed(3))
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1])


@pytest.mark.parametrize("seed", range(5))
def test_randomized_positions_sorted_distinct_in_range(seed):
    seq_lens = torch.tensor([1, 7, 20, 13])
    pos = random_sorted_positions(seq_lens, 20, 50, torch.Generator().manual_seed(seed))
    for row, n in enumerate(seq_lens.tolist()):
        real = pos[row, :n]
        assert (real[1:] > real[:-1]).all()
        assert real.min() >= 0 and real.max() < 50
    assert (pos >= 0).all() and (pos < 50).all()


def test_randomized_positions_differ_per_example():
    pos = random_sorted_positions(torch.full((8,), 10), 10, 1000, torch.Generator().manual_seed(0))
    assert len({tuple(r.tolist()) for r in pos}) == 8


def test_randomized_positions_cover_range():
    """The subset is uniform: the first position is spread over [0, max_len - n]."""
    pos = random_sorted_positions(torch.full((4000,), 3), 3, 20, torch.Generator().manual_seed(0))
    assert set(pos[:, 0].tolist()) == set(range(18))
    assert set(pos[:, 2].tolist()) == set(range(2, 20))


def test_randomized_used_in_eval_and_reproducible():
    model = make_model("randomized-rope", max_len=64)
    tokens = torch.randint(0, 12, (2, 8))
    a = model(tokens, None, None, torch.Generator().manual_seed(5))
    b = model(tokens, None, None, torch.Generator().manual_seed(5))
    c = model(tokens, None, None, torch.Generator().manual_seed(6))
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, c)


def test_alibi_slopes_match_press():
    assert torch.allclose(alibi_slopes(8), torch.tensor([2 ** -(i + 1) for i in range(8)]))
    # 6 heads: the 4-head slopes, then every other slope of the 8-head list
    expected = [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]
    assert torch.allclose(alibi_slopes(6), torch.tensor(expected))


def test_rope_dot_product_depends_only_on_distance():
    enc = build_encoding("rope", 16, 2)
    q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)

    def score(i, j):
        qi, _ = enc.rotate(q, q, torch.tensor([[i]]))
        _, kj = enc.rotate(k, k, torch.tensor([[j]]))
        return (qi * kj).sum(-1)

    torch.testing.assert_close(score(7, 3), score(107, 103))
    assert not torch.allclose(score(7, 3), score(7, 2))


def test_learned_table_too_short_is_reported():
    model = make_model("learned", max_positions=6)
    with pytest.raises(PositionsOutOfRange, match="6 positions"):
        model(torch.zeros(1, 8, dtype=torch.long))


def test_coupled_offsets_only_in_training():
    enc = build_encoding("coupled", 16, 2, {"max_positions": 40})
    from models.encodings import PositionContext

    pos = torch.tensor([[0, 1, 2, 0, 1, 2]]).expand(64, 6)
    train = enc.positions(pos, PositionContext(64, 6, None, True, torch.Generator().manual_seed(0)))
    offsets = train - pos
    assert (offsets == offsets[:, :1]).all()  # one offset per example
    assert offsets.min() >= 0 and train.max() < 40 and offsets.unique().numel() > 10
    test = enc.positions(pos, PositionContext(64, 6, None, False, None))
    assert torch.equal(test, pos)


def test_unknown_encoding_lists_choices():
    with pytest.raises(ValueError, match=r"unknown encoding 'ropee'; valid choices: .*rope"):
        build_encoding("ropee", 16, 2)


def test_unknown_encoding_parameter():
    with pytest.raises(ValueError, match="no parameter 'bse'; valid: base"):
        build_encoding("rope", 16, 2, {"bse": 3})


@pytest.mark.parametrize("name", ["alibi", "kerple-log", "kerple-power", "randomized-alibi"])
def test_distance_biases_non_increasing_at_init(name):
    enc = build_encoding(name, 16, 4)
    pos = torch.arange(40)[None]
    row = enc.bias(pos, pos)[0, :, -1, :]  # last query, every key: distance 39..0
    assert (row[:, 1:] >= row[:, :-1] - 1e-6).all()  # bias grows as keys get closer


@pytest.mark.parametrize("name", ["alibi", "t5", "kerple-log", "kerple-power"])
def test_relative_biases_shift_invariant(name):
    enc = build_encoding(name, 16, 4)
    pos = torch.arange(30)[None]
    torch.testing.assert_close(enc.bias(pos, pos), enc.bias(pos + 77, pos + 77))


def test_fire_uses_max_not_min():
    """psi(max(L, i)): for queries below L the normaliser is psi(L)."""
    enc = build_encoding("fire", 16, 2, {"L_init": 20.0})
    pos = torch.arange(8)[None]
    lifted = enc.bias(pos, pos)
    # below the threshold, the normaliser is constant, so the bias depends on i - j only
    torch.testing.assert_close(lifted[0, :, 5, 2], lifted[0, :, 7, 4])
    big = torch.arange(100, 108)[None]
    assert not torch.allclose(enc.bias(big, big)[0, :, 5, 2], lifted[0, :, 5, 2])


def test_t5_buckets():
    from models.encodings.t5 import t5_bucket

    d = torch.tensor([0, 1, 15, 16, 50, 127, 128, 5000])
    b = t5_bucket(d, 32, 128)
    assert b[:3].tolist() == [0, 1, 15] and b[3] == 16
    assert (b[1:] >= b[:-1]).all() and b.max() == 31 and b[-1] == 31


@pytest.mark.parametrize("name", ["kerple-power", "kerple-log", "fire", "t5"])
def test_gradients_finite(name):
    model = make_model(name).train()
    out = model(torch.randint(0, 12, (2, 12)))
    out.sum().backward()
    for p in model.parameters():
        assert p.grad is None or torch.isfinite(p.grad).all()
