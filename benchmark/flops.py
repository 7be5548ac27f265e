"""Useful FLOPs of the transformer: the arithmetic real (non-padding) tokens
need, which is what speed is measured against (``perf``) and what a grid
costs (``run --plan``)."""

from __future__ import annotations

import numpy as np

from models.transformer import ModelSize


def forward_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Forward FLOPs of sequences of the given token lengths: the attention
    and MLP projections, the causal attention scores and mixing, the head."""
    n = np.asarray(token_lengths, dtype=float)
    d, f = size.d_model, size.d_ff
    per_layer = 2 * n * (4 * d * d + 2 * d * f) + 2 * d * n * (n + 1)
    return float((size.n_layers * per_layer + 2 * n * d * vocab).sum())


def training_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Forward + backward: three forward passes' worth."""
    return 3 * forward_flops(token_lengths, size, vocab)
