"""Data formats: how a task's example is written as a training sequence.

The length-generalization literature varies the format as much as the
position encoding: reversed answers (Lee et al. 2023; Zhou et al. 2024),
index hints (Zhou et al. 2024), scratchpads that write the intermediate
steps (Anil et al. 2022). A format takes a task's sample (``Sample``: the
input and the answer, in task symbols) and writes the example the model
trains on: a (possibly annotated) input and an output that may hold more
than the answer. ``Sample.answer_mask`` marks which output symbols are the
final answer: only those are scored, so formats compare like with like, and
``Format.read`` turns a whole output back into the answer.

Extra output symbols are of two kinds. A format's *given* symbols (index
hints) follow from the input alone; they are trained and, at evaluation,
teacher-forced like the answer's earlier symbols (the exact match of the
answer's symbols is then greedy decoding's with the hints written by the
harness). A format whose extra symbols are the model's own work (a
scratchpad: ``Format.decodes``) is evaluated by greedy decoding, since the
true scratchpad, teacher-forced, would hand the model the answer's steps.

A format applies to some tasks only (``Format.not_applicable`` says why
not, naming the task); ``formatted`` makes the task a grid cell trains on.
Every format round-trips its oracle: ``read`` of the written output gives
the task's answer (tested on every task it applies to).

On the grid a task in a format is a *task label*: ``TASK+FORMAT``
(``addition+reversed``), the bare task name for ``plain``, and an old task
name where one stands for the pair (``TASK_ALIASES``:
``addition-index-hints`` is addition in ``index-hints``, kept so its
records and presets still read). ``get_task`` takes a label; a cell of a
format that does not apply is a "not applicable" cell (``label_not_applicable``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np

from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.core.entry_points import discover_plugins
from lengthbench.core.registry import Registry
from lengthbench.tasks.base import TASKS, Sample, Task
from lengthbench.tasks.cells import PLAIN, TASK_ALIASES, split_label, task_label

N_HINTS = 512  # hint symbols h0..h511 (Zhou et al.'s index hints: one per significance, drawn from a range)
DECIMAL_TASKS = ("addition", "multiplication")


class Format:
    """Base class of every format; ``plain`` is the identity."""

    name: ClassVar[str]
    rank: ClassVar[int | None] = None  # its place in listings and on boards (None: after the ranked)
    description: ClassVar[str]
    #: True when the extra output symbols are the model's own work (a scratchpad): evaluation decodes greedily
    decodes: ClassVar[bool] = False
    #: bumped when a change alters the examples or what is scored (it enters the run config, as a task's does)
    version: ClassVar[int] = 1

    def not_applicable(self, task: Task) -> str | None:
        """Why this format cannot write ``task``'s examples, or None."""
        return None

    def extra_symbols(self, task: Task) -> tuple[str, ...]:
        """Symbols the format adds to the task's vocabulary (after the task's own)."""
        return ()

    def write(self, task: Task, sample: Sample, rng: np.random.Generator) -> Sample:
        """The formatted examples of one group (``rng``: the batch's stream, drawn after the task's sample)."""
        return sample

    def read(self, task: Task, output: list[int]) -> list[int]:
        """The final answer (task symbols) of one formatted output (without ``<eos>``)."""
        return list(output)

    def input_length(self, task: Task, length: int) -> int:
        """Input symbols of a formatted example at task length ``length``."""
        return task.input_length(length)

    def max_length(self, task: Task) -> int | None:
        """The longest task length the format can write (None: the task's own limit)."""
        return task.max_length


FORMATS: Registry[Format] = Registry("format", rank=lambda fmt: fmt.rank, discover=discover_plugins)


def register_format(cls: type[Format]) -> type[Format]:
    FORMATS.add(cls.name, cls())
    return cls


def get_format(name: str) -> Format:
    return FORMATS[name]


def format_names() -> list[str]:
    return FORMATS.names()


@register_format
class Plain(Format):
    """The task's own format (``BOS input SEP answer EOS``)."""

    name = PLAIN
    rank = 10
    description = "the task's own format: the answer alone after the input"


def _rows(outputs: np.ndarray, output_lengths: np.ndarray | None) -> np.ndarray:
    """Each example's output length (the padded width where all are equal)."""
    return np.full(len(outputs), outputs.shape[1]) if output_lengths is None else output_lengths


@register_format
class Reversed(Format):
    """The answer's symbols in reverse order (Lee et al. 2023; Zhou et al.
    2024). lengthbench's decimal tasks already write their answers least
    significant digit first (Cho et al.'s format), so ``reversed`` writes
    them most significant first, the order a person writes: compare
    ``plain`` with ``reversed`` for the effect Zhou et al. report, with the
    sign turned. Coupled position ids follow their symbols."""

    name = "reversed"
    rank = 20
    description = "the answer's symbols reversed (decimal answers then read most significant digit first)"

    def not_applicable(self, task):
        if task.output_rule == "1":
            return f"{task.name}'s answer is one symbol: reversing it changes nothing"
        return None

    def write(self, task, sample, rng):
        lengths = _rows(sample.outputs, sample.output_lengths)
        width = sample.outputs.shape[1]
        j = np.arange(width)
        source = np.where(j < lengths[:, None], lengths[:, None] - 1 - j, j)  # padding stays where it is
        outputs = np.take_along_axis(sample.outputs, source, axis=1)
        ids = sample.coupled_ids
        if ids is not None:
            start = sample.inputs.shape[1] + 2  # BOS input SEP, then the answer
            ids = np.array(ids)
            ids[:, start:start + width] = np.take_along_axis(ids[:, start:start + width], source, axis=1)
        return replace(sample, outputs=outputs, coupled_ids=ids)

    def read(self, task, output):
        return list(reversed(output))


@register_format
class IndexHints(Format):
    """Index hints (Zhou et al. 2024): before every digit, in the operands
    and in the answer, a hint symbol naming its significance, so digits of
    equal significance share a hint. Significance k gets ``h[s + k]``, the
    start ``s`` drawn per example so that every hint is seen in training
    (``addition-index-hints``'s scheme; on ``addition`` it writes exactly
    that task's examples). Where we differ from Zhou et al.: the answer's
    hints are given, not generated (trained, teacher-forced at test, never
    scored), so the score is the digits'; Zhou et al.'s model writes them
    itself. Decimal tasks only (``addition``, ``multiplication``).
    ``addition-index-hints`` names addition in this format (version 2: until
    it was a format, that task scored the answer's hints too)."""

    name = "index-hints"
    rank = 30
    version = 2
    description = "a significance hint before every digit of the operands and the answer (Zhou et al. 2024)"

    def not_applicable(self, task):
        if task.name not in DECIMAL_TASKS:
            return f"index hints pair decimal digits of equal significance: {', '.join(DECIMAL_TASKS)} only"
        return None

    def extra_symbols(self, task):
        return tuple(f"h{i}" for i in range(N_HINTS))

    def write(self, task, sample, rng):
        b, n_in = sample.inputs.shape
        width = sample.outputs.shape[1]
        ids = np.asarray(sample.coupled_ids)  # significance + 1 for digits, 0 elsewhere (the same for every row)
        input_ids, answer_ids = ids[0, 1:1 + n_in], ids[0, n_in + 2:n_in + 2 + width]
        top = int(max(input_ids.max(), answer_ids.max()))
        start = rng.integers(0, N_HINTS - top + 1, size=(b, 1))
        first_hint = len(task.symbols)

        def hinted(symbols: np.ndarray, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """Symbols with a hint before each digit (sig > 0); the layout's ids and answer flags."""
            digit = sig > 0
            slots = np.cumsum(1 + digit) - 1  # where each symbol lands
            out = np.empty((b, len(sig) + int(digit.sum())), dtype=np.int64)
            out[:, slots] = symbols
            out[:, slots[digit] - 1] = first_hint + start + sig[digit] - 1
            layout_ids = np.zeros(out.shape[1], dtype=np.int64)
            layout_ids[slots], layout_ids[slots[digit] - 1] = sig, sig[digit]
            is_symbol = np.zeros(out.shape[1], dtype=bool)
            is_symbol[slots] = True
            return out, layout_ids, is_symbol

        inputs, in_ids, _ = hinted(sample.inputs, input_ids)
        outputs, out_ids, is_answer = hinted(sample.outputs, answer_ids)
        layout = np.concatenate([[ids[0, 0]], in_ids, [ids[0, n_in + 1]], out_ids, [ids[0, -1]]])
        return Sample(inputs, outputs, answer_mask=np.broadcast_to(is_answer, outputs.shape),
                      coupled_ids=np.broadcast_to(layout, (b, layout.size)))

    def read(self, task, output):
        return list(output[1::2])

    def input_length(self, task, length):
        return 2 * task.input_length(length) - 1  # a hint before every input symbol but the one operator

    def max_length(self, task):
        """The longest length whose answer's top significance has a hint (addition: 511)."""
        top_at_1 = task.sample(np.random.default_rng(0), 1, 1).outputs.shape[1]  # significances at length 1
        return N_HINTS - top_at_1 + 1


def _running_parity(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parity's trace: the parity of the bits read so far, after each bit (the task's prefix states);
    the last is the answer. Each trace returns its symbols and which of them are the answer."""
    return TASKS["parity_check"]().prefix_states(inputs), np.arange(inputs.shape[1]) == inputs.shape[1] - 1


def _carry_trace(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Addition's trace: per significance k (least first), the carry into column k, then its sum digit."""
    n1 = (inputs.shape[1] - 1) // 2  # operands of n+1 digits, most significant first, around "+"
    a, b = inputs[:, n1 - 1::-1], inputs[:, :n1:-1]
    out = np.empty((inputs.shape[0], 2 * n1), dtype=np.int64)
    carry = np.zeros(inputs.shape[0], dtype=np.int64)
    for k in range(n1):
        total = a[:, k] + b[:, k] + carry
        out[:, 2 * k], out[:, 2 * k + 1] = carry, total % 10
        carry = total // 10
    return out, np.arange(2 * n1) % 2 == 1


def _partial_products(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """N x 2 multiplication's trace: a x (b's units) and a x (b's tens), each in n+1
    digits least significant first, each followed by ``*``, then the product in n+2."""
    n = inputs.shape[1] - 3
    a = inputs[:, n - 1::-1]
    tens, units = inputs[:, n + 1], inputs[:, n + 2]

    def times(digit: np.ndarray, width: int) -> np.ndarray:
        out, carry = np.zeros((len(digit), width), dtype=np.int64), np.zeros(len(digit), dtype=np.int64)
        for k in range(width):
            total = (a[:, k] * digit if k < n else 0) + carry
            out[:, k], carry = total % 10, total // 10
        return out

    star = np.full((len(a), 1), STAR)
    steps = np.concatenate([times(units, n + 1), star, times(tens, n + 1), star], axis=1)
    product = times(10 * tens + units, n + 2)
    return np.concatenate([steps, product], axis=1), np.arange(steps.shape[1] + product.shape[1]) >= steps.shape[1]


STAR = 10  # multiplication's "*" (after the ten digits), which ends each partial product


SCRATCHPADS = {"parity_check": _running_parity, "addition": _carry_trace, "multiplication": _partial_products}


@register_format
class Scratchpad(Format):
    """The intermediate steps written before the answer (Anil et al. 2022):
    ``parity_check`` writes the running parity after each bit (the last one
    is the answer); ``addition`` the carry into each column before its sum
    digit (least significant first: ``c0 s0 c1 s1 ...``, the answer the
    ``s``); N x 2 ``multiplication`` the two partial products (a times b's
    units, a times b's tens, each ``*``-terminated) before the product. The
    steps are the model's own work, so evaluation decodes greedily (the true
    steps, teacher-forced, would hand the model the answer) and scores the
    answer's symbols alone. Coupled ids: a step digit gets its column's id
    (a carry its column's, the tens' partial product one column up), a
    ``*`` id 0. Anil et al. prompt a pretrained model with a few examples; here
    the model is trained on the traces from scratch."""

    name = "scratchpad"
    rank = 40
    description = "the intermediate steps (running parity, carries, partial products) before the answer"
    decodes = True

    def not_applicable(self, task):
        if task.name not in SCRATCHPADS:
            return f"the scratchpad is defined for {', '.join(SCRATCHPADS)} only"
        return None

    def write(self, task, sample, rng):
        outputs, answer = SCRATCHPADS[task.name](sample.inputs)
        ids = None
        if sample.coupled_ids is not None:
            n_in = sample.inputs.shape[1]
            given = np.asarray(sample.coupled_ids)[0]
            step_ids = self._step_ids(task.name, int(answer.sum()))
            ids = np.concatenate([given[:n_in + 2], step_ids, [step_ids.max() + 1]])
            ids = np.broadcast_to(ids, (len(outputs), ids.size))
        return Sample(sample.inputs, outputs, answer_mask=np.broadcast_to(answer, outputs.shape), coupled_ids=ids)

    @staticmethod
    def _step_ids(task: str, answer_width: int) -> np.ndarray:
        if task == "addition":
            return np.repeat(np.arange(1, answer_width + 1), 2)
        part = answer_width - 1  # multiplication: each partial product has n+1 digits
        return np.concatenate([np.arange(1, part + 1), [0], np.arange(2, part + 2), [0],
                               np.arange(1, answer_width + 1)])

    def read(self, task, output):
        if task.name == "addition":
            return list(output[1::2])
        if task.name == "parity_check":
            return list(output[-1:])
        return list(output[output.index(STAR, output.index(STAR) + 1) + 1:])  # after the second "*"


def tracks_a_state(task: Task) -> bool:
    """Whether the task defines the state after every prefix (``Task.prefix_states``)."""
    return type(task).prefix_states is not Task.prefix_states


@register_format
class Tagged(Format):
    """The state after every prefix, trained at that prefix's own input
    symbol (a tagging task, as Liu et al. 2023 and Merrill et al. 2024
    train the word problems): the position that has read the first i input
    symbols is trained to predict the state after them (``Task.prefix_states``)
    instead of the next input symbol, and the answer after ``SEP`` is the
    final state, as in ``plain``. The input is unchanged and the states are
    never fed back, so nothing is decoded: unlike a scratchpad, no state is
    composed from the one written before it, and unlike states written after
    ``SEP``, none must be carried to the end. What differs from the papers:
    only the answer is scored, so exact match compares with ``plain`` (they
    score every prefix's state), and the loss averages the states, the
    answer and ``EOS`` alike (the answer is 1 of N + 2 targets, not 1 of 2)."""

    name = "tagged"
    rank = 50
    description = "the state after every prefix trained at its own input symbol (a tagging task); the answer as in plain"

    def not_applicable(self, task):
        if not tracks_a_state(task):
            tagged = [name for name in TASKS.names() if tracks_a_state(TASKS[name]())]
            return (f"{task.name}'s answer is not a state updated once per input symbol; the tagged format applies "
                    f"to {', '.join(tagged)} (a task that defines prefix_states)")
        return None

    def write(self, task, sample, rng):
        return replace(sample, input_targets=task.prefix_states(sample.inputs))


def formatted(task: Task, fmt: Format | str) -> Task:
    """``task`` written in ``fmt``: the task itself for ``plain``, else a
    task whose samples are the format's (refused, naming why, where the
    format does not apply)."""
    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    if fmt.name == PLAIN:
        return task
    reason = fmt.not_applicable(task)
    if reason is not None:
        raise InputError(f"format {fmt.name!r} does not apply to task {task.name!r}: {reason}")
    return FormattedTask(task, fmt, task_label(task.name, fmt.name))


class FormattedTask(Task):
    """A task written in a format: named by its label, with the task's level
    and length rule and the format's samples and vocabulary (``formatted``
    makes one)."""

    def __init__(self, task: Task, fmt: Format, label: str):
        self.task, self.format = task, fmt
        self.name, self.level, self.description = label, task.level, f"{task.description} ({fmt.description})"
        self.symbols = task.symbols + fmt.extra_symbols(task)
        self.output_rule = f"{task.output_rule} ({fmt.name})"
        self.min_length, self.max_length = task.min_length, fmt.max_length(task)
        self.has_coupled_ids, self.version = task.has_coupled_ids, task.version
        self.coupled_ids_are_significance = task.coupled_ids_are_significance

    def sample(self, rng, length, batch_size):
        return self.format.write(self.task, self.task.sample(rng, length, batch_size), rng)

    def input_length(self, length):
        return self.format.input_length(self.task, length)


# Old task names that now name a task in a format; kept so that their records and presets still read.
def task_labels() -> list[str]:
    """Every task, each followed by the aliases of its formats, in leaderboard order."""
    return [label for task in TASKS.names()
            for label in (task, *(alias for alias, (base, _) in TASK_ALIASES.items() if base == task))]


def _parts(label: str) -> tuple[type[Task], Format]:
    """The task class and format a label names, refused by name when either is unknown."""
    if not isinstance(label, str):
        raise UnknownNameError("task", label, task_labels())
    task, fmt = split_label(label)
    if task in TASK_ALIASES:
        raise InputError(f"task label {label!r}: {task!r} is {TASK_ALIASES[task][0]!r} in the "
                         f"{TASK_ALIASES[task][1]!r} format already, and formats do not combine; give a task "
                         f"({', '.join(TASKS.names())}) and one format")
    if task not in TASKS:
        raise UnknownNameError("task", task, task_labels())
    if fmt not in FORMATS:
        raise UnknownNameError(f"format (in task label {label!r})", fmt, FORMATS.names())
    return TASKS[task], FORMATS[fmt]


def label_not_applicable(label: str) -> str | None:
    """Why the format of ``label`` cannot write its task's examples (the cell
    is "not applicable"), or None; an unknown name is refused."""
    cls, fmt = _parts(label)
    reason = fmt.not_applicable(cls())
    return None if reason is None else f"format {fmt.name} {reason}"


def get_task(name: str) -> Task:
    """The task a task name or label names (``addition``, ``addition+reversed``, an alias). It lives
    here, with the labels, so that the task contract (``tasks.base``) imports nothing of the formats."""
    if name in TASKS:
        return TASKS[name]()
    cls, fmt = _parts(name)
    return formatted(cls(), fmt)


def label_versions(label: str) -> dict[str, int]:
    """The task's and the format's versions (what a run config records)."""
    cls, fmt = _parts(label)
    return {"task": cls.version, "format": fmt.version}


def task_order_key(label: str) -> tuple:
    """Sort key of task labels: by task in leaderboard order, then by format
    in registry order; unknown names last, by name."""
    try:
        cls, fmt = _parts(label)
    except InputError:
        return (len(TASKS) + 1, 0, str(label))
    return (TASKS.names().index(cls.name), FORMATS.names().index(fmt.name), label)
