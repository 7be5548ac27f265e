"""``forget``: the Forgetting Transformer's forget gate (Lin et al., ICLR 2025).

Each attention layer has a forget gate per head computed from the layer's
input: ``f_t = sigmoid(w_h . x_t + b_h)``. The logit of query i on key j
gets ``D_ij = sum_{l=j+1..i} log f_l``: a decay of every earlier token's
weight by the gates of the tokens in between, a data-dependent ALiBi. No
other position signal: the paper's equation,

    o_i = sum_j exp(q_i . k_j / sqrt(d) + D_ij) v_j / sum_j exp(q_i . k_j / sqrt(d) + D_ij).

What we built is the basic FoX layer, not the "Pro" block (no output
gate, no QK-norm, no output norm, no data-dependent token shift): the
question here is what the forget gate does to length generalization, on
the same block as every other encoding. ``x`` is the layer's normalized
input (pre-LayerNorm block), as in the paper. The gate's projection is a
PyTorch ``nn.Linear`` with its default initialization (weights and bias
uniform in +-1/sqrt(d_model)); the authors' code (and fla's Forgetting
Transformer) initializes it N(0, 0.02) with a zero bias, so their gates
start near sigmoid(0) = 1/2 everywhere and ours spread around it
(tests/test_against_fla.py checks both). ``D`` is summed over each (i, j)'s
own tokens, not as a difference of running sums, so an example packed into
a row with others gets exactly the bias it gets alone.
"""

import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings.base import LayerEncoding, PositionEncoding, register_encoding


def sum_between(log_gates: torch.Tensor) -> torch.Tensor:
    """``D (B, H, T, T)`` with ``D_ij = sum_{l=j+1..i} log_gates_l`` for
    j <= i (what lies above the diagonal is masked by the caller), from
    ``log_gates (B, H, T)``: per query, the gates up to it summed from the right."""
    t = log_gates.shape[-1]
    upto = torch.ones(t, t, dtype=torch.bool, device=log_gates.device).tril()  # l <= i
    suffix = (log_gates[..., None, :] * upto).flip(-1).cumsum(-1).flip(-1)  # sum over l >= j, l <= i
    return F.pad(suffix[..., 1:], (0, 1))  # l >= j + 1


class ForgetGate(LayerEncoding):
    """One layer's forget gates."""

    def __init__(self, shared: PositionEncoding):
        super().__init__(shared)
        self.gate = nn.Linear(shared.d_model, shared.n_heads)

    def input_bias(self, x, q, k, pos):
        log_gates = F.logsigmoid(self.gate(x)).transpose(1, 2)  # (B, H, T)
        return sum_between(log_gates)


@register_encoding("forget", rank=220, description="Forgetting Transformer: per-head forget gates from the layer input "
                   "decay the logits (Lin et al. 2025)")
class Forget(PositionEncoding):
    kind = "data-dependent"

    def layer(self, index, n_layers):
        return ForgetGate(self)
