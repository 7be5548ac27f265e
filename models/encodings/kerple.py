"""``kerple-log`` and ``kerple-power``: kernelized relative biases (Chi et
al. 2022), parameterized as the authors' code does (version 2).

* log: ``-r1 * log(1 + r2 * d)``;
* power: ``-r1 * d^r2``;

with d = i - j and r1, r2 learned per head, kept >= 0.01 (power: r2 <= 2).

As the authors' code (``ParallelKerpleLog`` / ``ParallelKerplePower``):

* the bounds are a projection of the stored parameters
  (``project_parameters``, called by the trainer after every optimizer step
  and once when built), so a parameter pushed to its bound keeps its
  gradient and can move back; version 1 clamped only in the forward pass,
  where a parameter below the bound got no gradient and weight decay kept
  pushing it down. The forward pass still clamps, a no-op after the
  projection, so a model trained by another loop stays finite;
* initialization is random per head: log r1 ~ U(0, 2), r2 ~ U(0, 1); power
  r1 ~ U(0, 1), r2 ~ U(0, 2) (their ``bias_p``/``bias_a`` draws; version 1
  used constants). The draws take the run's weight-init stream.

Where ours differs: the authors project in the forward pass before using the
parameters (the same values at every use); ours after each step.
Both biases decrease with distance for any admissible r1, r2.
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, register_encoding

MIN_PARAM = 0.01


class _Kerple(PositionEncoding):
    shift_invariant = True
    r2_max: float | None = None
    #: the upper ends of the per-head uniform initial draws of r1 and r2 (the authors' scales)
    r1_scale: float
    r2_scale: float

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.r1 = nn.Parameter(torch.rand(n_heads) * self.r1_scale)
        self.r2 = nn.Parameter(torch.rand(n_heads) * self.r2_scale)
        self.project_parameters()

    @torch.no_grad()
    def project_parameters(self) -> None:
        self.r1.clamp_(min=MIN_PARAM)
        self.r2.clamp_(min=MIN_PARAM, max=self.r2_max)

    def kernel(self, distance: torch.Tensor, r2: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def bias(self, q_pos, k_pos):
        distance = (q_pos[:, :, None] - k_pos[:, None, :]).float().clamp(min=0)[:, None]
        r1 = self.r1.clamp(min=MIN_PARAM)[None, :, None, None]
        r2 = self.r2.clamp(min=MIN_PARAM, max=self.r2_max)[None, :, None, None]
        return -r1 * self.kernel(distance, r2)


@register_encoding("kerple-log", rank=70, version=2, description="KERPLE logarithmic kernel bias (Chi et al.)")
class KerpleLog(_Kerple):
    r1_scale, r2_scale = 2.0, 1.0

    def kernel(self, distance, r2):
        return torch.log1p(r2 * distance)


@register_encoding("kerple-power", rank=80, version=2, description="KERPLE power kernel bias (Chi et al.)")
class KerplePower(_Kerple):
    r1_scale, r2_scale = 1.0, 2.0
    r2_max = 2.0

    def kernel(self, distance, r2):
        # 0^r2 = 0, written so the gradient in r2 at distance 0 is 0, not NaN
        return torch.where(distance > 0, distance.clamp(min=1).pow(r2), torch.zeros_like(distance))
