"""Regular (R) tasks of the Chomsky-hierarchy suite."""

from __future__ import annotations

from tasks.base import Sample, Task, register_task


@register_task
class ParityCheck(Task):
    """Whether the number of 1s is odd (Deletang et al. 2023, R).

    Input: ``length`` uniform bits. Output: one symbol, ``1`` when the count
    of 1s is odd, else ``0``.
    """

    name = "parity_check"
    level = "R"
    symbols = ("0", "1")
    description = "parity of the number of 1s"
    output_rule = "1"

    def sample(self, rng, length, batch_size):
        x = rng.integers(0, 2, size=(batch_size, length))
        return Sample(x, (x.sum(axis=1) % 2)[:, None])

    def solve(self, inputs):
        ones = sum(1 for s in inputs if s == 1)
        return [ones % 2]
