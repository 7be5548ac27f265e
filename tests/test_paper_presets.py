"""The published-protocol presets: every (task, method) cell builds, trains a
few steps and evaluates its longest test length, at a tiny size on CPU."""

from dataclasses import replace

import pytest
import torch

from lengthbench.benchmark.evaluate import evaluate_length
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PAPER_PRESETS, get_preset
from lengthbench.benchmark.runner import not_applicable_reason
from lengthbench.benchmark.train import build_group, train_group
from lengthbench.models.transformer import ModelSize
from lengthbench.tasks import get_task

CPU = torch.device("cpu")
TINY = ModelSize(d_model=16, n_layers=1, n_heads=2, d_ff=16)


def cells(name):
    seen, out = set(), []
    for config in grid_configs(get_preset(name)):
        if (config.task, config.method) not in seen:
            seen.add((config.task, config.method))
            out.append(config)
    return out


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_every_cell_of_a_paper_preset_runs_at_tiny_size(name):
    preset = get_preset(name)
    ran = 0
    for config in cells(name):
        if not_applicable_reason(config) is not None:
            continue
        tiny = replace(config, model=TINY, steps=2, batch_size=2, warmup_steps=1, eval_samples=1)
        task = get_task(tiny.task)
        model = build_group([tiny], task, CPU)
        [result] = train_group(model, task, [tiny], CPU)
        assert result.steps_done == 2 and not result.diverged, config.run_id
        with torch.no_grad():
            row = evaluate_length(model, task, tiny.test_length, tiny, CPU)[0]
        assert row["status"] == "ok", (config.run_id, row)  # positions reach the longest test length
        ran += 1
    assert ran == len(cells(name)) - sum(not_applicable_reason(c) is not None for c in cells(name)) > 0
    assert len(grid_configs(preset)) == len(cells(name)) * len(preset.seeds)
