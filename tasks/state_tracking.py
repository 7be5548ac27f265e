"""State-tracking tasks (level ``state``): the model must carry a state
through the whole input, one update per symbol, and report it at the end.

They are the tasks the 2024-26 claims about recurrent models and
data-dependent position mechanisms are made on: word problems on groups
(Liu et al. 2023, "Transformers Learn Shortcuts to Automata"; Merrill et al.
2024, "The Illusion of State in State-Space Models") and the flip-flop
language (Liu et al. 2023, "Exposing Attention Glitches with Flip-Flop
Language Modeling").

Our framing, for all three, is the suite's decoder-only one (``BOS input
SEP output EOS``) with **one output symbol: the state after the whole
input**. The papers supervise the state after every prefix, read at that
prefix's own token (a tagging task). Written after ``SEP``, as this suite
writes outputs, every prefix's state would let the model compose each
answer from its own previous one (a scratchpad: the running composition
is then one step per output, not state tracking), and a recurrent model
would have to remember every prefix's state until ``SEP`` (a copying
problem). The final state is the problem both papers' claims are about (the
word problem of S5 is NC1-complete; parity_check and cycle_navigation are
the word problems of Z2 and Z5 in the same framing). The ``tagged`` data
format trains the word problems the papers' way instead: the state after
every prefix at that prefix's own input symbol (``prefix_states``), never
fed back, the final state the one answer scored (``tasks.formats``).
"""

from __future__ import annotations

import functools
from itertools import permutations

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task


class WordProblem(Task):
    """The word problem of the symmetric group on ``degree`` points.

    Input: N permutations drawn uniformly from the group (every element,
    the identity included, as Merrill et al. sample). Output: one symbol,
    their composition ``g_N o ... o g_1`` (``g_1`` applied first). A
    permutation is written in one-line notation: ``201`` maps 0 -> 2,
    1 -> 0, 2 -> 1; input and output share these symbols.
    """

    level = "state"
    degree: int
    uniform_alphabet = 0  # set per group below (the group's order)

    @classmethod
    def elements(cls) -> list[tuple[int, ...]]:
        return list(permutations(range(cls.degree)))

    @classmethod
    def table(cls) -> np.ndarray:
        """``table[a, b]`` = the index of ``b o a`` (a applied first)."""
        return composition_table(cls.degree)

    def sample(self, rng, length, batch_size):
        return self.examples(rng.integers(0, len(self.symbols), size=(batch_size, length)))

    def examples(self, x):
        return Sample(x, self.prefix_states(x)[:, -1:])

    def answer_chance(self, length):
        return 1 / len(self.symbols)  # a product of uniform elements of a group is uniform over the group

    def prefix_states(self, inputs):
        table, states = self.table(), np.empty_like(inputs)
        states[:, 0] = inputs[:, 0]
        for t in range(1, inputs.shape[1]):  # one vectorized update per position (the group is not abelian)
            states[:, t] = table[states[:, t - 1], inputs[:, t]]
        return states

    def solve(self, inputs):
        elements = self.elements()
        state = tuple(range(self.degree))
        for g in inputs:
            move = elements[g]
            state = tuple(move[state[i]] for i in range(self.degree))
        return [elements.index(state)]


@functools.cache
def composition_table(degree: int) -> np.ndarray:
    """``[a, b]`` = the index of ``b o a`` among ``permutations(range(degree))``."""
    elements = list(permutations(range(degree)))
    index = {p: i for i, p in enumerate(elements)}
    return np.array([[index[tuple(b[a[i]] for i in range(degree))] for b in elements] for a in elements])


def _one_line(p: tuple[int, ...]) -> str:
    return "".join(map(str, p))


@register_task
class WordProblemS5(WordProblem):
    """The word problem of S5 (120 elements; not solvable, so NC1-complete:
    Barrington 1989). Merrill et al. 2024 and Liu et al. 2023 use it as the
    state-tracking problem that transformers and diagonal (or any
    non-input-dependent-transition) state-space models cannot solve at
    arbitrary length with fixed depth, and nonlinear RNNs can.
    Differences from the papers: the final state only (module docstring);
    lengths are the suite's (Merrill et al. train and test on fixed lengths
    up to about 20 and measure the depth needed, not length generalization).
    """

    name = "word_problem_s5"
    rank = 10
    degree = 5
    symbols = tuple(_one_line(p) for p in permutations(range(5)))
    uniform_alphabet = 120
    description = "composition of N permutations of S5 (non-solvable group: NC1-complete)"
    output_rule = "1"


@register_task
class WordProblemS3(WordProblem):
    """The word problem of S3 (6 elements; solvable, non-abelian), the
    contrast to S5: a solvable group's word problem has constant-depth
    shortcuts (Liu et al. 2023, Krohn-Rhodes), so the hardness boundary
    falls between this task and ``word_problem_s5``. Merrill et al.'s own
    contrasts are A4 x Z5 and Z60 (60 elements, like A5); S3 keeps the
    vocabulary small and is the smallest non-abelian group, so the
    contrast is solvability, not commutativity. Differences as for S5.
    """

    name = "word_problem_s3"
    rank = 20
    degree = 3
    symbols = tuple(_one_line(p) for p in permutations(range(3)))
    uniform_alphabet = 6
    description = "composition of N permutations of S3 (solvable group: the contrast to S5)"
    output_rule = "1"


WRITE, IGNORE_INSTRUCTION, READ = 0, 1, 2
FIRST_BIT = 3  # the bit symbols "0", "1" follow the three instructions


@register_task
class FlipFlop(Task):
    """The flip-flop language (Liu et al. 2023): N instructions, each an
    instruction symbol and a bit: ``w b`` writes b, ``i b`` is ignored,
    ``r b`` reads, and a read's bit is the last written bit.

    Input (2N - 1 symbols): the first instruction is a write and the last a
    read, as in the paper's strings; each other is an ignore with
    probability ``ignore_probability`` and otherwise a write or a read with
    equal probability (the paper's FFL(p) with p_w = p_r = (1 - p) / 2);
    written and ignored bits are uniform, and every read before the last
    carries its correct bit (the string is in the language); the input
    ends with the last read's instruction. Output: that read's bit, the
    last written bit.

    ``ignore_probability`` is this task's setting: 0.8, the paper's
    training distribution FFL(0.8) (its sparse and dense test sets use 0.98
    and 0.1); a variant is a subclass with another value and another name.
    Differences from the paper: it trains a language model on every token
    and scores the bit after every read; here one read is scored (the
    last), the earlier reads' bits are part of the input, and length is the
    number of instructions (the paper: 512 tokens at every step, varying p).
    """

    name = "flip_flop"
    rank = 30
    level = "state"
    symbols = ("w", "i", "r", "0", "1")
    description = "flip-flop language: the bit of the last write, read after N instructions (ignore p 0.8)"
    output_rule = "1"
    min_length = 2
    ignore_probability = 0.8

    def input_length(self, length):
        return 2 * length - 1

    def sample(self, rng, length, batch_size):
        move = (1 - self.ignore_probability) / 2
        ops = rng.choice(3, size=(batch_size, length), p=[move, self.ignore_probability, move])
        ops[:, 0], ops[:, -1] = WRITE, READ
        bits = rng.integers(0, 2, size=(batch_size, length))
        steps = np.arange(length)
        last_write = np.maximum.accumulate(np.where(ops == WRITE, steps, -1), axis=1)  # >= 0: step 0 writes
        bits = np.where(ops == READ, np.take_along_axis(bits, last_write, axis=1), bits)
        x = np.empty((batch_size, 2 * length), dtype=np.int64)
        x[:, 0::2], x[:, 1::2] = ops, FIRST_BIT + bits
        return Sample(x[:, :-1], x[:, -1:])

    def answer_chance(self, length):
        return 0.5  # the last written bit is uniform

    def solve(self, inputs):
        written = None
        for op, bit in zip(inputs[0::2], inputs[1::2]):
            if op == WRITE:
                written = bit
        return [written]
