"""The ``fit`` study: its pilot cells are what it says they are in the shipped
horizon records, and each lever's preset changes its lever and nothing else."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

import pytest

from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.studies.fit import (
    BASELINE,
    FIT_PILOT_SEEDS,
    LEVERS,
    PILOT_CELLS,
    fit_trend,
    lever_preset,
    trend_class,
)
from lengthbench.tasks.cells import method_parts
HORIZON_RECORDS = Path(__file__).resolve().parent.parent / "leaderboard/reference/horizon/records"


@pytest.fixture(scope="module")
def horizon_cells() -> dict:
    cells = defaultdict(list)
    for record in ResultsFolder(HORIZON_RECORDS).records():
        if record.status == "ok" and record.seed in (0, 1, 2):
            cells[(record.task, record.method)].append(record)
    return cells


def test_every_pilot_cell_is_unfit_and_of_its_stated_trend_in_the_horizon_records(horizon_cells):
    for task, method, stated in PILOT_CELLS:
        records = horizon_cells[(task, method)]
        assert len(records) == 3, (task, method)
        assert not any(r.summary["fit_exact_match"] >= r.config.fit_threshold for r in records), (task, method)
        assert trend_class(fit_trend(records)) == stated, (task, method, fit_trend(records))


def test_the_pilot_spans_what_the_study_promises():
    kinds = [kind for _, _, kind in PILOT_CELLS]
    assert kinds.count("improving") >= 4 and kinds.count("flat") >= 4
    assert len({method_parts(method)[0] for _, method, _ in PILOT_CELLS}) >= 3
    assert "word_problem_s5" in {task for task, _, _ in PILOT_CELLS}
    assert not set(FIT_PILOT_SEEDS) & {0, 1, 2}  # never a reported seed


def test_trend_classes():
    assert trend_class(0.05) == "improving" and trend_class(0.049) == "between"
    assert trend_class(0.029) == "flat" and trend_class(-0.3) == "flat"


def _by_run(preset: str) -> dict:
    return {(c.task, c.method, c.seed): asdict(c) for c in grid_configs(PRESETS[preset])}


def test_each_lever_changes_its_own_fields_only():
    baseline = _by_run(lever_preset(BASELINE))
    assert len(baseline) == len(PILOT_CELLS) * len(FIT_PILOT_SEEDS)
    for lever in LEVERS:
        if lever is BASELINE:
            continue
        configs = _by_run(lever_preset(lever))
        assert configs.keys() == baseline.keys()
        for run, config in configs.items():
            changed = {k for k in config if config[k] != baseline[run][k]}
            if lever.width == 1:
                assert changed == set(lever.overrides), (lever.name, changed)
                continue
            assert changed == {"model"}, (lever.name, changed)
            before, after = baseline[run]["model"], config["model"]
            assert after["d_model"] == 2 * before["d_model"] and after["d_ff"] == 2 * before["d_ff"], run
            assert {k: v for k, v in after.items() if k not in ("d_model", "d_ff")} == \
                {k: v for k, v in before.items() if k not in ("d_model", "d_ff")}


def test_the_baseline_is_horizon_zoos_setting_at_the_pilot_seeds():
    zoo = PRESETS["horizon-zoo"]
    for config in grid_configs(PRESETS[lever_preset(BASELINE)]):
        family, encoding = method_parts(config.method)
        assert config == zoo.run_config(config.task, encoding, config.seed, family)
