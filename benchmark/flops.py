"""Useful FLOPs of a run: the arithmetic its real (non-padding) tokens need,
which is what speed is measured against (``perf``) and what a grid costs
(``run --plan``). Each model family declares its forward FLOPs in the
registry (``FamilyEntry.flops``)."""

from __future__ import annotations

from lengthbench.models.families import FAMILIES, ModelSize


def forward_flops(token_lengths, size: ModelSize, vocab: int, family: str = "transformer") -> float:
    """Forward FLOPs of sequences of the given token lengths."""
    return FAMILIES[family].flops(token_lengths, size, vocab)


def training_flops(token_lengths, size: ModelSize, vocab: int, family: str = "transformer") -> float:
    """Forward + backward: three forward passes' worth."""
    return 3 * forward_flops(token_lengths, size, vocab, family)
