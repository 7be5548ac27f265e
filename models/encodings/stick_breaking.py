"""``stick-breaking`` and ``stick-breaking-remainder``: stick-breaking
attention (Tan et al., ICLR 2025), in fla's form and in its authors'.

No softmax and no position encoding: query i breaks a stick from the
nearest key backwards. With ``z_ij = q_i . k_j / sqrt(d)`` and
``beta_ij = sigmoid(z_ij)``, key j gets

    A_ij = beta_ij * prod_{j < k <= i} (1 - beta_ik),        o_i = sum_{j <= i} A_ij v_j,

computed in log space (``log A = logsigmoid(z_ij) + sum logsigmoid(-z_ik)``).
The weights of a query sum to at most 1; the rest of the stick is left
unused, as in the paper's base form.

``stick-breaking`` differs from the authors: the paper writes ``j < i`` (a
query does not attend to its own token: ``prod_{j<k<i}``); it lets a query
attend to itself (the product over ``j < k <= i``;
``flash-linear-attention``'s ``attend_current`` option) and leaves the rest
of the stick unused, so a query that breaks little of it reads little.

``stick-breaking-remainder`` is the form the authors train (their
``stickbreaking-attention`` code and its tests: ``o = o + rem[..., None] *
v``): the keys before the query only (``j < i``), and the stick's
remainder ``1 - sum_{j<i} A_ij`` given to the query's own value, so every
query's weights sum to 1 and the first token reads itself:

    o_i = sum_{j < i} A_ij v_j + (1 - sum_{j < i} A_ij) v_i.

Neither reproduces the flash kernel's numerics (this is the plain log-space
form).
"""

import torch
import torch.nn.functional as F

from lengthbench.models.encodings.base import PositionEncoding, register_encoding


def remainder_weights(logits: torch.Tensor) -> torch.Tensor:
    """The authors' form from scaled logits in which an invisible key is ``-inf``: stick-breaking over the keys
    before each query, the remainder of the stick on the query's own key (where the query sees itself)."""
    own = torch.eye(logits.shape[-1], dtype=torch.bool, device=logits.device)
    sees_itself = torch.isfinite(torch.diagonal(logits, dim1=-2, dim2=-1))
    before = stick_breaking_weights(logits.masked_fill(own, float("-inf")))
    remainder = (1 - before.sum(-1)).masked_fill(~sees_itself, 0.0)
    return before + torch.diag_embed(remainder)


def stick_breaking_weights(logits: torch.Tensor) -> torch.Tensor:
    """``A (B, H, T, T)`` from scaled logits in which an invisible key is ``-inf``."""
    visible = torch.isfinite(logits)
    z = logits.masked_fill(~visible, 0.0)
    log_rest = F.logsigmoid(-z).masked_fill(~visible, 0.0)  # log(1 - beta); an invisible key takes nothing
    after = F.pad(log_rest.flip(-1).cumsum(-1).flip(-1)[..., 1:], (0, 1))  # sum over the keys k > j
    return torch.exp(F.logsigmoid(z) + after).masked_fill(~visible, 0.0)


@register_encoding("stick-breaking", rank=230,
                   description="stick-breaking attention: each key takes a sigmoid share of the "
                   "stick the nearer keys left, no softmax, no positions (Tan et al. 2025)")
class StickBreaking(PositionEncoding):
    kind = "data-dependent"

    def attention_weights(self, logits):
        return stick_breaking_weights(logits)


@register_encoding("stick-breaking-remainder", rank=280,
                   description="stick-breaking attention as its authors train it: the "
                   "keys before the query, the stick's remainder on the query's own value (Tan et al. 2025)")
class StickBreakingRemainder(PositionEncoding):
    kind = "data-dependent"

    def attention_weights(self, logits):
        return remainder_weights(logits)
