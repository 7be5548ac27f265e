"""``deltanet`` and ``gated-deltanet``: linear recurrences that update their
state by the delta rule, with the negative-eigenvalue option.

Each layer keeps, per head, a matrix state ``S`` (``d_head x d_head``) and
updates it once per token (Schlag et al. 2021; Yang et al. 2024):

    S_t = alpha_t S_{t-1} (I - beta_t k_t k_tᵀ) + beta_t v_t k_tᵀ,      o_t = S_t q_t / sqrt(d_head),

with ``k_t`` and ``q_t`` of unit norm, ``beta_t = sigmoid(W_b x_t)`` in
(0, 1) and, in ``gated-deltanet`` (Yang et al., ICLR 2025), a
data-dependent decay ``alpha_t = exp(-exp(A) softplus(W_a x_t + dt))`` in
(0, 1) (Mamba-2's; ``deltanet``: alpha_t = 1). The ``-negative`` variants
take ``beta_t = 2 sigmoid(W_b x_t)`` in (0, 2) (Grazzi et al., ICLR 2025):
the transition ``I - beta_t k_t k_tᵀ`` then has the eigenvalue ``1 -
beta_t`` in (-1, 1), which parity and modular counting need and (0, 1) does
not give.

The layer, as the authors' models have it (``flash-linear-attention``'s
DeltaNet and GatedDeltaNet): q, k, v from linear maps, each through a
causal depthwise convolution of width 4 and SiLU; per-head L2 norm of q
and k; the output per head RMS-normalized (gated-deltanet: times
SiLU(W_g x)) and projected back. A residual block is ``x + mixer(LN(x))``
then ``x + MLP(LN(x))`` (the transformer's GELU MLP), so the family differs
from the transformer in its token mixer only; widths are matched to the
transformer's parameters per task (``benchmark.matching``).

The recurrence runs chunk by chunk (``chunked_delta_rule``, the WY/UT form
of Yang et al. 2024): inside a chunk of up to ``CHUNK`` tokens all at once
(two triangular solves), between chunks by carrying ``S``; it equals the
token-by-token recurrence (``delta_rule_recurrence``, tested in float64,
outputs and gradients). Two backward passes are written out rather than left
to autograd, each giving autograd's numbers bit for bit (tested), so the
delta rule's records reproduce: the triangular solve's (``UnitLowerSolve``,
one pass over the chunk's pairs less) and the convolution's
(``ShiftedMultiplyAdds``, no zero-padded copy per shift).

Where ours differs from the authors' layers (``flash-linear-attention``'s
``DeltaNet`` and ``GatedDeltaNet``, which the Gated DeltaNet code also
uses; each point checked against them in tests/test_against_fla.py):

- the short convolution has a bias (theirs: ``conv_bias=False``);
- the projection of beta's (and the decay's) logits has a bias (theirs:
  ``b_proj``, ``a_proj`` without);
- gated: ``A`` starts uniform in [1, 16] (theirs: [0, 16]);
- gated: the value heads are as wide as the key heads (theirs:
  ``expand_v=2``, twice as wide; ungated DeltaNet's default is 1, as ours);
- weight decay on every weight, ``A_log`` and ``dt_bias`` included (theirs
  exempt both, ``_no_weight_decay``);
- PyTorch's default initialization (theirs: N(0, 0.02) for linear maps and
  embeddings, zero biases); RMS norm epsilon 1e-6 (theirs 1e-5); the
  block's MLP is the transformer's GELU MLP and its norms LayerNorm
  (theirs: SwiGLU and RMSNorm); no fused kernel.

The records were made with these; aligning any of them changes what the
family computes (a version bump and its cells rerun), so they are stated
rather than changed.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.families import ModelSize, RunModel, register_family

CONV = 4  # causal convolution width on q, k, v (the authors' default)
CHUNK = 64
RMS_EPS = 1e-6
DT_MIN, DT_MAX = 1e-3, 1e-1  # gated-deltanet's initial steps, log-uniform (Mamba-2's default)
A_MIN, A_MAX = 1.0, 16.0


def delta_rule_recurrence(q, k, v, beta, log_alpha=None):
    """The definition, one token at a time: ``q, k, v (B, H, T, D)`` (q
    already scaled), ``beta (B, H, T)``, ``log_alpha (B, H, T)`` or None;
    ``S_t = alpha_t S_{t-1} (I - beta_t k_t k_tᵀ) + beta_t v_t k_tᵀ``, ``o_t = S_t q_t``."""
    b, h, t, d = q.shape
    state, out = q.new_zeros(b, h, v.shape[-1], d), []
    eye = torch.eye(d, dtype=q.dtype, device=q.device)
    for i in range(t):
        decay = 1.0 if log_alpha is None else torch.exp(log_alpha[:, :, i])[..., None, None]
        kk = k[:, :, i, :, None] * k[:, :, i, None, :]
        state = decay * state @ (eye - beta[:, :, i, None, None] * kk) + beta[:, :, i, None, None] * (
            v[:, :, i, :, None] * k[:, :, i, None, :])
        out.append((state @ q[:, :, i, :, None])[..., 0])
    return torch.stack(out, dim=2)


class UnitLowerSolve(torch.autograd.Function):
    """``L⁻¹ R`` for ``L`` unit lower triangular (its strictly lower part read), as
    ``torch.linalg.solve_triangular``; the backward is that function's without
    its last pass, which zeroes L's gradient above the subdiagonal: the caller
    builds L's strictly lower part through a mask, whose backward zeroes the rest."""

    @staticmethod
    def forward(ctx, lower, right):
        solved = torch.linalg.solve_triangular(lower, right, upper=False, unitriangular=True)
        ctx.save_for_backward(lower, solved)
        return solved

    @staticmethod
    def backward(ctx, grad):
        lower, solved = ctx.saved_tensors
        grad_right = torch.linalg.solve_triangular(lower.mH, grad, upper=True, unitriangular=True)
        return grad_right @ (-solved).mH, grad_right


def chunked_delta_rule(q, k, v, beta, log_alpha=None, segments=None, chunk: int = CHUNK, every: int = 1):
    """``delta_rule_recurrence``'s outputs, chunk by chunk, read after every
    ``every``-th step only (``q`` holds those steps' queries: ``(B, H, T / every, D)``).
    Inside a chunk from state ``S`` (``g`` the running sum of ``log alpha``, ``Γ_ij =
    exp(g_i - g_j)``): ``L = I + strictly_lower(beta_i (k_i . k_j) Γ_ij)``,
    ``U = L⁻¹(beta V) - L⁻¹(beta e^g K) Sᵀ`` (the chunk's delta updates),
    ``O = e^g Q Sᵀ + lower(Q Kᵀ Γ) U`` (rows of the read steps only), then
    ``S <- e^{g_C} S + Uᵀ (e^{g_C - g} K)``.
    The first chunk starts from ``S = 0``, so its terms in ``S`` are skipped.
    With ``segments (B, T)`` (examples packed end to end in a row) the state
    starts from zero at each example: pairs of tokens of different examples
    are masked out of ``L`` and ``O``, the state reaches only the tokens of
    the example it was carried in, and is carried on only by that example's tokens."""
    t, dv = k.shape[2], v.shape[-1]
    state, carried_in, out = None, None, []  # carried_in: the example whose state is carried (packed rows)
    for start in range(0, t, chunk):
        part = slice(start, min(start + chunk, t))
        kc, vc, bc = k[:, :, part], v[:, :, part], beta[:, :, part, None]
        c = kc.shape[2]
        first = (every - 1 - start) % every  # the chunk's first read step
        read = slice(first, c, every)
        qc = q[:, :, (start + first) // every:(start + c) // every]
        causal = torch.ones(c, c, dtype=torch.bool, device=q.device).tril()
        strict, mask = causal.tril(-1), causal[read]  # mask: the read rows' pairs
        # DeltaProduct's pairs are (beta_i k_i) . k_j: a pass over the C x C pairs less, forward and back. The
        # delta rule keeps beta_i (k_i . k_j), the rounding its records were made with (tested bit for bit).
        scaled = every > 1
        pairs = (bc * kc if scaled else kc) @ kc.transpose(-1, -2)
        reads = qc @ kc.transpose(-1, -2)
        if log_alpha is not None:
            g = log_alpha[:, :, part].cumsum(-1)
            gamma = torch.exp((g[..., :, None] - g[..., None, :]).masked_fill(~causal, float("-inf")))
            pairs, reads = pairs * gamma, reads * gamma[..., read, :]
        if segments is not None:
            seg = segments[:, None, part]  # (B, 1, C)
            same = seg[..., :, None] == seg[..., None, :]
            strict, mask = strict & same, mask & same[..., read, :]
        lower = pairs * strict.to(q.dtype)
        lower = lower if scaled else bc * lower
        reads = reads * mask.to(q.dtype)
        if state is None:
            updates = UnitLowerSolve.apply(lower, bc * vc)
            out.append(reads @ updates)
        else:
            rise = 1.0 if log_alpha is None else torch.exp(g)[..., None]
            if segments is not None:  # the carried state reaches the tokens of its own example only
                rise = rise * (seg == carried_in)[..., None].to(q.dtype)
            solved = UnitLowerSolve.apply(lower, torch.cat([bc * vc, bc * rise * kc], dim=-1))
            updates = solved[..., :dv] - solved[..., dv:] @ state.transpose(-1, -2)
            rise_read = rise if isinstance(rise, float) else rise[..., read, :]
            out.append(rise_read * qc @ state.transpose(-1, -2) + reads @ updates)
        if part.stop < t:
            fall = 1.0 if log_alpha is None else torch.exp(g[..., -1:] - g)[..., None]
            keep = 1.0 if log_alpha is None else torch.exp(g[..., -1:, None])
            if segments is not None:  # the last token's example carries the state on
                fall = fall * (seg == seg[..., -1:])[..., None].to(q.dtype)
                if state is not None:
                    keep = keep * (carried_in[..., -1:] == seg[..., -1:])[..., None].to(q.dtype)
                carried_in = seg[..., -1:]
            carried = updates.transpose(-1, -2) @ (fall * kc)
            state = carried if state is None else keep * state + carried
    return torch.cat(out, dim=2)


def delta_product(q, k, v, beta, log_alpha=None, segments=None, householder: int = 1):
    """DeltaProduct's outputs (Siems et al. 2025): each token takes ``householder`` delta-rule steps, its
    decay once before the first, and is read after the last: ``S_t = alpha_t S_{t-1} prod_j (I - beta_tj
    k_tj k_tjᵀ) + ...`` (each step's ``+ beta_tj v_tj k_tjᵀ`` inside the product's order), ``o_t = S_t q_t``.
    ``q (B, H, T, D)``, ``k, v (B, H, T * n, D)`` and ``beta (B, H, T * n)`` with token t's steps at t * n ..
    t * n + n - 1, ``log_alpha (B, H, T)``. Run as ``chunked_delta_rule`` over the T * n steps, read at each
    token's last step (flash-linear-attention's chunked DeltaProduct: a zero query at the other steps)."""
    if householder == 1:
        return chunked_delta_rule(q, k, v, beta, log_alpha, segments)
    b, h, t, d = q.shape
    n = householder
    if log_alpha is not None:  # the decay before the token's first step, none between its steps
        log_alpha = F.pad(log_alpha[..., None], (0, n - 1)).reshape(b, h, t * n)
    if segments is not None:
        segments = segments.repeat_interleave(n, dim=1)
    return chunked_delta_rule(q, k, v, beta, log_alpha, segments, every=n)


def causal_conv(x: torch.Tensor, conv: nn.Conv1d, segments: torch.Tensor | None = None) -> torch.Tensor:
    """``conv`` (depthwise, width ``CONV``) over ``x (B, T, C)`` looking back
    only: what ``conv(x.transpose(1, 2))`` with the tail cut gives, as shifted
    multiply-adds (faster on a CPU than the convolution's backward pass).
    With ``segments (B, T)``, a token looks back within its own example only."""
    keeps = None
    if segments is not None:  # keeps[b, t, k]: the token CONV - 1 - k back is in token t's example
        own = F.pad(segments, (CONV - 1, 0), value=-2)  # -2: no example (padding is -1)
        keeps = torch.stack([own[:, k:k + x.shape[1]] == segments for k in range(CONV - 1)], -1).to(x.dtype)
    return ShiftedMultiplyAdds.apply(x, conv.weight, conv.bias, keeps)


class ShiftedMultiplyAdds(torch.autograd.Function):
    """``causal_conv``'s sums: ``bias + Σ_k weight_k · (x shifted CONV - 1 - k back) · keep_k``, added in
    order of k. Its backward gives autograd's numbers for these operations (the same products, added in
    the order autograd adds them) without its zero-padded copy of x's gradient per shift."""

    @staticmethod
    def forward(ctx, x, weight, bias, keeps):
        t, padded = x.shape[1], F.pad(x, (0, 0, CONV - 1, 0))
        out, shifts = bias.expand(x.shape), []
        for k in range(CONV):  # weight k multiplies the token CONV - 1 - k back
            shifted = padded[:, k:k + t]
            if keeps is not None and k < CONV - 1:
                shifted = shifted * keeps[..., k, None]
            out = torch.addcmul(out, weight[:, 0, k], shifted)
            shifts.append(shifted)
        ctx.save_for_backward(weight, keeps, *shifts)
        return out

    @staticmethod
    def backward(ctx, grad):
        weight, keeps, *shifts = ctx.saved_tensors
        t = grad.shape[1]
        grad_x = grad * weight[:, 0, CONV - 1]
        for k in reversed(range(max(0, CONV - t), CONV - 1)):  # autograd's order: the last shift's first
            back = CONV - 1 - k  # (a shift back as far as the row is long reaches no token)
            part = grad[:, back:] * weight[:, 0, k]
            if keeps is not None:
                part = part * keeps[:, back:, k, None]
            grad_x[:, :t - back] += part
        grad_weight = torch.stack([(grad * shifted).sum((0, 1)) for shifted in shifts], -1)[:, None]
        return grad_x, grad_weight, grad.sum((0, 1)), None


class DeltaMixer(nn.Module):
    """One layer's delta-rule token mixer (its input is already normalized)."""

    def __init__(self, size: ModelSize, gated: bool, beta_range: float, householder: int = 1):
        super().__init__()
        d, heads, n = size.d_model, size.n_heads, householder
        if d % heads:
            raise ValueError(f"the delta rule splits d_model {d} into {heads} heads: it must divide")
        self.heads, self.gated, self.beta_range, self.householder = heads, gated, beta_range, householder
        self.qkv = nn.Linear(d, (1 + 2 * n) * d, bias=False)  # q, then n keys and n values (DeltaProduct's steps)
        self.conv = nn.Conv1d((1 + 2 * n) * d, (1 + 2 * n) * d, CONV, groups=(1 + 2 * n) * d)  # by ``causal_conv``
        self.per_head = nn.Linear(d, (n + 1) * heads if gated else n * heads)  # n betas' logits[, the decay's]
        self.norm = nn.Parameter(torch.ones(d // heads))
        if gated:
            dt = torch.exp(torch.rand(heads) * (np.log(DT_MAX) - np.log(DT_MIN)) + np.log(DT_MIN))
            self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt
            self.A_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(A_MIN, A_MAX)))
            self.gate = nn.Linear(d, d, bias=False)
        self.out = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
        b, t, d = x.shape
        n, heads = self.householder, self.heads
        mixed = F.silu(causal_conv(self.qkv(x), self.conv, segments))
        q, k, v = mixed.split((d, n * d, n * d), dim=-1)
        q = q.reshape(b, t, heads, -1).transpose(1, 2)
        # token i's step j at i * n + j; each head's steps in one block (else the chunk's solve copies them)
        k, v = (part.reshape(b, t, n, heads, -1).permute(0, 3, 1, 2, 4).reshape(b, heads, t * n, -1).contiguous()
                for part in (k, v))
        q, k = F.normalize(q, dim=-1) * q.shape[-1] ** -0.5, F.normalize(k, dim=-1)
        beta, *decay = self.per_head(x).transpose(1, 2).split(n * heads, dim=1)
        beta = beta.reshape(b, n, heads, t).permute(0, 2, 3, 1).reshape(b, heads, t * n)
        beta = self.beta_range * torch.sigmoid(beta).contiguous()
        log_alpha = None
        if self.gated:
            log_alpha = -torch.exp(self.A_log)[:, None] * F.softplus(decay[0] + self.dt_bias[:, None])
        o = F.rms_norm(delta_product(q, k, v, beta, log_alpha, segments, n), (d // heads,), self.norm, RMS_EPS)
        o = o.transpose(1, 2).reshape(b, t, d)
        return self.out(o * F.silu(self.gate(x)) if self.gated else o)


class DeltaNet(RunModel):
    """``forward(tokens (B, T), positions, segments=None) -> logits (B, T, V)``;
    positions are ignored. It packs sequences: with ``segments``, each
    example in a row starts from a zero state and an empty convolution window."""

    packs_sequences = True

    def __init__(self, vocab_size: int, size: ModelSize, gated: bool, beta_range: float, householder: int = 1):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, size.d_model)
        self.mixers = nn.ModuleList(DeltaMixer(size, gated, beta_range, householder) for _ in range(size.n_layers))
        self.mlps = nn.ModuleList(nn.Sequential(nn.LayerNorm(size.d_model), nn.Linear(size.d_model, size.d_ff),
                                                nn.GELU(), nn.Linear(size.d_ff, size.d_model))
                                  for _ in range(size.n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(size.d_model) for _ in range(size.n_layers))
        self.norm = nn.LayerNorm(size.d_model)
        self.head = nn.Linear(size.d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, positions=None, segments: torch.Tensor | None = None) -> torch.Tensor:
        h = self.embedding(tokens)
        for norm, mixer, mlp in zip(self.norms, self.mixers, self.mlps):
            h = h + mixer(norm(h), segments)
            h = h + mlp(h)
        return self.head(self.norm(h))


def delta_rule_flops(token_lengths, size: ModelSize, vocab: int, gated: bool = False, householder: int = 1) -> float:
    """Forward FLOPs of sequences of the given token lengths, counted as the
    recurrence does them: per token and layer the projections (q, ``householder``
    keys, values and betas, out; gated: decay and gate), the convolution, per
    head and step the state update (``S k``, the rank-one update; decay) and
    the read-out, the MLP; then the head."""
    n = np.asarray(token_lengths, dtype=float)
    d, f, heads, h = size.d_model, size.d_ff, size.n_heads, householder
    dh = d // heads
    projections = 2 * d * ((1 + 2 * h) * d + h * heads + d) + (2 * d * (heads + d) if gated else 0)
    recurrence = heads * (h * (2 * dh * dh + 3 * dh * dh) + 2 * dh * dh)
    per_layer = projections + 2 * CONV * (1 + 2 * h) * d + recurrence + 4 * d * f
    return float((n * (size.n_layers * per_layer + 2 * d * vocab)).sum())


def _register(name: str, gated: bool, negative: bool, rank: float, householder: int = 1) -> None:
    beta_range = 2.0 if negative else 1.0
    what = ("gated delta rule (Yang et al. 2025)" if gated else "delta rule (Schlag et al. 2021, Yang et al. 2024)"
            if householder == 1 else f"DeltaProduct (Siems et al. 2025): {householder} delta-rule steps per token")
    what += ", beta in (0, 2): negative eigenvalues (Grazzi et al. 2025)" if negative else ", beta in (0, 1)"

    def build(vocab_size: int, size: ModelSize) -> DeltaNet:
        return DeltaNet(vocab_size, size, gated, beta_range, householder)

    def flops(token_lengths, size, vocab):
        return delta_rule_flops(token_lengths, size, vocab, gated, householder)

    # DeltaProduct 2: its pairs scaled by beta before their product, its queries only at the read steps (rounding)
    register_family(name, rank=rank, flops=flops, version=2 if householder > 1 else 1,
                    description=f"linear recurrence with a matrix state per head, {what}; "
                    "d_model wide, n_layers deep, n_heads heads")(build)


# their rows after the state-space model's, in this order (DeltaProduct's before the Hugging Face families')
for _rank, (_name, _gated, _negative, _householder) in zip((80, 90, 100, 110, 112, 114, 116, 118), (
        ("deltanet", False, False, 1), ("deltanet-negative", False, True, 1), ("gated-deltanet", True, False, 1),
        ("gated-deltanet-negative", True, True, 1), ("deltaproduct-2", False, False, 2),
        ("deltaproduct-2-negative", False, True, 2), ("deltaproduct-3", False, False, 3),
        ("deltaproduct-3-negative", False, True, 3))):
    _register(_name, _gated, _negative, rank=_rank, householder=_householder)
