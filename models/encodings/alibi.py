"""``alibi``: attention with linear biases (Press et al. 2022).

Head h (1-based) adds ``-m_h * (i - j)`` to the logit of query i on key j.
For H a power of two, ``m_h = 2^(-8h/H)``; otherwise the slopes of the
nearest lower power of two P, then every other slope of the 2P list for the
remaining H - P heads (the reference implementation's rule).
"""

import math

import torch

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def alibi_slopes(n_heads: int) -> torch.Tensor:
    def power_of_two(n):
        return [2 ** (-8 * h / n) for h in range(1, n + 1)]

    p = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two(p)
    if p < n_heads:
        slopes += power_of_two(2 * p)[0::2][: n_heads - p]
    return torch.tensor(slopes, dtype=torch.float32)


@register_encoding("alibi", rank=50, description="linear distance bias per head (Press et al.)")
class ALiBi(PositionEncoding):
    shift_invariant = True

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def bias(self, q_pos, k_pos):
        dist = (q_pos[:, :, None] - k_pos[:, None, :]).to(torch.float32)  # (B|1, Tq, Tk)
        return -self.slopes[None, :, None, None] * dist[:, None]
