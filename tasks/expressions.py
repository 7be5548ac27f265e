"""An iterative sampler for the bracketed modular expressions used by
``modular_arithmetic_brackets`` and ``solve_equation``.

Grammar for an expression of exactly n characters (Deletang et al. 2023):
n=1 ``d``, n=2 ``-d``, n=3 ``(d)``, n=4 ``(-d)``, n>=5 ``(L op R)`` with
``len(L)`` uniform in 1..n-4. Nodes are laid out top-down into a fixed array
(no recursion, so length 500 is as safe as length 5) and evaluated bottom-up.
"""

from __future__ import annotations

import numpy as np

MOD = 5
# symbol indices shared by both expression tasks
DIGITS = ("0", "1", "2", "3", "4")
PLUS, MINUS, TIMES, OPEN, CLOSE = 5, 6, 7, 8, 9
EXPRESSION_SYMBOLS = DIGITS + ("+", "-", "*", "(", ")")
LEAVES = {  # leaf expressions of 1..4 characters around one digit
    1: lambda d: [d],
    2: lambda d: [MINUS, d],
    3: lambda d: [OPEN, d, CLOSE],
    4: lambda d: [OPEN, MINUS, d, CLOSE],
}


def sample_expression(rng: np.random.Generator, length: int, operators: np.ndarray):
    """One expression: (symbols array of ``length``, value mod 5, digit positions).

    All random numbers are drawn up front (one call) and consumed per node:
    a tree of ``length`` characters has fewer than ``length`` nodes.
    """
    uniforms = rng.random((length, 2)).tolist()
    out = np.empty(length, dtype=np.int64)
    nodes = [(0, length)]  # (offset, length), parents before children
    children = []
    digits = []
    for offset, n in nodes:  # the list grows while we walk it: breadth-first
        u, v = uniforms[len(children)]
        if n <= 4:
            digit = int(u * MOD)
            leaf = LEAVES[n](digit)
            out[offset : offset + n] = leaf
            digits.append(offset + leaf.index(digit))
            children.append((None, None, -1 if n in (2, 4) else 1, digit))
        else:
            left = 1 + int(u * (n - 4))
            op = int(operators[int(v * len(operators))])
            out[offset] = OPEN
            out[offset + 1 + left] = op
            out[offset + n - 1] = CLOSE
            nodes.append((offset + 1, left))
            nodes.append((offset + 2 + left, n - 3 - left))
            children.append((len(nodes) - 2, len(nodes) - 1, op, None))
    values = [0] * len(nodes)
    for j in range(len(nodes) - 1, -1, -1):
        a, b, op, digit = children[j]
        if a is None:
            values[j] = (op * digit) % MOD
        elif op == PLUS:
            values[j] = (values[a] + values[b]) % MOD
        elif op == MINUS:
            values[j] = (values[a] - values[b]) % MOD
        else:
            values[j] = (values[a] * values[b]) % MOD
    return out, values[0], digits


def evaluate_expression(symbols: list[str]) -> int:
    """Oracle: evaluate an expression string with Python's parser, mod 5."""
    return eval("".join(symbols)) % MOD  # noqa: S307  (digits, operators and brackets only)
