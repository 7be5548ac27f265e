"""``xpos``: extrapolatable position embedding (Sun et al. 2022).

RoPE (same split-halves pair layout and frequencies) whose rotation is
also scaled: pair t of a query at position i is multiplied by
``zeta_t^(i/gamma)`` and of a key at position j by ``zeta_t^(-j/gamma)``,
with ``zeta_t = (t/(d_head/2) + zeta_offset) / (1 + zeta_offset)`` (the
paper: offset 0.4, scale base gamma 512). So pair t of ``q_i . k_j`` is
RoPE's times ``zeta_t^((i-j)/gamma)``: it decays with distance, fastest for
the high-frequency pairs, and depends on i - j only. Positions are not
re-centred as in the paper's code (which does so only to keep the scales
in float range at very long lengths).
"""

import torch

from lengthbench.models.encodings.base import register_encoding
from lengthbench.models.encodings.rope import RoPE, rotate_half


@register_encoding("xpos", defaults={"base": 10000.0, "scale_base": 512.0, "zeta_offset": 0.4},
                   description="rotary with an exponential distance decay per pair (Sun et al.)")
class XPos(RoPE):
    def __init__(self, d_model, n_heads, base, scale_base, zeta_offset):
        super().__init__(d_model, n_heads, base)
        self.params.update(scale_base=scale_base, zeta_offset=zeta_offset)
        half = self.inv_freq.numel()
        self.register_buffer("zeta", (torch.arange(half, dtype=torch.float32) / half + zeta_offset)
                             / (1 + zeta_offset), persistent=False)

    def rotate(self, q, k, pos):
        pos = pos.to(torch.float32)[:, None, :, None]  # (B|1, 1, T, 1)
        angles = pos * self.inv_freq
        cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)
        scale = self.zeta ** (pos / self.params["scale_base"])
        scale = torch.cat([scale, scale], dim=-1).to(q.dtype)  # pair t is dimensions t and t + d_head/2
        return rotate_half(q, cos, sin) * scale, rotate_half(k, cos, sin) / scale
