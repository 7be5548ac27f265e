"""``xpos``: extrapolatable position embedding (Sun et al. 2022).

RoPE (same interleaved pair layout and frequencies) whose rotation is
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
from lengthbench.models.encodings.rope import RoPE, rotate_pairs


@register_encoding("xpos", rank=100, defaults={"base": 10000.0, "scale_base": 512.0, "zeta_offset": 0.4},
                   description="rotary with an exponential distance decay per pair (Sun et al.)")
class XPos(RoPE):
    def __init__(self, d_model, n_heads, base, scale_base, zeta_offset):
        super().__init__(d_model, n_heads, base)
        self.params.update(scale_base=scale_base, zeta_offset=zeta_offset)
        half = self.inv_freq.numel()
        self.register_buffer("zeta", (torch.arange(half, dtype=torch.float32) / half + zeta_offset)
                             / (1 + zeta_offset), persistent=False)

    def rotate(self, q, k, pos):
        query_turn, key_turn = self.rotations.get(pos, self._turns)
        return rotate_pairs(q, query_turn), rotate_pairs(k, key_turn)

    def _turns(self, pos):
        """The complex factors of a query's and a key's pairs: RoPE's rotation
        scaled by ``zeta^(pos/gamma)`` (query) and by its inverse (key)."""
        angles = self.angles(pos)
        scale = self.zeta ** (pos.to(torch.float32)[:, None, :, None] / self.params["scale_base"])
        return torch.polar(scale, angles), torch.polar(1 / scale, angles)
