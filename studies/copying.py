"""``copying``: Jelassi et al. 2024 (ICML): are transformers better than
state-space models at copying? The tasks that copy their input x every
encoding, the recurrent families and the state-space baseline.

The report chooses the transformer's encoding per task on the validation band
(any, and task-agnostic) and tests it, and every other method, against `ssm`
with the task as the unit.
"""

from __future__ import annotations

import pandas as pd

from lengthbench.benchmark.presets import (
    COPY_TASKS,
    PRESETS,
    RECURRENT_FAMILIES,
    STATIC_ENCODINGS,
    part_of,
    register_preset,
)
from lengthbench.benchmark.records import RunRecord
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import (
    judged,
    leaderboard_frame,
    method_order,
)
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    CHANCE_COLUMN,
    NO_PAIR,
    chance_of,
    chosen_on_validation,
    chosen_scores,
    horizon_text,
    paired_seeds,
    pct,
    setup_text,
    test_scores,
)
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.horizon import part_of_horizon
from lengthbench.tasks.cells import TRANSFORMER, method_parts

# The published claims, each with its source (the papers' numbers, never ours).
JELASSI = "Jelassi et al. 2024 (ICML), Repeat After Me: Transformers are Better than State Space Models at Copying"
# Jelassi et al., abstract: "transformers outperform GSSMs in terms of efficiency and generalization on
# synthetic tasks that require copying the context" (GSSMs: state-space models with a fixed-size state).
COPYING_CLAIM = "transformers generalize better than state-space models on tasks that copy the context"
# The paper's horizon and budget (REFERENCES: its protocol section), set beside ours in the report.
PROTOCOL = ("Jelassi et al.: their training lengths and budget could not be sourced here")


register_preset(part_of(
    PRESETS["full"], "copying", "Jelassi et al. 2024's question at the laptop budget: the copying tasks x every "
    "encoding, the recurrent families and the state-space baseline x 3 seeds: part of `full`", COPY_TASKS,
    STATIC_ENCODINGS, ("transformer", *RECURRENT_FAMILIES, "ssm")))
register_preset(part_of_horizon("horizon-copying", "Jelassi et al.'s question: the copying tasks x every encoding, the "
                                "recurrent families and ssm x 3 seeds", COPY_TASKS, STATIC_ENCODINGS,
                                ("transformer", *RECURRENT_FAMILIES, "ssm")))


@family_report
def copying_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    records = [r for r in records if r.task in COPY_TASKS]
    if not records:
        raise InputError(f"no record of a copying task ({', '.join(COPY_TASKS)}); run `lengthbench run --preset "
                         "copying`")
    board = leaderboard_frame(records)
    chosen = chosen_on_validation(board)
    agnostic = chosen_on_validation(board, task_agnostic=True)
    scores = test_scores(records)
    lines = ["# Copying: transformers and state-space models (Jelassi et al. 2024)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             f"Tasks that copy their input: {', '.join(f'`{t}`' for t in COPY_TASKS)}. Score: exact match over the "
             f"test band, mean ± std over seeds. {FIT_RULE} Published: {COPYING_CLAIM}. Source: "
             f"{JELASSI}.", ""]
    families = [m for m in method_order(board.method.unique()) if method_parts(m)[0] != TRANSFORMER]

    def cell_text(cells: pd.DataFrame, method: str | None) -> str:
        if method is None or method not in cells.index:
            return ""
        c = cells.loc[method]
        std = "" if pd.isna(c.ood_exact_match_std) else f" ± {pct(c.ood_exact_match_std)}"
        return pct(c.ood_exact_match_mean) + std + ("" if judged(cells.loc[[method]]).iloc[0] else " (did not fit)")

    rows = []
    for task in [t for t in COPY_TASKS if t in set(board.task)]:
        cells = board[board.task == task].set_index("method")
        picks = [chosen.get(task), agnostic.get(task)]
        rows.append([task, *(x for p in picks for x in (f"`{p}`" if p else "none fit", cell_text(cells, p))),
                     *(cell_text(cells, m) for m in families), chance_of(board, task)])
    lines += ["## Per task", "",
              "The transformer's encoding is chosen per task on the validation band (the best mean "
              "validation exact match among the encodings that fit), never on the test band: among every "
              "encoding, and among the task-agnostic ones (leaving out those that read the task's coupled "
              "position ids, which a state-space or recurrent model is not given).", "",
              *markdown_table(["task", "transformer encoding (any)", "transformer (any)",
                               "transformer encoding (task-agnostic)", "transformer (task-agnostic)", *families,
                               CHANCE_COLUMN], rows), ""]
    ssm = "ssm"
    rows = []
    if ssm in scores:
        others = [("transformer, any encoding (chosen on validation)", "transformer", chosen_scores(scores, chosen)),
                  ("transformer, task-agnostic encoding (chosen on validation)", "transformer",
                   chosen_scores(scores, agnostic))]
        others += [(f"`{m}`", m, scores[m]) for m in method_order(scores.columns) if m != ssm]
        for name, short, other in others:
            a, b = paired_seeds(other, scores[ssm])
            row = family.row(a, b, (short, "ssm"), better=("better than ssm", "worse than ssm"))
            rows.append([name, *row[:3], NO_PAIR if row[0] == "0" else row[3]])
    lines += ["## Against the state-space baseline", "",
              "Each method minus `ssm` in test exact match (points) over the copying tasks where both fit, and the "
              "probability that a seed of the method beats a seed of `ssm`. The first two rows test the published "
              "claim, the second with the positions a state-space model could also be given; the others describe "
              f"each method, in the same family. {FAMILY_RULE}", "",
              *(markdown_table(["method", *comparison_headers("method", "ssm")], rows)
                if rows else ["`ssm` fit no copying task (or did not run): no comparison."]), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="copying",
    rank=50,
    about="are transformers better than state-space models at copying their context (Jelassi et al. 2024)",
    presets=("copying", "horizon-copying"),
    records="leaderboard/reference/full/records",
    sources=(JELASSI,),
    protocol=PROTOCOL,
    report=copying_report,
))
