"""The pieces every study's report is written from (``lengthbench.studies``):
the setting and horizon lines, the verdict rules and how a verdict is reached
(a paired difference with its interval and sign-flip p, a probability of
improvement with its permutation p), seed scores of the judged cells, the
encoding a user would choose on the validation band, and a cell's row. They
name no paper: a study's claims and its report live in its own module.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lengthbench.benchmark.records import RunRecord
from lengthbench.leaderboard.aggregate import fits_training, judged, leaderboard_frame, method_order, runs_frame
from lengthbench.leaderboard.reference_notes import budget_text
from lengthbench.leaderboard.statistics import MIN_TASKS, TOO_FEW, paired_difference, probability_of_improvement
from lengthbench.leaderboard.tables import markdown_table
from lengthbench.models.encodings import encoding_kind
from lengthbench.models.families import TRANSFORMER, ModelSize, describe_size
from lengthbench.tasks.cells import method_parts

NOT_FIT = "did not fit (no verdict)"

# beside test exact match: the share of the test band's examples whose answer is their length's most frequent one
CHANCE_COLUMN = "chance (%, test band)"


NO_PAIR = "not tested: no task where both fit and an encoding was chosen on a validation band"


NO_FIT_PAIR = "not tested: no cell pair where both fit"


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
    return text + f". Seeds {', '.join(map(str, seeds))}; recurrent families use d_model as their hidden size."


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


def interval_text(test: dict) -> str:
    """``+12.3 [+4.0, +20.6], p 0.031`` points with the sign-flip test's p; no
    interval over fewer than 3 units (``+2.3 (2 units: no interval), p 1``)."""
    if test["n"] < 2:
        return f"{100 * test['mean']:+.1f}" if test["n"] else ""
    if math.isnan(test["low"]):
        return f"{100 * test['mean']:+.1f} ({test['n']} units: no interval), {p_text(test['p_value'])}"
    return (f"{100 * test['mean']:+.1f} [{100 * test['low']:+.1f}, {100 * test['high']:+.1f}], "
            f"{p_text(test['p_value'])}")


def p_text(p: float) -> str:
    """``p 0.08``; never rounded onto the other side of 0.05 (0.0496 is ``p 0.0496``, not ``p 0.05``)."""
    if p < 0.001:
        return "p < 0.001"
    short = f"{p:.2g}"
    return f"p {short}" if (float(short) < 0.05) == (p < 0.05) else f"p {p:.3g}"

# How a difference's verdict is reached, said wherever one is shown (Demsar 2006 recommends a
# rank or sign test, not the t-test alone, for comparisons across datasets).
DIFFERENCE_RULE = ("A difference's verdict needs its t interval clear of 0 and a paired sign-flip test at p < 0.05 "
                   "(each unit's difference taking either sign, every way; it assumes no normality): differences "
                   "that all agree give a t interval of zero width, yet with n units the smallest p is 2/2^n, so "
                   "fewer than 6 units never decide.")

# How a probability-of-improvement verdict is reached, said wherever one is shown.
IMPROVEMENT_RULE = ("A P verdict needs the interval clear of 0.5 and a permutation test at p < 0.05 (within each "
                    "stratum the seeds' labels exchanged, every way where there are few): with 3 seeds a side a "
                    "bootstrap interval can shrink to one point, yet every seed beating every seed of one stratum "
                    "happens by chance 1 time in 10. Both keep the strata fixed, so they speak for these strata "
                    "only; the difference over them is the one that reaches beyond.")


# The rule every cross-method verdict follows, said wherever one is shown.
TASKS_RULE = (f"No verdict rests on fewer than {MIN_TASKS} tasks where every compared method fits: below that "
              "the numbers are shown and the verdict says too few tasks.")

VERDICT_RULE = f"{DIFFERENCE_RULE} {IMPROVEMENT_RULE} {TASKS_RULE}"


def verdict_text(test: dict, a: str, b: str, a_better: str | None = None, b_better: str | None = None) -> str:
    """What a test supports: ``a`` better, ``b`` better (or the phrases given
    for them), neither, or nothing on fewer than ``MIN_TASKS`` tasks."""
    if test["verdict"] == TOO_FEW:
        return f"too few tasks where both fit to test ({test['n_tasks']})"
    return {"a better": a_better or f"{a} better", "b better": b_better or f"{b} better"}.get(test["verdict"],
                                                                                            "not told apart")


def improvement_text(test: dict, a: str = "randomized", b: str = "base") -> str:
    """A probability of improvement, its interval, its permutation p-value and the verdict both support."""
    if not test["n_tasks"]:
        return ""
    interval = f"{test['p']:.2f} [{test['low']:.2f}, {test['high']:.2f}]"
    return f"{interval}, {p_text(test['p_value'])}: {verdict_text(test, a, b)}"


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


def effect(a_by_unit: dict, b_by_unit: dict, tasks: int | None = None) -> tuple[dict, dict]:
    """A against B over the units both have (a unit's score: the mean of its
    seeds): the paired difference with its 95% Student-t interval over the
    units, and the probability of improvement with the unit as the stratum.
    ``tasks``: how many tasks the units span, where they are not tasks (the
    methods of one task: 1), for the rule that fewer than 3 give no verdict."""
    units = [u for u in a_by_unit if u in b_by_unit and len(a_by_unit[u]) and len(b_by_unit[u])]
    test = paired_difference([np.mean(a_by_unit[u]) for u in units], [np.mean(b_by_unit[u]) for u in units],
                             tasks=tasks)
    return test, probability_of_improvement({u: a_by_unit[u] for u in units}, {u: b_by_unit[u] for u in units},
                                            tasks=tasks)


def over_tasks(a: pd.Series, b: pd.Series) -> tuple[dict, dict]:
    """``effect`` of two score series indexed by (task, seed), the task the
    unit: each task's seeds where both have a score, the task's seed means
    paired over the tasks (seeds are replicates, not independent tasks)."""
    both = pd.DataFrame({"a": a, "b": b}).dropna()
    by_task = both.groupby(level="task", sort=False)
    return effect({t: list(g.a) for t, g in by_task}, {t: list(g.b) for t, g in by_task})


def claim_row(a: dict, b: dict, names: tuple[str, str], tasks: int | None = None) -> list[str]:
    """Units, A − B [95% interval], P(A > B) [95% interval] and the verdict, or why there is none
    (``tasks``: as ``effect``'s)."""
    test, better = effect(a, b, tasks)
    if not test["n"]:
        return ["0", "", "", NO_FIT_PAIR]
    return [str(test["n"]), interval_text(test), improvement_text(better, *names), verdict_text(test, *names)]


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


def fit_shift(board: pd.DataFrame, fits: dict, plain: str, label: str) -> str:
    """Seeds that fit in ``plain`` and in ``label``, over the methods that ran in both, with the
    permutation p of that shift (``2/9 → 9/9, p 0.012``; ``fits``: ``seed_fits``)."""
    ran = board[board.status == "ok"]
    methods = set(ran[ran.task == plain].method) & set(ran[ran.task == label].method)
    cells = [ran[(ran.task == t) & ran.method.isin(methods)] for t in (plain, label)]
    shift = " → ".join(f"{int(c.n_fit.sum())}/{int(c.n_seeds.sum())}" for c in cells)
    test = probability_of_improvement(*({m: fits.get((t, m), []) for m in methods} for t in (label, plain)))
    return f"{shift}, {p_text(test['p_value'])}" if test["n_tasks"] else shift


def fit_shift_between(board: pd.DataFrame, fits: dict, tasks, before: str, after: str) -> str:
    """Seeds of ``before`` and of ``after`` that fit, over ``tasks`` where both ran, with the permutation p
    of the shift (within each task the seeds' fit exchanged between the two: ``0/9 → 9/9, p 0.004``)."""
    ran = board[(board.status == "ok") & board.task.isin(tasks)]
    both = set(ran[ran.method == before].task) & set(ran[ran.method == after].task)
    cells = [ran[(ran.method == m) & ran.task.isin(both)] for m in (before, after)]
    shift = " → ".join(f"{int(c.n_fit.sum())}/{int(c.n_seeds.sum())}" for c in cells)
    test = probability_of_improvement(*({t: fits.get((t, m), []) for t in both} for m in (after, before)))
    return f"{shift}, {p_text(test['p_value'])}" if test["n_tasks"] else shift
