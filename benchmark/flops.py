"""Useful FLOPs of a run: the arithmetic its real (non-padding) tokens need,
which is what speed is measured against (``perf``) and what a grid costs
(``run --plan``). Each model family declares its forward FLOPs in the
registry (``FamilyEntry.flops``)."""

from __future__ import annotations

from lengthbench.core.errors import InputError
from lengthbench.models.families import FAMILIES, ModelSize


def forward_flops(token_lengths, size: ModelSize, vocab: int, family: str = "transformer") -> float:
    """Forward FLOPs of sequences of the given token lengths; refused for a
    family that declares none (it is never costed as another family)."""
    flops = FAMILIES[family].flops
    if flops is None:
        raise InputError(f"model family {family!r} declares no FLOPs, so its runs cannot be costed: pass "
                         "flops=... to @register_family (forward FLOPs of sequences of the given token lengths)")
    return flops(token_lengths, size, vocab)


def training_flops(token_lengths, size: ModelSize, vocab: int, family: str = "transformer") -> float:
    """Forward + backward: three forward passes' worth."""
    return 3 * forward_flops(token_lengths, size, vocab, family)
