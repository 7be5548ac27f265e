"""The data-dependent mechanisms (forget, stick-breaking, path, ssmax,
ssmax-rope, rnope) against a direct float64 evaluation of each paper's
equation, one (i, j) at a time, through lengthbench's own attention layer."""

import math

import pytest
import torch
import torch.nn.functional as F

from lengthbench.models.encodings import build_encoding
from lengthbench.models.families import ModelSize
from lengthbench.models.transformer import Attention, Transformer

SIZE = ModelSize(d_model=16, n_layers=2, n_heads=2, d_ff=32)
T = 7


def layer(name: str, index: int = 0, seed: int = 0):
    """An attention layer (float64) with ``name``'s encoding, its own parts
    drawn away from their initialization so every parameter counts."""
    torch.manual_seed(seed)
    encoding = build_encoding(name, SIZE.d_model, SIZE.n_heads).double()
    attention = Attention(SIZE, encoding, index).double()
    with torch.no_grad():
        for p in [*encoding.parameters(), *(attention.position.parameters() if attention.position else [])]:
            p.normal_(generator=torch.Generator().manual_seed(seed + 1))
    x = torch.randn(2, T, SIZE.d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 2))
    return attention, encoding, x


def heads(attention: Attention, x: torch.Tensor):
    """The layer's q, k, v as ``[b][h][t] -> vector`` lists (float64 tensors)."""
    b, t, d = x.shape
    q, k, v = attention.qkv(x).view(b, t, 3, SIZE.n_heads, d // SIZE.n_heads).permute(2, 0, 3, 1, 4)
    return q, k, v


def mixed(attention: Attention, weights) -> callable:
    """The layer's output from per-(b, h, i, j) weights given as a function."""
    def output(x, v):
        b, t, d = x.shape
        y = torch.zeros(b, SIZE.n_heads, t, d // SIZE.n_heads, dtype=torch.float64)
        for bb in range(b):
            for h in range(SIZE.n_heads):
                for i in range(t):
                    for j in range(i + 1):
                        y[bb, h, i] += weights(bb, h, i, j) * v[bb, h, j]
        return attention.out(y.transpose(1, 2).reshape(b, t, d))
    return output


def ours(attention, encoding, x, pos=None):
    return attention(x, encoding, torch.arange(x.shape[1])[None] if pos is None else pos, None)


def softmax_rows(logit, b, h, i):
    """softmax over j <= i of ``logit(b, h, i, j)``, as a function of j."""
    values = [logit(b, h, i, j) for j in range(i + 1)]
    top = max(values)
    total = sum(math.exp(v - top) for v in values)
    return lambda j: math.exp(values[j] - top) / total


def test_forget_is_the_forgetting_transformers_equation():
    """o_i = sum_j exp(q_i.k_j / sqrt(d) + D_ij) v_j / sum_j exp(...),
    D_ij = sum_{l=j+1..i} log f_l, f_l = sigmoid(w_h . x_l + b_h) (Lin et al. 2025)."""
    attention, encoding, x = layer("forget")
    q, k, v = heads(attention, x)
    gate = attention.position.gate
    f = torch.sigmoid(x @ gate.weight.T + gate.bias)  # (B, T, H)
    scale = q.shape[-1] ** -0.5

    def logit(b, h, i, j):
        return float(q[b, h, i] @ k[b, h, j]) * scale + sum(math.log(float(f[b, m, h])) for m in range(j + 1, i + 1))

    expected = mixed(attention, lambda b, h, i, j: softmax_rows(logit, b, h, i)(j))(x, v)
    torch.testing.assert_close(ours(attention, encoding, x), expected, rtol=1e-10, atol=1e-10)


def stick_shares(q, k):
    """beta_ij = sigmoid(q_i.k_j / sqrt(d)) as a function of (b, h, i, j): the share of the stick key j takes."""
    scale = q.shape[-1] ** -0.5
    return lambda b, h, i, j: 1 / (1 + math.exp(-float(q[b, h, i] @ k[b, h, j]) * scale))


def test_stick_breaking_is_the_papers_equation():
    """A_ij = beta_ij prod_{j<k<=i} (1 - beta_ik), beta_ij = sigmoid(q_i.k_j / sqrt(d)),
    no softmax (Tan et al. 2025, the current token included)."""
    attention, encoding, x = layer("stick-breaking")
    q, k, v = heads(attention, x)
    beta = stick_shares(q, k)

    def weight(b, h, i, j):
        return beta(b, h, i, j) * math.prod(1 - beta(b, h, i, m) for m in range(j + 1, i + 1))

    expected = mixed(attention, weight)(x, v)
    torch.testing.assert_close(ours(attention, encoding, x), expected, rtol=1e-10, atol=1e-10)


def test_stick_breaking_remainder_is_the_authors_form():
    """A_ij = beta_ij prod_{j<k<i} (1 - beta_ik) over the keys before the query only (the paper's j < i),
    and the remainder 1 - sum_{j<i} A_ij on the query's own value (the authors' code: o + rem * v)."""
    attention, encoding, x = layer("stick-breaking-remainder")
    q, k, v = heads(attention, x)
    beta = stick_shares(q, k)

    def before(b, h, i, j):
        return beta(b, h, i, j) * math.prod(1 - beta(b, h, i, m) for m in range(j + 1, i))

    def weight(b, h, i, j):
        return before(b, h, i, j) if j < i else 1 - sum(before(b, h, i, m) for m in range(i))

    expected = mixed(attention, weight)(x, v)
    torch.testing.assert_close(ours(attention, encoding, x), expected, rtol=1e-10, atol=1e-10)


def test_path_is_the_product_of_householder_transforms():
    """logit_ij = q_iᵀ H_i H_{i-1} ... H_{j+1} k_j / sqrt(d), H_t = I - beta_t w_t w_tᵀ,
    w_t = normalize(W_w x_t) per head, beta_t = 2 sigmoid(W_b x_t) (Yang et al. 2025)."""
    attention, encoding, x = layer("path")
    q, k, v = heads(attention, x)
    own = attention.position
    b_, t, d = x.shape
    dh = d // SIZE.n_heads
    w = F.normalize(own.w(x).view(b_, t, SIZE.n_heads, dh), dim=-1)
    beta = 2 * torch.sigmoid(own.beta(x))
    eye = torch.eye(dh, dtype=torch.float64)

    def logit(b, h, i, j):
        product = eye.clone()
        for m in range(i, j, -1):
            product = product @ (eye - beta[b, m, h] * torch.outer(w[b, m, h], w[b, m, h]))
        return float(q[b, h, i] @ product @ k[b, h, j]) / math.sqrt(dh)

    expected = mixed(attention, lambda b, h, i, j: softmax_rows(logit, b, h, i)(j))(x, v)
    torch.testing.assert_close(ours(attention, encoding, x), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["ssmax", "ssmax-rope"])
def test_ssmax_scales_the_logits_by_s_log_n(name):
    """weights = softmax(s_h log(n) z), n = i + 1 keys seen (Nakanishi 2025);
    over rope, z is the rotary logit (q and k turned by their positions)."""
    attention, encoding, x = layer(name)
    q, k, v = heads(attention, x)
    pos = torch.arange(T)[None]
    if name == "ssmax-rope":
        q, k = encoding.inner.rotate(q, k, pos)  # rope's rotation (its own test holds its formula)
    s = attention.position.s
    scale = q.shape[-1] ** -0.5

    def logit(b, h, i, j):
        return float(s[h]) * math.log(i + 1) * float(q[b, h, i] @ k[b, h, j]) * scale

    expected = mixed(attention, lambda b, h, i, j: softmax_rows(logit, b, h, i)(j))(x, v)
    torch.testing.assert_close(ours(attention, encoding, x, pos), expected, rtol=1e-10, atol=1e-10)


def test_rnope_turns_the_first_layer_and_leaves_the_second_without_positions():
    """rnope in 2 layers = rope's layer 0 then nope's layer 1, with the same weights."""
    torch.manual_seed(0)
    hybrid = Transformer(10, SIZE, build_encoding("rnope", SIZE.d_model, SIZE.n_heads))
    rope, nope = (Transformer(10, SIZE, build_encoding(name, SIZE.d_model, SIZE.n_heads)) for name in ("rope", "nope"))
    for model in (rope, nope):
        model.load_state_dict(hybrid.state_dict())
    tokens = torch.randint(0, 10, (2, 12), generator=torch.Generator().manual_seed(1))
    pos = torch.arange(12)[None]
    with torch.no_grad():
        h = rope.blocks[0](hybrid.token_embedding(tokens), rope.encoding, pos, None)
        expected = hybrid.head(hybrid.ln_f(nope.blocks[1](h, nope.encoding, pos, None)))
        torch.testing.assert_close(hybrid(tokens, pos), expected)
        for other in (rope, nope):  # neither all-rotary nor all-position-free
            assert (hybrid(tokens, pos) - other(tokens, pos)).abs().max() > 1e-4


@pytest.mark.parametrize("name", ["forget", "stick-breaking", "stick-breaking-remainder", "path", "ssmax", "ssmax-rope",
                                  "rnope"])
def test_packed_examples_compute_as_alone_at_training_lengths(name):
    """A packed training row (several examples end to end) gives each example
    its own logits, at the lengths the horizon grid trains (up to 51 tokens)."""
    from lengthbench.models.contract import _packing

    torch.manual_seed(0)
    model = Transformer(16, ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64), build_encoding(name, 32, 4))
    _packing(model, "", lengths=(23, 51))
