"""The ``fit`` study: its pilot cells are what it says they are in the shipped
horizon records, and each lever's preset changes its lever and nothing else."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from conftest import shipped_records

from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS
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
    for record in shipped_records(HORIZON_RECORDS):
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
    return {(c.task, c.method, c.seed): c.as_fields() for c in grid_configs(PRESETS[preset])}


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


def _pilot_records(fit_of) -> list:
    """A record of every pilot run: ``fit_of(lever name, task, method, seed)`` -> its fit statistic; each run
    takes an hour per unit of steps and width (so a lever's CPU-hours are known)."""
    from lengthbench.benchmark.records import RunRecord

    records = []
    for lever in LEVERS:
        for config in grid_configs(PRESETS[lever_preset(lever)]):
            fit = fit_of(lever.name, config.task, config.method, config.seed)
            hours = config.steps / 4000 * lever.width
            records.append(RunRecord(config, code_version="test", torch_version="", device="", host={}, started_at="",
                                     status="ok", wall_time_s=3600 * hours,
                                     summary={"fit_exact_match": fit, "id_exact_match": fit / 2}))
    return records


def test_the_learning_rate_is_chosen_on_the_other_seed_and_paid_for_in_full():
    """On every cell seed 100's runs favour 3e-3 and seed 101's 3e-4: each seed takes the rate the *other* seed
    chose (101 takes 3e-3, 100 takes 3e-4) and is scored on its own run there; the choice costs every rate's
    runs (3 hours a seed)."""
    from lengthbench.studies.fit import CHOSEN, pilot_outcomes

    def fit_of(lever, task, method, seed):
        favoured = {100: "lr3e-3", 101: "lr3e-4"}[seed]
        return 0.95 if lever == favoured else (0.5 if lever == "baseline" else 0.2)

    outcomes = pilot_outcomes(_pilot_records(fit_of))[CHOSEN]
    task, method, _ = PILOT_CELLS[0]
    assert outcomes[(task, method, 101)].lr == 3e-3 and outcomes[(task, method, 100)].lr == 3e-4
    assert outcomes[(task, method, 101)].fit == 0.2  # seed 101's own run at 3e-3: no choice scored on its own reading
    assert outcomes[(task, method, 100)].hours == pytest.approx(3.0)


def test_the_report_prices_each_lever_and_names_the_cheapest_that_moves_fit():
    """Width fits every seed for 2 hours a run (1 beyond the baseline's), 4x the steps every seed for 3 beyond:
    width fits 24 more seeds per 24 extra CPU-hours, the steps 24 per 72, the rate none: width fits the most per
    extra hour; a reported run costs 2x, 4x, and, once its rate is chosen, 1x."""
    from lengthbench.studies.fit import fit_report

    def fit_of(lever, task, method, seed):
        return 0.95 if lever in ("width2x", "steps4x") else 0.1

    text = fit_report(_pilot_records(fit_of))
    assert "| 2x the width (d_model and d_ff) | all | 24/24 (+24) | 0.95 (+0.85) | 48.00 | +24.00 | +1.00 | 2.00× |" in text
    assert "| 4x the steps (16000) | all | 24/24 (+24) | 0.95 (+0.85) | 96.00 | +72.00 | +0.33 | 4.00× |" in text
    assert "| lr chosen on validation from 0.0003, 0.001, 0.003 | all | 0/24 (+0) | 0.10 (+0.00) | 72.00 | +48.00 | +0.00 | 1.00× |" in text
    assert "the most seeds fit per extra CPU-hour in this pilot: **2x the width (d_model and d_ff)** (+1.00)" in text
    assert "| 2x the width (d_model and d_ff) | 12 |" in text and "better across cells" in text


def test_the_tuned_preset_changes_the_rate_of_the_tuned_families_and_nothing_else():
    from lengthbench.studies.fit import TUNED, TUNED_RATES, rate_group

    zoo = {c.run_id.rsplit("__", 1)[0]: c.as_fields() for c in grid_configs(PRESETS["horizon-zoo"])}
    tuned = {c.run_id.rsplit("__", 1)[0]: c.as_fields() for c in grid_configs(PRESETS[TUNED])}
    assert zoo.keys() == tuned.keys()
    changed = 0
    for run, config in tuned.items():
        differs = {k for k in config if config[k] != zoo[run][k]}
        group = rate_group(config["family"])
        if group in TUNED_RATES and TUNED_RATES[group] != zoo[run]["lr"]:
            assert differs == {"lr"} and config["lr"] == TUNED_RATES[group], run
            changed += 1
        else:
            assert not differs, (run, differs)
    assert changed > 1000
    assert {rate_group(f) for f in ("deltanet", "gated-deltanet-negative")} == {"delta rule"}


def test_the_tuned_rates_are_what_the_shipped_pilot_records_choose():
    """TUNED_RATES is read off the shipped pilot: per group, the rate of LR_GRID with the highest mean fit
    statistic over its pilot cells and seeds; a group that keeps the protocol's 1e-3 is absent."""
    from lengthbench.studies.fit import PROTOCOL_LR, TUNED_RATES, chosen_rate, family_rates

    records = list(shipped_records(HORIZON_RECORDS.parent.parent / "fit/records"))
    chosen = {group: chosen_rate(means) for group, means in family_rates(records).items()}
    assert {group: lr for group, lr in chosen.items() if lr != PROTOCOL_LR} == TUNED_RATES
    assert set(chosen) == {"transformer", "rnn", "stack-rnn", "lstm", "delta rule"}
