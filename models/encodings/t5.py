"""``t5``: T5's bucketed relative position bias (Raffel et al. 2020).

A learned scalar per head and distance bucket, added to the logits. Causal
(unidirectional) bucketing of d = i - j >= 0: the first ``num_buckets/2``
buckets are exact distances 0..15, the rest logarithmic up to
``max_distance`` (128); anything farther shares the last bucket. Defaults
are T5's (32 buckets, max distance 128). Shared by all layers (T5 computes
it once, in the first layer).
"""

import math

import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def t5_bucket(distance: torch.Tensor, num_buckets: int, max_distance: int) -> torch.Tensor:
    """Causal T5 bucket of non-negative integer distances."""
    distance = distance.clamp(min=0)
    exact = num_buckets // 2
    scaled = torch.log(distance.float().clamp(min=1) / exact) / math.log(max_distance / exact)
    large = (exact + (scaled * (num_buckets - exact)).long()).clamp(max=num_buckets - 1)
    return torch.where(distance < exact, distance, large)


@register_encoding("t5", rank=60, defaults={"num_buckets": 32, "max_distance": 128},
                   description="T5 bucketed relative bias, learned per head")
class T5Bias(PositionEncoding):
    shift_invariant = True

    def __init__(self, d_model, n_heads, num_buckets, max_distance):
        super().__init__(d_model, n_heads, num_buckets=num_buckets, max_distance=max_distance)
        self.table = nn.Embedding(num_buckets, n_heads)
        nn.init.normal_(self.table.weight, std=0.02)

    def bias(self, q_pos, k_pos):
        distance = (q_pos[:, :, None] - k_pos[:, None, :]).long()
        buckets = t5_bucket(distance, self.params["num_buckets"], self.params["max_distance"])
        return self.table(buckets).permute(0, 3, 1, 2)  # (B|1, H, Tq, Tk)
