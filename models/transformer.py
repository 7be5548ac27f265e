"""The transformer: a small decoder-only pre-LayerNorm model with pluggable
positions, for one run (as nanoGPT writes it, plus the encoding's hooks).

Token embedding, then the encoding's ``embed`` (additive absolute
encodings); per block, causal multi-head self-attention whose queries and
keys the encoding's ``rotate`` turns and whose logits its ``bias`` (and a
query/key-dependent ``content_bias``, an input-dependent ``input_bias``)
shift, weighted by softmax or the encoding's ``attention_weights``, then a
GELU MLP, each as ``x + f(LayerNorm(x))``; a final LayerNorm and the head.
Each layer calls the per-layer hooks on the encoding ``encoding.layer``
gives it (the encoding itself, unless it has parts per layer).

Attention is ``scaled_dot_product_attention`` with a causal mask (``attend``); an
encoding's logit bias is folded into a float mask computed once per forward
and shared by the layers; a bias that depends on the layer's queries and
keys (``content_bias``) is added in each layer. It packs sequences: with
``segments``, a row holds several examples end to end and a token attends
only to the earlier tokens of its own example (every hook reads positions
from ``pos``, never from a slot's index, so each example keeps its own).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings.base import EMBEDDING_STD, PositionContext, PositionEncoding
from lengthbench.models.families import TRANSFORMER, ModelSize, RunModel, register_family


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


def allowed_keys(t: int, device, segments: torch.Tensor | None = None) -> torch.Tensor:
    """Which keys each query may attend to: the causal ``(T, T)`` mask, and
    with ``segments (B, T)`` only those of the query's own segment, ``(B, 1, T, T)``."""
    causal = _causal(t, device)
    if segments is None:
        return causal
    return causal & (segments[:, None, :, None] == segments[:, None, None, :])


def attention_mask(encoding: PositionEncoding, pos: torch.Tensor, t: int, dtype,
                   segments: torch.Tensor | None = None) -> torch.Tensor | None:
    """The encoding's logit bias with the allowed keys folded in (-inf where
    a key is not allowed); without a bias, 0 and -inf alone, or ``None``
    (plain causal attention) when there are no segments either. Additive
    once per forward, so no layer converts a boolean mask again."""
    bias = encoding.bias(pos, pos)
    if bias is None:
        return None if segments is None else additive_mask(allowed_keys(t, pos.device, segments), t, pos.device,
                                                            dtype)
    return bias.to(dtype).masked_fill(~allowed_keys(t, pos.device, segments), float("-inf"))


def with_layer_biases(encoding: PositionEncoding, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      pos: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor | None:
    """``mask`` plus the layer's biases that depend on its queries and keys
    (``content_bias``: CoPE) or its input (``input_bias``: forget gates,
    Householder products), or ``mask`` itself for an encoding without them."""
    for extra in (encoding.content_bias(q, k, pos), encoding.input_bias(x, q, k, pos)):
        if extra is not None:
            mask = additive_mask(mask, q.shape[-2], q.device, q.dtype) + extra.to(q.dtype)
    return mask


def additive_mask(mask: torch.Tensor | None, t: int, device, dtype) -> torch.Tensor:
    """``mask`` as logits to add: 0 where a key is allowed, -inf where not
    (a boolean mask of allowed keys or None, plain causal, converted; a float one as it is)."""
    if mask is not None and mask.dtype != torch.bool:
        return mask
    allowed = _causal(t, device) if mask is None else mask
    return torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, float("-inf"))


WRITTEN_OUT_MAX_LENGTH = 128  # longer training rows always go through the attention kernel


def attend_with_weights(encoding: PositionEncoding, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        mask: torch.Tensor | None, dropout: float) -> torch.Tensor:
    """Attention whose weights the encoding computes from the scaled logits
    (``attention_weights``: stick-breaking, scalable softmax) instead of softmax."""
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)
    weights = encoding.attention_weights(scores + additive_mask(mask, q.shape[-2], q.device, q.dtype))
    return (F.dropout(weights, dropout) if dropout else weights) @ v


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
           dropout: float) -> torch.Tensor:
    """Causal attention of ``q, k, v (B, H, T, Dh)`` under ``mask`` (boolean:
    the keys allowed; float: added to the logits; None: causal).
    ``scaled_dot_product_attention``, except in training (gradients needed)
    on short rows (at most ``WRITTEN_OUT_MAX_LENGTH`` tokens) with several CPU
    threads: there the same computation written out, since the backward pass
    of PyTorch's CPU flash kernel slows down with more threads on small
    problems (measured with 2 threads on the trainer's packed rows: 1.16x the
    steps/s at quick's shapes, 1.11x at the reference model's). Without
    gradients the kernel is faster at every length (evaluation at length 30:
    2.5x, at 100: 3.3x) and far leaner."""
    written_out = (q.requires_grad and not q.is_cuda and torch.get_num_threads() > 1
                   and q.shape[-2] <= WRITTEN_OUT_MAX_LENGTH)
    if not written_out:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None, dropout_p=dropout)
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)
    scores += additive_mask(mask, q.shape[-2], q.device, q.dtype)  # no backward pass of its own
    weights = scores.softmax(-1)
    return (F.dropout(weights, dropout) if dropout else weights) @ v


class Attention(nn.Module):
    """Causal multi-head self-attention with the encoding's rotation and biases.

    The layer calls the per-layer hooks on the encoding ``encoding.layer``
    gives it when it is built; a new module from there (its own parameters)
    is this layer's ``position``, the shared encoding is passed at every call."""

    def __init__(self, size: ModelSize, encoding: PositionEncoding, index: int = 0):
        super().__init__()
        if size.d_model % size.n_heads:
            raise ValueError(f"{size.n_heads} heads does not divide d_model {size.d_model} (each head takes an equal "
                             "share of the width)")
        self.n_heads, self.dropout = size.n_heads, size.dropout
        self.qkv, self.out = nn.Linear(size.d_model, 3 * size.d_model), nn.Linear(size.d_model, size.d_model)
        own = encoding.layer(index, size.n_layers)
        self.position = None if own is encoding else own
        self.weights_hook = "attention_weights" in own.layer_hooks()

    def forward(self, x, encoding: PositionEncoding, pos, mask):
        b, t, d = x.shape
        encoding = self.position if self.position is not None else encoding
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)  # (B, H, T, Dh)
        q, k = encoding.rotate(q, k, pos)
        mask = with_layer_biases(encoding, x, q, k, pos, mask)
        dropout = self.dropout if self.training else 0.0
        if self.weights_hook:
            y = attend_with_weights(encoding, q, k, v, mask, dropout)
        else:
            y = attend(q, k, v, mask, dropout)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """``x + attention(ln1(x))``, then ``x + mlp(ln2(x))`` (GELU)."""

    def __init__(self, size: ModelSize, encoding: PositionEncoding, index: int = 0):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(size.d_model), nn.LayerNorm(size.d_model)
        self.attn = Attention(size, encoding, index)
        self.mlp_in, self.mlp_out = nn.Linear(size.d_model, size.d_ff), nn.Linear(size.d_ff, size.d_model)
        self.dropout = nn.Dropout(size.dropout)

    def forward(self, h, encoding, pos, mask):
        h = h + self.attn(self.ln1(h), encoding, pos, mask)
        return h + self.dropout(self.mlp_out(F.gelu(self.mlp_in(self.ln2(h)))))


class Transformer(RunModel):
    """``forward(tokens (B, T), positions (B|1, T), segments=None) -> logits (B, T, V)``.

    Layers are created in a fixed order (token embedding, per block the
    attention's qkv and output projections and the MLP's two, the head), then
    the embedding is redrawn at ``EMBEDDING_STD``, so a seed always gives the
    same weights; the encoding was built (and seeded) before them."""

    packs_sequences = True

    def __init__(self, vocab_size: int, size: ModelSize, encoding: PositionEncoding):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, size.d_model)
        self.encoding = encoding
        self.blocks = nn.ModuleList(Block(size, encoding, index) for index in range(size.n_layers))
        self.ln_f = nn.LayerNorm(size.d_model)
        self.head = nn.Linear(size.d_model, vocab_size)
        self.dropout = nn.Dropout(size.dropout)
        nn.init.normal_(self.token_embedding.weight, std=EMBEDDING_STD)

    def positions(self, tokens, position_ids, seq_lens, generator) -> torch.Tensor:
        return encoded_positions(self.encoding, tokens, position_ids, seq_lens, self.training, generator)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor,
                segments: torch.Tensor | None = None) -> torch.Tensor:
        h = self.dropout(self.encoding.embed(self.token_embedding(tokens), positions))
        mask = attention_mask(self.encoding, positions, tokens.shape[1], h.dtype, segments)
        for block in self.blocks:
            h = block(h, self.encoding, positions, mask)
        return self.head(self.ln_f(h))


def position_parameters(model: nn.Module):
    """``(name, parameter)`` of a transformer's encoding (named as in the
    encoding) and of the parts of it its layers own (``blocks.0.attn.position.gate.weight``)."""
    return [(name.removeprefix("encoding."), p) for name, p in model.named_parameters()
            if name.startswith("encoding.") or ".attn.position." in name]


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


register_family(TRANSFORMER, rank=10, takes_encoding=True, flops=transformer_flops,
                not_applicable=encoding_not_applicable,
                description="decoder-only pre-LayerNorm transformer; takes a position encoding")(Transformer)
