"""Absolute encodings added to the token embeddings.

* ``learned``: a trained table of ``max_positions`` rows (GPT-2 style). Rows
  beyond the training lengths stay at their initialisation; an input longer
  than the table raises ``PositionsOutOfRange`` (recorded, not a crash).
* ``sinusoidal``: Vaswani et al. 2017, ``PE[p, 2i] = sin(p / base^(2i/d))``,
  ``PE[p, 2i+1] = cos(...)``, base 10000; defined for any position.

Both are added at the token embeddings' scale (``EMBEDDING_STD``): the learned
table is initialised at that std, and the sinusoid is multiplied by
``EMBEDDING_STD * sqrt(2)``, so each of its features has that root mean
square. Vaswani et al. instead scale the tokens up by sqrt(d_model) to meet a
unit sinusoid; the rule is the same (comparable scales), applied on the
position side so that every other encoding's model is unchanged.
"""

import math

import torch
from torch import nn

from lengthbench.models.encodings.base import (
    EMBEDDING_STD,
    PositionEncoding,
    check_table_range,
    register_encoding,
)


@register_encoding("learned", rank=20, defaults={"max_positions": 2048},
                   description="learned absolute position table")
class LearnedAbsolute(PositionEncoding):
    def __init__(self, d_model, n_heads, max_positions):
        super().__init__(d_model, n_heads, max_positions=max_positions)
        self.table = nn.Embedding(max_positions, d_model)
        nn.init.normal_(self.table.weight, std=EMBEDDING_STD)

    def embed(self, h, pos):
        check_table_range(pos, self.table.num_embeddings, "the learned position table")
        return h + self.table(pos)

    def reachable_parameters(self, longest):
        """The rows positions 0..longest-1 index; the rest stay at their initialization."""
        return min(longest, self.table.num_embeddings) * self.d_model


def sinusoid(pos: torch.Tensor, dim: int, base: float) -> torch.Tensor:
    """``(..., T)`` positions -> ``(..., T, dim)`` sin/cos features."""
    inv_freq = torch.exp(
        -math.log(base) * torch.arange(0, dim, 2, device=pos.device, dtype=torch.float32) / dim
    )
    angles = pos.to(torch.float32)[..., None] * inv_freq
    out = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)
    return out[..., :dim]


@register_encoding("sinusoidal", rank=30, defaults={"base": 10000.0}, version=2,
                   description="fixed sinusoidal absolute encoding, at the token embeddings' scale")
class Sinusoidal(PositionEncoding):
    def __init__(self, d_model, n_heads, base):
        super().__init__(d_model, n_heads, base=base)

    def embed(self, h, pos):
        return h + (EMBEDDING_STD * math.sqrt(2) * sinusoid(pos, self.d_model, self.params["base"])).to(h.dtype)
