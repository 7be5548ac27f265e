"""The published-protocol presets: each holds the cells, seeds and lengths its
paper reports, and every cell builds, trains a few steps and evaluates its
longest test length, at a tiny size on CPU."""

from dataclasses import replace

import pytest
import torch

from lengthbench.benchmark.applicable import not_applicable
from lengthbench.benchmark.evaluate import evaluate_length
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.train import train_run
from lengthbench.models import ModelSize
from lengthbench.tasks import get_task

PAPER_PRESETS = ("chomsky-paper", "nope-paper", "coupling-paper")  # the published protocols (their studies)

CPU = torch.device("cpu")
TINY = ModelSize(d_model=16, n_layers=1, n_heads=2, d_ff=16)
# From the papers (REFERENCES.md): cells (tasks x methods), seeds, and (train, test) lengths per task.
PUBLISHED = {
    "chomsky-paper": (15 * (9 + 4), 10, {"*": (40, 500)}),  # 15 tasks x (9 encodings + 4 recurrent families)
    "nope-paper": (4 * 5, 3, {"*": (20, 40), "addition": (8, 16)}),  # 4 tasks x 5 encodings, L -> 2L
    "coupling-paper": (2 * 3, 8, {"addition": (30, 200), "multiplication": (40, 200)}),
}


def cells(name):
    seen, out = set(), []
    for config in grid_configs(get_preset(name)):
        if (config.task, config.method) not in seen:
            seen.add((config.task, config.method))
            out.append(config)
    return out


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_a_paper_preset_holds_the_published_grid(name):
    n_cells, n_seeds, lengths = PUBLISHED[name]
    assert len(cells(name)) == n_cells and len(get_preset(name).seeds) == n_seeds
    for config in cells(name):
        assert (config.train_length, config.test_length) == lengths.get(config.task, lengths.get("*")), config.run_id
        assert not_applicable(config) is None, config.run_id  # every published cell has a number


@pytest.mark.parametrize("name", PAPER_PRESETS)
@pytest.mark.slow
def test_every_cell_of_a_paper_preset_runs_at_tiny_size(name):
    """Every cell trains; each transformer cell evaluates its longest test
    length (its positions reach it), each family without positions on one
    task (a recurrence at length 500 is slow and has no position to run out of)."""
    long_evaluated = set()
    for config in cells(name):
        tiny = replace(config, model=TINY, steps=2, batch_size=2, warmup_steps=1, eval_samples=1)
        task = get_task(tiny.task)
        model = tiny.build_model(task.vocab_size)
        result = train_run(model, task, tiny, CPU)
        assert result.steps_done == 2 and not result.diverged, config.run_id
        if config.encoding or config.family not in long_evaluated:
            long_evaluated.add(config.family)
            with torch.no_grad():
                row = evaluate_length(model, task, tiny.test_length, tiny, CPU)
            assert row["status"] == "ok", (config.run_id, row)  # positions reach the longest test length


def test_the_shipped_grids_name_their_tasks_and_encodings_each_of_its_kind():
    """The axes the shipped references were built from are named, not read from the registries (a task or
    encoding added later joins none of them: tests/test_additions.py), and each name is of the kind its axis
    says: static encodings, the three levels of the Chomsky hierarchy (the paper's 15 tasks), state tracking."""
    from lengthbench.benchmark.presets import (
        CHOMSKY_TASKS,
        DATA_DEPENDENT_KINDS,
        STATE_TASKS,
        STATIC_ENCODINGS,
        SUITE_TASKS,
    )
    from lengthbench.models.encodings import encoding_kind

    assert [e for e in STATIC_ENCODINGS if encoding_kind(e) in DATA_DEPENDENT_KINDS] == []
    assert len(CHOMSKY_TASKS) == 15 and {get_task(t).level for t in CHOMSKY_TASKS} == {"R", "DCF", "CS"}
    assert {get_task(t).level for t in STATE_TASKS} == {"state"} and not set(SUITE_TASKS) & set(STATE_TASKS)
    assert SUITE_TASKS[:15] == CHOMSKY_TASKS and len(set(SUITE_TASKS)) == len(SUITE_TASKS) == 19
