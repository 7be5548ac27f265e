"""``kerple-log`` and ``kerple-power``: kernelized relative biases (Chi et
al. 2022).

* log: ``-r1 * log(1 + r2 * d)``;
* power: ``-r1 * d^r2``;

with d = i - j and r1, r2 learned per head, kept >= 0.01 (power: r2 <= 2)
by clamping in the forward pass, as in the paper. Initialisation (ours; the
paper does not fix one): r1 = 1, r2 = 1 for log; r1 = 1, r2 = 0.5 for power.
Both biases decrease with distance for any admissible r1, r2.
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, register_encoding

MIN_PARAM = 0.01


class _Kerple(PositionEncoding):
    shift_invariant = True
    r2_max: float | None = None

    def __init__(self, d_model, n_heads, r1_init, r2_init):
        super().__init__(d_model, n_heads, r1_init=r1_init, r2_init=r2_init)
        self.r1 = nn.Parameter(torch.full((n_heads,), float(r1_init)))
        self.r2 = nn.Parameter(torch.full((n_heads,), float(r2_init)))

    def kernel(self, distance: torch.Tensor, r2: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def bias(self, q_pos, k_pos):
        distance = (q_pos[:, :, None] - k_pos[:, None, :]).float().clamp(min=0)[:, None]
        r1 = self.r1.clamp(min=MIN_PARAM)[None, :, None, None]
        r2 = self.r2.clamp(min=MIN_PARAM, max=self.r2_max)[None, :, None, None]
        return -r1 * self.kernel(distance, r2)


@register_encoding("kerple-log", defaults={"r1_init": 1.0, "r2_init": 1.0},
                   description="KERPLE logarithmic kernel bias (Chi et al.)")
class KerpleLog(_Kerple):
    def kernel(self, distance, r2):
        return torch.log1p(r2 * distance)


@register_encoding("kerple-power", defaults={"r1_init": 1.0, "r2_init": 0.5},
                   description="KERPLE power kernel bias (Chi et al.)")
class KerplePower(_Kerple):
    r2_max = 2.0

    def kernel(self, distance, r2):
        # 0^r2 = 0, written so the gradient in r2 at distance 0 is 0, not NaN
        return torch.where(distance > 0, distance.clamp(min=1).pow(r2), torch.zeros_like(distance))
