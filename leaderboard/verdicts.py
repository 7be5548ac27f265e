"""The pieces every study's report is written from (``lengthbench.studies``):
the setting and horizon lines, seed scores of the judged cells, the encoding
a user would choose on the validation band, a cell's row and the fit shifts;
how a verdict is reached is ``leaderboard.inference``'s. They name no paper:
a study's claims and its report live in its own module.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lengthbench.benchmark.records import RunRecord
from lengthbench.leaderboard.aggregate import fits_training, judged, leaderboard_frame, method_order, runs_frame
from lengthbench.leaderboard.reference_notes import budget_text
from lengthbench.leaderboard.inference import ComparisonFamily, shift_text
from lengthbench.leaderboard.tables import markdown_table
from lengthbench.models.encodings import encoding_kind
from lengthbench.models.families import TRANSFORMER, ModelSize, describe_size
from lengthbench.tasks.cells import method_parts

NOT_FIT = "did not fit (no verdict)"

# beside test exact match: the best input-ignoring predictor's expected score on the test band (``leaderboard.chance``)
CHANCE_COLUMN = "chance (%, test band)"


NO_PAIR = "not tested: no task where both fit and an encoding was chosen on a validation band"


def pct(x) -> str:
    return "" if x is None or pd.isna(x) else f"{100 * x:.1f}"


def mean_std(row) -> str:
    std = row["ood_token_accuracy_std"]
    return pct(row["ood_token_accuracy_mean"]) + ("" if pd.isna(std) else f" ± {pct(std)}")


def describe_config(config: dict) -> str:
    model, train, val = config["model"], config["train_length"], config.get("validation_length", 0)
    bands = (f"train lengths 1..{train}, validation {train + 1}..{val}, test {val + 1}..{config['test_length']}"
             if val else f"train lengths 1..{train}, test {train + 1}..{config['test_length']}")
    budget = (f"until fit, at most {config['steps']} steps" if config.get("fit_patience")
              else f"{config['steps']} steps")
    return (f"{bands}, {budget} of batch {config['batch_size']}, lr {config['lr']:g}, "
            f"{describe_size(config.get('family', TRANSFORMER), ModelSize(**model))}")


def setup_text(records: list[RunRecord]) -> str:
    """The setting of most runs, the other settings (with the families and
    tasks that use them), and the seeds."""
    described = pd.Series([describe_config(r.config.to_dict()) for r in records])
    common = described.mode()[0]
    tasks = set(r.task for r in records)
    other: dict[str, tuple[set, set]] = {}
    for r, d in zip(records, described):
        if d != common:
            families, on = other.setdefault(d, (set(), set()))
            families.add(r.config.family)
            on.add(r.task)
    text = f"Setting: {common}"
    for d, (families, on) in other.items():
        where = "" if on == tasks else f" on {', '.join(sorted(on))}"
        text += f"; {', '.join(sorted(families))}{where}: {d}"
    seeds = sorted({r.seed for r in records})
    rates = sorted({r.config.lr for r in records})
    tuned = any(r.selection for r in records)
    return (text + f". Seeds {', '.join(map(str, seeds))}; recurrent families use d_model as their hidden size. "
            + ("Settings chosen on the validation band are named in each record's selection."
               if tuned else f"The learning rate was not tuned: {' and '.join(f'{lr:g}' for lr in rates)} as "
               "the preset sets it, no rate chosen for a method (the `fit` study measures what choosing one buys)."))


def horizon_text(records: list[RunRecord], protocol: str = "") -> str:
    """The lengths most runs were trained and tested on, the ratio of the two
    and the budget, beside the paper's own ``protocol`` (a study's): every
    verdict is read at this horizon and budget, not the paper's."""
    bands = pd.Series([(r.config.train_length, r.config.validation_length, r.config.test_length) for r in records])
    train, validation, test = bands.mode()[0]
    ran = [r for r in records if r.status != "not_applicable"]
    budgets = sorted({budget_text(r) for r in ran})
    return (f"Horizon: trained on lengths 1..{train}, tested on {max(train, validation) + 1}..{test}, up to "
            f"{test / train:g}× the longest training length"
            + (f"; budget: {budgets[0]}, " + ("the same rule for every method, each run stopping at its own fit"
                                               if budgets[0].startswith("until fit") else "the same for every method")
               if len(budgets) == 1 else
               f"; budgets: {'; '.join(budgets)}" if budgets else "") + "."
            + (f" The paper's: {protocol}; every verdict here is read at this reference's horizon and budget."
               if protocol else ""))


def seed_scores(records: list[RunRecord], metric: str) -> dict[tuple[str, str], list[float]]:
    """(task, method) -> every seed's test-band score (a failed seed counts 0)."""
    return seed_values(records, lambda runs: runs[metric])


def seed_fits(records: list[RunRecord]) -> dict[tuple[str, str], list[float]]:
    """(task, method) -> 1 for each seed that fit its training lengths, else 0 (the board's ``n_fit``)."""
    return seed_values(records, fits_training)


def seed_values(records: list[RunRecord], values) -> dict[tuple[str, str], list[float]]:
    """(task, method) -> ``values(runs)``'s entry for every seed that ran (a failed seed counts 0)."""
    runs = runs_frame(records)
    runs = runs[runs.status.isin(["ok", "diverged"])]
    runs = runs.assign(value=values(runs).astype(float).where(~runs.failed.astype(bool), 0.0))
    scores: dict[tuple[str, str], list[float]] = {}
    for r in runs.itertuples():
        scores.setdefault((r.task, r.method), []).append(float(r.value))
    return scores


def judged_runs(records: list[RunRecord]) -> set[tuple[str, str]]:
    """The (task, method) cells judged on length generalization (``aggregate.judged``)."""
    board = leaderboard_frame(records)
    fit = board[judged(board)]
    return set(zip(fit.task, fit.method))


def judged_seeds(records: list[RunRecord]) -> dict[tuple[str, str], list[float]]:
    """(task, method) -> test exact match of every seed, for the cells judged on length generalization only."""
    fit = judged_runs(records)
    return {cell: v for cell, v in seed_scores(records, "ood_exact_match").items() if cell in fit}


def by_task(seeds: dict, method: str) -> dict[str, list[float]]:
    """task -> ``method``'s seed scores (``effect`` pairs the tasks both methods have)."""
    return {task: v for (task, m), v in seeds.items() if m == method}


def pooled_by_task(seeds: dict, encodings) -> dict[str, list[float]]:
    """task -> the judged seeds of every encoding in ``encodings`` together."""
    pooled: dict[str, list[float]] = {}
    for (task, method), values in seeds.items():
        if method_parts(method)[1] in encodings:
            pooled.setdefault(task, []).extend(values)
    return pooled


def paired_seeds(a: pd.Series, b: pd.Series) -> tuple[dict, dict]:
    """Two score series indexed by (task, seed) as task -> seed scores, each task's seeds where both have a
    score (what ``ComparisonFamily.row`` pairs, the task the unit: seeds are replicates, not independent tasks)."""
    both = pd.DataFrame({"a": a, "b": b}).dropna()
    by_task = both.groupby(level="task", sort=False)
    return {t: list(g.a) for t, g in by_task}, {t: list(g.b) for t, g in by_task}


def test_scores(records: list[RunRecord], metric: str = "exact_match") -> pd.DataFrame:
    """Per (task, seed) x method: the test band's ``metric``, a failed seed
    (diverged, non-finite) counting 0 as everywhere else, judged cells only."""
    runs = runs_frame(records)
    runs = runs[runs.status.isin(["ok", "diverged"])]
    keep = judged_runs(records)
    runs = runs[[(t, m) in keep for t, m in zip(runs.task, runs.method)]]
    return runs.assign(ood=runs[f"ood_{metric}"].where(~runs.failed, 0.0)).pivot_table(
        index=["task", "seed"], columns="method", values="ood")


def chosen_on_validation(board: pd.DataFrame, metric: str = "exact_match", task_agnostic: bool = False
                          ) -> dict[str, str]:
    """Per task, the transformer encoding a user would pick without looking at
    the test band: the best mean validation-band ``metric`` among the
    encodings that fit (ties: the first in method order; ``task_agnostic``:
    among those that do not read the task's coupled position ids); none for a
    task whose runs had no validation band."""
    chosen = {}
    fit = board[judged(board) & (board.model == "transformer")]
    if task_agnostic:
        fit = fit[fit.encoding.map(lambda e: encoding_kind(e) != "task-structured").astype(bool)]
    for task, cells in fit.groupby("task", sort=False):
        validation = cells.set_index("method").loc[method_order(cells.method)][f"val_{metric}_mean"].astype(float)
        if validation.notna().any():
            chosen[task] = validation.idxmax()
    return chosen


def chosen_scores(scores: pd.DataFrame, chosen: dict[str, str]) -> pd.Series:
    """Per (task, seed): the score of the transformer encoding chosen for the task (NaN where none)."""
    return pd.Series([scores.loc[(t, s), chosen[t]] if t in chosen and chosen[t] in scores else np.nan
                      for t, s in scores.index], index=scores.index, dtype=float)


def cell_texts(cells: pd.DataFrame, task: str, method: str) -> list[str]:
    """A cell's fit seeds, test exact match (mean ± std, flagged when not judged) and generalization length."""
    cell = cells[(cells.task == task) & (cells.method == method)]
    if cell.empty:
        return ["", "", ""]
    c = cell.iloc[0]
    if c.status != "ok":
        return ["", c.status, ""]
    std = "" if pd.isna(c.ood_exact_match_std) else f" ± {pct(c.ood_exact_match_std)}"
    flag = "" if judged(cell).iloc[0] else " (did not fit)"
    length = c.generalization_length_exact_match
    reach = "" if pd.isna(length) else f"{int(length)} ({c.extrapolation_ratio_exact_match:.2g}×)"
    return [f"{int(c.n_fit)}/{int(c.n_seeds)}", pct(c.ood_exact_match_mean) + std + flag, reach]


def cells_table(board: pd.DataFrame, tasks, methods) -> list[str]:
    """Per task and method that ran: seeds fit, test exact match, generalization length and the task's chance."""
    rows = [[task, f"`{method}`", *cell_texts(board, task, method), chance_of(board, task)]
            for task in tasks for method in methods if not board[(board.task == task) & (board.method == method)].empty]
    return markdown_table(["task", "method", "seeds fit", "test exact match (%)", "generalization length",
                           CHANCE_COLUMN], rows)


def chance_of(cells: pd.DataFrame, task: str, metric: str = "exact_match") -> str:
    """A task's chance level in ``metric`` on the test band (%), beside its scores."""
    levels = cells[cells.task == task][f"chance_{metric}"].dropna()
    return pct(levels.iloc[0]) if len(levels) else ""


def fit_shift(board: pd.DataFrame, fits: dict, plain: str, label: str, family: ComparisonFamily) -> str:
    """Seeds that fit in ``plain`` and in ``label``, over the methods that ran in both, with the
    permutation p of that shift, raw → Holm over the report's fit shifts (``2/9 → 9/9, p 0.012 → 0.036``;
    ``fits``: ``seed_fits``)."""
    ran = board[board.status == "ok"]
    methods = sorted(set(ran[ran.task == plain].method) & set(ran[ran.task == label].method))
    cells = [ran[(ran.task == t) & ran.method.isin(methods)] for t in (plain, label)]
    shift = " → ".join(f"{int(c.n_fit.sum())}/{int(c.n_seeds.sum())}" for c in cells)
    if not methods:
        return shift
    test = family.shift(*({m: fits.get((t, m), []) for m in methods} for t in (label, plain)))
    return f"{shift}, {shift_text(test, family.closed)}"


def fit_shift_between(board: pd.DataFrame, fits: dict, tasks, before: str, after: str,
                      family: ComparisonFamily) -> str:
    """Seeds of ``before`` and of ``after`` that fit, over ``tasks`` where both ran, with the permutation p
    of the shift (within each task the seeds' fit exchanged between the two), raw → Holm over the report's fit
    shifts (``0/9 → 9/9, p 0.004 → 0.008``)."""
    ran = board[(board.status == "ok") & board.task.isin(tasks)]
    both = sorted(set(ran[ran.method == before].task) & set(ran[ran.method == after].task))
    cells = [ran[(ran.method == m) & ran.task.isin(both)] for m in (before, after)]
    shift = " → ".join(f"{int(c.n_fit.sum())}/{int(c.n_seeds.sum())}" for c in cells)
    if not both:
        return shift
    test = family.shift(*({t: fits.get((t, m), []) for t in both} for m in (after, before)))
    return f"{shift}, {shift_text(test, family.closed)}"
