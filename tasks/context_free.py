"""Deterministic context-free (DCF) tasks of the Chomsky-hierarchy suite."""

from __future__ import annotations

import numpy as np

from tasks.base import Sample, Task, register_task
from tasks.sequence import aligned_ids


@register_task
class ReverseString(Task):
    """Output the input bits reversed (Deletang et al. 2023, DCF).

    Input: ``length`` uniform bits. Output: the bits in reverse order.
    Decoder-only framing: the output follows SEP instead of filling extra
    "empty" input slots. Coupled ids: output j shares the id of its source
    input ``length-1-j``; SEP gets id ``length+1`` so every output-part token
    predicts the symbol at its own id - 1.
    """

    name = "reverse_string"
    level = "DCF"
    symbols = ("0", "1")
    description = "output the input bits reversed"
    output_rule = "N"
    has_coupled_ids = True

    def sample(self, rng, length, batch_size):
        x = rng.integers(0, 2, size=(batch_size, length))
        source = np.arange(length)[::-1]
        ids = aligned_ids(length, source, sep_id=length + 1, eos_id=0)
        return Sample(x, x[:, ::-1].copy(), coupled_ids=np.broadcast_to(ids, (batch_size, ids.size)))

    def solve(self, inputs):
        return list(reversed(inputs))
