"""Any lengthbench encoding inside your own PyTorch transformer.

An encoding is an ``nn.Module`` with five hooks, each the identity unless the
encoding overrides it; a plain causal self-attention applies all five in a
few lines, so FIRE, ALiBi, RoPE, CoPE, KERPLE or a randomized variant drops
into a model you already have:

1. ``positions(ids, ctx)``: the positions every other hook sees (randomized
   encodings draw sorted random ones while training);
2. ``embed(h, pos)``: absolute encodings add to the token embeddings;
3. ``rotate(q, k, pos)``: rotary encodings turn queries and keys;
4. ``bias(pos, pos)``: distance biases (ALiBi, T5, KERPLE, FIRE) add to the
   attention logits, once per forward, shared by the layers;
5. ``content_bias(q, k, pos)``: query/key-dependent biases (CoPE), per layer.

The model below is a nanoGPT-style decoder written from scratch; with the
same weights it computes exactly what lengthbench's own transformer computes
(a test holds this for every built-in encoding). Try it:

    python examples/encoding_in_your_transformer.py fire
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings import PositionContext, build_encoding


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

    def forward(self, x, encoding, pos, bias):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k = encoding.rotate(q, k, pos)  # hook 3
        logits = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        if bias is not None:
            logits = logits + bias  # hook 4, computed once per forward
        extra = encoding.content_bias(q, k, pos)  # hook 5
        if extra is not None:
            logits = logits + extra
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        y = logits.masked_fill(~causal, float("-inf")).softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.mlp_in, self.mlp_out = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, h, encoding, pos, bias):
        h = h + self.attn(self.ln1(h), encoding, pos, bias)
        return h + self.mlp_out(F.gelu(self.mlp_in(self.ln2(h))))


class TinyDecoder(nn.Module):
    """``forward(tokens (B, T)) -> logits (B, T, vocab)`` with any registered encoding."""

    def __init__(self, vocab_size: int, encoding: str, d_model: int = 64, n_heads: int = 4, n_layers: int = 2,
                 d_ff: int = 256):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.encoding = build_encoding(encoding, d_model, n_heads)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        b, t = tokens.shape
        ids = torch.arange(t, device=tokens.device)[None]
        pos = self.encoding.positions(ids, PositionContext(b, t, None, self.training, generator))  # hook 1
        h = self.encoding.embed(self.token_embedding(tokens), pos)  # hook 2
        bias = self.encoding.bias(pos, pos)  # hook 4: (B|1, H|1, T, T) or None
        for block in self.blocks:
            h = block(h, self.encoding, pos, bias)
        return self.head(self.ln_f(h))


def main(encoding: str = "fire") -> None:
    """A few steps of next-token training on random tokens, to show the
    model trains with the encoding's parameters among its own."""
    torch.manual_seed(0)
    model = TinyDecoder(vocab_size=16, encoding=encoding)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 16, (8, 24))
    for step in range(5):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"{encoding}: step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
