"""Stacked groups of runs: a run trains and scores the same in any group as
alone, a diverging or crashing run harms no other, and the grid forms groups
only of runs that can share a model."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import lengthbench.benchmark.grid as grid_module
from lengthbench.benchmark.grid import form_groups, grid_configs, resolve_group_size, run_grid
from lengthbench.benchmark.presets import CORE_ENCODINGS, get_preset
from lengthbench.benchmark.runner import execute_group
from lengthbench.benchmark.train import build_group, group_key, train_group
from lengthbench.models import ModelSize, RunInit, Transformer, build_encoding
from lengthbench.models.encodings.base import ENCODINGS, PositionEncoding, register_encoding
from lengthbench.tasks import get_task

CPU = torch.device("cpu")
MIXED = ("nope", "rope", "alibi", "randomized-rope", "learned", "t5", "kerple-log", "fire", "coupled", "xpos",
             "cope", "abacus")


@pytest.fixture
def float64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


def _run(seed, name):
    return RunInit(seed, lambda: build_encoding(name, 32, 4))


def test_a_stack_computes_what_each_run_alone_computes(float64):
    size = ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64)
    runs = [_run(seed, name) for seed, name in enumerate(MIXED)]
    stack = Transformer(11, size, runs).eval()
    tokens = torch.randint(0, 11, (len(runs), 5, 9))
    ids, lens = torch.arange(9).expand(5, 9), torch.full((5,), 9)
    positions = [stack.positions(r, tokens[r], ids, lens, torch.Generator().manual_seed(3))
                 for r in range(len(runs))]
    out = stack(tokens, positions)
    for r, run in enumerate(runs):
        alone = Transformer(11, size, [run]).eval().run_logits(tokens[r], ids, lens, torch.Generator().manual_seed(3))
        torch.testing.assert_close(out[r], alone, rtol=1e-12, atol=1e-12)
    subset = stack(tokens[[1, 4]], [positions[1], positions[4]], runs=[1, 4])
    torch.testing.assert_close(subset, out[[1, 4]], rtol=0, atol=0)


def test_a_run_clips_its_gradients_in_its_own_order_in_any_group():
    """The norm a run clips by sums its gradients in its solo order (embedding,
    its encoding's parameters, blocks, head), whichever run leads the group."""
    size = ModelSize(d_model=32, n_layers=1, n_heads=4, d_ff=64)
    group = Transformer(11, size, [_run(0, "nope"), _run(1, "t5"), _run(2, "cope")])
    alone = Transformer(11, size, [_run(1, "t5")])
    for model in (group, alone):
        model(torch.randint(0, 11, (model.n_runs, 2, 5)), [torch.arange(5)[None]] * model.n_runs).sum().backward()
    assert [g.shape for g in group.run_gradients(1)] == [g.shape for g in alone.run_gradients(0)]
    assert group.run_gradients(1)[1].shape == alone.encodings[0].table.weight.shape


def _configs(encodings_and_seeds, steps=30, task="copy"):
    preset = get_preset("quick")
    return [replace(preset.run_config(task, e, s), steps=steps, warmup_steps=5) for e, s in encodings_and_seeds]


def test_a_group_trains_each_run_as_alone_float64(float64):
    """Three seeds, three encodings (one with a bias, one randomized): every
    run's loss at every one of 30 steps matches its solo run within 1e-9."""
    configs = _configs([("rope", 0), ("alibi", 1), ("randomized-rope", 2), ("rope", 3)])
    task = get_task("copy")
    together = train_group(build_group(configs, task, CPU), task, configs, CPU)
    for config, grouped in zip(configs, together):
        [alone] = train_group(build_group([config], task, CPU), task, [config], CPU)
        assert len(alone.step_losses) == 30 and not alone.diverged
        assert grouped.step_losses == pytest.approx(alone.step_losses, rel=1e-9, abs=0)
    assert together[0].step_losses != pytest.approx(together[3].step_losses, rel=1e-3)  # seeds differ


def test_smoke_records_of_a_group_equal_solo_records(tmp_path):
    """Default float32: every metric of every record is the same whether the
    runs of a task train in one group or one by one (the training losses,
    summed over other bucket splits, agree to float32 rounding)."""
    preset = get_preset("smoke").with_grid(tasks=["copy", "addition"], seeds=[0, 1])
    solo = run_grid(preset, tmp_path / "solo", group_size=1, progress=False)
    grouped = run_grid(preset, tmp_path / "grouped", group_size=10, progress=False)
    assert {r.group_size for r in solo if r.status == "ok"} == {1}
    assert {r.group_size for r in grouped if r.status == "ok"} == {10}
    for a, b in zip(solo, grouped):
        assert a.run_id == b.run_id and a.status == b.status
        for key in ("per_length", "summary", "n_parameters"):
            assert getattr(a, key) == getattr(b, key), (a.run_id, key)
        if a.status == "ok":
            assert b.training["loss_curve"] == pytest.approx(a.training["loss_curve"], rel=1e-4)


@pytest.fixture
def exploding_encoding():
    """An encoding whose activations overflow from its fourth training step on
    (``positions`` runs once per run and step)."""
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


def test_a_diverging_run_stops_alone(exploding_encoding):
    configs = _configs([("rope", 0), (exploding_encoding, 0), ("alibi", 1)], steps=12)
    task = get_task("copy")
    results = train_group(build_group(configs, task, CPU), task, configs, CPU)
    assert results[1].diverged and results[1].steps_done == 3 and len(results[1].step_losses) == 3
    for config, result in zip(configs[::2], results[::2]):
        [alone] = train_group(build_group([config], task, CPU), task, [config], CPU)
        assert not result.diverged and result.step_losses == pytest.approx(alone.step_losses, rel=1e-5)


@pytest.fixture
def crashing_encoding():
    @register_encoding("test-crashes")
    class Crashes(PositionEncoding):
        def rotate(self, q, k, pos):
            raise RuntimeError("boom in rotate")

    yield "test-crashes"
    ENCODINGS.remove("test-crashes")


def test_a_crash_in_a_group_lands_on_its_own_cell(crashing_encoding):
    configs = _configs([("nope", 0), (crashing_encoding, 0), ("rope", 0)], steps=3)
    records = execute_group(configs, CPU)
    assert [r.status for r in records] == ["ok", "error", "ok"]
    assert "boom in rotate" in records[1].error
    assert [r.group_size for r in records if r.status == "ok"] == [1, 1]  # retried alone


def test_groups_hold_only_runs_that_can_share_a_model():
    preset = get_preset("suite").with_grid(tasks=["copy", "addition"], encodings=CORE_ENCODINGS)
    configs = grid_configs(preset)
    groups = form_groups(configs, 4)
    assert sorted(c.run_id for g in groups for c in g) == sorted(c.run_id for c in configs)
    for group in groups:
        assert 1 <= len(group) <= 4 and len({group_key(c) for c in group}) == 1
    sizes = sorted(len(g) for g in groups)
    assert sizes == [3, 3, 4, 4, 4, 4, 4, 4]  # 15 runs per task: 4 groups each
    dropout = [replace(c, model=replace(c.model, dropout=0.1)) for c in configs[:3]]
    assert [len(g) for g in form_groups(dropout, 4)] == [1, 1, 1]


def test_auto_group_size_stacks_on_cuda_only(monkeypatch):
    configs = grid_configs(get_preset("suite").with_grid(tasks=["copy"], encodings=CORE_ENCODINGS))  # 15 runs
    monkeypatch.setattr(grid_module, "default_device", lambda: CPU)
    assert resolve_group_size(0, configs, workers=2) == 1
    assert resolve_group_size(7, configs, workers=2) == 7
    monkeypatch.setattr(grid_module, "default_device", lambda: torch.device("cuda"))
    free = {"bytes": 1e12}
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (free["bytes"], 2e12))
    assert resolve_group_size(0, configs, workers=1) == 15  # every run of the task in one group
    assert resolve_group_size(0, configs, workers=2) == 8  # one group per worker
    free["bytes"] = grid_module.activation_bytes(configs[0]) * 4 * 3.5
    assert resolve_group_size(0, configs, workers=1) == 3  # a quarter of free memory holds 3 runs


def test_a_run_alone_trains_exactly_as_a_plain_model():
    """float32, bit for bit: the trainer on a group of one (length buckets,
    per-run clipping, warmup/cosine) is the plain loop a user writes around the
    same model with ``clip_grad_norm_`` and AdamW, the loop every earlier
    record came from."""
    import numpy as np
    import torch.nn.functional as F

    from lengthbench.benchmark.seeding import data_rng, position_generator
    from lengthbench.benchmark.train import batch_tensors, lr_at
    from lengthbench.tasks import IGNORE, make_batch

    task = get_task("copy")
    for encoding in ("alibi", "randomized-rope", "coupled"):
        [config] = _configs([(encoding, 0)], steps=12)
        model, rng, gen = build_group([config], task, CPU).train(), data_rng(0), position_generator(0, CPU)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        plain = []
        for step in range(config.steps):
            batch = make_batch(task, rng, rng.integers(1, config.train_length + 1, size=config.batch_size))
            t = batch_tensors(batch, CPU)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, config)
            optimizer.zero_grad()
            logits = model.run_logits(t["tokens"], t["position_ids"], t["seq_lens"], gen)
            loss = F.cross_entropy(logits.flatten(0, 1), t["targets"].flatten(), ignore_index=IGNORE,
                                   reduction="sum") / int((batch.targets != IGNORE).sum())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            plain.append(loss.item())
        [alone] = train_group(build_group([config], task, CPU), task, [config], CPU)
        assert alone.step_losses == plain, encoding
        assert np.isfinite(plain).all()
