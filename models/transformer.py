"""The transformer: a small decoder-only pre-LayerNorm model with pluggable
positions, holding the weights of R runs at once.

Every weight outside the position encodings carries a leading *run*
dimension, so one batched matmul serves a whole training group (runs of one
task and shape that differ in seed and encoding); each run keeps its own
encoding module, whose hooks are applied per run, and attention runs per run
when an encoding adds a logit bias (its mask differs by run). A run alone is
R = 1, where every layer calls exactly what ``nn.Linear``/``nn.LayerNorm``
call, so a solo run rounds as a plain PyTorch model would (tested).

Attention is ``scaled_dot_product_attention`` with a causal mask; an
encoding's logit bias is folded into a float mask computed once per forward
and shared by the layers; a bias that depends on the layer's queries and
keys (``content_bias``) is added in each layer. Dropout works for R = 1 only:
its masks come from the process-wide random stream, which runs of a group
cannot each own.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings.base import EMBEDDING_STD, PositionContext, PositionEncoding
from lengthbench.models.families import TRANSFORMER, ModelSize, RunInit, register_family


def encoded_positions(encoding: PositionEncoding, tokens: torch.Tensor, position_ids, seq_lens,
                      train: bool, generator) -> torch.Tensor:
    """The positions every other hook sees, ``(B|1, T)``: the task's ids for a
    coupled encoding, else 0..T-1, passed through the encoding's ``positions``."""
    b, t = tokens.shape
    if encoding.uses_task_positions:
        if position_ids is None:
            raise ValueError("this encoding needs the task's position ids")
        pos = position_ids
    else:
        pos = torch.arange(t, device=tokens.device)[None]
    return encoding.positions(pos, PositionContext(b, t, seq_lens, train, generator))


def _causal(t: int, device) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()


def attention_mask(encoding: PositionEncoding, pos: torch.Tensor, t: int, dtype) -> torch.Tensor | None:
    """The encoding's logit bias with the causal mask folded in, or ``None``
    (plain causal attention) when it has no bias."""
    bias = encoding.bias(pos, pos)
    if bias is None:
        return None
    return bias.to(dtype).masked_fill(~_causal(t, pos.device), float("-inf"))


def with_content_bias(encoding: PositionEncoding, q: torch.Tensor, k: torch.Tensor, pos: torch.Tensor,
                      mask: torch.Tensor | None) -> torch.Tensor | None:
    """``mask`` plus the encoding's query/key-dependent bias (CoPE), or
    ``mask`` itself for an encoding without one."""
    extra = encoding.content_bias(q, k, pos)
    if extra is None:
        return mask
    if mask is None:
        t = q.shape[-2]
        mask = torch.zeros(t, t, dtype=q.dtype, device=q.device).masked_fill(~_causal(t, q.device), float("-inf"))
    return mask + extra.to(q.dtype)


def _overrides(encoding: PositionEncoding, hook: str) -> bool:
    return getattr(type(encoding), hook) is not getattr(PositionEncoding, hook)


def _split(x: torch.Tensor) -> list[torch.Tensor]:
    """Per-run views of a stacked tensor. ``unbind``/``squeeze``, not
    indexing: the backward of ``x[i]`` writes a zero-filled copy of the
    whole stack for every run."""
    return [x.squeeze(0)] if x.shape[0] == 1 else list(x.unbind())


def _join(parts: list[torch.Tensor]) -> torch.Tensor:
    """Inverse of ``_split`` (a view, not a copy, for a stack of one)."""
    return parts[0].unsqueeze(0) if len(parts) == 1 else torch.stack(parts)


def _pick(weight: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    """The chosen runs' slices of a stacked weight (all of it for ``None``)."""
    return weight if index is None else weight.index_select(0, index)


def _stacked(tensors) -> nn.Parameter:
    return nn.Parameter(torch.stack([t.detach() for t in tensors]).clone())


class RunLinear(nn.Module):
    """R ``nn.Linear`` layers as one: ``(R, B, T, in) -> (R, B, T, out)``,
    run r through its own weight and bias."""

    def __init__(self, layers: list[nn.Linear]):
        super().__init__()
        self.weight, self.bias = _stacked(m.weight for m in layers), _stacked(m.bias for m in layers)

    def forward(self, x: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
        weight, bias = _pick(self.weight, index), _pick(self.bias, index)
        n_runs, b, t, _ = x.shape
        if n_runs == 1:  # exactly ``nn.Linear``, forward and backward, so a solo run rounds as a plain model
            return F.linear(x.squeeze(0), weight.squeeze(0), bias.squeeze(0)).unsqueeze(0)
        y = torch.baddbmm(bias[:, None, :], x.reshape(n_runs, b * t, -1), weight.transpose(1, 2))
        return y.view(n_runs, b, t, -1)


class RunLayerNorm(nn.Module):
    """R affine ``nn.LayerNorm``s (one fused call per run, as ``nn.LayerNorm``)."""

    def __init__(self, n_runs: int, width: int):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(n_runs, width)), nn.Parameter(torch.zeros(n_runs, width))

    def forward(self, x: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
        weight, bias = _pick(self.weight, index), _pick(self.bias, index)
        return _join([F.layer_norm(a, x.shape[-1:], w, b) for a, w, b in zip(_split(x), _split(weight), _split(bias))])


class Attention(nn.Module):
    """Causal multi-head self-attention; each run's encoding rotates its
    queries and keys and adds its logit biases."""

    def __init__(self, size: ModelSize, qkv: list[nn.Linear], out: list[nn.Linear]):
        super().__init__()
        self.size = size
        self.qkv, self.out = RunLinear(qkv), RunLinear(out)

    def forward(self, x, index, encodings, positions, masks):
        qkv = self.qkv(x, index)
        n_runs, b, t, _ = qkv.shape
        heads = self.size.n_heads
        q, k, v = qkv.view(n_runs, b, t, 3, heads, -1).permute(3, 0, 1, 4, 2, 5)  # (R, B, H, T, Dh) each
        if any(_overrides(enc, "rotate") for enc in encodings):
            pairs = [enc.rotate(a, c, pos) for enc, a, c, pos in zip(encodings, _split(q), _split(k), positions)]
            q, k = _join([a for a, _ in pairs]), _join([c for _, c in pairs])
        if any(_overrides(enc, "content_bias") for enc in encodings):
            masks = [with_content_bias(enc, a, c, pos, m)
                     for enc, a, c, pos, m in zip(encodings, _split(q), _split(k), positions, masks)]
        dropout = self.size.dropout if self.training else 0.0
        if all(m is None for m in masks):
            y = F.scaled_dot_product_attention(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), is_causal=True,
                                               dropout_p=dropout).view(n_runs, b, heads, t, -1)
        else:
            y = _join([F.scaled_dot_product_attention(a, c, e, attn_mask=m, is_causal=m is None, dropout_p=dropout)
                       for a, c, e, m in zip(_split(q), _split(k), _split(v), masks)])
        return self.out(y.transpose(2, 3).reshape(n_runs, b, t, -1), index)


class Block(nn.Module):
    """``x + attention(ln1(x))``, then ``x + mlp(ln2(x))`` (GELU)."""

    def __init__(self, size: ModelSize, n_runs: int, layers: list[tuple[nn.Linear, ...]]):
        super().__init__()
        self.size = size
        self.ln1, self.ln2 = RunLayerNorm(n_runs, size.d_model), RunLayerNorm(n_runs, size.d_model)
        self.attn = Attention(size, [run[0] for run in layers], [run[1] for run in layers])
        self.mlp_in, self.mlp_out = RunLinear([run[2] for run in layers]), RunLinear([run[3] for run in layers])

    def forward(self, h, index, encodings, positions, masks):
        h = h + self.attn(self.ln1(h, index), index, encodings, positions, masks)
        return h + _dropout(self.mlp_out(F.gelu(self.mlp_in(self.ln2(h, index), index)), index), self.size,
                            self.training)


def _dropout(x: torch.Tensor, size: ModelSize, training: bool) -> torch.Tensor:
    return F.dropout(x, size.dropout, training) if size.dropout else x


def _initial_layers(vocab_size: int, size: ModelSize):
    """One run's layers, drawn from the process-wide stream (seeded by the
    caller) by ``nn``'s own initialisers, in the order a plain model creates
    them, so a seed gives the weights it always gave: the token embedding, per
    block the attention's qkv and output projections and the MLP's two, the
    head; then the embedding redrawn at ``EMBEDDING_STD``."""
    d = size.d_model
    embedding = nn.Embedding(vocab_size, d)
    blocks = [(nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, size.d_ff), nn.Linear(size.d_ff, d))
              for _ in range(size.n_layers)]
    head = nn.Linear(d, vocab_size)
    nn.init.normal_(embedding.weight, std=EMBEDDING_STD)
    return embedding, blocks, head


class Transformer(nn.Module):
    """``forward(tokens (R', B, T), positions [R' x (B|1, T)], runs) -> logits (R', B, T, V)``.

    ``runs`` picks a subset of the R runs (default: all), in order;
    ``tokens`` and ``positions`` then hold those runs only. Each run's
    weights come from its ``RunInit``: its seed, then its encoding, then its
    layers."""

    def __init__(self, vocab_size: int, size: ModelSize, runs: list[RunInit]):
        super().__init__()
        if not runs:
            raise ValueError("a model needs at least one run")
        if size.dropout and len(runs) > 1:
            raise ValueError("runs with dropout train alone (dropout masks come from one shared stream)")
        self.size, self.n_runs = size, len(runs)
        encodings, drawn = [], []
        for run in runs:
            torch.manual_seed(run.init_seed)
            encodings.append(run.make_encoding())
            drawn.append(_initial_layers(vocab_size, size))
        self.token_embedding = _stacked(embedding.weight for embedding, _, _ in drawn)
        self.encodings = nn.ModuleList(encodings)
        self.blocks = nn.ModuleList(Block(size, self.n_runs, [blocks[layer] for _, blocks, _ in drawn])
                                    for layer in range(size.n_layers))
        self.ln_f = RunLayerNorm(self.n_runs, size.d_model)
        self.head = RunLinear([head for _, _, head in drawn])

    def _shared(self) -> list[nn.Parameter]:
        """The stacked parameters (every one but the encodings'), in a plain model's order
        (listed once: clipping asks for them every step, for every run)."""
        if not hasattr(self, "_shared_parameters"):
            self._shared_parameters = [p for name, p in self.named_parameters() if not name.startswith("encodings.")]
        return self._shared_parameters

    def n_parameters(self, run: int) -> int:
        return (sum(p.numel() for p in self._shared()) // self.n_runs
                + sum(p.numel() for p in self.encodings[run].parameters()))

    def run_parameters(self, run: int) -> list[torch.Tensor]:
        """Run r's parameters (views into the stacked ones)."""
        return [p[run] for p in self._shared()] + list(self.encodings[run].parameters())

    def run_gradients(self, run: int) -> list[torch.Tensor]:
        """Run r's gradients (views into the stacked ones) in a plain model's
        parameter order (embedding, encoding, blocks, head), so that a norm
        over them rounds as the plain model's would."""
        shared = [p.grad[run] for p in self._shared() if p.grad is not None]
        own = [p.grad for p in self.encodings[run].parameters() if p.grad is not None]
        return shared[:1] + own + shared[1:]

    def positions(self, run: int, tokens, position_ids, seq_lens, generator) -> torch.Tensor:
        """One run's positions for a ``(B, T)`` batch (``encoded_positions``)."""
        return encoded_positions(self.encodings[run], tokens, position_ids, seq_lens, self.training, generator)

    def run_logits(self, tokens: torch.Tensor, position_ids=None, seq_lens=None, generator=None,
                   run: int = 0) -> torch.Tensor:
        """One run's logits ``(B, T, V)`` for a ``(B, T)`` batch, its positions
        drawn from ``generator`` (the contract checks use it)."""
        positions = self.positions(run, tokens, position_ids, seq_lens, generator)
        return self(tokens[None], [positions], [run])[0]

    def forward(self, tokens: torch.Tensor, positions: list[torch.Tensor],
                runs: list[int] | None = None) -> torch.Tensor:
        runs = list(range(self.n_runs)) if runs is None else list(runs)
        index = None if runs == list(range(self.n_runs)) else torch.tensor(runs, device=tokens.device)
        encodings = [self.encodings[r] for r in runs]
        n_runs, b, t = tokens.shape
        embedding = _pick(self.token_embedding, index)
        offsets = torch.arange(n_runs, device=tokens.device)[:, None, None] * embedding.shape[1]
        h = F.embedding(tokens + offsets, embedding.flatten(0, 1))
        if any(_overrides(enc, "embed") for enc in encodings):
            h = _join([enc.embed(x, pos) if _overrides(enc, "embed") else x
                       for enc, x, pos in zip(encodings, _split(h), positions)])
        h = _dropout(h, self.size, self.training)
        masks = [attention_mask(enc, pos, t, h.dtype) for enc, pos in zip(encodings, positions)]
        for block in self.blocks:
            h = block(h, index, encodings, positions, masks)
        return self.head(self.ln_f(h, index), index)


def transformer_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Forward FLOPs of sequences of the given token lengths: per layer the
    attention and MLP projections and the causal attention scores and mixing
    (query i attends to i + 1 keys), then the head."""
    n = np.asarray(token_lengths, dtype=float)
    d, f = size.d_model, size.d_ff
    per_layer = 2 * n * (4 * d * d + 2 * d * f) + 2 * d * n * (n + 1)
    return float((size.n_layers * per_layer + 2 * n * d * vocab).sum())


def encoding_not_applicable(task, encoding: PositionEncoding | None) -> str | None:
    """A transformer cell is n/a when its encoding cannot feed on the task."""
    return encoding.not_applicable(task)


register_family(TRANSFORMER, takes_encoding=True, flops=transformer_flops, not_applicable=encoding_not_applicable,
                description="decoder-only pre-LayerNorm transformer; takes a position encoding")(Transformer)
