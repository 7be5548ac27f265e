"""Recognition tasks (level ``recognition``): read a string, accept or reject it.

FLaRe (Butoi et al., ICLR 2025, "Training Neural Networks as Recognizers of
Formal Languages") asks the Chomsky question as its theory does: a recognizer
classifies strings, so a model is trained and scored on membership, with
negatives that are hard to tell from members. Its recipe, as its
``sample_dataset.py`` does it: each example's label is a fair coin; a
positive is sampled from the language; a negative is proposed, and proposed
again until it is not a member (at most 100 tries), each proposal with
probability 1/2 a positive with a Geometric(0.5) number of random edits
(each an insertion, replacement or deletion, uniformly among those the
length range allows) and otherwise a uniformly random string.

Ours is that recipe at one length at a time (FLaRe's length range [L, L]):
every string of a task length has the same number of symbols, positives and
negatives alike, so no length tells them apart; with a single length allowed
FLaRe's own edit step can only replace (an insertion or deletion would leave
the range), so our edits are replacements. A language whose members all have
even length (``repeat_01``, Dyck) counts its length in pairs of symbols
(``unit`` 2), so every length has members. Answer: ``accept`` or ``reject``,
one symbol, chance 1/2. Each language's docstring says how its positives are
drawn and where that differs from FLaRe's sampler.
"""

from __future__ import annotations

import functools

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task

EDIT_PROBABILITY = 0.5  # FLaRe's --perturbation-probability: a proposed negative is an edited positive
EDIT_STOP = 0.5  # the number of edits is Geometric(0.5) on 1, 2, ...
TRIES = 100  # FLaRe's: proposals before a negative is given up


class Recognition(Task):
    """A language over ``alphabet``: ``positive`` draws a member with ``unit * n`` symbols (its own
    distribution), ``member`` is the membership test (the oracle). Output: ``accept`` (1) or ``reject`` (0)."""

    level = "recognition"
    alphabet: tuple[str, ...] = ("0", "1")
    unit = 1  # symbols per task length
    output_rule = "1"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.symbols = (*cls.alphabet, "reject", "accept")

    def input_length(self, length):
        return self.unit * length

    def positive(self, rng: np.random.Generator, length: int) -> list[int]:
        raise NotImplementedError

    def member(self, string) -> bool:
        raise NotImplementedError

    def negative(self, rng: np.random.Generator, length: int) -> tuple[list[int], int]:
        """A non-member with ``unit * length`` symbols and its number of edits (0: a random string)."""
        k = len(self.alphabet)
        for _ in range(TRIES):
            if rng.random() < EDIT_PROBABILITY:
                string, edits = self.positive(rng, length), int(rng.geometric(EDIT_STOP))
                for _ in range(edits):  # a replacement: another symbol, uniformly
                    i = int(rng.integers(len(string)))
                    string[i] = (string[i] + 1 + int(rng.integers(k - 1))) % k
            else:
                string, edits = [int(s) for s in rng.integers(0, k, size=self.input_length(length))], 0
            if not self.member(string):
                return string, edits
        raise RuntimeError(f"{self.name}: no negative of length {length} in {TRIES} tries")

    def sample(self, rng, length, batch_size):
        accept = len(self.alphabet) + 1
        rows, answers = [], []
        for _ in range(batch_size):
            if rng.random() < 0.5:
                rows.append(self.positive(rng, length))
                answers.append(accept)
            else:
                rows.append(self.negative(rng, length)[0])
                answers.append(accept - 1)
        return Sample(np.array(rows, dtype=np.int64).reshape(batch_size, -1), np.array(answers)[:, None])

    def answer_chance(self, length):
        return 0.5  # the label is a fair coin, whatever the string

    def solve(self, inputs):
        return [len(self.alphabet) + int(self.member(list(inputs)))]


@register_task
class RecognizeFirst(Recognition):
    """FLaRe's ``first``: binary strings whose first symbol is 1. Positives: 1, then uniform bits (FLaRe's DFA
    with uniform transition probabilities gives the same: every member of a length alike)."""

    name = "recognize_first"
    rank = 10
    description = "accept binary strings that begin with 1 (FLaRe's first)"

    def positive(self, rng, length):
        return [1, *(int(b) for b in rng.integers(0, 2, size=length - 1))]

    def member(self, string):
        return len(string) > 0 and string[0] == 1


@register_task
class RecognizeParity(Recognition):
    """FLaRe's ``parity``: binary strings with an odd number of 1s. Positives: uniform over the members of the
    length (FLaRe's PDFA weighs its two states' transitions 1/3 and 1/2, which favours some members)."""

    name = "recognize_parity"
    rank = 20
    description = "accept binary strings with an odd number of 1s (FLaRe's parity)"

    def positive(self, rng, length):
        bits = [int(b) for b in rng.integers(0, 2, size=length)]
        if sum(bits) % 2 == 0:
            bits[int(rng.integers(length))] ^= 1
        return bits

    def member(self, string):
        return sum(string) % 2 == 1


@register_task
class RecognizeEvenPairs(Recognition):
    """FLaRe's ``even-pairs``: strings over {a, b} with an even number of ab and ba pairs, that is whose first
    and last symbols agree. Positives: uniform over the members of the length."""

    name = "recognize_even_pairs"
    rank = 30
    min_length = 2  # every string of one symbol has no pair: a member
    alphabet = ("a", "b")
    description = "accept strings over a, b with an even number of unequal adjacent pairs (FLaRe's even-pairs)"

    def positive(self, rng, length):
        string = [int(b) for b in rng.integers(0, 2, size=length)]
        string[-1] = string[0]
        return string

    def member(self, string):
        return sum(1 for a, b in zip(string, string[1:]) if a != b) % 2 == 0


@register_task
class RecognizeRepeat01(Recognition):
    """FLaRe's ``repeat-01``: (01)^n. Length n is the number of pairs (2n symbols): its one member of the
    length is every positive; a negative is a string of 2n symbols that is not it."""

    name = "recognize_repeat_01"
    rank = 40
    unit = 2
    description = "accept (01)^n, the length n pairs (FLaRe's repeat-01)"

    def positive(self, rng, length):
        return [0, 1] * length

    def member(self, string):
        return len(string) % 2 == 0 and list(string) == [0, 1] * (len(string) // 2)


@register_task
class RecognizeMajority(Recognition):
    """FLaRe's ``majority``: binary strings with more 1s than 0s. Positives as FLaRe draws them: the number
    of 1s uniform in n // 2 + 1 .. n, the symbols shuffled."""

    name = "recognize_majority"
    rank = 50
    description = "accept binary strings with more 1s than 0s (FLaRe's majority)"

    def positive(self, rng, length):
        ones = int(rng.integers(length // 2 + 1, length + 1))
        return [int(b) for b in rng.permutation([0] * (length - ones) + [1] * ones)]

    def member(self, string):
        return 2 * sum(string) > len(string)


DYCK_TYPES, DYCK_DEPTH = 2, 3


@functools.lru_cache(maxsize=None)
def _dyck_completions(remaining: int) -> tuple[int, ...]:
    """Per depth 0..3, how many ways ``remaining`` more symbols close a Dyck-(2, 3) prefix at that depth
    (counted up from 0 remaining, so any length is reached without deep recursion)."""
    ways = tuple(int(d == 0) for d in range(DYCK_DEPTH + 1))
    for _ in range(remaining):
        ways = tuple((ways[d - 1] if d else 0) + (DYCK_TYPES * ways[d + 1] if d < DYCK_DEPTH else 0)
                     for d in range(DYCK_DEPTH + 1))
    return ways


def _dyck_ways(depth: int, remaining: int) -> int:
    return _dyck_completions(remaining)[depth]


@register_task
class RecognizeDyck23(Recognition):
    """FLaRe's ``dyck-2-3``: balanced strings of 2 bracket types nested at most 3 deep. Length n is the number
    of bracket pairs (2n symbols). Positives: uniform over the members of the length, drawn symbol by symbol
    in proportion to the completions each choice leaves (FLaRe's DFA with uniform transition probabilities
    weighs members by their states' out-degrees instead)."""

    name = "recognize_dyck_2_3"
    rank = 60
    unit = 2
    alphabet = ("(", ")", "[", "]")
    description = "accept balanced strings of ( ) and [ ] nested at most 3 deep, the length n pairs (FLaRe's dyck-2-3)"

    def positive(self, rng, length):
        string, stack = [], []
        for remaining in range(2 * length, 0, -1):
            close = _dyck_ways(len(stack) - 1, remaining - 1) if stack else 0
            opens = _dyck_ways(len(stack) + 1, remaining - 1) if len(stack) < DYCK_DEPTH else 0
            if rng.random() < close / (close + DYCK_TYPES * opens):  # exact integers, one float share
                string.append(2 * stack.pop() + 1)
            else:
                kind = int(rng.integers(DYCK_TYPES))
                stack.append(kind)
                string.append(2 * kind)
        return string

    def member(self, string):
        stack = []
        for symbol in string:
            if symbol % 2 == 0:
                stack.append(symbol)
                if len(stack) > DYCK_DEPTH:
                    return False
            elif not stack or stack.pop() != symbol - 1:
                return False
        return not stack


class Marked(Recognition):
    """A language of ``w # f(w)`` over {0, 1, #}: length n is the length of w (2n + 1 symbols); w uniform, as
    FLaRe draws it."""

    alphabet = ("0", "1", "#")

    def input_length(self, length):
        return 2 * length + 1

    def image(self, w: list[int]) -> list[int]:
        raise NotImplementedError

    def positive(self, rng, length):
        w = [int(b) for b in rng.integers(0, 2, size=length)]
        return [*w, 2, *self.image(w)]

    def member(self, string):
        n, odd = divmod(len(string), 2)
        w = list(string[:n])
        return bool(odd) and string[n] == 2 and 2 not in w and list(string[n + 1:]) == self.image(w)


@register_task
class RecognizeMarkedReversal(Marked):
    """FLaRe's ``marked-reversal``: w # reversed(w), w over {0, 1}."""

    name = "recognize_marked_reversal"
    rank = 70
    description = "accept w # reversed(w), w binary, the length |w| (FLaRe's marked-reversal)"

    def image(self, w):
        return w[::-1]


@register_task
class RecognizeMarkedCopy(Marked):
    """FLaRe's ``marked-copy``: w # w, w over {0, 1}."""

    name = "recognize_marked_copy"
    rank = 80
    description = "accept w # w, w binary, the length |w| (FLaRe's marked-copy)"

    def image(self, w):
        return list(w)


@register_task
class RecognizeUnmarkedReversal(Recognition):
    """FLaRe's ``unmarked-reversal``: w reversed(w), w over {0, 1} (the even palindromes); length n is the length of
    w (2n symbols), w uniform."""

    name = "recognize_unmarked_reversal"
    rank = 90
    unit = 2
    description = "accept w reversed(w), w binary (even palindromes), the length |w| (FLaRe's unmarked-reversal)"

    def positive(self, rng, length):
        w = [int(b) for b in rng.integers(0, 2, size=length)]
        return [*w, *w[::-1]]

    def member(self, string):
        return len(string) % 2 == 0 and list(string) == list(string)[::-1]
