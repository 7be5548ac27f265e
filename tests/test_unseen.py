"""The fit judged on inputs the run never trained on (``fit_unseen``): the
replayed training stream is the one training drew, the examples scored are
unseen, and where training drew nearly every input the whole space is scored."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

import lengthbench
import lengthbench.benchmark.train as train_module
from lengthbench.benchmark.presets import get_preset
from lengthbench.studies.horizon import UNSEEN_FIT_TASKS
from lengthbench.benchmark.records import read_record
from lengthbench.benchmark.runner import execute_run
from lengthbench.benchmark.seeding import eval_streams
from lengthbench.benchmark.train import train_run
from lengthbench.benchmark.unseen import WHOLE_SPACE, drawn_prompts, drawn_shares, prompts, unseen_batch
from lengthbench.core.errors import InputError
from lengthbench.tasks import get_task, make_batch, task_names

CPU = torch.device("cpu")


def small(task: str, **settings):
    """A smoke cell of ``task`` trained to length 10 and judged from 8 on unseen inputs."""
    config = get_preset("smoke").run_config(task, "nope", 0)
    return replace(config, train_length=10, validation_length=11, test_length=12, fit_from=8,
                   **{"eval_samples": 64, "steps": 40, "fit_unseen": True, **settings})


def test_the_replayed_stream_is_the_one_training_drew(monkeypatch):
    config, task = small("parity_check"), get_task("parity_check")
    seen: dict[int, set[bytes]] = {n: set() for n in config.fit_lengths()}

    def recording(task_, config_, rng):
        batch = draw(task_, config_, rng)
        for n, prompt in zip(batch.lengths.tolist(), prompts(batch)):
            if n in seen:
                seen[n].add(prompt)
        return batch

    draw = train_module.training_batch
    monkeypatch.setattr(train_module, "training_batch", recording)
    train_run(config.build_model(task.vocab_size), task, config, CPU)
    assert all(seen.values())
    assert drawn_prompts(task, config, config.steps) == seen


def test_the_fit_lengths_are_scored_on_unseen_inputs_and_say_so(tmp_path):
    config = small("parity_check", steps=120)
    task = get_task("parity_check")
    drawn = drawn_prompts(task, config, config.steps)
    assert len(drawn[8]) > 100  # of the 256 strings of length 8: most were drawn
    for n in config.fit_lengths():
        rng, _ = eval_streams(config.eval_seed, n, CPU)
        batch, kind = unseen_batch(task, n, rng, config.eval_samples, drawn[n])
        assert kind == "unseen" and len(batch.tokens) == config.eval_samples
        assert not set(prompts(batch)) & drawn[n]
        assert (batch.lengths == n).all() and (batch.seq_lens == n + 3).all()
    record = execute_run(config, CPU)
    assert record.status == "ok", record.error
    kinds = {row["length"]: row.get("examples") for row in record.per_length}
    assert kinds == {n: ("unseen" if n in config.fit_lengths() else None) for n in config.eval_lengths()}
    path = tmp_path / f"{record.run_id}.json"
    path.write_text(json.dumps(record.to_json()))
    assert read_record(path).per_length == record.per_length


def test_where_training_drew_nearly_every_input_the_whole_space_is_scored():
    config, task = small("missing_duplicate_string", steps=150), get_task("missing_duplicate_string")
    drawn = drawn_prompts(task, config, config.steps)
    rng, _ = eval_streams(config.eval_seed, 8, CPU)
    batch, kind = unseen_batch(task, 8, rng, config.eval_samples, drawn[8])
    assert kind == WHOLE_SPACE and len(batch.tokens) == 2 ** 4 * 8 == len(set(prompts(batch)))
    parity, parity_config = get_task("parity_check"), replace(small("parity_check", steps=400), fit_from=4)
    rng, _ = eval_streams(parity_config.eval_seed, 4, CPU)
    batch, kind = unseen_batch(parity, 4, rng, 64, drawn_prompts(parity, parity_config, 400)[4])
    assert kind == WHOLE_SPACE and len(set(prompts(batch))) == len(batch.tokens) == 16  # short binary strings
    modular, modular_config = get_task("modular_arithmetic"), replace(small("modular_arithmetic", steps=400),
                                                                      fit_from=3)
    rng, _ = eval_streams(modular_config.eval_seed, 3, CPU)
    with pytest.raises(ValueError, match="modular_arithmetic at length 3 are unseen.*cannot list"):
        unseen_batch(modular, 3, rng, 64, drawn_prompts(modular, modular_config, 400)[3])


def test_a_fit_that_cannot_be_judged_is_refused_before_the_run_trains(monkeypatch):
    """modular_arithmetic at lengths 3..4 after 400 steps: too few unseen inputs, and the task cannot list its
    inputs. The run is recorded as an error with the evaluation's message, and no training step is taken (a
    budget of hours once trained to the end first)."""
    config = replace(small("modular_arithmetic", steps=400), train_length=4, validation_length=5, test_length=6,
                     fit_from=3)
    steps = []
    monkeypatch.setattr(train_module, "training_batch",
                        lambda *args, draw=train_module.training_batch: steps.append(1) or draw(*args))
    record = execute_run(config, CPU)
    assert record.status == "error" and "are unseen in training" in record.error and "cannot list" in record.error
    assert record.training is None and not steps
    fine = small("parity_check", steps=120)  # enough unseen inputs: it trains every step
    assert execute_run(fine, CPU).status == "ok" and len(steps) == fine.steps


@pytest.mark.parametrize("name", [name for name in task_names() if get_task(name).uniform_alphabet])
def test_a_uniform_string_task_lists_every_string_with_the_answers_it_samples(name):
    task = get_task(name)
    k = task.uniform_alphabet
    for length in range(task.min_length, 13):
        if k ** length > 4096:
            break
        space = task.whole_space(length)
        assert len(space.inputs) == k ** length == len({row.tobytes() for row in space.inputs})
        answers = {row.tobytes(): out.tolist() for row, out in zip(space.inputs, space.outputs)}
        assert all(task.solve(row.tolist()) == [v for v in out if v >= 0] for row, out in
                   zip(space.inputs[:200], space.outputs[:200]))
        drawn = task.sample(np.random.default_rng(length), length, 200)
        assert all(answers[row.tobytes()] == out.tolist() for row, out in zip(drawn.inputs, drawn.outputs))
    assert task.whole_space(17) is None  # k^17 > WHOLE_SPACE_MAX for every alphabet of 2 or more


@pytest.mark.parametrize("length", range(2, 14))
def test_the_whole_space_is_every_input_once_with_the_oracles_answer(length):
    task = get_task("missing_duplicate_string")
    space = task.whole_space(length)
    half = length // 2
    assert len(space.inputs) == 2 ** half * 2 * half == len({row.tobytes() for row in space.inputs})
    assert all(task.solve(row.tolist()) == out.tolist() for row, out in zip(space.inputs, space.outputs))
    listed = {row.tobytes() for row in space.inputs}
    drawn = task.sample(np.random.default_rng(length), length, 300).inputs
    assert all(row.tobytes() in listed for row in drawn)


@pytest.mark.slow
def test_horizon_judges_unseen_exactly_where_training_draws_what_the_fit_is_scored_on():
    horizon = get_preset("horizon")
    judged_unseen = {t for t in horizon.grid_tasks() if horizon.run_config(t, "rope", 0).fit_unseen}
    assert judged_unseen == {"even_pairs", "parity_check", "reverse_string", "modular_arithmetic_brackets",
                             "solve_equation", "duplicate_string", "missing_duplicate_string", "odds_first",
                             "binary_addition", "binary_multiplication", "compute_sqrt"} == set(UNSEEN_FIT_TASKS)
    for task in ("parity_check", "cycle_navigation"):  # the rule, measured on one task each side of it
        share = max(drawn_shares(task, horizon.run_config(task, "rope", 0)).values())
        assert (share >= 0.05) == (task in judged_unseen), (task, share)
    assert "fit_unseen" not in horizon.run_config("copy", "rope", 0).to_dict()  # its cells' hashes as before


def test_saved_predictions_are_refused_for_cells_that_choose_their_examples(tmp_path):
    with pytest.raises(InputError, match="fit_unseen: parity_check"):
        lengthbench.run(preset="horizon", tasks=["parity_check", "copy"], encodings=["nope"], seeds=[0],
                        results=tmp_path, save_predictions=True, progress=False, settings={"steps": 2})
    assert not list(tmp_path.iterdir())


def test_an_unknown_kind_of_examples_is_refused_on_read(tmp_path):
    record = execute_run(small("copy", fit_unseen=False, steps=3), CPU)
    record.per_length[0]["examples"] = "cherry-picked"
    path = tmp_path / f"{record.run_id}.json"
    path.write_text(json.dumps(record.to_json()))
    with pytest.raises(Exception, match="examples 'cherry-picked'.*valid: unseen, whole space"):
        read_record(path)


def test_the_evidence_tool_refuses_a_task_outside_the_preset(capsys):
    from lengthbench.benchmark.unseen import main

    assert main(["--preset", "horizon", "--tasks", "no_such_task"]) == 2
    assert "no_such_task not in preset 'horizon'" in capsys.readouterr().err
