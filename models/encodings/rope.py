"""``rope``: rotary position embedding (Su et al. 2021).

Query/key dimension pairs are rotated by ``pos * theta_t`` with
``theta_t = base^(-2t/d_head)``, base 10000, on all head dimensions. Pair
layout: split halves (dimension t pairs with t + d_head/2, as in GPT-NeoX and
Hugging Face Llama), not interleaved. ``q_i . k_j`` depends on i - j only.
"""

import torch

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def rotate_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


@register_encoding("rope", defaults={"base": 10000.0}, description="rotary position embedding")
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

    def rotate(self, q, k, pos):
        angles = pos.to(torch.float32)[:, None, :, None] * self.inv_freq  # (B|1, 1, T, Dh/2)
        cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)
        return rotate_half(q, cos, sin), rotate_half(k, cos, sin)
