"""``cope``: contextual position encoding (Golovneva et al. 2024).

Positions are counted by the content: for query i, a gate
``g_ij = sigmoid(q_i . k_j / sqrt(d_head))`` says whether key j counts, and
the position of key j is ``p_ij = sum_{m=j..i} g_im`` (a fractional count of
the keys that count between j and i), capped at ``max_positions - 1``. The
logit of (i, j) gets ``q_i . e[p_ij]``, with ``e`` a learned table of
``max_positions`` vectors of the head dimension, interpolated linearly
between ``e[floor p]`` and ``e[ceil p]`` (computed as the paper does: the
integer logits ``q_i . e[n]`` first, then interpolated). The table starts at
zero, as in the paper, and is shared by the heads; unlike the paper (one per
layer), one table serves every layer, as one encoding module does here.
It uses the ``content_bias`` hook: the bias depends on q and k.
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def cope_positions(q: torch.Tensor, k: torch.Tensor, max_positions: int) -> torch.Tensor:
    """``p_ij = sum_{m=j..i} sigmoid(q_i . k_m / sqrt(d))`` for j <= i (0 above
    the diagonal), capped at ``max_positions - 1``; ``(B, H, T, T)``."""
    t = q.shape[-2]
    gates = torch.sigmoid(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5)
    gates = gates * torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    return gates.flip(-1).cumsum(-1).flip(-1).clamp(max=max_positions - 1)


@register_encoding("cope", rank=110, defaults={"max_positions": 64},
                   description="contextual positions counted by query-key gates (Golovneva et al.)")
class CoPE(PositionEncoding):
    def __init__(self, d_model, n_heads, max_positions):
        super().__init__(d_model, n_heads, max_positions=max_positions)
        self.table = nn.Parameter(torch.zeros(d_model // n_heads, max_positions))

    def content_bias(self, q, k, pos):
        p = cope_positions(q, k, self.params["max_positions"])
        at_integers = q @ self.table.to(q.dtype)  # (B, H, T, max_positions): q_i . e[n]
        floor = p.floor()
        low = at_integers.gather(-1, floor.long())
        high = at_integers.gather(-1, p.ceil().long())
        weight = (p - floor).to(q.dtype)
        return high * weight + low * (1 - weight)
