"""``rnope``: rotary positions in some layers, none in the others, in the
spirit of Yang et al. 2025 ("Rope to Nope and Back Again: A New Hybrid
Attention Strategy").

Their hybrid interleaves RoPE and NoPE layers at 3:1, the NoPE layer last in
each group of four. A 2-layer model cannot hold 3:1, so the setting
``nope_every`` (default 2) makes every ``nope_every``-th layer NoPE, counting
from 1, and the others rotary (``rope``, base ``base``): in the 2-layer
model of the presets, **layer 0 rotary, layer 1 NoPE**; ``nope_every=4``
gives their ratio in deeper models. Where ours differs: their RoPE layers
attend through a sliding window (and the NoPE layers to everything); here
every layer sees every earlier token, so the pattern of positions is the
only change.
"""

from lengthbench.models.encodings.base import PositionEncoding, register_encoding
from lengthbench.models.encodings.rope import RoPE


@register_encoding("rnope", rank=270, defaults={"nope_every": 2, "base": 10000.0},
                   description="rotary in some layers, no positions in others: layer 0 rope, layer 1 nope in 2 "
                   "layers (Yang et al. 2025)")
class RNoPE(PositionEncoding):
    kind = "hybrid"
    shift_invariant = True

    def __init__(self, d_model, n_heads, nope_every, base):
        super().__init__(d_model, n_heads, nope_every=nope_every, base=base)
        if int(nope_every) < 1:
            raise ValueError(f"rnope's nope_every must be at least 1, got {nope_every}")

    def layer(self, index, n_layers):
        if (index + 1) % int(self.params["nope_every"]) == 0:
            return self
        return RoPE(self.d_model, self.n_heads, self.params["base"])
