"""``fit``: what it takes to fit at this size, measured. Half of horizon's
cells never fit their training lengths; is that the method, or our one
setting? A pilot of unfit horizon cells (some still improving at 4,000 steps,
some flat, S5 among them) is trained again under three levers, each against
the protocol's own setting on the same pilot seeds: (a) the learning rate
chosen per cell on in-distribution validation from a grid of three, (b) 2x
and 4x the steps, (c) 2x the width; the report gives the fit each reaches and
its fit per CPU-hour. The pilot seeds are never reported anywhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from lengthbench.benchmark.config import Cut, Preset
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS, register_preset
from lengthbench.benchmark.records import RunRecord
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.inference import ComparisonFamily, comparison_headers, family_rule, write_report
from lengthbench.leaderboard.tables import markdown_table
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.zoo import DELTA_FAMILIES
from lengthbench.tasks.cells import method_parts, transformer_method

# The pilot cells: unfit horizon cells (no seed of 3 fit at 13..16 after 4000 steps), chosen by their fit
# trend (``fit_trend``: the fit statistic's change from the check at 3000 steps to the final one at 4000,
# averaged over the 3 reference seeds), over five families and three kinds of transformer encoding, cheap runs
# first. ``improving``: still rising
# by at least IMPROVING_AT; ``flat``: rising by less than FLAT_WITHIN (level, or falling). A test holds each cell's
# class to the shipped horizon records.
IMPROVING_AT = 0.05
FLAT_WITHIN = 0.03
PILOT_CELLS = (
    ("odds_first", transformer_method("rope"), "improving"),
    ("copy", transformer_method("nope"), "improving"),
    ("reverse_string", "rnn", "improving"),
    ("compute_sqrt", "stack-rnn", "improving"),
    ("odds_first", "lstm", "improving"),
    ("stack_manipulation", transformer_method("forget"), "improving"),
    ("word_problem_s5", transformer_method("rope"), "flat"),
    ("word_problem_s5", "lstm", "flat"),
    ("solve_equation", "deltanet", "flat"),
    ("multiplication", transformer_method("rope"), "flat"),
    ("word_problem_s3", transformer_method("stick-breaking"), "flat"),
    ("binary_multiplication", "stack-rnn", "flat"),
)
# Seeds no reported grid uses (horizon's pilot used 100): two, so that a learning rate chosen on one seed's
# in-distribution validation is scored on the other seed (two-fold: no choice is scored on the run it read).
FIT_PILOT_SEEDS = (100, 101)
# The protocol's learning rate and a grid of three around it, a factor of about 3 apart (Zoology sweeps 4
# values over logspace(-3, -1.5), FLaRe draws 10 trials log-uniform in 1e-4..1e-2, Deletang et al. 3 values).
PROTOCOL_LR = 1e-3
LR_GRID = (3e-4, PROTOCOL_LR, 3e-3)
STEP_FACTORS = (2, 4)
WIDTH_FACTOR = 2


def fit_at(record: RunRecord, step: int) -> float | None:
    """The run's fit statistic (the lowest held-out exact match over the judged lengths) at ``step``: a logged
    check's, or the final evaluation's at the end of the budget; None when it was not measured there."""
    if step == record.config.steps:
        return (record.summary or {}).get("fit_exact_match")
    return next((value for at, value in (record.training or {}).get("fit_checks") or [] if at == step), None)


def fit_trend(records: list[RunRecord]) -> float:
    """How far a cell's fit statistic still rose over the last quarter of its budget: the final value less
    the check's at three quarters of the steps, averaged over its seeds (NaN where a seed logged neither)."""
    changes = []
    for record in records:
        steps = record.config.steps
        before, after = fit_at(record, steps * 3 // 4), fit_at(record, steps)
        changes.append(math.nan if before is None or after is None else after - before)
    return float(np.mean(changes)) if changes else math.nan


def trend_class(change: float) -> str:
    """``improving``, ``flat`` (not rising: level or falling) or ``between`` (neither kind of pilot cell)."""
    if change >= IMPROVING_AT:
        return "improving"
    return "flat" if change < FLAT_WITHIN else "between"


@dataclass(frozen=True)
class Lever:
    """One way to train the pilot again: its preset's suffix, what it changes and how it reads in the report."""

    name: str
    about: str
    overrides: dict
    width: int = 1  # every width of the grid (d_model, d_ff, each family's and cell's d_model) times this


BASELINE = Lever("baseline", "the protocol's setting (lr 1e-3, 4000 steps, horizon's widths)", {})
LEVERS = (
    BASELINE,
    *(Lever(f"lr{lr:.0e}".replace("e-0", "e-"), f"lr {lr:g}", {"lr": lr}) for lr in LR_GRID if lr != PROTOCOL_LR),
    *(Lever(f"steps{k}x", f"{k}x the steps ({4000 * k})", {"steps": 4000 * k}) for k in STEP_FACTORS),
    Lever(f"width{WIDTH_FACTOR}x", f"{WIDTH_FACTOR}x the width (d_model and d_ff)", {}, width=WIDTH_FACTOR),
)
PILOT = "fit-pilot"


def lever_preset(lever: Lever) -> str:
    """The preset that trains the pilot under ``lever``."""
    return PILOT if lever is BASELINE else f"{PILOT}-{lever.name}"


def widened(preset: Preset, factor: int) -> Preset:
    """``preset`` with every width times ``factor``: the model's d_model and d_ff, and each family's and
    cell's d_model (the parameter-matched widths), so every family is widened alike."""
    def scaled(settings: dict) -> dict:
        model = settings.get("model", {})
        return {**settings, "model": {k: v * factor for k, v in model.items() if k in ("d_model", "d_ff")}}
    return replace(preset,
                   model=replace(preset.model, d_model=preset.model.d_model * factor, d_ff=preset.model.d_ff * factor),
                   family_settings={f: scaled(s) for f, s in preset.family_settings.items()},
                   cell_settings={t: {f: scaled(s) for f, s in by_family.items()}
                                  for t, by_family in preset.cell_settings.items()})


def _pilot_base() -> Preset:
    """horizon-zoo's protocol (its settings, widths, budget) on the pilot cells and seeds only."""
    zoo = PRESETS["horizon-zoo"]
    tasks = tuple(dict.fromkeys(task for task, _, _ in PILOT_CELLS))
    methods = [method_parts(method) for _, method, _ in PILOT_CELLS]
    cuts = tuple(Cut("not a pilot cell", methods=tuple(m for t, m, _ in PILOT_CELLS if t == task), tasks=(task,),
                     only=True) for task in tasks)
    return replace(zoo, tasks=tasks, seeds=FIT_PILOT_SEEDS,
                   encodings=tuple(dict.fromkeys(e for f, e in methods if e)),
                   families=tuple(dict.fromkeys(f for f, _ in methods)), cuts=cuts)


for _lever in LEVERS:
    _base = _pilot_base()
    register_preset(replace(
        widened(_base, _lever.width) if _lever.width != 1 else _base,
        name=lever_preset(_lever),
        description=f"the fit study's pilot under {_lever.about}: {len(PILOT_CELLS)} unfit horizon cells x "
                    f"{len(FIT_PILOT_SEEDS)} pilot seeds (never reported), horizon's protocol otherwise",
        overrides=_lever.overrides,
    ))


# The learning rate is chosen per cell on in-distribution validation: each pilot seed takes the rate under which
# the *other* pilot seed reached the higher fit statistic (held-out exact match at the judged trained lengths;
# ties: its mean held-out exact match over every trained length, then the protocol's rate), so no choice is
# scored on the run it read (two-fold). Its cost is every rate's runs: the choice needs them all.
CHOSEN = "lr chosen"


def _lever_of(records: list[RunRecord]) -> dict[str, list[RunRecord]]:
    """Lever name -> its records (a record belongs to the lever whose preset's grid holds its cell)."""
    keys = {lever.name: {c.cell_key() for c in grid_configs(PRESETS[lever_preset(lever)])} for lever in LEVERS}
    by_lever: dict[str, list[RunRecord]] = {lever.name: [] for lever in LEVERS}
    for record in records:
        for name, cells in keys.items():
            if record.config.cell_key() in cells:
                by_lever[name].append(record)
    return by_lever


@dataclass(frozen=True)
class Outcome:
    """One pilot cell's seed under one lever: its fit statistic, whether it fit, and the CPU time it took (its
    own run; the learning-rate lever: every rate's runs); ``own_hours``: the run a reported seed would need."""

    fit: float
    fits: bool
    hours: float
    own_hours: float
    lr: float | None = None  # the rate chosen (the learning-rate lever)
    whole_space: bool = False  # a judged length was scored on its whole input space: training drew nearly all of it


WHOLE_SPACE = "whole space"  # what a record's per-length row says of examples scored on a length's every input


def _outcome(record: RunRecord) -> Outcome:
    fit = 0.0 if record.failed else float((record.summary or {}).get("fit_exact_match") or 0.0)
    hours = (record.wall_time_s or 0.0) / 3600
    whole = any(row.get("examples") == WHOLE_SPACE for row in record.per_length or []
                if row["length"] in record.config.fit_lengths())
    return Outcome(fit, fit >= record.config.fit_threshold, hours, hours, whole_space=whole)


def _choice_score(record: RunRecord) -> tuple:
    summary = {} if record.failed else (record.summary or {})
    return (float(summary.get("fit_exact_match") or 0.0), float(summary.get("id_exact_match") or 0.0),
            record.config.lr == PROTOCOL_LR)


def pilot_outcomes(records: list[RunRecord]) -> dict[str, dict[tuple, Outcome]]:
    """Lever name (and ``CHOSEN``) -> (task, method, seed) -> its outcome (runs that finished; a run that raised
    has none: ``pilot_errors``). The chosen rate's outcome is the seed's own run at the rate the other seed's
    runs chose; its hours are every rate's runs of that seed."""
    by_lever = _lever_of(records)
    outcomes = {name: {(r.task, r.method, r.seed): _outcome(r) for r in runs if r.status in ("ok", "diverged")}
                for name, runs in by_lever.items()}
    rates = {lever.name: lever.overrides.get("lr", PROTOCOL_LR) for lever in LEVERS if lever.width == 1
             and set(lever.overrides) <= {"lr"}}
    runs = {(r.task, r.method, r.seed, rates[name]): r for name, rs in by_lever.items() if name in rates
            for r in rs if r.status in ("ok", "diverged")}
    chosen = {}
    for task, method, seed, _ in runs:
        others = [s for s in FIT_PILOT_SEEDS if s != seed]
        if (task, method, seed) in chosen or not all((task, method, s, lr) in runs for s in FIT_PILOT_SEEDS
                                                         for lr in LR_GRID):
            continue
        scores = {lr: max(_choice_score(runs[(task, method, o, lr)]) for o in others) for lr in LR_GRID}
        lr = max(LR_GRID, key=lambda rate: scores[rate])
        own = _outcome(runs[(task, method, seed, lr)])
        hours = sum(_outcome(runs[(task, method, seed, rate)]).hours for rate in LR_GRID)
        chosen[(task, method, seed)] = Outcome(own.fit, own.fits, hours, own.hours, lr, own.whole_space)
    outcomes[CHOSEN] = chosen
    return outcomes


def pilot_errors(records: list[RunRecord]) -> dict[tuple, str]:
    """(lever name, task, method) -> the error of a run of it that raised (the first seed's)."""
    errors = {}
    for name, runs in _lever_of(records).items():
        for r in runs:
            if r.status == "error":
                errors.setdefault((name, r.task, r.method), (r.error or "").partition(": ")[2] or (r.error or ""))
    return errors


def _cells(kind: str | None = None) -> list[tuple[str, str]]:
    return [(task, method) for task, method, k in PILOT_CELLS if kind in (None, k)]


def compared_cells(outcomes: dict, kind: str | None = None) -> list[tuple[str, str]]:
    """The pilot cells (of ``kind``) where every lever's runs finished on both seeds: the one set every lever is
    summed over, so that no lever is priced on other cells than the others."""
    return [(t, m) for t, m in _cells(kind)
            if all((t, m, s) in outcomes.get(name, {}) for name in (BASELINE.name, *LEVER_ROWS)
                   for s in FIT_PILOT_SEEDS)]


def _seeds_text(outcomes: dict, task: str, method: str) -> str:
    """``0.37 / 0.66`` (each pilot seed's fit statistic; ``*`` where it fit)."""
    texts = [(f"{o.fit:.2f}" + ("*" if o.fits else "") + ("†" if o.whole_space else ""))
             if (o := outcomes.get((task, method, s))) else "" for s in FIT_PILOT_SEEDS]
    return " / ".join(texts) if any(texts) else ""


def lever_summary(outcomes: dict, name: str, kind: str | None = None) -> dict | None:
    """Seeds fit, mean fit statistic and CPU-hours of a lever over the compared pilot cells of ``kind`` (all:
    None), its gain over the baseline per CPU-hour beyond the baseline's, and what one reported run costs under
    it against the baseline's (once a rate is chosen, its one run); None with no compared cell."""
    keys = [(t, m, s) for t, m in compared_cells(outcomes, kind) for s in FIT_PILOT_SEEDS]
    mine, base = outcomes.get(name, {}), outcomes.get(BASELINE.name, {})
    if not keys:
        return None
    fits = sum(mine[k].fits for k in keys)
    hours = sum(mine[k].hours for k in keys)
    base_hours = sum(base[k].hours for k in keys)
    extra = hours - base_hours
    gain = fits - sum(base[k].fits for k in keys)
    return {"seeds": len(keys), "fits": fits, "gain": gain, "fit": float(np.mean([mine[k].fit for k in keys])),
            "fit_gain": float(np.mean([mine[k].fit - base[k].fit for k in keys])), "hours": hours, "extra": extra,
            "per_hour": gain / extra if extra > 0 else math.nan,
            "per_run": sum(mine[k].own_hours for k in keys) / base_hours}


LEVER_ROWS = (CHOSEN, *(lever.name for lever in LEVERS if lever is not BASELINE and lever.overrides.keys() != {"lr"}))


def _lever_about(name: str) -> str:
    if name == CHOSEN:
        return f"lr chosen on validation from {', '.join(f'{lr:g}' for lr in LR_GRID)}"
    return next(lever.about for lever in LEVERS if lever.name == name)


def fit_report(records: list[RunRecord]) -> str:
    """The fit study's report (``_fit_text``, its comparisons over pilot cells)."""
    return write_report(_fit_text, records, unit="cell")


def _fit_text(records: list[RunRecord], family: ComparisonFamily) -> str:
    """The pilot's fit under each lever, against the protocol's setting on the same seeds: per cell, per lever
    (seeds fit, mean fit statistic, CPU-hours, fit per CPU-hour), and each lever against the baseline over the
    cells (the inference layer's two questions)."""
    outcomes = pilot_outcomes(records)
    if not outcomes[BASELINE.name]:
        raise InputError(f"these records hold no run of `{PILOT}` (the baseline every lever is set against); run "
                         f"`lengthbench run --preset {PILOT}` (and each lever's preset) into the study's records")
    threshold = records[0].config.fit_threshold
    lines = ["# What it takes to fit at this size: the `fit` study's pilot", "",
             f"Cells: {len(PILOT_CELLS)} of horizon's that fit on no seed at 13..16 after 4000 steps, "
             f"{len(_cells('improving'))} still improving there (their fit statistic rose by at least "
             f"{IMPROVING_AT:g} over the last 1000 steps, averaged over the reference's 3 seeds) and "
             f"{len(_cells('flat'))} flat (rising by less than {FLAT_WITHIN:g}), over "
             f"{len({method_parts(m)[0] for _, m, _ in PILOT_CELLS})} families. Seeds "
             f"{', '.join(map(str, FIT_PILOT_SEEDS))} (pilot seeds: never reported elsewhere). Each lever changes one "
             "setting of horizon's protocol (train 1..16, 4000 steps of 64, lr 1e-3 with warmup and cosine decay, "
             "the widths matched per task) and keeps the rest. The fit statistic is the lowest exact match over "
             "the judged training lengths 13..16 on held-out examples (inputs training never drew, where the "
             f"protocol says so); a seed fits at {threshold:.0%} (marked *). CPU-hours: the runs' own wall time, one "
             "thread each. The learning rate is chosen per cell on the *other* pilot seed's fit statistic (ties: its "
             "held-out exact match over every trained length, then the protocol's 1e-3), so no choice is scored on "
             "the run it read; its cost is every rate's runs. No test length is read anywhere in this study.", ""]
    errors = pilot_errors(records)
    header = ["cell", "trend at 4000", "baseline", *(f"lr {lev.overrides['lr']:g}" for lev in LEVERS
                                                    if lev.overrides.keys() == {"lr"}), CHOSEN,
              *(_lever_about(n) for n in LEVER_ROWS[1:])]

    def cell(name: str, task: str, method: str) -> str:
        return _seeds_text(outcomes[name], task, method) or ("raised: see below" if (name, task, method) in errors
                                                              else "")

    rows = []
    for task, method, kind in PILOT_CELLS:
        chosen = "; ".join(f"{o.lr:g}" for s in FIT_PILOT_SEEDS if (o := outcomes[CHOSEN].get((task, method, s))))
        rows.append([f"{task} × `{method}`", kind, cell(BASELINE.name, task, method),
                     *(cell(lev.name, task, method) for lev in LEVERS if lev.overrides.keys() == {"lr"}),
                     _seeds_text(outcomes[CHOSEN], task, method) + (f" (lr {chosen})" if chosen else ""),
                     *(cell(n, task, method) for n in LEVER_ROWS[1:])])
    lines += ["## Per cell", "", "Each pilot seed's fit statistic (seed " + " / seed ".join(map(str, FIT_PILOT_SEEDS))
              + "); the learning rate each seed's choice took in brackets. † marks a seed whose fit was judged, at some "
              "length, on that length's whole input space: its longer training drew nearly every input there, so no "
              "unseen input was left and the fit cannot tell learning from memorizing.", "",
              *markdown_table(header, rows), ""]
    lines += [f"A run that raised has no fit statistic: under {_lever_about(name)}, {task} × `{method}`: "
              f"{error.split(';')[0]}." for (name, task, method), error in errors.items()] + ([""] if errors else [])
    compared = compared_cells(outcomes)
    left = [f"{t} × `{m}`" for t, m in _cells() if (t, m) not in compared]
    rows, best = [], None
    for name in LEVER_ROWS:
        for kind in (None, "improving", "flat"):
            summary = lever_summary(outcomes, name, kind)
            if summary is None:
                rows.append([_lever_about(name), kind or "all", "not run (or not every run yet)", "", "", "", "", ""])
                continue
            per_hour = "" if math.isnan(summary["per_hour"]) else f"{summary['per_hour']:+.2f}"
            rows.append([_lever_about(name), kind or "all", f"{summary['fits']}/{summary['seeds']} ({summary['gain']:+d})",
                         f"{summary['fit']:.2f} ({summary['fit_gain']:+.2f})", f"{summary['hours']:.2f}",
                         f"{summary['extra']:+.2f}", per_hour, f"{summary['per_run']:.2f}×"])
            if kind is None and summary["gain"] > 0 and (best is None or summary["per_hour"] > best[1]):
                best = (name, summary["per_hour"])
    base = lever_summary(outcomes, BASELINE.name)
    lines += ["## Per lever", "",
              f"Over the {len(compared)} cells where every lever's runs finished on both seeds"
              + (f" (left out: {', '.join(left)}, where some lever's run raised or is still to come)" if left else "")
              + ", and over their improving and flat cells apart: the seeds that fit (the change from the baseline's), "
              "the mean fit statistic (the change), the CPU-hours the lever's runs took here, those beyond the "
              "baseline's, the seeds it fits beyond the baseline per extra CPU-hour, and what one reported run "
              "costs under the lever against the baseline's (the learning rate, once chosen, trains one run at its "
              "rate: the choice is paid once, on pilot seeds, not on every reported run). Wall time measures the "
              "cost under each sitting's own load, so the ratios carry that noise."
              + (f" The baseline: {base['fits']}/{base['seeds']} seeds fit, mean fit statistic {base['fit']:.2f}, "
                 f"{base['hours']:.2f} CPU-hours." if base else ""), "",
              *markdown_table(["lever", "cells", "seeds fit (vs baseline)", "mean fit statistic (vs baseline)",
                               "CPU-hours", "beyond the baseline's", "seeds fit per extra CPU-hour",
                               "a reported run costs"], rows), ""]
    if best is not None:
        lines += [f"The lever with the most seeds fit per extra CPU-hour in this pilot: **{_lever_about(best[0])}** "
                  f"({best[1]:+.2f}). Per reported run, a learning rate chosen once costs what the baseline's run "
                  "costs; every other lever multiplies every run's cost by its factor above.", ""]
    rows = []
    base_by_cell = {(t, m): [outcomes[BASELINE.name][(t, m, s)].fit for s in FIT_PILOT_SEEDS] for t, m in compared}
    for name in LEVER_ROWS:
        mine = {(t, m): [outcomes[name][(t, m, s)].fit for s in FIT_PILOT_SEEDS] for t, m in compared}
        rows.append([_lever_about(name), *family.row(mine, base_by_cell, ("lever", "baseline"))])
    lines += ["## Each lever against the baseline", "",
              "The fit statistic under each lever minus under the protocol's setting, over the same cells (a cell: a "
              f"task and a method). {family_rule('cell')}", "",
              *markdown_table(["lever", *comparison_headers("lever", "baseline", "cell", "both ran")], rows), ""]
    return "\n".join(lines) + "\n"


# The protocol rule the pilot supports (horizon's PROTOCOL.md, "What it takes to fit"): one learning rate per model
# family, chosen from LR_GRID on the pilot seeds' in-distribution validation (the rate with the highest mean fit
# statistic over the family's pilot cells and both seeds; ties: the protocol's 1e-3), never on a test length; the
# transformer's encodings share one rate (they are compared with each other everywhere), and so do the delta
# rule's four variants (one layer, compared with each other by Grazzi et al.'s claim); a family with no pilot cell
# keeps 1e-3 (no evidence). A test holds TUNED_RATES to what ``family_rates`` reads off the shipped pilot records.
RATE_GROUPS = {family: "delta rule" for family in DELTA_FAMILIES}
TUNED_RATES = {"transformer": 3e-3, "lstm": 3e-3, "delta rule": 3e-3}
TUNED = "horizon-tuned"


def rate_group(family: str) -> str:
    """The group whose pilot cells choose a family's rate (the family itself, or the delta rule for its variants)."""
    return RATE_GROUPS.get(family, family)


def family_rates(records: list[RunRecord]) -> dict[str, dict[float, float]]:
    """Per group that has pilot cells: each rate of LR_GRID's mean fit statistic over its cells and pilot seeds."""
    outcomes = pilot_outcomes(records)
    levers = {lever.overrides.get("lr", PROTOCOL_LR): lever.name for lever in LEVERS
              if lever.width == 1 and set(lever.overrides) <= {"lr"}}
    means: dict[str, dict[float, float]] = {}
    for group in dict.fromkeys(rate_group(method_parts(m)[0]) for _, m, _ in PILOT_CELLS):
        keys = [(t, m, s) for t, m, _ in PILOT_CELLS if rate_group(method_parts(m)[0]) == group
                for s in FIT_PILOT_SEEDS]
        means[group] = {lr: float(np.mean([outcomes[levers[lr]][k].fit for k in keys])) for lr in LR_GRID}
    return means


def chosen_rate(means: dict[float, float]) -> float:
    """The rate with the highest mean fit statistic (ties: the protocol's, then the lower)."""
    return max(LR_GRID, key=lambda lr: (means[lr], lr == PROTOCOL_LR, -lr))


register_preset(replace(
    PRESETS["horizon-zoo"],
    name=TUNED,
    description="horizon-zoo's grid with each family's learning rate chosen on the fit study's pilot (the rule in "
                "studies/fit.py: transformer, lstm and the delta rule at 3e-3, the rest at 1e-3): what the protocol "
                "change would rerun",
    family_settings={family: {**settings, **({"lr": TUNED_RATES[rate_group(family)]}
                                             if rate_group(family) in TUNED_RATES else {})}
                     for family, settings in {**PRESETS["horizon-zoo"].family_settings, "transformer": {}}.items()},
))


register_study(Study(
    name="fit",
    rank=120,
    about="what it takes to fit at this size: a learning rate chosen on in-distribution validation, 2x and 4x the "
          "steps, or 2x the width, on unfit horizon cells (fit per CPU-hour; ours, no published claim)",
    presets=(*(lever_preset(lever) for lever in LEVERS), TUNED),
    records="leaderboard/reference/fit/records",
    report=fit_report,
))
