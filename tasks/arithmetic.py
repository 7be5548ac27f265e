"""Decimal arithmetic tasks (the position-coupling / arithmetic literature)."""

from __future__ import annotations

import numpy as np

from tasks.base import Sample, Task, register_task

DIGITS = tuple("0123456789")


def sample_operands(rng: np.random.Generator, length: int, batch_size: int) -> np.ndarray:
    """Two operands per example as little-endian digit arrays ``(B, 2, length)``.

    One operand (chosen uniformly) has exactly ``length`` digits, the other
    ``U{1..length}`` digits; leading digits are non-zero (a 1-digit operand
    may be 0); positions above an operand's digit count are 0.
    """
    counts = rng.integers(1, length + 1, size=(batch_size, 2))
    counts[np.arange(batch_size), rng.integers(0, 2, size=batch_size)] = length
    digits = rng.integers(0, 10, size=(batch_size, 2, length))
    lead = rng.integers(1, 10, size=(batch_size, 2))
    k = np.arange(length)
    digits = np.where(k == counts[..., None] - 1, np.where(counts[..., None] > 1, lead[..., None], digits), digits)
    return np.where(k < counts[..., None], digits, 0)


def add_digits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Little-endian column addition of ``(B, n)`` digit arrays -> ``(B, n+1)``."""
    n = a.shape[1]
    out = np.zeros((a.shape[0], n + 1), dtype=np.int64)
    carry = np.zeros(a.shape[0], dtype=np.int64)
    for k in range(n):
        total = a[:, k] + b[:, k] + carry
        out[:, k] = total % 10
        carry = total // 10
    out[:, n] = carry
    return out


@register_task
class Addition(Task):
    """Decimal addition with the answer least-significant digit first.

    Length ``n`` = digits of the longer operand (see ``sample_operands``).
    Exact format (Cho et al. 2024): ``a + b`` with both operands zero-padded
    to ``n`` digits and written most-significant first, then SEP (playing
    ``=``), then the sum zero-padded to ``n+1`` digits and written
    least-significant first. Input: ``2n+1`` symbols; output ``n+1`` digits.
    Example (n=3): ``0 4 7 + 9 8 5`` -> ``2 3 0 1`` (47 + 985 = 1032).
    Coupled ids: a digit of significance k in a, b or the answer gets id
    ``k+1``; BOS, ``+`` and SEP share id 0; EOS gets ``n+2``.
    """

    name = "addition"
    level = "arithmetic"
    symbols = DIGITS + ("+",)
    description = "decimal a+b, answer reversed (LSD first)"
    output_rule = "N+1"
    has_coupled_ids = True

    def input_length(self, length):
        return 2 * length + 1

    def sample(self, rng, length, batch_size):
        ops = sample_operands(rng, length, batch_size)
        a, b = ops[:, 0], ops[:, 1]
        plus = np.full((batch_size, 1), DIGITS.__len__())
        inputs = np.concatenate([a[:, ::-1], plus, b[:, ::-1]], axis=1)
        sig = np.arange(length, 0, -1)  # most-significant digit first: ids n..1
        ids = np.concatenate([[0], sig, [0], sig, [0], np.arange(1, length + 2), [length + 2]])
        return Sample(inputs, add_digits(a, b), coupled_ids=np.broadcast_to(ids, (batch_size, ids.size)))

    def solve(self, inputs):
        plus = inputs.index(len(DIGITS))
        a = int("".join(str(d) for d in inputs[:plus]))
        b = int("".join(str(d) for d in inputs[plus + 1 :]))
        n = plus
        return [int(c) for c in reversed(str(a + b).zfill(n + 1))]
