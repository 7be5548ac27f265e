"""Regular (R) tasks of the Chomsky-hierarchy suite (Deletang et al. 2023).

Each reads N input symbols and emits one output symbol (a classification).
"""

from __future__ import annotations

import itertools

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task

MOD = 5
OPERATORS = ("+", "-", "*")


@register_task
class EvenPairs(Task):
    """Whether the number of unequal adjacent pairs ("ab" or "ba") is even.

    Input: N uniform symbols over {a, b}. Output: ``1`` when that count is
    even (equivalently, first symbol == last symbol), else ``0``. N = 1 has
    no pairs, so the answer is ``1``.
    """

    name = "even_pairs"
    rank = 10
    level = "R"
    symbols = ("a", "b", "0", "1")
    description = "is the number of unequal adjacent pairs even"
    output_rule = "1"
    uniform_alphabet = 2

    def sample(self, rng, length, batch_size):
        return self.examples(rng.integers(0, 2, size=(batch_size, length)))

    def examples(self, x):
        return Sample(x, (2 + (x[:, 0] == x[:, -1]))[:, None])

    def answer_chance(self, length):
        return 1.0 if length == 1 else 0.5  # one symbol has no pair; else the last symbol is a fair coin

    def solve(self, inputs):
        changes = sum(1 for a, b in zip(inputs, inputs[1:]) if a != b)
        return [3 if changes % 2 == 0 else 2]


@register_task
class ParityCheck(Task):
    """Whether the number of 1s is odd.

    Input: N uniform bits. Output: one symbol, ``1`` when the count of 1s is
    odd, else ``0``.
    """

    name = "parity_check"
    rank = 20
    level = "R"
    symbols = ("0", "1")
    description = "parity of the number of 1s"
    output_rule = "1"
    uniform_alphabet = 2

    def sample(self, rng, length, batch_size):
        return self.examples(rng.integers(0, 2, size=(batch_size, length)))

    def examples(self, x):
        return Sample(x, (x.sum(axis=1) % 2)[:, None])

    def answer_chance(self, length):
        return 0.5  # the last bit alone decides the parity: a fair coin

    def prefix_states(self, inputs):
        return np.cumsum(inputs, axis=1) % 2

    def solve(self, inputs):
        ones = sum(1 for s in inputs if s == 1)
        return [ones % 2]


@register_task
class CycleNavigation(Task):
    """Final position on a cycle of length 5 starting at 0.

    Input: N symbols from {0, 1, 2} meaning move -1, stay, +1. Output: the
    final position (one of 5 symbols ``p0..p4``).
    """

    name = "cycle_navigation"
    rank = 30
    level = "R"
    symbols = ("0", "1", "2", "p0", "p1", "p2", "p3", "p4")
    description = "final position on a 5-cycle after -1/0/+1 moves"
    output_rule = "1"
    uniform_alphabet = 3

    def sample(self, rng, length, batch_size):
        return self.examples(rng.integers(0, 3, size=(batch_size, length)))

    def examples(self, x):
        return Sample(x, (3 + (x - 1).sum(axis=1) % MOD)[:, None])

    def answer_chance(self, length):
        position = np.eye(MOD)[0]  # the distribution of the position, moved by each uniform step -1, 0, +1
        for _ in range(length):
            position = (np.roll(position, -1) + position + np.roll(position, 1)) / 3
        return float(position.max())

    def prefix_states(self, inputs):
        return 3 + np.cumsum(inputs - 1, axis=1) % MOD

    def solve(self, inputs):
        position = 0
        for move in inputs:
            position = (position + {0: -1, 1: 0, 2: 1}[move]) % MOD
        return [3 + position]


@register_task
class ModularArithmetic(Task):
    """Value mod 5 of a flat expression, with x binding tighter than + and -.

    Length N is forced odd (N - 1 when N is even): digits 0-4 at even
    positions, operators from {+, -, x} at odd positions, all uniform. Output:
    the value mod 5 as one digit. Every length draws fresh operators (one
    reference implementation consumed its operator list after the first
    length; we test that the operator mix is the same at every length).
    """

    name = "modular_arithmetic"
    rank = 40
    level = "R"
    symbols = ("0", "1", "2", "3", "4") + OPERATORS
    description = "flat +,-,* expression mod 5 (* binds tighter)"
    output_rule = "1"

    def input_length(self, length):
        return length if length % 2 else length - 1

    def sample(self, rng, length, batch_size):
        n = self.input_length(length)
        x = np.empty((batch_size, n), dtype=np.int64)
        x[:, 0::2] = rng.integers(0, MOD, size=(batch_size, (n + 1) // 2))
        x[:, 1::2] = MOD + rng.integers(0, 3, size=(batch_size, n // 2))
        total = np.zeros(batch_size, dtype=np.int64)
        term = x[:, 0].copy()  # the running product, sign included
        for i in range(1, n, 2):
            op, digit = x[:, i] - MOD, x[:, i + 1]
            product = op == 2
            total = np.where(product, total, (total + term) % MOD)
            term = np.where(product, term * digit, np.where(op == 0, digit, -digit)) % MOD
        return Sample(x, ((total + term) % MOD)[:, None])

    def answer_chance(self, length):
        # the distribution of (total so far, running product) mod 5, read left to right as ``sample`` computes it
        state = np.zeros((MOD, MOD))
        state[0, :] = 1 / MOD  # no total yet; the first digit uniform
        for _ in range(self.input_length(length) // 2):  # an operator and a digit, each uniform
            step = np.zeros_like(state)
            for total, term, digit in itertools.product(range(MOD), range(MOD), range(MOD)):
                weight = state[total, term] / (3 * MOD)
                step[(total + term) % MOD, digit] += weight  # +
                step[(total + term) % MOD, -digit % MOD] += weight  # -
                step[total, term * digit % MOD] += weight  # x
            state = step
        answers = np.zeros(MOD)
        for total, term in itertools.product(range(MOD), range(MOD)):
            answers[(total + term) % MOD] += state[total, term]
        return float(answers.max())

    def solve(self, inputs):
        text = "".join(self.symbols[s] for s in inputs)
        return [eval(text) % MOD]  # noqa: S307  (our own digits and operators only)
