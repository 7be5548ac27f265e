"""Deterministic context-free (DCF) tasks of the Chomsky-hierarchy suite
(Deletang et al. 2023). Decoder-only framing: outputs follow SEP instead of
filling extra "empty" input slots."""

from __future__ import annotations

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task
from lengthbench.tasks.expressions import (
    EXPRESSION_SYMBOLS,
    MINUS,
    MOD,
    PLUS,
    TIMES,
    evaluate_expression,
    sample_expression,
)
from lengthbench.tasks.sequence import Rearrangement


@register_task
class StackManipulation(Task):
    """Execute stack actions and output the final stack.

    Input: an initial stack of k ~ U{1..N-1} bits (bottom to top), then N-k
    actions uniform over {POP, PUSH0, PUSH1}; POP on an empty stack does
    nothing. Output: the final stack from top to bottom, then ``END``.
    """

    name = "stack_manipulation"
    rank = 10
    level = "DCF"
    symbols = ("0", "1", "POP", "PUSH0", "PUSH1", "END")
    description = "final stack (top first) after push/pop actions"
    output_rule = "final stack size + 1"
    min_length = 2

    def sample(self, rng, length, batch_size):
        k = rng.integers(1, length, size=batch_size)
        col = np.arange(length)
        x = np.where(col < k[:, None], rng.integers(0, 2, size=(batch_size, length)),
                     rng.integers(2, 5, size=(batch_size, length)))
        stack = np.zeros((batch_size, length), dtype=np.int64)
        size = np.zeros(batch_size, dtype=np.int64)
        rows = np.arange(batch_size)
        for t in range(length):
            s = x[:, t]
            push = (s <= 1) | (s >= 3)
            stack[rows, size] = np.where(push, np.where(s <= 1, s, s - 3), stack[rows, size])
            size = size + push - ((s == 2) & (size > 0))
        width = size.max() + 1
        j = np.arange(width)
        top_first = stack[rows[:, None], np.clip(size[:, None] - 1 - j, 0, None)]
        out = np.where(j < size[:, None], top_first, np.where(j == size[:, None], 5, -1))
        return Sample(x, out, output_lengths=size + 1)

    def solve(self, inputs):
        stack, initial = [], True
        for s in inputs:
            if initial and s <= 1:
                stack.append(s)
                continue
            initial = False
            if s == 2:
                if stack:
                    stack.pop()
            else:
                stack.append(s - 3)
        return stack[::-1] + [5]


@register_task
class ReverseString(Rearrangement):
    """Output the input bits reversed.

    Input: N uniform bits. Output: the bits in reverse order. Coupled ids
    (see ``Rearrangement``): output j shares the id of input N-1-j.
    """

    name = "reverse_string"
    rank = 20
    level = "DCF"
    symbols = ("0", "1")
    description = "output the input bits reversed"
    output_rule = "N"

    def source(self, length):
        return np.arange(length)[::-1].copy()

    def solve(self, inputs):
        return list(reversed(inputs))


class _ExpressionTask(Task):
    """Shared sampling loop for the two bracket-expression tasks."""

    operators: np.ndarray

    def _expressions(self, rng, length, batch_size):
        return [sample_expression(rng, length, self.operators) for _ in range(batch_size)]


@register_task
class ModularArithmeticBrackets(_ExpressionTask):
    """Value mod 5 of a random bracketed expression of exactly N characters
    over digits 0-4, +, -, x and brackets (grammar in ``tasks.expressions``).
    Output: one digit."""

    name = "modular_arithmetic_brackets"
    rank = 30
    level = "DCF"
    symbols = EXPRESSION_SYMBOLS
    description = "bracketed +,-,* expression mod 5"
    output_rule = "1"
    operators = np.array([PLUS, MINUS, TIMES])

    def sample(self, rng, length, batch_size):
        exprs = self._expressions(rng, length, batch_size)
        return Sample(np.stack([e[0] for e in exprs]), np.array([[e[1]] for e in exprs]))

    def solve(self, inputs):
        return [evaluate_expression([self.symbols[s] for s in inputs])]


@register_task
class SolveEquation(_ExpressionTask):
    """Solve ``expression = v`` for the unknown ``x``, mod 5.

    Input: a bracketed expression of N-2 characters without x (so it is
    linear in every digit with coefficient +-1 and the solution is unique),
    one of its digits (uniform) replaced by ``x``, then ``=`` and the value v
    of the original expression. Output: the value of x (one digit).
    """

    name = "solve_equation"
    rank = 40
    level = "DCF"
    symbols = EXPRESSION_SYMBOLS + ("x", "=")
    description = "solve a linear bracketed equation mod 5 for x"
    output_rule = "1"
    min_length = 3
    operators = np.array([PLUS, MINUS])

    def sample(self, rng, length, batch_size):
        exprs = self._expressions(rng, length - 2, batch_size)
        x = np.empty((batch_size, length), dtype=np.int64)
        answer = np.empty((batch_size, 1), dtype=np.int64)
        for row, (symbols, value, digits) in enumerate(exprs):
            where = digits[rng.integers(0, len(digits))]
            answer[row, 0] = symbols[where]
            x[row, : length - 2] = symbols
            x[row, where] = len(EXPRESSION_SYMBOLS)
            x[row, length - 2] = len(EXPRESSION_SYMBOLS) + 1
            x[row, length - 1] = value
        return Sample(x, answer)

    def solve(self, inputs):
        text = [self.symbols[s] for s in inputs[:-2]]
        target = inputs[-1]
        hole = text.index("x")
        solutions = [d for d in range(MOD)
                     if evaluate_expression(text[:hole] + [str(d)] + text[hole + 1 :]) == target]
        assert len(solutions) == 1, solutions
        return solutions
