"""Budget until fit: a run that fit at ``fit_patience`` checks in a row stops
there with the weights it had, records its steps and checks, resumes from a
checkpoint as if never stopped, and checks its fit on examples of its own
(neither training batches nor the reported evaluation's)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from lengthbench.benchmark.checkpoints import Checkpoint
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.runner import execute_run
from lengthbench.benchmark.seeding import data_rng, eval_streams, fit_check_streams
from lengthbench.benchmark.train import train_run
from lengthbench.core.errors import InputError
from lengthbench.tasks import get_task, make_batch

CPU = torch.device("cpu")
TASK = get_task("copy")


def _config(encoding="rope", seed=0, steps=40, every=10, patience=2, threshold=0.9):
    return replace(get_preset("smoke").run_config("copy", encoding, seed), steps=steps, fit_check_every=every,
                   fit_patience=patience, fit_threshold=threshold)


class Scripted:
    """A fit check that reports a fixed series of scores, one per call."""

    def __init__(self, scores, fail_at_call=None):
        self.scores, self.fail_at_call, self.n = scores, fail_at_call, 0

    def __call__(self):
        self.n += 1
        if self.n == self.fail_at_call:
            raise KeyboardInterrupt("interrupted")
        return self.scores[self.n - 1]


def _train(config, fit_check, checkpoint=None):
    model = config.build_model(TASK.vocab_size)
    return model, train_run(model, TASK, config, CPU, checkpoint=checkpoint, fit_check=fit_check)


def test_a_run_stops_after_patience_fit_checks_in_a_row_and_keeps_its_weights():
    """It fits at checks 2 and 3 (step 30): it stops there, having trained as
    a run without checks does (the checks draw from streams of their own)."""
    model, result = _train(_config(), Scripted([0.5, 0.95, 0.97]))
    assert (result.stopped, result.steps_done) == ("fit", 30)
    assert result.fit_checks == [[10, 0.5], [20, 0.95], [30, 0.97]]
    _, unchecked = _train(_config(every=0, patience=0), None)
    assert len(result.step_losses) == 30 and unchecked.step_losses[:30] == result.step_losses
    never_model, never = _train(_config(), Scripted([0.1] * 3))
    assert (never.stopped, never.steps_done) == ("max_steps", 40)
    assert [step for step, _ in never.fit_checks] == [10, 20, 30]  # none at the last step
    assert any((a != b).any() for a, b in zip(model.parameters(), never_model.parameters()))


def test_patience_counts_checks_in_a_row():
    _, result = _train(_config(steps=60), Scripted([0.95, 0.5, 0.95, 0.95, 0.99]))
    assert (result.stopped, result.steps_done) == ("fit", 40)


def test_a_resumed_run_ends_exactly_as_an_uninterrupted_one(tmp_path):
    """Interrupted at its fourth fit check, the run resumes from its checkpoint
    (its checks so far included) and ends exactly as an uninterrupted one."""
    config = _config(steps=60)
    scores = [0.1, 0.1, 0.1, 0.95, 0.95]
    whole_model, whole = _train(config, Scripted(scores))
    assert (whole.stopped, whole.steps_done) == ("fit", 50)
    checkpoint = Checkpoint(tmp_path, config.run_id, every_s=0)
    with pytest.raises(KeyboardInterrupt):
        _train(config, Scripted(scores, fail_at_call=4), checkpoint)
    assert checkpoint.load()["step"] == 39 and len(checkpoint.load()["fit_checks"]) == 3
    model, again = _train(config, Scripted(scores[3:]), checkpoint)
    assert (again.stopped, again.steps_done, again.fit_checks) == (whole.stopped, whole.steps_done, whole.fit_checks)
    for a, b in zip(model.parameters(), whole_model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_the_fit_check_uses_examples_of_its_own():
    length = 5
    held_out = make_batch(TASK, fit_check_streams(1234, length, CPU)[0], np.full(64, length)).tokens
    reported = make_batch(TASK, eval_streams(1234, length, CPU)[0], np.full(64, length)).tokens
    training = make_batch(TASK, data_rng(0), np.full(64, length)).tokens
    assert not np.array_equal(held_out, reported) and not np.array_equal(held_out, training)


def test_records_carry_the_steps_and_checks():
    """A real fit check (threshold low enough to stop early): the record says why training stopped."""
    record = execute_run(_config(steps=60, threshold=0.05), CPU)
    assert record.status == "ok" and record.training["stopped"] == "fit"
    assert record.training["steps_done"] < 60 and len(record.training["fit_checks"]) >= 2
    assert set(record.summary) >= {"val_exact_match", "ood_exact_match", "id_exact_match"}


@pytest.mark.parametrize("settings, message", [
    (dict(fit_check_every=-100), "fit_check_every -100 and fit_patience 0"),
    (dict(fit_patience=2), "fit_check_every 0 and fit_patience 2"),
    (dict(fit_threshold=1.5), "fit_threshold 1.5"),
    (dict(validation_length=10), "validation_length 10 must lie strictly between train_length 5 and test_length 10"),
    (dict(validation_length=5), "validation_length 5 must lie strictly between"),
])
def test_bad_protocol_settings_are_refused_by_name(settings, message):
    preset = get_preset("smoke")
    bad = replace(preset, settings={**preset.settings, **settings})
    with pytest.raises(InputError, match=message):
        bad.run_config("copy", "rope", 0)
