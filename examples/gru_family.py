"""An example third-party model family: ``gru``, a one-layer GRU.

How to use it:

    lengthbench check examples/gru_family.py
    lengthbench run --preset smoke --plugin examples/gru_family.py --models transformer,gru
    lengthbench submit examples/gru_family.py --preset smoke

The contract (see ``models/families.py``): register a builder
``build(vocab_size, size)`` with ``@register_family`` that returns one run's
model, a ``RunModel``: calling it on ``(B, T)`` tokens gives ``(B, T, V)``
next-token logits, reading no token after the one it predicts from. The
harness seeds the random stream before calling the builder. Declare the
forward FLOPs so ``run --plan`` can cost it.
"""

import numpy as np
import torch
from torch import nn

from lengthbench.models.families import ModelSize, RunModel, register_family


class GRUModel(RunModel):
    def __init__(self, vocab_size: int, size: ModelSize):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, size.d_model)
        self.gru = nn.GRU(size.d_model, size.d_model, batch_first=True)
        self.head = nn.Linear(size.d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, positions=None) -> torch.Tensor:  # a GRU reads no positions
        states, _ = self.gru(self.embedding(tokens))
        return self.head(states)


def gru_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Per token: input and recurrent gate projections (2 x 3 x H x H multiply-adds), then the head."""
    n, hidden = np.asarray(token_lengths, dtype=float), size.d_model
    return float((n * (2 * 2 * 3 * hidden * hidden + 2 * hidden * vocab)).sum())


@register_family("gru", flops=gru_flops, size_fields=("d_model",),
                 description="one-layer GRU, hidden size d_model (example plugin)")
def build(vocab_size: int, size: ModelSize) -> GRUModel:
    return GRUModel(vocab_size, size)
