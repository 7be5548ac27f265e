"""Useful FLOPs of a model: the arithmetic real (non-padding) tokens need,
which is what speed is measured against (``perf``) and what a grid costs
(``run --plan``)."""

from __future__ import annotations

import numpy as np

from lengthbench.models.recurrent import GATES, STACK_ACTIONS, STACK_CELL, TAPE_ACTIONS, TAPE_CELL
from lengthbench.models.transformer import ModelSize


def forward_flops(token_lengths, size: ModelSize, vocab: int, family: str = "transformer") -> float:
    """Forward FLOPs of sequences of the given token lengths. Transformer:
    the attention and MLP projections, the causal attention scores and
    mixing, the head. Recurrent: the input and recurrent projections per
    token, the stack's or tape's reads, writes and (over all its cells) update, the head."""
    n = np.asarray(token_lengths, dtype=float)
    d, f = size.d_model, size.d_ff
    if family in GATES:
        per_token = 2 * 2 * d * GATES[family] * d
        if family == "stack-rnn":
            per_token += 2 * (2 * STACK_CELL * d + STACK_ACTIONS * d) + 3 * 2 * STACK_CELL * (n + 1)
        if family == "tape-rnn":  # 2n + 2 cells, each a mix of 5 moves
            per_token += 2 * (2 * TAPE_CELL * d + TAPE_ACTIONS * d) + TAPE_ACTIONS * 2 * TAPE_CELL * (2 * n + 2)
        return float((n * per_token + 2 * n * d * vocab).sum())
    per_layer = 2 * n * (4 * d * d + 2 * d * f) + 2 * d * n * (n + 1)
    return float((size.n_layers * per_layer + 2 * n * d * vocab).sum())


def training_flops(token_lengths, size: ModelSize, vocab: int, family: str = "transformer") -> float:
    """Forward + backward: three forward passes' worth."""
    return 3 * forward_flops(token_lengths, size, vocab, family)
