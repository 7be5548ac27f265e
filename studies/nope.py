"""``nope``: Kazemnejad et al. 2023 (NeurIPS): do decoder-only transformers
generalize better without position encoding? Their encodings (NoPE, T5's
bias, ALiBi, RoPE, sinusoidal) on copy, reverse, addition and parity.

The report computes their score (exact match over every evaluated length,
seen and unseen) and their mean reciprocal rank beside the test band alone,
and tests the published order pair by pair with the task as the unit.
"""

from __future__ import annotations

import pandas as pd

from lengthbench.benchmark.config import Preset
from lengthbench.benchmark.presets import (
    PRESETS,
    part_of,
    register_preset,
)
from lengthbench.benchmark.records import RunRecord, length_frame
from lengthbench.leaderboard.aggregate import (
    test_band_chance,
)
from lengthbench.leaderboard.statistics import MIN_TASKS
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    CHANCE_COLUMN,
    horizon_text,
    judged_runs,
    paired_seeds,
    pct,
    setup_text,
)
from lengthbench.models.families import ModelSize
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.horizon import part_of_horizon
from lengthbench.tasks.cells import transformer_method

# The published claims, each with its source (the papers' numbers, never ours).
KAZEMNEJAD = "Kazemnejad et al. 2023 (NeurIPS), The Impact of Positional Encoding on Length Generalization"
# Kazemnejad et al.: mean reciprocal rank over their tasks, and 3-seed mean exact match over lengths
# 1..2L from the authors' released results.
NOPE_MRR = {"nope": 0.69, "t5": 0.55, "alibi": 0.50, "rope": 0.33, "sinusoidal": 0.22}
NOPE_EXACT_MATCH = {
    "copy": {"nope": 0.986, "t5": 0.771, "alibi": 0.289, "rope": 0.000, "sinusoidal": 0.000},
    "reverse_string": {"nope": 0.230, "t5": 0.242, "alibi": 0.171, "rope": 0.077, "sinusoidal": 0.023},
}
# The paper's horizon and budget (REFERENCES: its protocol section), set beside ours in the report.
PROTOCOL = ("Kazemnejad et al.: train to 20, test to 40 (2x), a ~107M-parameter decoder, 40k steps of 64, lr 3e-5, "
            "3 seeds")


NOPE_PAPER_ENCODINGS = ("nope", "t5", "alibi", "rope", "sinusoidal")
NOPE_TASKS = ("copy", "reverse_string", "addition", "parity_check")
register_preset(part_of(
    PRESETS["full"], "nope", "Kazemnejad et al. reproduction at the laptop budget: 4 tasks x their 5 encodings x 3 "
    "seeds: part of `full`", NOPE_TASKS, NOPE_PAPER_ENCODINGS))
register_preset(part_of_horizon("horizon-nope", "the Kazemnejad et al. reproduction: 4 tasks x their 5 encodings x 3 "
                                "seeds", NOPE_TASKS, NOPE_PAPER_ENCODINGS))
# The published protocol (GPU-sized; `run --plan` gives the cost). Differences we keep: our transformer is
# decoder-only (theirs, for the Chomsky suite, an encoder reading outputs from extra input slots), the learning rate
# decays on a cosine (theirs is constant), no dropout, one learning rate (Deletang et al. take the max over three),
# and data is drawn fresh each step (Cho et al. use a fixed set of 1M examples).
register_preset(Preset(
    name="nope-paper",
    description="Kazemnejad et al. 2023 protocol: ~110M decoder, 40k steps of 64, lengths L -> 2L, 3 seeds (GPU)",
    tasks=NOPE_TASKS,
    encodings=NOPE_PAPER_ENCODINGS,
    seeds=(0, 1, 2),
    model=ModelSize(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
    settings=dict(train_length=20, validation_length=25, test_length=40, eval_stride=1, eval_samples=512,
                  steps=40_000, batch_size=64, lr=3e-5, weight_decay=0.0, warmup_steps=500, grad_clip=1.0),
    task_settings={"addition": dict(train_length=8, validation_length=10, test_length=16)},))


def _exact_match_per_run(records: list[RunRecord], test_band_only: bool = False,
                         judged_only: bool = True) -> pd.DataFrame:
    """Per run (of a judged cell only, unless not ``judged_only``): exact
    match averaged over every evaluated length (seen and unseen: Kazemnejad et
    al.'s score), or over the test band only (length generalization alone, beside it)."""
    per_length = length_frame(records)
    if test_band_only:
        per_length = per_length[per_length.split == "ood"]
    per_run = per_length.groupby(["task", "method", "seed"])["exact_match"].mean().reset_index()
    if not judged_only:
        return per_run
    keep = judged_runs(records)
    return per_run[[(t, m) in keep for t, m in zip(per_run.task, per_run.method)]]


def _on_common_tasks(scores: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """``scores`` of ``methods`` on the tasks where every one of them has a
    score (a judged cell): the one task set a rank statistic compares them on."""
    mine = scores[scores.method.isin(methods)]
    counts = mine.groupby("task").method.nunique()
    return mine[mine.task.isin(counts[counts == len(methods)].index)]


def _score_mean_std(cell: pd.Series) -> str:
    return pct(cell["mean"]) + ("" if pd.isna(cell["std"]) else f" ± {pct(cell['std'])}")


def reciprocal_ranks(scores: pd.DataFrame) -> pd.Series:
    """Mean over tasks of 1 / rank of each method by score within the task
    (1 = best; ties share the better rank)."""
    ranks = scores.groupby("task")["mean"].rank(ascending=False, method="min")
    return (1 / ranks).groupby(scores["method"]).mean()


@family_report
def nope_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    per_run = _exact_match_per_run(records)
    scores = per_run.groupby(["task", "method"])["exact_match"].agg(["mean", "std", "count"]).reset_index()
    test_scores = (_exact_match_per_run(records, test_band_only=True).groupby(["task", "method"])["exact_match"]
                   .agg(["mean", "std", "count"]).reset_index())
    order = sorted(NOPE_MRR, key=lambda e: -NOPE_MRR[e])
    fit_somewhere = [transformer_method(e) for e in order if transformer_method(e) in set(scores.method)]
    common = _on_common_tasks(scores, fit_somewhere)
    mrr, test_mrr = reciprocal_ranks(common), reciprocal_ranks(_on_common_tasks(test_scores, fit_somewhere))
    unfiltered = (_exact_match_per_run(records, judged_only=False).groupby(["task", "method"])["exact_match"]
                  .agg(["mean"]).reset_index())
    all_mrr = reciprocal_ranks(_on_common_tasks(unfiltered, [transformer_method(e) for e in order
                                                            if transformer_method(e) in set(unfiltered.method)]))
    lines = ["# NoPE and the decoder-only encodings (Kazemnejad et al. 2023)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             "Score: exact match averaged over every evaluated length (seen and unseen, their metric), "
             "mean over seeds; mean reciprocal rank of the encodings over one task set for all of them: the "
             "tasks where every one fits (an MRR over each encoding's own fit tasks would rank by which tasks "
             "it fit). Beside it, the same over "
             "the test band alone: their score counts the training lengths, which every judged cell fits, so it "
             "mixes fit with length generalization. "
             f"{FIT_RULE} Source: {KAZEMNEJAD}.", ""]
    ranked = [e for e in order if transformer_method(e) in mrr]
    ours_order = sorted(ranked, key=lambda e: -mrr[transformer_method(e)])
    test_order = sorted(ranked, key=lambda e: -test_mrr[transformer_method(e)])
    all_order = sorted((e for e in order if transformer_method(e) in all_mrr),
                       key=lambda e: -all_mrr[transformer_method(e)])
    tasks = common.task.nunique()
    rows = [[f"`{e}`", f"{NOPE_MRR[e]:.2f}",
             *((f"{mrr[transformer_method(e)]:.2f}", f"{test_mrr[transformer_method(e)]:.2f}") if e in ranked
               else ("", "")),
             f"{all_mrr[transformer_method(e)]:.2f}" if transformer_method(e) in all_mrr else "not run"]
            for e in order]
    missing = [e for e in order if e not in ranked]
    if missing:  # an order over fewer encodings is no test of the published one
        verdict = (f" Ours: {' > '.join(ours_order) or 'none ran and fit'} ({', '.join(missing)}: not run or "
                   "never fit, so the published order is not tested here).")
    elif tasks < MIN_TASKS:  # nor is an order over too few tasks
        verdict = (f" Too few tasks where all of them fit to test the published order ({tasks}"
                   + (f": {', '.join(sorted(common.task.unique()))}" if tasks else "") + "); no verdict.")
    else:
        verdict = f" Ours: {' > '.join(ours_order)}" + (" (the same)." if ours_order == order else ".")
    if ranked and tasks:
        verdict += f" On the test band alone: {' > '.join(test_order)}."
    lines += ["## Mean reciprocal rank", "",
              *markdown_table(["encoding", "published MRR",
                               f"our MRR ({tasks} task{'' if tasks == 1 else 's'} where all of them fit)",
                               "the same, test band only", "our MRR, every task and cell (no fit filter)"], rows), "",
              f"Published order: {' > '.join(order)}." + verdict
              + (f" Sensitivity, every cell of every task counted whether it fit or not: {' > '.join(all_order)}."
                 if all_order else ""), ""]
    by_unit = per_run.pivot_table(index=["task", "seed"], columns="method", values="exact_match")
    rows = []
    for better, worse in zip(order, order[1:]):
        a, b = transformer_method(better), transformer_method(worse)
        if a not in by_unit or b not in by_unit:
            rows.append([f"`{better}` > `{worse}`", "0", "", "", "not run or never fit"])
            continue
        rows.append([f"`{better}` > `{worse}`", *family.row(*paired_seeds(by_unit[a], by_unit[b]), (better, worse),
                                                             better=("holds", "reversed"))])
    lines += ["## The published order, pair by pair", "",
              "Each adjacent pair of the published order: the first minus the second in score (points) over the "
              "tasks where both fit, and the probability that a seed of the first beats a seed of the second; the "
              f"pair holds when the first is better. {FAMILY_RULE}", "",
              *markdown_table(["published", *comparison_headers("first", "second")], rows), ""]
    chance = {r.task: test_band_chance(r) for r in records if r.status == "ok"}
    rows = []
    for task in dict.fromkeys(scores.task):
        for e in order:
            cell = scores[(scores.task == task) & (scores.method == transformer_method(e))]
            if cell.empty:
                continue
            test = test_scores[(test_scores.task == task) & (test_scores.method == transformer_method(e))].iloc[0]
            theirs = NOPE_EXACT_MATCH.get(task, {}).get(e)
            rows.append([task, f"`{e}`", "not sourced" if theirs is None else pct(theirs),
                         _score_mean_std(cell.iloc[0]), _score_mean_std(test), pct(chance[task])])
    lines += ["## Per task", "", "Chance: the expected score of the best predictor that ignores its input, under the "
              "task's distribution, over the test band; a test-band score at or under it carries nothing past the "
              "training lengths.", "",
              *markdown_table(["task", "encoding", "published (3-seed mean)", "ours (mean ± std)",
                               "ours, test band only", CHANCE_COLUMN], rows), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="nope",
    rank=30,
    about="do decoder-only transformers generalize better without position encoding (Kazemnejad et al. 2023)",
    presets=("nope", "horizon-nope", "nope-paper"),
    records="leaderboard/reference/full/records",
    sources=(KAZEMNEJAD,),
    protocol=PROTOCOL,
    report=nope_report,
))
