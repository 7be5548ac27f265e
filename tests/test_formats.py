"""Data formats: every format round-trips its oracle on every task it applies
to, scores the answer alone, keeps coupled ids with their symbols, and says
why it does not apply elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench.errors import InputError
from lengthbench.tasks import TASKS, get_task, make_batch
from lengthbench.tasks.base import IGNORE, N_SPECIAL
from lengthbench.tasks.formats import FORMATS, format_names, formatted, get_format

PAIRS = [(f, t) for f in format_names() for t in TASKS.names() if get_format(f).not_applicable(get_task(t)) is None]
REFUSED = [(f, t) for f in format_names() for t in TASKS.names() if (f, t) not in PAIRS]


def _answer_rows(sample, row: int) -> tuple[list[int], np.ndarray]:
    """One example's output symbols (without padding) and its answer mask."""
    width = sample.outputs.shape[1] if sample.output_lengths is None else int(sample.output_lengths[row])
    mask = np.ones(width, dtype=bool) if sample.answer_mask is None else sample.answer_mask[row, :width]
    return [int(s) for s in sample.outputs[row, :width]], mask


@pytest.mark.parametrize("fmt,task_name", PAIRS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extra=st.integers(0, 9))
def test_every_format_reads_back_the_oracles_answer(fmt, task_name, seed, extra):
    """Write a group of the task's examples in the format, read each output
    back: the task's oracle answer to the unformatted input; the scored
    symbols are the answer's, as many as it has."""
    task, form = get_task(task_name), get_format(fmt)
    rng = np.random.default_rng(seed)
    length = task.min_length + extra
    raw = task.sample(rng, length, 6)
    written = form.write(task, raw, rng)
    for row in range(6):
        answer = task.solve([int(s) for s in raw.inputs[row]])
        output, mask = _answer_rows(written, row)
        assert form.read(task, output) == answer
        assert sorted(np.asarray(output)[mask].tolist()) == sorted(answer)
    assert written.inputs.shape[1] == form.input_length(task, length)


@pytest.mark.parametrize("fmt,task_name", PAIRS)
def test_a_formatted_batch_trains_every_output_symbol_and_scores_the_answers(fmt, task_name):
    task = formatted(get_task(task_name), fmt)
    lengths = np.array([task.min_length, task.min_length + 3, task.min_length + 3])
    batch = make_batch(task, np.random.default_rng(1), lengths)
    assert batch.tokens.max() < task.vocab_size
    trained = (batch.targets != IGNORE).sum(1)  # every output symbol and <eos>
    scored = batch.scored.sum(1)
    answers = [len(get_task(task_name).solve(
        [int(s) - N_SPECIAL for s in row[1:list(row).index(2)]])) if fmt != "index-hints" else None
        for row in batch.tokens]
    for i in range(len(lengths)):
        assert scored[i] < trained[i]
        if answers[i] is not None:
            assert scored[i] == answers[i]
        else:  # a hint before every answer digit: half the output is the answer
            assert scored[i] == (trained[i] - 1) // 2


def test_addition_index_hints_is_addition_in_the_index_hints_format():
    """The old task's name is the format's cell on addition (both spellings of
    the label), and it writes the old task's examples token for token: the
    digest is of the batch the removed task class made from this seed, so a
    record of the old task reads as the same data. What changed (format
    version 2): the answer's hints are no longer scored, and the coupled
    ids are addition's (the old task had none)."""
    import hashlib

    lengths = np.array([1, 3, 3, 12])
    alias = make_batch(get_task("addition-index-hints"), np.random.default_rng(7), lengths)
    assert get_task("addition+index-hints").name == get_task("addition-index-hints").name == "addition-index-hints"
    digest = hashlib.sha256(alias.tokens.tobytes() + alias.targets.tobytes()).hexdigest()[:16]
    assert digest == "1ff5a186f2cf7212"
    assert get_task("addition-index-hints").input_length(5) == 4 * 5 + 5  # the old task's rule
    assert list(alias.scored.sum(1)) == [n + 1 for n in lengths]  # the answer's digits, not their hints


@pytest.mark.parametrize("task_name", ["copy", "reverse_string", "duplicate_string", "odds_first"])
def test_reversed_keeps_each_output_symbols_coupled_id_with_it(task_name):
    """A rearrangement's output symbol is the input symbol its coupled id
    names, before and after reversing the answer."""
    task = get_task(task_name)
    for sample in (task.sample(np.random.default_rng(3), 7, 4),
                   get_format("reversed").write(task, task.sample(np.random.default_rng(3), 7, 4),
                                                np.random.default_rng(0))):
        n_in = sample.inputs.shape[1]
        ids = sample.coupled_ids[:, n_in + 2:n_in + 2 + sample.outputs.shape[1]]
        assert (np.take_along_axis(sample.inputs, ids - 1, axis=1) == sample.outputs).all()


def test_index_hints_give_a_hint_its_digits_id():
    task = get_task("multiplication")
    sample = get_format("index-hints").write(task, task.sample(np.random.default_rng(5), 6, 3),
                                             np.random.default_rng(5))
    n_in = sample.inputs.shape[1]
    ids, tokens = sample.coupled_ids[0], np.concatenate([[0], sample.inputs[0], [0], sample.outputs[0], [0]])
    hints = np.flatnonzero(tokens >= len(task.symbols))
    assert len(hints) == 6 + 2 + 6 + 2  # a's digits, b's, the product's n + 2
    assert (ids[hints] == ids[hints + 1]).all() and (ids[hints] > 0).all()
    assert n_in == get_format("index-hints").input_length(task, 6)


@pytest.mark.parametrize("fmt,task_name", REFUSED)
def test_a_format_that_does_not_apply_is_refused_naming_why(fmt, task_name):
    with pytest.raises(InputError, match=f"format '{fmt}' does not apply to task '{task_name}': "):
        formatted(get_task(task_name), fmt)


def test_the_registry_lists_the_formats():
    assert format_names() == ["plain", "reversed", "index-hints"] and set(FORMATS.names()) == set(format_names())
    assert formatted(get_task("copy"), "plain") is not None
