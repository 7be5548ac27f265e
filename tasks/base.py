"""The task contract, the task registry and the batch assembler.

A task samples fixed-length groups of examples as arrays of *task symbols*
(indices into ``Task.symbols``). ``make_batch`` turns groups of possibly
different lengths into one decoder-only batch ``BOS input SEP output EOS``,
right-padded, with next-token targets masked to the output part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lengthbench.core.errors import InputError
from lengthbench.core.entry_points import discover_plugins
from lengthbench.core.registry import Registry
from lengthbench.tasks.cells import FORMAT_SEPARATOR

PAD, BOS, SEP, EOS = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<bos>", "<sep>", "<eos>")
N_SPECIAL = len(SPECIAL_TOKENS)
IGNORE = -1  # target value for positions that carry no loss
WHOLE_SPACE_MAX = 1 << 16  # the most inputs ``Task.whole_space`` lists at one length

LEVELS = ("R", "DCF", "CS", "arithmetic", "sequence", "state", "recall", "recognition")
# What each level stands for, spelled out wherever a table or page shows the short names.
LEVEL_TITLES = {"R": "regular", "DCF": "deterministic context-free", "CS": "context-sensitive",
                "arithmetic": "arithmetic", "sequence": "sequence", "state": "state tracking",
                "recall": "associative recall", "recognition": "language recognition"}


@dataclass(frozen=True)
class Sample:
    """One group of ``B`` examples at one task length, in task symbols.

    ``outputs`` may be right-padded with -1 when output lengths differ; then
    ``output_lengths`` gives each example's true output length.
    ``coupled_ids`` (optional) are position ids for the whole sequence
    ``BOS input SEP output EOS`` laid out with ``outputs``' padded width.
    ``answer_mask`` (optional, ``outputs``' shape) marks the output symbols
    that are the final answer, the only ones scored; a format's other
    output symbols (``tasks.formats``) are trained but not scored. None:
    every output symbol is the answer. ``input_targets`` (optional,
    ``inputs``' shape, task symbols) are what each input position is
    trained to predict instead of the next input symbol (a tagging format's
    per-prefix states, ``tasks.formats``; a recall task's earlier queries'
    values): trained, never scored, never fed back; a negative entry trains
    its position on nothing. None: input positions carry no loss.
    """

    inputs: np.ndarray
    outputs: np.ndarray
    output_lengths: np.ndarray | None = None
    coupled_ids: np.ndarray | None = None
    answer_mask: np.ndarray | None = None
    input_targets: np.ndarray | None = None


@dataclass(frozen=True)
class Batch:
    """A model-ready batch (numpy int64 arrays of shape ``(B, T)`` unless noted).

    ``tokens`` are the model inputs, ``targets`` the next tokens (``IGNORE``
    outside output+EOS, where a sample's ``input_targets`` do not fill the
    input positions), ``scored`` marks the positions whose prediction is an
    output symbol (metrics use only these; EOS is trained but not scored),
    ``position_ids`` the task's structured ids (plain ``0..T-1`` when it has
    none), ``seq_lens`` the real (unpadded) token count and ``lengths`` the
    task length of each example.
    """

    tokens: np.ndarray
    targets: np.ndarray
    scored: np.ndarray
    position_ids: np.ndarray
    seq_lens: np.ndarray
    lengths: np.ndarray


class Task:
    """Base class of every task. Subclasses set the class attributes and
    implement ``sample`` (vectorized) and ``solve`` (an independent oracle)."""

    name: ClassVar[str]
    level: ClassVar[str]  # one of LEVELS
    rank: ClassVar[int | None] = None  # its place within its level on every board (None: after the ranked)
    symbols: ClassVar[tuple[str, ...]]
    description: ClassVar[str]
    output_rule: ClassVar[str]  # human-readable output length rule
    min_length: ClassVar[int] = 1
    max_length: ClassVar[int | None] = None  # longest length the vocabulary allows
    has_coupled_ids: ClassVar[bool] = False
    #: True when the coupled ids are digit significance + 1 (0 for non-digits), as in
    #: the numeric tasks; what ``abacus`` needs
    coupled_ids_are_significance: ClassVar[bool] = False
    #: bumped when a change to the task alters its data (it enters the run
    #: config, so records of the old data are rerun, not reused)
    version: ClassVar[int] = 1

    @property
    def vocab_size(self) -> int:
        return N_SPECIAL + len(self.symbols)

    def sample(self, rng: np.random.Generator, length: int, batch_size: int) -> Sample:
        raise NotImplementedError

    def solve(self, inputs: list[int]) -> list[int]:
        """Oracle: the output symbols for one example's input symbols."""
        raise NotImplementedError

    #: k for a task whose input at length N is N symbols drawn uniformly from 0..k-1 (its
    #: ``sample`` is ``examples`` of such strings); 0 for the others
    uniform_alphabet: ClassVar[int] = 0

    def examples(self, inputs: np.ndarray) -> Sample:
        """The examples of given inputs ``(B, N)``, for a task with a ``uniform_alphabet``."""
        raise NotImplementedError

    def whole_space(self, length: int) -> Sample | None:
        """Every example of a task length, each input ``sample`` can draw once,
        for a task whose inputs at that length are few enough to list (the
        fit is then judged on all of them when training drew nearly all:
        ``benchmark.unseen``); None when the task does not list them. A task
        with a ``uniform_alphabet`` lists up to ``WHOLE_SPACE_MAX`` strings."""
        k = self.uniform_alphabet
        if not k or k ** self.input_length(length) > WHOLE_SPACE_MAX:
            return None
        return self.examples(every_string(k, self.input_length(length)))

    def input_length(self, length: int) -> int:
        """Number of input symbols at a task length (the task's length rule)."""
        return length

    def answer_chance(self, length: int) -> float | None:
        """The probability of the most frequent answer at ``length`` under ``sample``'s distribution, exactly:
        what a model that ignores its input scores at best in exact match. None where the task gives no closed
        form (``leaderboard.chance`` then estimates it from an independent sample)."""
        return None

    def prefix_states(self, inputs: np.ndarray) -> np.ndarray:
        """For a task whose one-symbol answer is a state updated once per
        input symbol: the state after every prefix of ``inputs`` ``(B, N)``,
        in output symbols, the last column the answer (what the ``tagged``
        format trains each input position on). Tasks without such a state
        do not override it."""
        raise NotImplementedError

    def example_slices(self, inputs: np.ndarray) -> np.ndarray | None:
        """A label per example of ``inputs`` ``(B, N)`` that evaluation
        reports exact match by, beside the whole (a recognition negative's
        distance to its language: ``tasks.recognition``); None for a task that
        slices nothing, so its records hold no slices."""
        return None

    def decode(self, symbols) -> str:
        return " ".join(self.symbols[s] for s in symbols)


# Leaderboard order: by level (LEVELS), then by each task's own ``rank`` within it; a task that declares no rank
# (a plugin's) follows the ranked ones as registered.
TASKS: Registry[type[Task]] = Registry("task", discover=discover_plugins, rank=lambda cls: None if cls.rank is None
                                       else (LEVELS.index(cls.level), cls.rank))


def every_string(k: int, n: int) -> np.ndarray:
    """Every string of ``n`` symbols from 0..k-1, ``(k**n, n)``, in lexicographic order."""
    return (np.arange(k ** n)[:, None] // k ** np.arange(n - 1, -1, -1)) % k


def register_task(cls: type[Task]) -> type[Task]:
    if cls.level not in LEVELS:
        raise ValueError(f"task {cls.name!r} has level {cls.level!r}; valid: {', '.join(LEVELS)}")
    if FORMAT_SEPARATOR in cls.name:
        raise InputError(f"task name {cls.name!r} holds {FORMAT_SEPARATOR!r}, which task labels keep for formats "
                         "(TASK+FORMAT); choose another name")
    return TASKS.add(cls.name, cls)


# Where a task or data format came from when an installed package registered it (``models.plugins``): its
# release and module digest, which enter its runs' configs (``RunConfig.task_source``), so a record says which
# release made it and an upgrade that changes the module is trained again, not reused.
PACKAGED_SOURCES: dict[str, str] = {}


def task_source(name: str) -> str:
    """``built-in``, or the packages that task name's task and format came from."""
    base, _, fmt = name.partition(FORMAT_SEPARATOR)
    return "; ".join(PACKAGED_SOURCES[n] for n in (base, fmt) if n in PACKAGED_SOURCES) or "built-in"


def task_names() -> list[str]:
    """Registered task names in leaderboard order (level, then rank)."""
    return TASKS.names()


def _assemble(sample: Sample) -> tuple[np.ndarray, ...]:
    """Lay one group out as full sequences; returns (seq, out_start, out_len, ids, answer_mask, input_targets)."""
    inputs, outputs = sample.inputs, sample.outputs
    b, n_in = inputs.shape
    width = outputs.shape[1]
    out_len = (
        np.full(b, width, dtype=np.int64) if sample.output_lengths is None else sample.output_lengths
    )
    seq = np.full((b, n_in + width + 3), PAD, dtype=np.int64)
    seq[:, 0] = BOS
    seq[:, 1 : n_in + 1] = inputs + N_SPECIAL
    seq[:, n_in + 1] = SEP
    out_tokens = np.where(outputs >= 0, outputs + N_SPECIAL, PAD)
    seq[:, n_in + 2 : n_in + 2 + width] = out_tokens
    seq[np.arange(b), n_in + 2 + out_len] = EOS
    return seq, n_in + 2, out_len, sample.coupled_ids, sample.answer_mask, sample.input_targets


def check_lengths(task: Task, lengths) -> None:
    """Refuse (``InputError``, naming the task's range) a length the task does not have."""
    lengths = np.asarray(lengths, dtype=np.int64)
    low, high = int(lengths.min()), int(lengths.max())
    if low < task.min_length or (task.max_length is not None and high > task.max_length):
        top = task.max_length if task.max_length is not None else "any"
        raise InputError(f"task {task.name!r} supports lengths {task.min_length}..{top}, "
                         f"got {low if low < task.min_length else high}")


def make_batch(task: Task, rng: np.random.Generator, lengths: np.ndarray) -> Batch:
    """Sample one example per entry of ``lengths`` (groups drawn in ascending
    length order, so a seed fixes the batch) and assemble a padded batch."""
    lengths = np.asarray(lengths, dtype=np.int64)
    check_lengths(task, lengths)
    return assemble_batch([(int(n), task.sample(rng, int(n), int((lengths == n).sum()))) for n in np.unique(lengths)])


def assemble_batch(samples: list[tuple[int, Sample]]) -> Batch:
    """One padded batch of groups ``(task length, Sample)``, in that order."""
    groups = [(n, _assemble(sample)) for n, sample in samples]
    total = max(seq.shape[1] for _, (seq, *_) in groups) - 1  # model sees seq[:-1]
    rows = sum(seq.shape[0] for _, (seq, *_) in groups)
    tokens = np.full((rows, total), PAD, dtype=np.int64)
    targets = np.full((rows, total), IGNORE, dtype=np.int64)
    scored = np.zeros((rows, total), dtype=bool)
    position_ids = np.broadcast_to(np.arange(total, dtype=np.int64), (rows, total)).copy()
    seq_lens = np.zeros(rows, dtype=np.int64)
    row_lengths = np.zeros(rows, dtype=np.int64)
    r = 0
    for n, (seq, out_start, out_len, ids, answer_mask, input_targets) in groups:
        b, t = seq.shape[0], seq.shape[1] - 1
        col = np.arange(t)
        # position p predicts seq[p + 1]; outputs occupy seq[out_start : out_start + out_len]
        first, last = out_start - 1, out_start - 1 + out_len  # last predicts EOS
        tokens[r : r + b, :t] = np.where(col <= last[:, None], seq[:, :-1], PAD)
        in_loss = (col >= first) & (col <= last[:, None])
        targets[r : r + b, :t] = np.where(in_loss, seq[:, 1:], IGNORE)
        scored[r : r + b, :t] = (col >= first) & (col < last[:, None])
        if answer_mask is not None:  # only the answer's symbols among the output's
            scored[r : r + b, first : first + answer_mask.shape[1]] &= answer_mask
        if input_targets is not None:  # input symbol i (at position i + 1) is trained on its own target
            targets[r : r + b, 1 : input_targets.shape[1] + 1] = np.where(input_targets >= 0, input_targets + N_SPECIAL,
                                                                          IGNORE)
        if ids is not None:
            position_ids[r : r + b, :t] = ids[:, :-1]
            position_ids[r : r + b, t:] = ids[:, -1:]  # padding: repeat, never attended to
        seq_lens[r : r + b] = last + 1
        row_lengths[r : r + b] = n
        r += b
    return Batch(tokens, targets, scored, position_ids, seq_lens, row_lengths)
