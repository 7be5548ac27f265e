"""A small decoder-only pre-LayerNorm transformer with pluggable positions.

Attention is ``scaled_dot_product_attention`` with a causal mask; when the
encoding supplies a logit bias it is folded into a float mask computed once
per forward and shared by all layers; a bias that depends on the layer's
queries and keys (``content_bias``) is added in each layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings.base import PositionContext, PositionEncoding


@dataclass(frozen=True)
class ModelSize:
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.0


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


def attention_mask(encoding: PositionEncoding, pos: torch.Tensor, t: int, dtype) -> torch.Tensor | None:
    """The encoding's logit bias with the causal mask folded in, or ``None``
    (plain causal attention) when it has no bias."""
    bias = encoding.bias(pos, pos)
    if bias is None:
        return None
    causal = torch.ones(t, t, dtype=torch.bool, device=pos.device).tril()
    return bias.to(dtype).masked_fill(~causal, float("-inf"))


def with_content_bias(encoding: PositionEncoding, q: torch.Tensor, k: torch.Tensor, pos: torch.Tensor,
                      mask: torch.Tensor | None) -> torch.Tensor | None:
    """``mask`` plus the encoding's query/key-dependent bias (CoPE), or
    ``mask`` itself for an encoding without one."""
    extra = encoding.content_bias(q, k, pos)
    if extra is None:
        return mask
    if mask is None:
        t = q.shape[-2]
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        mask = torch.zeros(t, t, dtype=q.dtype, device=q.device).masked_fill(~causal, float("-inf"))
    return mask + extra.to(q.dtype)


class Attention(nn.Module):
    def __init__(self, size: ModelSize):
        super().__init__()
        self.n_heads = size.n_heads
        self.qkv = nn.Linear(size.d_model, 3 * size.d_model)
        self.out = nn.Linear(size.d_model, size.d_model)
        self.dropout = size.dropout

    def forward(self, x, encoding, pos, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k = encoding.rotate(q, k, pos)
        mask = with_content_bias(encoding, q, k, pos, mask)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=mask is None,
            dropout_p=self.dropout if self.training else 0.0,
        )
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, size: ModelSize):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(size.d_model), nn.LayerNorm(size.d_model)
        self.attn = Attention(size)
        self.mlp = nn.Sequential(
            nn.Linear(size.d_model, size.d_ff), nn.GELU(), nn.Linear(size.d_ff, size.d_model),
            nn.Dropout(size.dropout),
        )

    def forward(self, x, encoding, pos, mask):
        x = x + self.attn(self.ln1(x), encoding, pos, mask)
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    """``forward(tokens, position_ids, seq_lens, generator) -> logits (B, T, V)``."""

    def __init__(self, vocab_size: int, size: ModelSize, encoding: PositionEncoding):
        super().__init__()
        self.size = size
        self.token_embedding = nn.Embedding(vocab_size, size.d_model)
        self.encoding = encoding
        self.drop = nn.Dropout(size.dropout)
        self.blocks = nn.ModuleList(Block(size) for _ in range(size.n_layers))
        self.ln_f = nn.LayerNorm(size.d_model)
        self.head = nn.Linear(size.d_model, vocab_size)
        nn.init.normal_(self.token_embedding.weight, std=0.02)

    def forward(self, tokens, position_ids=None, seq_lens=None, generator=None):
        b, t = tokens.shape
        pos = encoded_positions(self.encoding, tokens, position_ids, seq_lens, self.training, generator)
        h = self.drop(self.encoding.embed(self.token_embedding(tokens), pos))
        mask = attention_mask(self.encoding, pos, t, h.dtype)
        for block in self.blocks:
            h = block(h, self.encoding, pos, mask)
        return self.head(self.ln_f(h))
