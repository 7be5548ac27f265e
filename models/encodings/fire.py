"""``fire``: functional interpolation for relative positions (Li et al. 2023).

``bias_h(i, j) = f(psi(i - j) / psi(max(L, i)))_h`` with
``psi(x) = log(c * x + 1)``, f an MLP 1 -> 32 -> H (ReLU), c and L learned.
Note ``max(L, i)``: the threshold keeps short queries from dividing by a tiny
number (one public implementation wrongly uses min). Defaults: c = 0.1 (the
paper's init), initial L = 32 (ours; the paper's 512 is past every length
here), hidden width 32. c and L are used through their absolute values so
they stay positive. Not shift-invariant: the normaliser depends on the query
position i.

The threshold is parameterized as the paper's listing does (version 2):
``L = |m * L_init|`` with ``L_init`` fixed and the multiplier m learned
(initially 1), so under Adam, whose step is about the learning rate whatever
the gradient's scale, L moves about ``L_init`` times faster than a threshold
learned directly (version 1 learned L itself from 32: effectively frozen).
The normaliser adds the listing's eps (1e-6) rather than clamping at it.
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, register_encoding

NORMALIZER_EPS = 1e-6


@register_encoding("fire", rank=90, version=2, defaults={"c_init": 0.1, "L_init": 32.0, "hidden": 32},
                   description="FIRE learned MLP of log-normalised distance (Li et al.)")
class FIRE(PositionEncoding):
    def __init__(self, d_model, n_heads, c_init, L_init, hidden):
        super().__init__(d_model, n_heads, c_init=c_init, L_init=L_init, hidden=hidden)
        self.c = nn.Parameter(torch.tensor(float(c_init)))
        self.register_buffer("initial_threshold", torch.tensor(float(L_init)), persistent=False)
        self.threshold_multiplier = nn.Parameter(torch.tensor(1.0))
        self.mlp = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, n_heads))

    def psi(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(self.c.abs() * x)

    @property
    def threshold(self) -> torch.Tensor:
        return (self.threshold_multiplier * self.initial_threshold).abs()

    def bias(self, q_pos, k_pos):
        q = q_pos.to(self.c.dtype)
        distance = (q[:, :, None] - k_pos[:, None, :].to(q.dtype)).clamp(min=0)
        norm = self.psi(torch.maximum(q, self.threshold))[:, :, None] + NORMALIZER_EPS
        ratio = (self.psi(distance) / norm)[..., None]  # (B|1, Tq, Tk, 1)
        return self.mlp(ratio).permute(0, 3, 1, 2)
