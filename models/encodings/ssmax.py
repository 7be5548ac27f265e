"""``ssmax`` and ``ssmax-rope``: scalable softmax (Nakanishi 2025).

Attention weights are ``softmax(s_h log(n) z)`` instead of ``softmax(z)``,
with ``z`` the scaled logits, ``n`` the number of keys the query sees
(i + 1 in its own example) and ``s_h`` learned per head and layer, so that
attention does not flatten as n grows. The paper's equation:
``z_i -> n^(s z_i) / sum_j n^(s z_j)``.

Composition: ``ssmax`` keeps every hook of another registered encoding,
named by its ``over`` setting, and replaces only the weights; ``ssmax`` is
over ``nope``, ``ssmax-rope`` over ``rope`` (over any other: register it
with that ``over``). The inner encoding is built with its registered
defaults.

Where ours differs: ``s`` starts at 0.43, the value of the paper's Figure 1
(no initialization is given that we could source); at n = 10, 0.43 log n is
about 1, so training starts near plain softmax at the lengths trained here.
The paper's variant with a bias (``s log n + b``) is not built.
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import LayerEncoding, PositionEncoding, build_encoding, register_encoding


def scalable_softmax(logits: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """``softmax(s_h log(n_i) z_ij)`` over the visible keys (``-inf`` logits), ``s (H,)``."""
    visible = torch.isfinite(logits)
    n = visible.sum(-1, keepdim=True).to(logits.dtype)
    scaled = logits.masked_fill(~visible, 0.0) * (s.to(logits.dtype)[:, None, None] * torch.log(n))
    return scaled.masked_fill(~visible, float("-inf")).softmax(-1)


class ScaleLayer(LayerEncoding):
    """One layer's ``s`` per head, over the inner encoding's layer."""

    def __init__(self, inner_layer: PositionEncoding, owned: bool, s_init: float):
        super().__init__(inner_layer, owned)
        self.s = nn.Parameter(torch.full((inner_layer.n_heads,), float(s_init)))

    def attention_weights(self, logits):
        return scalable_softmax(logits, self.s)


class ScalableSoftmax(PositionEncoding):
    """Another encoding's hooks, softmax scaled by ``s log n`` in every layer."""

    kind = "attention normalization"

    def __init__(self, d_model, n_heads, over, s_init):
        super().__init__(d_model, n_heads, over=over, s_init=s_init)
        self.inner = build_encoding(over, d_model, n_heads)
        self.uses_task_positions = self.inner.uses_task_positions

    def positions(self, pos, ctx):
        return self.inner.positions(pos, ctx)

    def embed(self, h, pos):
        return self.inner.embed(h, pos)

    def bias(self, q_pos, k_pos):
        return self.inner.bias(q_pos, k_pos)

    def not_applicable(self, task):
        return self.inner.not_applicable(task)

    def layer(self, index, n_layers):
        inner_layer = self.inner.layer(index, n_layers)
        return ScaleLayer(inner_layer, inner_layer is not self.inner, self.params["s_init"])


SSMAX_S_INIT = 0.43
register_encoding("ssmax", rank=250, defaults={"over": "nope", "s_init": SSMAX_S_INIT},
                  description="scalable softmax, softmax(s log(n) z), on NoPE (Nakanishi 2025)")(ScalableSoftmax)
register_encoding("ssmax-rope", rank=260, defaults={"over": "rope", "s_init": SSMAX_S_INIT},
                  description="scalable softmax on rotary positions (Nakanishi 2025)")(ScalableSoftmax)
