"""``fire``: functional interpolation for relative positions (Li et al. 2023).

``bias_h(i, j) = f(psi(i - j) / psi(max(L, i)))_h`` with
``psi(x) = log(c * x + 1)``, f an MLP 1 -> 32 -> H (ReLU), c and L learned.
Note ``max(L, i)``: the threshold keeps short queries from dividing by a tiny
number (one public implementation wrongly uses min). Defaults: c = 0.1 (the
paper's init), L = 32 (ours), hidden width 32. c and L are used through
their absolute values so they stay positive. Not shift-invariant: the
normaliser depends on the query position i.
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


@register_encoding("fire", defaults={"c_init": 0.1, "L_init": 32.0, "hidden": 32},
                   description="FIRE learned MLP of log-normalised distance (Li et al.)")
class FIRE(PositionEncoding):
    def __init__(self, d_model, n_heads, c_init, L_init, hidden):
        super().__init__(d_model, n_heads, c_init=c_init, L_init=L_init, hidden=hidden)
        self.c = nn.Parameter(torch.tensor(float(c_init)))
        self.threshold = nn.Parameter(torch.tensor(float(L_init)))
        self.mlp = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, n_heads))

    def psi(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(self.c.abs() * x)

    def bias(self, q_pos, k_pos):
        q = q_pos.to(self.c.dtype)
        distance = (q[:, :, None] - k_pos[:, None, :].to(q.dtype)).clamp(min=0)
        norm = self.psi(torch.maximum(q, self.threshold.abs()))[:, :, None].clamp(min=1e-6)
        ratio = (self.psi(distance) / norm)[..., None]  # (B|1, Tq, Tk, 1)
        return self.mlp(ratio).permute(0, 3, 1, 2)
