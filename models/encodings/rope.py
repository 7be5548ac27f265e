"""``rope``: rotary position embedding (Su et al. 2021).

Query/key dimension pairs are rotated by ``pos * theta_t`` with
``theta_t = base^(-2t/d_head)``, base 10000, on all head dimensions. Pair
layout: interleaved (dimensions 2t and 2t + 1 form pair t, as in the
RoFormer paper and Meta's LLaMA code), so a rotation is one complex
multiplication. ``q_i . k_j`` depends on i - j only.

The rotations depend on the positions only, which every layer shares: they
are computed once per positions tensor and reused by the layers that follow
(``RotationCache``).
"""

import torch

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def rotate_pairs(x: torch.Tensor, rotation: torch.Tensor) -> torch.Tensor:
    """``x (..., D)`` with each pair (2t, 2t + 1) multiplied, as a complex
    number, by ``rotation (..., D/2)`` (complex)."""
    pairs = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)))
    return torch.view_as_real(pairs * rotation).flatten(-2).to(x.dtype)


class RotationCache:
    """The last positions tensor and what was computed from it: the layers of
    one forward pass call ``rotate`` with the same tensor, so they share one
    computation (keyed by identity: a new tensor, even an equal one, is computed anew)."""

    def __init__(self):
        self.key, self.value = None, None

    def get(self, pos: torch.Tensor, compute):
        if self.key is not pos:
            self.key, self.value = pos, compute(pos)
        return self.value


@register_encoding("rope", rank=40, defaults={"base": 10000.0}, description="rotary position embedding")
class RoPE(PositionEncoding):
    shift_invariant = True

    def __init__(self, d_model, n_heads, base):
        super().__init__(d_model, n_heads, base=base)
        d_head = d_model // n_heads
        if d_head % 2:
            raise ValueError(f"rope needs an even head dimension, got {d_head}")
        self.register_buffer(
            "inv_freq", base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head),
            persistent=False,
        )
        self.rotations = RotationCache()

    def angles(self, pos: torch.Tensor) -> torch.Tensor:
        """``(B|1, 1, T, D_head/2)``: pair t of position p turns by ``p * theta_t``."""
        return pos.to(torch.float32)[:, None, :, None] * self.inv_freq

    def rotate(self, q, k, pos):
        rotation = self.rotations.get(pos, lambda p: torch.polar(torch.ones_like(a := self.angles(p)), a))
        return rotate_pairs(q, rotation), rotate_pairs(k, rotation)
