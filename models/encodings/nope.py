"""``nope``: no position information at all (Kazemnejad et al. 2023).

A causal decoder can still infer position from the attention pattern itself.
"""

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


@register_encoding("nope", rank=10, description="no positional encoding (causal mask only)")
class NoPE(PositionEncoding):
    shift_invariant = True
