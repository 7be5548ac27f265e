"""Decimal arithmetic tasks (the position-coupling / arithmetic literature)."""

from __future__ import annotations

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task

DIGITS = tuple("0123456789")


def sample_operands(rng: np.random.Generator, length: int, batch_size: int) -> np.ndarray:
    """Two operands per example as little-endian digit arrays ``(B, 2, length+1)``.

    One operand (chosen uniformly) has exactly ``length`` digits, the other
    ``U{1..length}`` digits; leading digits are non-zero (a 1-digit operand
    may be 0); positions above an operand's digit count are 0, including the
    extra top position ``length`` (the padding that aligns the final carry).
    """
    counts = rng.integers(1, length + 1, size=(batch_size, 2))
    counts[np.arange(batch_size), rng.integers(0, 2, size=batch_size)] = length
    digits = rng.integers(0, 10, size=(batch_size, 2, length))
    lead = rng.integers(1, 10, size=(batch_size, 2))
    k = np.arange(length)
    digits = np.where(k == counts[..., None] - 1, np.where(counts[..., None] > 1, lead[..., None], digits), digits)
    return np.pad(np.where(k < counts[..., None], digits, 0), ((0, 0), (0, 0), (0, 1)))


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


def reversed_answer_ids(length: int, answer_digits: int) -> np.ndarray:
    """Coupled ids of ``SEP c_0 .. c_{m-1} EOS``: SEP 0, c_k gets k+1, EOS m+1."""
    return np.concatenate([[0], np.arange(1, answer_digits + 1), [answer_digits + 1]])


@register_task
class Addition(Task):
    """Decimal addition with the answer least-significant digit first.

    Length ``n`` = digits of the longer operand (see ``sample_operands``).
    Exact format: ``a + b`` with both operands zero-padded to ``n+1`` digits
    and written most-significant first, then SEP (playing ``=``), then the
    sum in ``n+1`` digits written least-significant first. Input: ``2n+3``
    symbols; output ``n+1`` digits.
    Example (n=3): ``0 0 4 7 + 0 9 8 5`` -> ``2 3 0 1`` (47 + 985 = 1032).
    Coupled ids: a digit of significance k in a, b or the answer gets id
    ``k+1``; BOS, ``+`` and SEP share id 0; EOS gets ``n+2``.

    Difference from Cho et al. 2024, who pad the operands to ``n`` digits:
    the extra leading zero gives the answer's final carry digit operand digits
    of its own significance, so it is computed like every other digit. In our
    small (d=128) calibration runs with ``n``-digit operands, the final carry
    digit was right in only 6-39% of examples at 12 digits (trained on 1..8);
    we have not isolated the effect of the padding at the preset model sizes.
    """

    name = "addition"
    rank = 10
    level = "arithmetic"
    symbols = DIGITS + ("+",)
    description = "decimal a+b, answer reversed (LSD first)"
    output_rule = "N+1"
    has_coupled_ids = True
    coupled_ids_are_significance = True

    def input_length(self, length):
        return 2 * length + 3

    def sample(self, rng, length, batch_size):
        ops = sample_operands(rng, length, batch_size)
        a, b = ops[:, 0], ops[:, 1]
        plus = np.full((batch_size, 1), len(DIGITS))
        inputs = np.concatenate([a[:, ::-1], plus, b[:, ::-1]], axis=1)
        sig = np.arange(length + 1, 0, -1)  # most-significant digit first: ids n+1..1
        ids = np.concatenate([[0], sig, [0], sig, reversed_answer_ids(length, length + 1)])
        answer = add_digits(a, b)[:, : length + 1]  # the top column is zero + zero
        return Sample(inputs, answer, coupled_ids=np.broadcast_to(ids, (batch_size, ids.size)))

    def solve(self, inputs):
        plus = inputs.index(len(DIGITS))
        a = int("".join(str(d) for d in inputs[:plus]))
        b = int("".join(str(d) for d in inputs[plus + 1 :]))
        return [int(c) for c in reversed(str(a + b).zfill(plus))]


@register_task
class Multiplication(Task):
    """Decimal N x 2 multiplication with the answer least-significant first.

    Length ``n``: a has exactly n digits (non-zero leading digit unless
    n = 1), b exactly 2 digits (10..99). Input: a most-significant first,
    ``*``, b most-significant first (n+3 symbols). Output: the product
    zero-padded to n+2 digits, least-significant first. Coupled ids (Cho et
    al. 2024): a digit of significance k in a, b or the product gets id
    k+1; BOS, ``*`` and SEP get 0; EOS gets n+3.
    """

    name = "multiplication"
    rank = 20
    level = "arithmetic"
    symbols = DIGITS + ("*",)
    description = "decimal N-digit x 2-digit product, answer reversed"
    output_rule = "N+2"
    has_coupled_ids = True
    coupled_ids_are_significance = True

    def input_length(self, length):
        return length + 3

    def sample(self, rng, length, batch_size):
        a = rng.integers(0, 10, size=(batch_size, length))
        if length > 1:
            a[:, -1] = rng.integers(1, 10, size=batch_size)
        b = rng.integers(10, 100, size=batch_size)
        out = np.zeros((batch_size, length + 2), dtype=np.int64)
        carry = np.zeros(batch_size, dtype=np.int64)
        for k in range(length + 2):
            total = (a[:, k] * b if k < length else 0) + carry
            out[:, k], carry = total % 10, total // 10
        inputs = np.concatenate([a[:, ::-1], np.full((batch_size, 1), len(DIGITS)),
                                 (b // 10)[:, None], (b % 10)[:, None]], axis=1)
        ids = np.concatenate([[0], np.arange(length, 0, -1), [0, 2, 1],
                              reversed_answer_ids(length, length + 2)])
        return Sample(inputs, out, coupled_ids=np.broadcast_to(ids, (batch_size, ids.size)))

    def solve(self, inputs):
        star = inputs.index(len(DIGITS))
        a = int("".join(map(str, inputs[:star])))
        b = int("".join(map(str, inputs[star + 1 :])))
        return [int(c) for c in reversed(str(a * b).zfill(star + 2))]
