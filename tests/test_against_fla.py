"""The 2025-26 mechanisms against a maintained implementation on identical
inputs: ``flash-linear-attention``'s plain-PyTorch reference code (``fla``,
in the dev extra; with ``triton`` installed it imports on a CPU and warns
that it falls back to it). Scalable softmax and rnope have no such
reference there; their equations are tested in test_data_dependent.py."""

import warnings

import pytest
import torch
import torch.nn.functional as F

from lengthbench.models.delta_rule import DeltaMixer, causal_conv
from lengthbench.models.encodings import build_encoding
from lengthbench.models.families import ModelSize
from lengthbench.models.transformer import Attention

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Triton is not supported on current platform, roll back to CPU"
    naive_forgetting = pytest.importorskip("fla.ops.forgetting_attn.naive")
    naive_stickbreaking = pytest.importorskip("fla.ops.stickbreaking_attn.naive")
    naive_path = pytest.importorskip("fla.ops.path_attn.naive")
    naive_delta = pytest.importorskip("fla.ops.delta_rule.naive")
    naive_gated_delta = pytest.importorskip("fla.ops.gated_delta_rule.naive")
    naive_delta_product = pytest.importorskip("fla.ops.gated_delta_product.naive")

SIZE = ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64)
T = 37


def _layer(name: str):
    torch.manual_seed(0)
    encoding = build_encoding(name, SIZE.d_model, SIZE.n_heads)
    attention = Attention(SIZE, encoding, 0)
    x = torch.randn(2, T, SIZE.d_model, generator=torch.Generator().manual_seed(1))
    b, t, d = x.shape
    q, k, v = attention.qkv(x).view(b, t, 3, SIZE.n_heads, d // SIZE.n_heads).unbind(2)  # (B, T, H, Dh) each
    return attention, encoding, x, q, k, v


def _ours(attention, encoding, x):
    return attention(x, encoding, torch.arange(x.shape[1])[None], None)


def _mix(attention, y):
    """Their per-head outputs ``(B, T, H, Dh)`` through our output projection."""
    return attention.out(y.reshape(*y.shape[:2], -1))


def test_forget_matches_fla():
    attention, encoding, x, q, k, v = _layer("forget")
    log_gates = F.logsigmoid(attention.position.gate(x))  # (B, T, H): fla's g
    theirs = naive_forgetting.naive_forgetting_attn(q, k, v, log_gates)
    torch.testing.assert_close(_ours(attention, encoding, x), _mix(attention, theirs), rtol=1e-5, atol=1e-5)


def test_stick_breaking_matches_fla_with_the_current_token():
    attention, encoding, x, q, k, v = _layer("stick-breaking")
    theirs, _ = naive_stickbreaking.naive_stickbreaking_attn(q, k, v, attend_current=True)
    torch.testing.assert_close(_ours(attention, encoding, x), _mix(attention, theirs), rtol=1e-5, atol=1e-5)


def test_stick_breaking_remainder_is_fla_without_the_current_token_plus_the_remainder():
    """fla's reference over the keys before each query (attend_current off) returns the stick's remainder
    beside the output; the authors' model adds it times the query's own value (their tests: o + rem * v)."""
    attention, encoding, x, q, k, v = _layer("stick-breaking-remainder")
    theirs, remainder = naive_stickbreaking.naive_stickbreaking_attn(q, k, v, attend_current=False)
    torch.testing.assert_close(_ours(attention, encoding, x), _mix(attention, theirs + remainder[..., None] * v),
                               rtol=1e-5, atol=1e-5)


def test_path_matches_fla():
    attention, encoding, x, q, k, v = _layer("path")
    own = attention.position
    b, t, d = x.shape
    w = F.normalize(own.w(x).view(b, t, SIZE.n_heads, -1), dim=-1)
    beta = 2 * torch.sigmoid(own.beta(x))
    theirs = naive_path.naive_path_attn(q, k, v, w, beta, torch.zeros(b, t, SIZE.n_heads), scale=q.shape[-1] ** -0.5,
                                        chunk_size=16)
    torch.testing.assert_close(_ours(attention, encoding, x), _mix(attention, theirs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("beta_range", [1.0, 2.0])
def test_delta_rule_layer_matches_fla(gated, beta_range):
    """Our mixer's recurrence on its own q, k, v, beta (and decay) against
    fla's token-by-token reference, the rest of the layer written out."""
    torch.manual_seed(0)
    mixer = DeltaMixer(SIZE, gated, beta_range)
    x = torch.randn(2, T, SIZE.d_model, generator=torch.Generator().manual_seed(1))
    b, t, d = x.shape
    mixed = F.silu(causal_conv(mixer.qkv(x), mixer.conv))
    q, k, v = (part.reshape(b, t, SIZE.n_heads, -1) for part in mixed.split(d, dim=-1))
    q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    beta, *decay = mixer.per_head(x).split(SIZE.n_heads, dim=-1)
    beta = beta_range * torch.sigmoid(beta)
    if gated:
        g = -torch.exp(mixer.A_log) * F.softplus(decay[0] + mixer.dt_bias)
        o, _ = naive_gated_delta.naive_recurrent_gated_delta_rule(q, k, v, beta, g)
    else:
        o, _ = naive_delta.delta_rule_recurrence(*(z.transpose(1, 2) for z in (q, k, v, beta)))
        o = o.transpose(1, 2)
    o = F.rms_norm(o, (d // SIZE.n_heads,), mixer.norm, 1e-6).reshape(b, t, d)
    expected = mixer.out(o * F.silu(mixer.gate(x)) if gated else o)
    torch.testing.assert_close(mixer(x), expected, rtol=1e-4, atol=1e-5)


def _fla_layer(name: str, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layers = pytest.importorskip("fla.layers")
        return getattr(layers, name)(**settings)


@pytest.mark.parametrize("gated", [False, True])
def test_the_delta_rules_stated_differences_from_fla_hold(gated):
    """Every difference models/delta_rule.py states from the authors' layers, read off both layers."""
    torch.manual_seed(0)
    ours = DeltaMixer(SIZE, gated, 1.0)
    head = SIZE.d_model // SIZE.n_heads
    theirs = (_fla_layer("GatedDeltaNet", hidden_size=SIZE.d_model, head_dim=head, num_heads=SIZE.n_heads) if gated
              else _fla_layer("DeltaNet", hidden_size=SIZE.d_model, num_heads=SIZE.n_heads))
    assert ours.conv.bias is not None and theirs.q_conv1d.bias is None  # the short convolution's bias
    assert ours.per_head.bias is not None and theirs.b_proj.bias is None  # beta's (and the decay's) bias
    assert ours.qkv.bias is None and theirs.q_proj.bias is None  # the same: no bias on q, k, v
    value_width = 2 if gated else 1  # theirs: GatedDeltaNet's expand_v=2, DeltaNet's 1; ours: 1
    assert theirs.head_v_dim == value_width * theirs.head_k_dim and theirs.head_k_dim == head
    assert ours.qkv.out_features == 3 * SIZE.d_model  # ours: q, k and v each d_model wide
    assert theirs.o_norm.eps == 1e-5
    if gated:
        many = [DeltaMixer(SIZE, True, 1.0).A_log.exp() for _ in range(200)]
        assert min(float(a.min()) for a in many) >= 1.0  # ours from [1, 16]
        theirs_a = torch.cat([_fla_layer("GatedDeltaNet", hidden_size=SIZE.d_model, head_dim=head,
                                         num_heads=SIZE.n_heads).A_log.exp().detach() for _ in range(50)])
        assert float(theirs_a.min()) < 1.0 and float(theirs_a.max()) <= 16  # theirs from [0, 16]
        assert theirs.A_log._no_weight_decay and theirs.dt_bias._no_weight_decay
        assert not hasattr(ours.A_log, "_no_weight_decay") and not hasattr(ours.dt_bias, "_no_weight_decay")


def test_the_forget_gates_stated_initialization_against_fla():
    """Ours: PyTorch's default (uniform in +-1/sqrt(d), a non-zero bias); the authors' and fla's Forgetting
    Transformer: N(0, 0.02), zero bias."""
    attention, _, _, _, _, _ = _layer("forget")
    gate = attention.position.gate
    bound = SIZE.d_model ** -0.5
    assert float(gate.weight.abs().max()) <= bound and float(gate.weight.std()) > 0.05  # uniform: bound / sqrt(3)
    assert float(gate.bias.abs().max()) > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = pytest.importorskip("fla.models")
        config = models.ForgettingTransformerConfig(hidden_size=256, num_hidden_layers=1, num_heads=4, vocab_size=32)
        theirs = models.ForgettingTransformerForCausalLM(config).model.layers[0].attn.f_proj
    assert float(theirs.weight.std()) == pytest.approx(0.02, rel=0.2) and float(theirs.bias.abs().max()) == 0


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("gated", [False, True])
def test_delta_product_matches_fla(n, gated):
    """Our DeltaProduct recurrence against fla's naive one on identical inputs: each token's n keys, values and
    betas at steps t * n + j (fla's layout, time second), the decay once per token, the query read after the
    last step. Ours differs only in carrying the state (V x K, theirs K x V) and running in chunks."""
    from lengthbench.models.delta_rule import delta_product

    g = torch.Generator().manual_seed(n)
    b, h, t, d = 2, 3, 19, 8
    q = torch.randn(b, h, t, d, generator=g)
    k = F.normalize(torch.randn(b, h, t * n, d, generator=g), dim=-1)
    v = torch.randn(b, h, t * n, d, generator=g)
    beta = 2 * torch.rand(b, h, t * n, generator=g)
    log_alpha = -torch.rand(b, h, t, generator=g) if gated else None
    theirs, _ = naive_delta_product.naive_recurrent_gated_delta_product(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), None if log_alpha is None else log_alpha.transpose(1, 2),
        beta.transpose(1, 2), 1.0, num_householder=n)
    torch.testing.assert_close(delta_product(q, k, v, beta, log_alpha, None, n).transpose(1, 2), theirs,
                               rtol=1e-4, atol=1e-4)
