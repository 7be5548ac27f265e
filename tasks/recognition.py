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

Evaluation reports accuracy by a string's distance to the language as FLaRe
plots it (its minimum edit distance to a member), here the fewest
replacements that make the string a member of its own length (the only
edits our negatives get): members, distance 1, 2 and 3 or more. Regular
languages compute it on their automaton (``dfa``), the others in closed
form; a language with neither (``recognize_stack_manipulation``) slices its
negatives as ``non-member``.
"""

from __future__ import annotations

import functools

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task

EDIT_PROBABILITY = 0.5  # FLaRe's --perturbation-probability: a proposed negative is an edited positive
EDIT_STOP = 0.5  # the number of edits is Geometric(0.5) on 1, 2, ...
TRIES = 100  # FLaRe's: proposals before a negative is given up
MEMBER, FAR, UNMEASURED = "member", "distance 3+", "non-member"  # example slices (``example_slices``)
DEAD = -1  # a DFA's rejecting sink


def dfa_distances(inputs: np.ndarray, table: np.ndarray, accepting) -> np.ndarray:
    """Per row of ``inputs`` ``(B, N)``, the fewest symbols to replace so that
    the automaton (``table[state, symbol]`` the next state or ``DEAD``, start
    state 0) ends in ``accepting``: a shortest-path pass over its states, one
    position at a time. ``-1`` where no string of that length is accepted."""
    states, symbols = table.shape
    edges = [(q, a, int(table[q, a])) for q in range(states) for a in range(symbols) if table[q, a] != DEAD]
    into = {t: [(q, a) for q, a, u in edges if u == t] for t in range(states)}
    big = inputs.shape[1] + 1  # more than any distance
    cost = np.full((len(inputs), states), big, dtype=np.int64)
    cost[:, 0] = 0
    for column in inputs.T:
        cost = np.stack([np.min([cost[:, q] + (column != a) for q, a in into[t]], axis=0) if into[t]
                         else np.full(len(inputs), big) for t in range(states)], axis=1).clip(max=big)
    best = cost[:, sorted(accepting)].min(1)
    return np.where(best >= big, -1, best)


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

    def distances(self, inputs: np.ndarray) -> np.ndarray:
        """Per row of ``inputs`` ``(B, N)``, the fewest replacements that make it
        a member (0 for a member; -1 where not measured): on the language's
        automaton where it has one (``dfa``), else members only."""
        automaton = self.dfa()
        if automaton is None:
            return np.array([0 if self.member(row) else -1 for row in inputs.tolist()])
        return dfa_distances(inputs, *automaton)

    def dfa(self) -> tuple[np.ndarray, set[int]] | None:
        """A regular language's DFA: its transition table (start state 0) and accepting states; None otherwise."""
        return None

    def example_slices(self, inputs):
        distance = self.distances(inputs)
        return np.array([MEMBER if d == 0 else UNMEASURED if d < 0 else FAR if d >= 3 else f"distance {d}"
                         for d in distance.tolist()])

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

    def dfa(self):  # 0 start, 1 began with 1
        return np.array([[DEAD, 1], [1, 1]]), {1}


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

    def dfa(self):  # the number of 1s mod 2
        return np.array([[0, 1], [1, 0]]), {1}


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

    def dfa(self):  # 0 empty, then 1 + 2 * first + last
        return np.array([[1, 4], [1, 2], [1, 2], [3, 4], [3, 4]]), {0, 1, 4}


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

    def dfa(self):  # 0 expects 0, 1 expects 1
        return np.array([[1, DEAD], [DEAD, 0]]), {0}


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

    def distances(self, inputs):  # replace 0s by 1s until they are the majority
        return np.maximum(0, inputs.shape[1] // 2 + 1 - inputs.sum(1))


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

    def dfa(self):  # a state per stack of at most 3 bracket types, the empty stack first
        stacks = [()]
        for stack in stacks:
            if len(stack) < DYCK_DEPTH:
                stacks += [(*stack, kind) for kind in range(DYCK_TYPES)]
        index = {stack: i for i, stack in enumerate(stacks)}
        table = np.full((len(stacks), 2 * DYCK_TYPES), DEAD)
        for stack, i in index.items():
            for kind in range(DYCK_TYPES):
                table[i, 2 * kind] = index.get((*stack, kind), DEAD)
                if stack and stack[-1] == kind:
                    table[i, 2 * kind + 1] = index[stack[:-1]]
        return table, {0}


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

    def distances(self, inputs):  # the marker in place, and each symbol of f(w) equal to its symbol of w
        n = inputs.shape[1] // 2
        w, tail = inputs[:, self.image(list(range(n)))], inputs[:, n + 1:]
        pairs = np.minimum((w != 0).astype(int) + (tail != 0), (w != 1).astype(int) + (tail != 1))
        return pairs.sum(1) + (inputs[:, n] != 2)


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

    def distances(self, inputs):  # one replacement per unequal pair of mirrored symbols
        half = inputs.shape[1] // 2
        return (inputs[:, :half] != inputs[:, ::-1][:, :half]).sum(1)


MOVES = 3  # cycle navigation's >, <, =
CYCLE = 5


@register_task
class RecognizeCycleNavigation(Recognition):
    """FLaRe's ``cycle-navigation``: moves on a cycle of 5 places from place 0 (``>`` forward, ``<`` back,
    ``=`` stay), then the place they end at. Length n is the number of moves (n + 1 symbols). Positives:
    uniform moves and their end, as FLaRe's automaton draws them at one length (every move 1/4, the end 1/4)."""

    name = "recognize_cycle_navigation"
    rank = 100
    alphabet = (">", "<", "=", *(str(i) for i in range(CYCLE)))
    description = "accept moves on a 5-cycle (> < =) followed by the place they end at (FLaRe's cycle-navigation)"

    def input_length(self, length):
        return length + 1

    def positive(self, rng, length):
        moves = [int(m) for m in rng.integers(0, MOVES, size=length)]
        place = sum({0: 1, 1: -1, 2: 0}[m] for m in moves) % CYCLE
        return [*moves, MOVES + place]

    def member(self, string):
        if not string:
            return False
        *moves, end = string
        if any(m >= MOVES for m in moves) or end < MOVES:
            return False
        return (moves.count(0) - moves.count(1)) % CYCLE == end - MOVES

    def dfa(self):  # states 0..4 the place, 5 after the end
        table = np.full((CYCLE + 1, len(self.alphabet)), DEAD)
        for place in range(CYCLE):
            table[place, :MOVES] = [(place + 1) % CYCLE, (place - 1) % CYCLE, place]
            table[place, MOVES + place] = CYCLE
        return table, {CYCLE}


DIGITS, OPERATORS = 5, ("+", "-", "*")


@register_task
class RecognizeModularArithmetic(Recognition):
    """FLaRe's ``modular-arithmetic-simple``: ``d (op d)* = r`` over digits 0..4 and + - *, evaluated left to
    right mod 5 at each step, r the result. Length n is the number of operations (2n + 3 symbols). Positives:
    uniform digits and operators (FLaRe's automaton at one length: every digit 1/5, every operator 1/4)."""

    name = "recognize_modular_arithmetic"
    rank = 110
    alphabet = (*(str(i) for i in range(DIGITS)), *OPERATORS, "=")
    description = ("accept d op d ... = r over digits 0-4 and + - *, evaluated left to right mod 5 "
                   "(FLaRe's modular-arithmetic-simple)")

    def input_length(self, length):
        return 2 * length + 3

    @staticmethod
    def apply(value: int, operator: int, digit: int) -> int:
        return {0: value + digit, 1: value - digit, 2: value * digit}[operator - DIGITS] % DIGITS

    def positive(self, rng, length):
        value = int(rng.integers(DIGITS))
        string = [value]
        for _ in range(length):
            operator, digit = DIGITS + int(rng.integers(len(OPERATORS))), int(rng.integers(DIGITS))
            value = self.apply(value, operator, digit)
            string += [operator, digit]
        return [*string, DIGITS + len(OPERATORS), value]

    def member(self, string):
        if len(string) < 3 or len(string) % 2 == 0 or string[-2] != DIGITS + len(OPERATORS):
            return False
        digits, operators = string[:-2:2], string[1:-2:2]
        if any(d >= DIGITS for d in (*digits, string[-1])) or any(not DIGITS <= o < DIGITS + 3 for o in operators):
            return False
        value = digits[0]
        for operator, digit in zip(operators, digits[1:]):
            value = self.apply(value, operator, digit)
        return value == string[-1]

    def dfa(self):  # 0 start, 1 + v a value v, 6 + 3 v + o after v and operator o, 21 + v after v =, 26 final
        equals, table = DIGITS + len(OPERATORS), np.full((27, len(self.alphabet)), DEAD)
        table[0, :DIGITS] = 1 + np.arange(DIGITS)
        for value in range(DIGITS):
            table[1 + value, DIGITS:equals] = 6 + 3 * value + np.arange(len(OPERATORS))
            table[1 + value, equals] = 21 + value
            table[21 + value, value] = 26
            for o in range(len(OPERATORS)):
                table[6 + 3 * value + o, :DIGITS] = [1 + self.apply(value, DIGITS + o, d) for d in range(DIGITS)]
        return table, {26}


PUSH, POP, MARKER = 2, 3, 4  # stack manipulation's symbols after 0 and 1


@register_task
class RecognizeStackManipulation(Recognition):
    """FLaRe's ``stack-manipulation``: a stack of bits (bottom first), then operations (``PUSH b`` or ``POP``,
    never on an empty stack), then ``#``, then the stack they leave, top first. Length n is the string's
    length less 1 (n + 1 symbols; a pop leaves it unchanged, so n = 2 (initial bits) + 3 (pushes), and n = 1
    has no member). Positives as FLaRe draws them, at one length: the initial bits and pushes uniform among
    the splits of n, then FLaRe's walk (push or, on a non-empty stack, pop, with equal chance, until a push
    would exceed the pushes). Not a regular language: its negatives' distance is not measured (``non-member``)."""

    name = "recognize_stack_manipulation"
    rank = 120
    min_length = 2
    alphabet = ("0", "1", "PUSH", "POP", "#")
    description = "accept bits, PUSH b / POP operations, #, and the stack they leave (FLaRe's stack-manipulation)"

    def input_length(self, length):
        return length + 1

    def positive(self, rng, length):
        splits = [(bits, (length - 2 * bits) // 3) for bits in range(length // 2 + 1) if (length - 2 * bits) % 3 == 0]
        bits, pushes = splits[int(rng.integers(len(splits)))]
        stack = [int(b) for b in rng.integers(0, 2, size=bits)]
        string = list(stack)
        while True:
            if stack and rng.random() < 0.5:
                string.append(POP)
                stack.pop()
            elif pushes:
                pushes -= 1
                stack.append(int(rng.integers(2)))
                string += [PUSH, stack[-1]]
            else:
                break
        return [*string, MARKER, *stack[::-1]]

    def member(self, string):
        i, stack = 0, []
        while i < len(string) and string[i] < 2:
            stack.append(string[i])
            i += 1
        while i < len(string) and string[i] in (PUSH, POP):
            if string[i] == POP:
                if not stack:
                    return False
                stack.pop()
                i += 1
            elif i + 1 < len(string) and string[i + 1] < 2:
                stack.append(string[i + 1])
                i += 2
            else:
                return False
        return i < len(string) and string[i] == MARKER and list(string[i + 1:]) == stack[::-1]
