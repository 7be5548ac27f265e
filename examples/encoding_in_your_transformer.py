"""Any lengthbench encoding inside your own PyTorch transformer.

An encoding is an ``nn.Module`` with nine hooks, each the identity (or
plain softmax) unless the encoding overrides it; a plain causal
self-attention applies them all in a few lines, so FIRE, ALiBi, RoPE, CoPE,
KERPLE, a randomized variant, the Forgetting Transformer's gates, PaTH,
stick-breaking or scalable softmax drops into a model you already have:

1. ``positions(ids, ctx)``: the positions every other hook sees (randomized
   encodings draw sorted random ones while training);
2. ``embed(h, pos)``: absolute encodings add to the token embeddings;
3. ``bias(pos, pos)``: distance biases (ALiBi, T5, KERPLE, FIRE) add to the
   attention logits, once per forward, shared by the layers;
4. ``layer(index, n_layers)``: the encoding one attention layer uses, asked
   once when the model is built (a new module, with that layer's own
   parameters, for the Forgetting Transformer, PaTH and SSMax; a rotary or
   a position-free one per layer for ``rnope``); hooks 5 to 8 are called on it;
5. ``rotate(q, k, pos)``: rotary encodings turn queries and keys;
6. ``content_bias(q, k, pos)``: query/key-dependent biases (CoPE);
7. ``input_bias(x, q, k, pos)``: biases from the layer's input (forget
   gates, Householder products);
8. ``attention_weights(logits)``: the weights from the logits, softmax
   unless replaced (stick-breaking, scalable softmax);
9. ``project_parameters()``: called after every optimizer step, puts stored
   parameters back in their admissible set (KERPLE's bounds).

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

from lengthbench.models.encodings import PositionContext, PositionEncoding, build_encoding


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, encoding, index: int, n_layers: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        own = encoding.layer(index, n_layers)  # hook 4
        self.position = None if own is encoding else own  # this layer's own part, if it has one

    def forward(self, x, encoding, pos, bias):
        b, t, d = x.shape
        encoding = self.position if self.position is not None else encoding
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k = encoding.rotate(q, k, pos)  # hook 5
        logits = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        if bias is not None:
            logits = logits + bias  # hook 3, computed once per forward
        for extra in (encoding.content_bias(q, k, pos), encoding.input_bias(x, q, k, pos)):  # hooks 6, 7
            if extra is not None:
                logits = logits + extra
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        y = encoding.attention_weights(logits.masked_fill(~causal, float("-inf"))) @ v  # hook 8
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, encoding, index: int, n_layers: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads, encoding, index, n_layers)
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
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff, self.encoding, index, n_layers)
                                    for index in range(n_layers))
        self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        b, t = tokens.shape
        ids = torch.arange(t, device=tokens.device)[None]
        pos = self.encoding.positions(ids, PositionContext(b, t, None, self.training, generator))  # hook 1
        h = self.encoding.embed(self.token_embedding(tokens), pos)  # hook 2
        bias = self.encoding.bias(pos, pos)  # hook 3: (B|1, H|1, T, T) or None
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
        for module in model.modules():  # hook 9: KERPLE's bounds, projected after each step
            if isinstance(module, PositionEncoding):
                module.project_parameters()
        print(f"{encoding}: step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
