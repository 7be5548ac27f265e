"""Sequence tasks with no Chomsky level of their own: ``copy``."""

from __future__ import annotations

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task


class Rearrangement(Task):
    """A task whose output symbol j is input symbol ``source(N)[j]``.

    Inputs are uniform over the alphabet. Coupled ids (Cho et al. 2024):
    input i has id i+1 and each output symbol the id of the input it copies;
    SEP and EOS continue the output's id progression one step before and
    after it (copy: SEP 0, EOS N+1; reverse: SEP N+1, EOS 0), BOS has 0.
    """

    has_coupled_ids = True

    def source(self, length: int) -> np.ndarray:
        raise NotImplementedError

    @property
    def uniform_alphabet(self) -> int:
        return len(self.symbols)

    def sample(self, rng, length, batch_size):
        return self.examples(rng.integers(0, len(self.symbols), size=(batch_size, length)))

    def examples(self, x):
        batch_size, length = x.shape
        source = self.source(length)
        step = source[1] - source[0] if len(source) > 1 else 1
        ids = np.concatenate([[0], np.arange(1, length + 1), [source[0] + 1 - step], source + 1,
                              [source[-1] + 1 + step]])
        return Sample(x, x[:, source], coupled_ids=np.broadcast_to(ids, (batch_size, ids.size)))


@register_task
class Copy(Rearrangement):
    """Output the input string unchanged.

    Input: N symbols from a 4-letter alphabet (a binary alphabet makes the
    positional lookup ambiguous far too often to tell encodings apart on
    short budgets). Output: the same symbols.
    """

    name = "copy"
    rank = 10
    level = "sequence"
    symbols = ("a", "b", "c", "d")
    description = "output the input string"
    output_rule = "N"

    def source(self, length):
        return np.arange(length)

    def solve(self, inputs):
        return list(inputs)
