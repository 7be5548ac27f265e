"""Sequence tasks with no Chomsky level of their own: ``copy``."""

from __future__ import annotations

import numpy as np

from tasks.base import Sample, Task, register_task


def aligned_ids(n: int, out_source: np.ndarray, sep_id: int, eos_id: int) -> np.ndarray:
    """Coupled ids for ``BOS x SEP y EOS`` where output j copies input
    ``out_source[j]``: input i gets id i+1, output j the id of its source, BOS 0.
    Returns one row (broadcast over the batch by the caller)."""
    return np.concatenate([[0], np.arange(1, n + 1), [sep_id], out_source + 1, [eos_id]])


@register_task
class Copy(Task):
    """Output the input string unchanged.

    Input: ``length`` symbols drawn uniformly from a 4-letter alphabet (a
    binary alphabet makes the positional lookup ambiguous far too often to
    tell encodings apart on short budgets). Output: the same symbols.
    Coupled ids: input i and output i share id i+1 (Cho et al. 2024); SEP has
    id 0 so every output-part token predicts the symbol at its own id + 1.
    """

    name = "copy"
    level = "sequence"
    symbols = ("a", "b", "c", "d")
    description = "output the input string"
    output_rule = "N"
    has_coupled_ids = True

    def sample(self, rng, length, batch_size):
        x = rng.integers(0, len(self.symbols), size=(batch_size, length))
        ids = aligned_ids(length, np.arange(length), sep_id=0, eos_id=length + 1)
        return Sample(x, x.copy(), coupled_ids=np.broadcast_to(ids, (batch_size, ids.size)))

    def solve(self, inputs):
        return list(inputs)
