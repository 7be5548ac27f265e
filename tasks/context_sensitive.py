"""Context-sensitive (CS) tasks of the Chomsky-hierarchy suite (Deletang et
al. 2023). Decoder-only framing: outputs follow SEP instead of filling extra
"empty" input slots."""

from __future__ import annotations

import math

import numpy as np

from lengthbench.tasks.base import Sample, Task, every_string, register_task
from lengthbench.tasks.sequence import Rearrangement


@register_task
class DuplicateString(Rearrangement):
    """Output the input twice: N bits s -> s s. Coupled ids: output j shares
    the id of input ``j mod N``."""

    name = "duplicate_string"
    rank = 10
    level = "CS"
    symbols = ("0", "1")
    description = "output the input bits twice"
    output_rule = "2N"

    def source(self, length):
        return np.tile(np.arange(length), 2)

    def solve(self, inputs):
        return list(inputs) + list(inputs)


@register_task
class MissingDuplicateString(Task):
    """Find the bit hidden in a duplicated string.

    Input (N symbols): s of floor(N/2) uniform bits, the string s s with one
    uniformly chosen position replaced by the hole token ``_``, plus a pad
    symbol ``#`` when N is odd. Output: the removed bit.
    """

    name = "missing_duplicate_string"
    rank = 20
    level = "CS"
    symbols = ("0", "1", "_", "#")
    description = "the bit hidden in s s"
    output_rule = "1"
    min_length = 2

    def sample(self, rng, length, batch_size):
        half = length // 2
        s = rng.integers(0, 2, size=(batch_size, half))
        x = np.full((batch_size, length), 3, dtype=np.int64)
        x[:, : 2 * half] = np.concatenate([s, s], axis=1)
        hole = rng.integers(0, 2 * half, size=batch_size)
        rows = np.arange(batch_size)
        answer = x[rows, hole].copy()
        x[rows, hole] = 2
        return Sample(x, answer[:, None])

    def solve(self, inputs):
        half = len(inputs) // 2
        hole = inputs.index(2)
        return [inputs[(hole + half) % (2 * half)]]

    def whole_space(self, length):
        """Every s of floor(N/2) bits with every hole: 2^floor(N/2) * 2 floor(N/2)
        inputs (768 at N = 13), listed up to N = 25 (98,304 inputs)."""
        half = length // 2
        if half > 12:
            return None
        s = every_string(2, half)
        x = np.full((2 ** half, 2 * half, length), 3, dtype=np.int64)
        x[:, :, : 2 * half] = np.concatenate([s, s], axis=1)[:, None, :]
        x = x.reshape(-1, length)
        hole = np.tile(np.arange(2 * half), 2 ** half)
        rows = np.arange(len(x))
        answer = x[rows, hole].copy()
        x[rows, hole] = 2
        return Sample(x, answer[:, None])


@register_task
class OddsFirst(Rearrangement):
    """Output the odd-indexed symbols, then the even-indexed ones.

    Input: N bits x (0-indexed). Output: ``x[1::2]`` followed by ``x[::2]``,
    e.g. 10011101 -> 0111 1010 (one reference docstring states the opposite
    order; the reference code, and we, do this). Coupled ids: each output
    shares the id of the input it copies.
    """

    name = "odds_first"
    rank = 30
    level = "CS"
    symbols = ("0", "1")
    description = "odd-indexed symbols first, then even-indexed"
    output_rule = "N"

    def source(self, length):
        return np.concatenate([np.arange(1, length, 2), np.arange(0, length, 2)])

    def solve(self, inputs):
        return list(inputs[1::2]) + list(inputs[0::2])


def bits_to_int(bits_lsb_first) -> int:
    return sum(int(b) << i for i, b in enumerate(bits_lsb_first))


def int_to_bits(value: int) -> list[int]:
    """Minimal binary representation, least-significant bit first ('0' for 0)."""
    return [int(c) for c in reversed(bin(value)[2:])]


def nonzero_bits(rng: np.random.Generator, widths: np.ndarray, length: int) -> np.ndarray:
    """``(B, length)`` uniform bits whose first ``widths[b]`` bits are not all
    zero and whose remaining bits are zero: row b is a number uniform in
    [1, 2^widths[b] - 1], written LSB first in widths[b] bits (rejection
    sampling: rows that drew zero are redrawn, so every nonzero value keeps
    the same chance)."""
    inside = np.arange(length) < widths[:, None]
    bits = np.where(inside, rng.integers(0, 2, size=(len(widths), length)), 0)
    zero = ~bits.any(axis=1)
    while zero.any():
        bits[zero] = np.where(inside[zero], rng.integers(0, 2, size=(int(zero.sum()), length)), 0)
        zero = ~bits.any(axis=1)
    return bits


def carry_normalize(columns: np.ndarray) -> np.ndarray:
    """Column sums ``(B, W)`` (LSB first, any non-negative ints) -> bits."""
    out = np.zeros_like(columns)
    carry = np.zeros(columns.shape[0], dtype=np.int64)
    for k in range(columns.shape[1]):
        total = columns[:, k] + carry
        out[:, k] = total & 1
        carry = total >> 1
    return out


class _BinaryOperation(Task):
    """Two binary numbers, least-significant bit first, joined by an operator.

    N symbols in total: a has ``U{1..N-2}`` bits, b the remaining N-1-|a|.
    As in the reference code, each operand is a number uniform in
    [1, 2^bits - 1], never zero (uniform bits would make a zero operand, and
    for multiplication the trivial answer 0, common: 77% of additions at N=3),
    written in exactly its bit count, so it may end in zeros (leading zeros).
    Output: the result's minimal binary form, least-significant bit first
    (``0`` for zero), then ``END``. Coupled ids: a bit of significance k in
    a, b or the result gets id k+1; BOS, the operator and SEP get 0.
    """

    level = "CS"
    symbols = ("0", "1", "OP", "END")
    min_length = 3
    has_coupled_ids = True
    coupled_ids_are_significance = True
    version = 2  # operands never zero (version 1 drew uniform bits)

    def combine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Column sums (before carrying) of the result, ``(B, W)``."""
        raise NotImplementedError

    def apply(self, a: int, b: int) -> int:
        raise NotImplementedError

    def sample(self, rng, length, batch_size):
        la = rng.integers(1, length - 1, size=batch_size)
        a = nonzero_bits(rng, la, length)
        b = nonzero_bits(rng, length - 1 - la, length)
        col = np.arange(length)
        b_index = np.clip(col[None, :] - la[:, None] - 1, 0, length - 1)
        x = np.where(col < la[:, None], a, np.where(col == la[:, None], 2, np.take_along_axis(b, b_index, 1)))
        result = carry_normalize(self.combine(a, b))
        top = np.where(result.any(axis=1), result.shape[1] - np.argmax(result[:, ::-1], axis=1), 1)
        width = int(top.max()) + 1
        j = np.arange(width)
        out = np.where(j < top[:, None], result[:, :width], np.where(j == top[:, None], 3, -1))
        sig = np.where(col < la[:, None], col + 1, np.where(col == la[:, None], 0, col - la[:, None]))
        ids = np.concatenate([np.zeros((batch_size, 1), dtype=np.int64), sig,
                              np.zeros((batch_size, 1), dtype=np.int64),
                              np.broadcast_to(np.arange(1, width + 2), (batch_size, width + 1))], axis=1)
        return Sample(x, out, output_lengths=top + 1, coupled_ids=ids)

    def solve(self, inputs):
        op = inputs.index(2)
        value = self.apply(bits_to_int(inputs[:op]), bits_to_int(inputs[op + 1 :]))
        return int_to_bits(value) + [3]


@register_task
class BinaryAddition(_BinaryOperation):
    __doc__ = _BinaryOperation.__doc__.replace("joined by an operator", "joined by ``+``")
    name = "binary_addition"
    rank = 40
    description = "binary a+b, LSB first"
    output_rule = "bits of the sum + 1"

    def combine(self, a, b):
        return np.concatenate([a + b, np.zeros((a.shape[0], 1), dtype=np.int64)], axis=1)

    def apply(self, a, b):
        return a + b


@register_task
class BinaryMultiplication(_BinaryOperation):
    __doc__ = _BinaryOperation.__doc__.replace("joined by an operator", "joined by ``x``")
    name = "binary_multiplication"
    rank = 50
    description = "binary a*b, LSB first"
    output_rule = "bits of the product + 1"

    def combine(self, a, b):
        n = a.shape[1]
        columns = np.zeros((a.shape[0], 2 * n + 1), dtype=np.int64)
        for row in range(a.shape[0]):  # one C-level convolution per example
            columns[row, : 2 * n - 1] = np.convolve(a[row], b[row])
        return columns

    def apply(self, a, b):
        return a * b


@register_task
class ComputeSqrt(Task):
    """Integer square root. Input: x uniform in [1, 2^N - 1] as in the
    reference code (never zero), in N bits, most-significant first (leading
    zeros allowed). Output: floor(sqrt(x)) in ceil(N/2) bits, most
    significant first."""

    name = "compute_sqrt"
    rank = 60
    level = "CS"
    symbols = ("0", "1")
    version = 2  # input never zero (version 1 drew uniform bits)
    description = "floor(sqrt(x)), big-endian"
    output_rule = "ceil(N/2)"

    def sample(self, rng, length, batch_size):
        x = nonzero_bits(rng, np.full(batch_size, length), length)
        width = (length + 1) // 2
        out = np.empty((batch_size, width), dtype=np.int64)
        for row in range(batch_size):  # exact big-integer sqrt, one call per example
            root = math.isqrt(int("".join(map(str, x[row])), 2))
            out[row] = [int(c) for c in format(root, f"0{width}b")]
        return Sample(x, out)

    def solve(self, inputs):
        value = bits_to_int(inputs[::-1])
        root, guess = value, (value + 1) // 2  # Newton's method, independent of math.isqrt
        while guess < root:
            root, guess = guess, (guess + value // guess) // 2
        width = (len(inputs) + 1) // 2
        return [(root >> (width - 1 - i)) & 1 for i in range(width)]


@register_task
class BucketSort(Task):
    """Sort N symbols over a 5-letter alphabet ascending."""

    name = "bucket_sort"
    rank = 70
    level = "CS"
    symbols = ("a", "b", "c", "d", "e")
    description = "sort symbols ascending"
    output_rule = "N"
    uniform_alphabet = 5

    def sample(self, rng, length, batch_size):
        return self.examples(rng.integers(0, 5, size=(batch_size, length)))

    def examples(self, x):
        return Sample(x, np.sort(x, axis=1))

    def solve(self, inputs):
        counts = [0] * 5
        for s in inputs:
            counts[s] += 1
        return [s for s in range(5) for _ in range(counts[s])]
