"""``ssm``: a selective state-space baseline in the style of Mamba-2 (Dao &
Gu 2024, its SSD layer), the diagonal selective recurrence of Mamba (Gu &
Dao 2023) with one decay per head.

Each of ``n_layers`` residual blocks normalises its input (RMSNorm), projects
it to ``E = 2 d_model`` channels (split into heads of ``HEAD_DIM``), a gate of
as many, the input and output maps ``B_t``, ``C_t`` (``N = STATE`` wide) and
one step ``dt_t`` per head; mixes channels, ``B`` and ``C`` over the last 4
tokens (a causal depthwise convolution, then SiLU) and runs, per head, the
linear recurrence

    h_t = exp(dt_t * A) h_{t-1} + dt_t x_t B_t^T,    y_t = h_t C_t + D x_t

(``h`` is HEAD_DIM x N; ``A = -exp(A_log) < 0`` is learned per head, so the
decay is a scalar times the identity: diagonal). ``dt_t``, ``B_t`` and
``C_t`` depend on the token: the *selection*. The output is gated by SiLU of
the gate branch and projected back to ``d_model``; a final RMSNorm and an
untied head give the logits.

The recurrence runs as a chunked scan (``chunked_scan``, SSD's chunked
algorithm): inside chunks of ``SCAN_CHUNK`` tokens in parallel (a masked,
decay-weighted product of ``C`` and ``B``), between chunks by carrying the
state, so memory grows with sequence x chunk, not sequence squared, and a
decay is only ever raised to a non-positive log (no overflow, no division).
It equals the step-by-step recurrence (``naive_scan``, tested).

Differences from Mamba-2, chosen for a small CPU baseline: plain torch (no
fused kernel), head dim 16 and state 16 (Mamba-2: 64 and 64-128), the
output gated as in Mamba-1 (no norm inside the gate), weight decay on every
weight (Mamba exempts A and D). Positions are not used: as in the recurrent
baselines, order comes from the recurrence alone.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.families import ModelSize, RunModel, register_family

EXPAND = 2  # channels per model dimension (Mamba's default)
HEAD_DIM = 16  # channels per head, each head one decay
STATE = 16  # width of B and C
CONV = 4  # causal convolution width (Mamba's default)
DT_MIN, DT_MAX = 1e-3, 1e-1  # initial steps, log-uniform (Mamba's default)
A_MIN, A_MAX = 1.0, 16.0  # initial -A per head, uniform (Mamba-2's default)
SCAN_CHUNK = 32
RMS_EPS = 1e-5


def naive_scan(x: torch.Tensor, log_decay: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The definition, one token at a time: ``x (S, T, H, P)`` (inputs times
    their step), ``log_decay (S, T, H)`` (``dt * A``), ``b, c (S, T, N)``;
    ``h_t = exp(log_decay_t) h_{t-1} + x_t b_t^T`` from zero, ``y_t = h_t c_t``."""
    state, ys = x.new_zeros(*x.shape[:1], *x.shape[2:], b.shape[-1]), []
    for t in range(x.shape[1]):
        state = torch.exp(log_decay[:, t])[..., None, None] * state + x[:, t, ..., None] * b[:, t, None, None, :]
        ys.append(torch.einsum("shpn,sn->shp", state, c[:, t]))
    return torch.stack(ys, dim=1)


def chunked_scan(x: torch.Tensor, log_decay: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                 chunk: int = SCAN_CHUNK) -> torch.Tensor:
    """``naive_scan``'s result: parallel inside chunks, the state carried between them."""
    s, t, h, p = x.shape
    n_chunks = -(-t // chunk)
    k = -(-t // n_chunks)  # chunks as even as they can be: the least padding
    pad = n_chunks * k - t  # padded tokens add nothing (x = 0) and decay nothing (log 0), and come last
    x, log_decay, b, c = (F.pad(v, (0, 0) * (v.dim() - 2) + (0, pad)) for v in (x, log_decay, b, c))
    x = x.view(s, n_chunks, k, h, p)
    b, c = b.view(s, n_chunks, k, -1), c.view(s, n_chunks, k, -1)
    cum = log_decay.view(s, n_chunks, k, h).permute(0, 3, 1, 2).cumsum(-1)  # (S, H, chunks, K)
    causal = torch.ones(k, k, dtype=torch.bool, device=x.device).tril()
    decay = torch.exp((cum[..., :, None] - cum[..., None, :]).masked_fill(~causal, float("-inf")))  # l from s
    inside = torch.einsum("zcls,zhcls,zcshp->zclhp", torch.einsum("zcln,zcsn->zcls", c, b), decay, x)
    own = torch.einsum("zcsn,zhcs,zcshp->zchpn", b, torch.exp(cum[..., -1:] - cum), x)  # each chunk's end state
    through = torch.exp(cum[..., -1])  # (S, H, chunks): decay across a whole chunk
    state, entering = torch.zeros_like(own[:, 0]), []
    for i in range(n_chunks):
        entering.append(state)
        state = through[:, :, i, None, None] * state + own[:, i]
    before = torch.einsum("zcln,zchpn,zhcl->zclhp", c, torch.stack(entering, dim=1), torch.exp(cum))
    return (inside + before).reshape(s, n_chunks * k, h, p)[:, :t]


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * weight


class SSDBlock(nn.Module):
    """One residual block's mixer (its input is already normalised)."""

    def __init__(self, size: ModelSize):
        super().__init__()
        d, e = size.d_model, EXPAND * size.d_model
        heads, mixed = e // HEAD_DIM, e + 2 * STATE
        self.heads = heads
        self.conv = nn.Conv1d(mixed, mixed, CONV, groups=mixed, padding=CONV - 1)  # causal: the tail is cut
        dt = torch.exp(torch.rand(heads) * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
        self.in_proj = nn.Linear(d, e + mixed + heads, bias=False)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt
        self.A_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(A_MIN, A_MAX)))
        self.D = nn.Parameter(torch.ones(heads))
        self.out_proj = nn.Linear(e, d, bias=False)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        b, t, _ = u.shape
        e = self.heads * HEAD_DIM
        gate, mixed, dt = self.in_proj(u).split([e, e + 2 * STATE, self.heads], dim=-1)
        mixed = self.conv(mixed.transpose(1, 2))[..., :t].transpose(1, 2)
        x, b_in, c_out = F.silu(mixed).split([e, STATE, STATE], dim=-1)
        dt = F.softplus(dt + self.dt_bias)  # (B, T, H)
        log_decay = dt * -torch.exp(self.A_log)
        x = x.reshape(b, t, self.heads, HEAD_DIM)
        y = chunked_scan(x * dt[..., None], log_decay, b_in, c_out)
        y = (y + self.D[:, None] * x).flatten(-2)
        return self.out_proj(y * F.silu(gate))


class StateSpace(RunModel):
    """``forward(tokens (B, T), positions) -> logits (B, T, V)``; positions are ignored."""

    def __init__(self, vocab_size: int, size: ModelSize):
        super().__init__()
        if size.d_model % (HEAD_DIM // EXPAND):
            raise ValueError(f"ssm splits its {EXPAND} x d_model channels into heads of {HEAD_DIM}: d_model must be a "
                             f"multiple of {HEAD_DIM // EXPAND}, not {size.d_model}")
        self.embedding = nn.Embedding(vocab_size, size.d_model)
        self.norms = nn.ParameterList(nn.Parameter(torch.ones(size.d_model)) for _ in range(size.n_layers))
        self.blocks = nn.ModuleList(SSDBlock(size) for _ in range(size.n_layers))
        self.norm = nn.Parameter(torch.ones(size.d_model))
        self.head = nn.Linear(size.d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, positions=None) -> torch.Tensor:
        h = self.embedding(tokens)
        for norm, block in zip(self.norms, self.blocks):
            h = h + block(_rms_norm(h, norm))
        return self.head(_rms_norm(h, self.norm))


def state_space_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Forward FLOPs of sequences of the given token lengths, counted as the
    recurrence would do them (the chunked scan does about as much): per token
    and layer the in and out projections (a multiply-add is 2), the
    convolution, and per head channel and state the update (decay multiply,
    input multiply, add) and the read-out (multiply-add); then the head."""
    n = np.asarray(token_lengths, dtype=float)
    d, e = size.d_model, EXPAND * size.d_model
    heads, mixed = e // HEAD_DIM, e + 2 * STATE
    per_layer = 2 * (d * (e + mixed + heads) + e * d) + 2 * CONV * mixed + 5 * e * STATE
    return float((n * (size.n_layers * per_layer + 2 * d * vocab)).sum())


@register_family("ssm", rank=70, flops=state_space_flops, size_fields=("d_model", "n_layers"),
                 description="selective diagonal state-space model (Mamba-2-style SSD blocks, chunked scan), "
                             "d_model wide, n_layers deep")
def build(vocab_size: int, size: ModelSize) -> StateSpace:
    return StateSpace(vocab_size, size)
