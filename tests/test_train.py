"""The trainer: a run trains exactly as the plain loop a user would write
around the same model, a diverging run stops where its loss turned
non-finite, and a crash lands in its own cell's record."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.runner import execute_run
from lengthbench.benchmark.seeding import data_rng, position_generator
from lengthbench.benchmark.adamw import FusedAdamW
from lengthbench.benchmark.train import batch_tensors, lr_at, train_run
from lengthbench.models.encodings.base import ENCODINGS, PositionEncoding, register_encoding
from lengthbench.tasks import IGNORE, get_task, make_batch

CPU = torch.device("cpu")


def _config(encoding, seed=0, steps=30, task="copy"):
    return replace(get_preset("quick").run_config(task, encoding, seed), steps=steps, warmup_steps=5)


def test_a_run_trains_as_a_plain_loop():
    """The trainer (packed rows, clipping, warmup/cosine) is the plain loop a
    user writes around the same model with ``clip_grad_norm_`` and AdamW on
    the whole padded batch, to float32 rounding (packing changes the shapes
    of the matmuls, not what they compute)."""
    task = get_task("copy")
    for encoding in ("alibi", "randomized-rope", "coupled"):
        config = _config(encoding, steps=12)
        model, rng, gen = config.build_model(task.vocab_size).train(), data_rng(0), position_generator(0, CPU)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True)
        plain = []
        for step in range(config.steps):
            batch = make_batch(task, rng, rng.integers(1, config.train_length + 1, size=config.batch_size))
            t = batch_tensors(batch, CPU)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, config)
            optimizer.zero_grad()
            logits = model(t["tokens"], model.positions(t["tokens"], t["position_ids"], t["seq_lens"], gen))
            loss = F.cross_entropy(logits.flatten(0, 1), t["targets"].flatten(), ignore_index=IGNORE,
                                   reduction="sum") / int((batch.targets != IGNORE).sum())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            plain.append(loss.item())
        result = train_run(config.build_model(task.vocab_size), task, config, CPU)
        assert result.step_losses == pytest.approx(plain, rel=1e-5), encoding
        assert np.isfinite(plain).all()


def test_the_trainers_adamw_is_torchs_fused_adamw_bit_for_bit():
    """The same updates as ``torch.optim.AdamW(fused=True)``, exactly: with a
    changing learning rate, a frozen parameter, one whose gradient only
    starts later, one left out of the first passes, and across a state_dict
    handed from one to the other."""
    torch.manual_seed(0)
    ours_model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Linear(5, 3), torch.nn.Linear(3, 2),
                                     torch.nn.Linear(2, 2))
    ours_model[2].bias.requires_grad_(False)
    theirs_model = copy.deepcopy(ours_model)
    ours = FusedAdamW(ours_model.parameters(), lr=1e-2, weight_decay=0.1)
    theirs = torch.optim.AdamW(theirs_model.parameters(), lr=1e-2, weight_decay=0.1, fused=True)

    def step(i):
        x = torch.randn(4, 6, generator=torch.Generator().manual_seed(i))
        for model, opt in ((ours_model, ours), (theirs_model, theirs)):
            if opt is ours:
                opt.lr = 1e-2 / (i + 1)
            else:
                opt.param_groups[0]["lr"] = 1e-2 / (i + 1)
            opt.zero_grad()
            model[0].weight.requires_grad_(i >= 2)  # no gradient for the first two steps
            (model if i >= 3 else model[:3])(x).square().sum().backward()  # the last layer joins at step 3
            opt.step()
        for a, b in zip(ours_model.parameters(), theirs_model.parameters()):
            assert torch.equal(a, b), i

    for i in range(4):
        step(i)
    theirs.load_state_dict(ours.state_dict())
    ours.load_state_dict(copy.deepcopy(theirs.state_dict()))
    for i in range(4, 7):
        step(i)
    assert float(ours.state[0]["step"]) == 5.0 and float(ours.state[1]["step"]) == 7.0
    assert float(ours.state[6]["step"]) == 4.0


def test_seeds_give_other_runs_and_the_same_seed_the_same_run():
    task = get_task("copy")
    runs = [train_run(c.build_model(task.vocab_size), task, c, CPU).step_losses
            for c in (_config("rope", 0), _config("rope", 0), _config("rope", 1))]
    assert runs[0] == runs[1]
    assert runs[0] != pytest.approx(runs[2], rel=1e-3)


@pytest.fixture
def exploding_encoding():
    """An encoding whose activations overflow from its fourth training step on
    (``positions`` runs once per step)."""
    @register_encoding("test-explodes")
    class Explodes(PositionEncoding):
        steps = 0

        def positions(self, pos, ctx):
            type(self).steps += ctx.train
            return pos

        def embed(self, h, pos):
            return h * (float("inf") if self.training and type(self).steps > 3 else 1.0)

    yield "test-explodes"
    ENCODINGS.remove("test-explodes")


def test_a_diverging_run_stops_at_its_first_non_finite_loss(exploding_encoding):
    config = _config(exploding_encoding, steps=12)
    task = get_task("copy")
    result = train_run(config.build_model(task.vocab_size), task, config, CPU)
    assert result.diverged and result.stopped == "diverged"
    assert result.steps_done == 3 and len(result.step_losses) == 3
    ENCODINGS[exploding_encoding].factory.steps = 0
    record = execute_run(config, CPU)
    assert record.status == "diverged" and record.training["steps_done"] == 3


@pytest.fixture
def crashing_encoding():
    @register_encoding("test-crashes")
    class Crashes(PositionEncoding):
        def rotate(self, q, k, pos):
            raise RuntimeError("boom in rotate")

    yield "test-crashes"
    ENCODINGS.remove("test-crashes")


def test_a_crash_lands_in_its_own_record(crashing_encoding):
    records = [execute_run(_config(e, steps=3), CPU) for e in ("nope", crashing_encoding, "rope")]
    assert [r.status for r in records] == ["ok", "error", "ok"]
    assert "boom in rotate" in records[1].error
    assert all("group_size" not in r.to_json() for r in records)
