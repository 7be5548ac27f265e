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
