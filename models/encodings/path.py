"""``path``: PaTH attention (Yang et al. 2025), position as accumulated
data-dependent Householder-like transforms.

Each token t of a layer gives a unit vector ``w_t`` and a ``beta_t`` in
(0, 2) per head, from the layer's input: ``w_t = normalize(W_w x_t)``,
``beta_t = 2 sigmoid(W_b x_t)``, and the transform ``H_t = I - beta_t w_t w_tᵀ``.
The logit of query i on key j is

    q_iᵀ H_i H_{i-1} ... H_{j+1} k_j / sqrt(d)       (= k_jᵀ (prod_{t=j+1..i} H_t) q_i / sqrt(d)),

then softmax; no other position signal (for j = i the product is empty).

The computation is the paper's compact (UT) form, not the product: with
``L = I + strictly_lower(beta_s w_s . w_t)``, the product over (j, i] is
``I - Wᵀ L⁻¹ diag(beta) W`` restricted to the rows and columns of (j, i]
(a diagonal block of a triangular matrix's inverse is the inverse of its
block), so every logit is ``q_i . k_j`` less ``sum_{s<=i, t>j} (q_i . w_s)
[L⁻¹ diag(beta)]_st (w_t . k_j)``: one triangular solve per head, no
loop, exactly the product (a float64 loop over i, j tests it). Packed
examples are exact too: the blocks of another example never enter.

Where ours differs: ``W_w`` is one full-width linear map (the paper: a
low-rank map followed by a short convolution), no forget gate (the paper's
PaTH-FoX combines the two: here ``forget`` is the gate alone).
"""

import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings.base import LayerEncoding, PositionEncoding, register_encoding


def householder_correction(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``(B, H, T, T)``: ``q_i . k_j - q_iᵀ H_i ... H_{j+1} k_j`` for j <= i
    (above the diagonal: not meaningful), from ``q, k, w (B, H, T, Dh)``
    (``w`` of unit norm) and ``beta (B, H, T)``."""
    t = q.shape[-2]
    eye = torch.eye(t, dtype=q.dtype, device=q.device)
    lower = beta[..., :, None] * (w @ w.transpose(-1, -2)).tril(-1) + eye  # L
    qw = (q @ w.transpose(-1, -2)).tril()  # (i, s): s <= i
    wk = (w @ k.transpose(-1, -2)).tril(-1)  # (t, j): t > j
    solved = torch.linalg.solve_triangular(lower, beta[..., :, None] * wk, upper=False, unitriangular=True)
    return qw @ solved


class Householder(LayerEncoding):
    """One layer's ``w`` and ``beta`` projections."""

    def __init__(self, shared: PositionEncoding):
        super().__init__(shared)
        self.w = nn.Linear(shared.d_model, shared.d_model)
        self.beta = nn.Linear(shared.d_model, shared.n_heads)

    def input_bias(self, x, q, k, pos):
        b, t, _ = x.shape
        w = F.normalize(self.w(x).view(b, t, self.n_heads, -1).transpose(1, 2).to(q.dtype), dim=-1)
        beta = 2 * torch.sigmoid(self.beta(x)).transpose(1, 2).to(q.dtype)
        return -householder_correction(q, k, w, beta) * q.shape[-1] ** -0.5


@register_encoding("path", rank=240,
                   description="PaTH attention: accumulated data-dependent Householder transforms between "
                   "key and query (Yang et al. 2025)")
class PaTH(PositionEncoding):
    kind = "data-dependent"

    def layer(self, index, n_layers):
        return Householder(self)
