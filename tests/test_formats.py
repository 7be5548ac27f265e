"""Data formats: every format round-trips its oracle on every task it applies
to, scores the answer alone, keeps coupled ids with their symbols, and says
why it does not apply elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench.core.errors import InputError
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
    assert format_names() == ["plain", "reversed", "index-hints", "scratchpad", "tagged"]
    assert set(FORMATS.names()) == set(format_names())
    assert formatted(get_task("copy"), "plain") is not None


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(1, 12))
def test_the_scratchpad_writes_the_true_steps(seed, length):
    """Each task's steps, from Python integers: the running parity, the carry
    into each column before its digit, the two partial products."""
    pad = get_format("scratchpad")
    for name in ("parity_check", "addition", "multiplication"):
        task = get_task(name)
        sample = pad.write(task, task.sample(np.random.default_rng(seed), length, 4), None)
        for row in range(4):
            inputs, output = [int(s) for s in sample.inputs[row]], [int(s) for s in sample.outputs[row]]
            if name == "parity_check":
                assert output == [sum(inputs[:i + 1]) % 2 for i in range(length)]
                continue
            star = inputs.index(10)
            a, b = int("".join(map(str, inputs[:star]))), int("".join(map(str, inputs[star + 1:])))
            if name == "addition":
                carries = [((a % 10 ** k) + (b % 10 ** k)) // 10 ** k for k in range(length + 1)]
                digits = [(a + b) // 10 ** k % 10 for k in range(length + 1)]
                assert output == [x for k in range(length + 1) for x in (carries[k], digits[k])]
            else:
                def lsb(value, width):
                    return [value // 10 ** k % 10 for k in range(width)]
                assert output == lsb(a * (b % 10), length + 1) + [10] + lsb(a * (b // 10), length + 1) + [10] + \
                    lsb(a * b, length + 2)


def test_the_scratchpads_steps_share_their_columns_coupled_ids():
    """A carry and its sum digit share the id plain addition gives that answer
    digit; the tens' partial product sits one column up; each ``*`` gets 0."""
    task = get_task("addition")
    plain = task.sample(np.random.default_rng(0), 4, 1)
    pad = get_format("scratchpad").write(task, plain, None)
    n_in = plain.inputs.shape[1]
    answer_ids = np.asarray(plain.coupled_ids)[0, n_in + 2:-1]
    assert (pad.coupled_ids[0, n_in + 2:-1] == np.repeat(answer_ids, 2)).all()
    assert pad.coupled_ids[0, -1] == answer_ids.max() + 1
    task = get_task("multiplication")
    pad = get_format("scratchpad").write(task, task.sample(np.random.default_rng(0), 3, 1), None)
    steps = pad.coupled_ids[0, 3 + 3 + 2:-1]
    assert steps.tolist() == [1, 2, 3, 4, 0, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]


class _FlawedParityTracer(torch.nn.Module):
    """Writes parity's scratchpad from the prefix it is given: each step the
    previous written step plus the next bit, but the first step wrong. Under
    teacher forcing every later step gets the true previous one (the answer
    comes out right); decoding its own steps, the error carries to the answer."""

    def forward(self, tokens):
        b, t = tokens.shape
        logits = torch.full((b, t, 6), -1e4)
        for row in range(b):
            seq = tokens[row].tolist()
            sep = seq.index(2)
            bits = [x - N_SPECIAL for x in seq[1:sep]]
            for p in range(sep, t):
                j = p - sep  # the step p predicts
                if j < len(bits):
                    step = 1 - bits[0] if j == 0 else (seq[p] - N_SPECIAL + bits[j]) % 2
                    logits[row, p, N_SPECIAL + step] = 0.0
                else:
                    logits[row, p, 3] = 0.0  # <eos>
        return logits


def test_a_scratchpad_is_evaluated_by_greedy_decoding_not_teacher_forcing():
    from lengthbench.benchmark.evaluate import _score
    from lengthbench.benchmark.instances import evaluate_any
    from lengthbench.benchmark.train import batch_tensors

    model = _FlawedParityTracer()
    assert evaluate_any(model, "parity_check+scratchpad", [5], 16)[0]["exact_match"] == 0.0
    t = batch_tensors(make_batch(get_task("parity_check+scratchpad"), np.random.default_rng(0), np.full(16, 5)),
                      torch.device("cpu"))
    positions = torch.arange(t["tokens"].shape[1])[None]
    wrapped = lambda tokens, _: model(tokens)  # noqa: E731
    assert float(_score(wrapped, t, positions, 1)[1].float().mean()) == 1.0  # teacher-forced: the true steps give it away
    assert float(_score(wrapped, t, positions, 1, decode=True)[1].float().mean()) == 0.0


TAGGED = [t for f, t in PAIRS if f == "tagged"]


def test_tagged_applies_to_the_tasks_with_a_state_per_symbol():
    assert TAGGED == ["parity_check", "cycle_navigation", "word_problem_s5", "word_problem_s3"]


@pytest.mark.parametrize("task_name", TAGGED)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lengths=st.lists(st.integers(1, 12), min_size=1, max_size=6))
def test_tagged_trains_each_input_symbol_on_the_oracles_state_after_its_prefix(task_name, seed, lengths):
    """Input position i + 1 (input symbol i read) is trained on the oracle's
    answer to the first i + 1 symbols; everything else (tokens, the answer,
    <eos>, what is scored) is the plain batch's, token for token."""
    task, lengths = get_task(task_name), np.array(lengths)
    plain = make_batch(task, np.random.default_rng(seed), lengths)
    tagged = make_batch(get_task(f"{task_name}+tagged"), np.random.default_rng(seed), lengths)
    assert (tagged.tokens == plain.tokens).all() and (tagged.scored == plain.scored).all()
    for row, n in enumerate(tagged.lengths):
        inputs = [int(s) - N_SPECIAL for s in tagged.tokens[row, 1:n + 1]]
        states = [task.solve(inputs[:i + 1])[0] + N_SPECIAL for i in range(n)]
        assert tagged.targets[row, 0] == IGNORE and tagged.targets[row, 1:n + 1].tolist() == states
        assert (tagged.targets[row, n + 1:] == plain.targets[row, n + 1:]).all()


@pytest.mark.parametrize("packs", [True, False], ids=["packed", "buckets"])
def test_the_trainer_trains_on_the_tags(packs):
    """The trainer's passes (packed rows or length buckets) carry every tag:
    each example's input symbols, answer and <eos>."""
    from lengthbench.benchmark.presets import get_preset
    from lengthbench.benchmark.train import batch_tensors, forward_passes

    task = get_task("word_problem_s3+tagged")
    model = get_preset("quick").run_config(task.name, "nope", 0).build_model(task.vocab_size)
    model.packs_sequences = packs
    batch = make_batch(task, np.random.default_rng(0), np.sort(np.random.default_rng(1).integers(1, 17, size=64)))
    t = batch_tensors(batch, torch.device("cpu"))
    positions = model.positions(t["tokens"], t["position_ids"], t["seq_lens"], torch.Generator().manual_seed(0))
    passes = list(forward_passes(model, batch, t, positions, torch.device("cpu")))
    trained = np.concatenate([targets[targets != IGNORE].numpy() for _, targets in passes])
    assert len(trained) == int((batch.lengths + 2).sum())
    assert sorted(trained.tolist()) == sorted(batch.targets[batch.targets != IGNORE].tolist())
