"""Budget until fit: a run that fit at ``fit_patience`` checks in a row stops
there, keeps the weights it had when it stopped whatever its group does next,
records its steps and checks, resumes from a checkpoint as if never stopped,
and checks its fit on examples of its own (neither training batches nor the
reported evaluation's)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from lengthbench.benchmark.checkpoints import Checkpoint
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.runner import execute_group
from lengthbench.benchmark.seeding import data_rng, eval_streams, fit_check_streams
from lengthbench.benchmark.train import build_group, train_group
from lengthbench.errors import InputError
from lengthbench.tasks import get_task, make_batch

CPU = torch.device("cpu")
TASK = get_task("copy")


def _configs(encodings, steps=40, every=10, patience=2, threshold=0.9):
    preset = get_preset("smoke")
    return [replace(preset.run_config("copy", e, s), steps=steps, fit_check_every=every, fit_patience=patience,
                    fit_threshold=threshold) for e, s in encodings]


class Scripted:
    """A fit check that reports a fixed series of scores per run, one per call."""

    def __init__(self, scores_by_run, fail_at_call=None):
        self.scores, self.calls, self.fail_at_call, self.n = scores_by_run, {}, fail_at_call, 0

    def __call__(self, runs):
        self.n += 1
        if self.n == self.fail_at_call:
            raise KeyboardInterrupt("interrupted")
        out = {}
        for r in runs:
            self.calls[r] = self.calls.get(r, 0) + 1
            out[r] = self.scores[r][self.calls[r] - 1]
        return out


def test_a_run_stops_after_patience_fit_checks_in_a_row_and_keeps_its_weights():
    """Run 0 fits at checks 2 and 3 (step 30), run 1 never: run 0 stops at 30
    with the weights it has alone when it stops there, although the group's
    optimizer steps (momentum, weight decay) go on for run 1."""
    configs = _configs([("rope", 0), ("alibi", 1)])
    model = build_group(configs, TASK, CPU)
    results = train_group(model, TASK, configs, CPU, fit_check=Scripted({0: [0.5, 0.95, 0.97], 1: [0.1] * 3}))
    assert (results[0].stopped, results[0].steps_done) == ("fit", 30)
    assert results[0].fit_checks == [[10, 0.5], [20, 0.95], [30, 0.97]]
    assert (results[1].stopped, results[1].steps_done) == ("max_steps", 40)
    assert [step for step, _ in results[1].fit_checks] == [10, 20, 30]  # none at the last step
    alone = build_group([configs[0]], TASK, CPU)
    [solo] = train_group(alone, TASK, [configs[0]], CPU, fit_check=Scripted({0: [0.5, 0.95, 0.97]}))
    assert solo.steps_done == 30 and solo.step_losses == pytest.approx(results[0].step_losses, rel=1e-5)
    for grouped, own in zip(model.run_parameters(0), alone.run_parameters(0)):
        torch.testing.assert_close(grouped, own, rtol=0, atol=1e-4)  # float32 bucket rounding; 10 more steps move ~1e-2


def test_patience_counts_checks_in_a_row():
    [config] = _configs([("rope", 0)], steps=60)
    [result] = train_group(build_group([config], TASK, CPU), TASK, [config], CPU,
                           fit_check=Scripted({0: [0.95, 0.5, 0.95, 0.95, 0.99]}))
    assert (result.stopped, result.steps_done) == ("fit", 40)


def test_a_resumed_group_remembers_which_runs_stopped(tmp_path):
    """Interrupted after run 0 stopped, the group resumes from its checkpoint
    and ends exactly as an uninterrupted one."""
    configs = _configs([("rope", 0), ("alibi", 1)], steps=60)
    scores = {0: [0.95, 0.96, 0.2, 0.2, 0.2], 1: [0.1, 0.1, 0.1, 0.95, 0.95]}
    whole_model = build_group(configs, TASK, CPU)
    whole = train_group(whole_model, TASK, configs, CPU, fit_check=Scripted(scores))
    assert [(r.stopped, r.steps_done) for r in whole] == [("fit", 20), ("fit", 50)]

    checkpoint = Checkpoint(tmp_path, [c.run_id for c in configs], every_s=0)
    with pytest.raises(KeyboardInterrupt):  # at the fourth check (step 40), run 0 stopped at 20
        train_group(build_group(configs, TASK, CPU), TASK, configs, CPU, checkpoint=checkpoint,
                    fit_check=Scripted(scores, fail_at_call=4))
    assert checkpoint.load()["step"] == 39 and checkpoint.load()["fit_at"] == {"0": 20}
    resumed_scores = {0: [], 1: scores[1][3:]}
    model = build_group(configs, TASK, CPU)
    again = train_group(model, TASK, configs, CPU, checkpoint=checkpoint, fit_check=Scripted(resumed_scores))
    assert [(r.stopped, r.steps_done, r.fit_checks) for r in again] == \
        [(r.stopped, r.steps_done, r.fit_checks) for r in whole]
    for a, b in zip(model.parameters(), whole_model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_the_fit_check_uses_examples_of_its_own():
    length = 5
    held_out = make_batch(TASK, fit_check_streams(1234, length, CPU)[0], np.full(64, length)).tokens
    reported = make_batch(TASK, eval_streams(1234, length, CPU)[0], np.full(64, length)).tokens
    training = make_batch(TASK, data_rng(0), np.full(64, length)).tokens
    assert not np.array_equal(held_out, reported) and not np.array_equal(held_out, training)


def test_records_carry_the_steps_and_checks_and_equal_solo_records():
    """A real fit check (threshold low enough to stop early): the group's
    records equal the solo ones, with why training stopped."""
    configs = _configs([("rope", 0), ("nope", 1)], steps=60, threshold=0.05)
    grouped = execute_group(configs, CPU)
    for config, record in zip(configs, grouped):
        [solo] = execute_group([config], CPU)
        assert record.status == "ok" and record.training["stopped"] == "fit"
        assert record.training["steps_done"] < 60 and len(record.training["fit_checks"]) >= 2
        assert record.training["fit_checks"] == solo.training["fit_checks"]
        assert record.per_length == solo.per_length and record.summary == solo.summary
        assert set(record.summary) >= {"val_exact_match", "ood_exact_match", "id_exact_match"}


@pytest.mark.parametrize("settings, message", [
    (dict(fit_check_every=100), "fit_check_every 100 and fit_patience 0"),
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
