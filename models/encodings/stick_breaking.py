"""``stick-breaking``: stick-breaking attention (Tan et al., ICLR 2025).

No softmax and no position encoding: query i breaks a stick from the
nearest key backwards. With ``z_ij = q_i . k_j / sqrt(d)`` and
``beta_ij = sigmoid(z_ij)``, key j gets

    A_ij = beta_ij * prod_{j < k <= i} (1 - beta_ik),        o_i = sum_{j <= i} A_ij v_j,

computed in log space (``log A = logsigmoid(z_ij) + sum logsigmoid(-z_ik)``).
The weights of a query sum to at most 1; the rest of the stick is left
unused, as in the paper's base form.

Where ours differs: the paper writes ``j < i`` (a query does not attend to
its own token: ``prod_{j<k<i}``); we let a query attend to itself (the
product over ``j < k <= i``; ``flash-linear-attention``'s
``attend_current`` option), since in a decoder that reads ``BOS`` first the
first token would otherwise read nothing. The flash kernel's numerics are
not reproduced (this is the plain log-space form).
"""

import torch
import torch.nn.functional as F

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def stick_breaking_weights(logits: torch.Tensor) -> torch.Tensor:
    """``A (B, H, T, T)`` from scaled logits in which an invisible key is ``-inf``."""
    visible = torch.isfinite(logits)
    z = logits.masked_fill(~visible, 0.0)
    log_rest = F.logsigmoid(-z).masked_fill(~visible, 0.0)  # log(1 - beta); an invisible key takes nothing
    after = F.pad(log_rest.flip(-1).cumsum(-1).flip(-1)[..., 1:], (0, 1))  # sum over the keys k > j
    return torch.exp(F.logsigmoid(z) + after).masked_fill(~visible, 0.0)


@register_encoding("stick-breaking", description="stick-breaking attention: each key takes a sigmoid share of the "
                   "stick the nearer keys left, no softmax, no positions (Tan et al. 2025)")
class StickBreaking(PositionEncoding):
    kind = "data-dependent"

    def attention_weights(self, logits):
        return stick_breaking_weights(logits)
