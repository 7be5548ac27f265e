"""``coupling``: Cho et al. 2024 (NeurIPS), position coupling: digits of the
same significance share a position id, and addition trained to 30 digits
holds to 200. Their tasks (addition, N x 2 multiplication) x every encoding.

The report gives each seed's exact match per length and generalization
length (the figure their claim is about) and tests `coupled` against every
other method, paired by seed.
"""

from __future__ import annotations

import pandas as pd

from lengthbench.benchmark.config import Preset
from lengthbench.benchmark.presets import (
    PRESETS,
    STATIC_ENCODINGS,
    part_of,
    register_preset,
)
from lengthbench.benchmark.records import RunRecord, length_frame
from lengthbench.leaderboard.aggregate import (
    leaderboard_frame,
    method_order,
    runs_frame,
)
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.statistics import generalization_length
from lengthbench.leaderboard.tables import markdown_table
from lengthbench.leaderboard.verdicts import (
    NOT_FIT,
    horizon_text,
    judged_runs,
    pct,
    setup_text,
)
from lengthbench.models.families import ModelSize
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.horizon import part_of_horizon
from lengthbench.tasks.cells import transformer_method

# The published claims, each with its source (the papers' numbers, never ours).
CHO = "Cho et al. 2024 (NeurIPS), Position Coupling"
# Cho et al.: trained on 1..30-digit additions, > 95% exact match up to 200 digits (median of 8 runs);
# N x 2 multiplication (trained 1..40) is shown in figures only.
COUPLING_ADDITION = "> 95% exact match up to 200 digits (6.7x the training length), median of 8 runs"
COUPLING_MULTIPLICATION = "figures only (no number in the text)"
# The paper's horizon and budget (REFERENCES: its protocol section), set beside ours in the report.
PROTOCOL = ("Cho et al.: addition trained on 1..30 digits, tested to 200 (6.7x), a 1-layer d 512 decoder, 50k "
            "steps of 1000 (1M examples), lr 1e-4, medians of 8 runs; N x 2 multiplication trained on 1..40")


register_preset(part_of(
    PRESETS["full"], "coupling", "Cho et al. reproduction at the laptop budget: addition and Nx2 multiplication x "
    "every encoding x 3 seeds: part of `full`", ("addition", "multiplication"), STATIC_ENCODINGS))
register_preset(part_of_horizon("horizon-coupling", "the Cho et al. reproduction: addition and Nx2 multiplication x "
                                "every encoding x 3 seeds", ("addition", "multiplication"), STATIC_ENCODINGS))
# The published protocol (GPU-sized; `run --plan` gives the cost). Differences we keep: our transformer is
# decoder-only (theirs, for the Chomsky suite, an encoder reading outputs from extra input slots), the learning rate
# decays on a cosine (theirs is constant), no dropout, one learning rate (Deletang et al. take the max over three),
# and data is drawn fresh each step (Cho et al. use a fixed set of 1M examples).
register_preset(Preset(
    name="coupling-paper",
    description="Cho et al. 2024 protocol: 1-layer d512 decoder, addition 1..30 -> 200 digits, Nx2 1..40, 8 seeds (GPU)",
    tasks=("addition", "multiplication"),
    encodings=("coupled", "nope", "rope"),
    seeds=tuple(range(8)),
    model=ModelSize(d_model=512, n_layers=1, n_heads=4, d_ff=2048),
    settings=dict(train_length=30, validation_length=40, test_length=200, eval_stride=10, eval_samples=512,
                  steps=50_000, batch_size=1000, lr=1e-4, weight_decay=0.0, warmup_steps=500, grad_clip=1.0),
    task_settings={"multiplication": dict(train_length=40, validation_length=50)},
    encoding_params={"coupled": {"max_positions": 203}},))


@family_report
def coupling_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    """Cho et al.'s tables: each seed's exact match at the longest training
    length and at every test length (a horizon's 2× need not be one of them),
    and each seed's generalization length, the figure their claim is about."""
    per_length = length_frame(records)
    board = leaderboard_frame(records).set_index(["task", "method"])
    lines = ["# Position coupling (Cho et al. 2024)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             f"Exact match per length, every seed. Published: addition {COUPLING_ADDITION}; "
             f"N x 2 multiplication {COUPLING_MULTIPLICATION}. Source: {CHO}.", ""]
    for task in ("addition", "multiplication"):
        sub = per_length[per_length.task == task]
        if sub.empty:
            continue
        train = int(sub.train_length.iloc[0])
        lengths = [train, *sorted(sub[sub.split == "ood"].length.unique())]
        rows = []
        for method in method_order(sub.method.unique()):
            cell = sub[sub.method == method]
            row = [f"`{method}`"]
            for n in lengths:
                at = cell[cell.length == n].sort_values("seed")
                row.append(" / ".join(pct(x) for x in at.exact_match))
            reach = [generalization_length(s.length, s.exact_match) for _, s in cell.groupby("seed")]
            c = board.loc[(task, method)]
            failed = int(c.n_seeds) - len(reach)  # the board counts a failed seed as reaching nothing
            row.append(" / ".join(map(str, reach)) + (f" (+{failed} failed)" if failed else ""))
            share = c.frac_seeds_reach_2x_exact_match
            row.append("" if pd.isna(share) else f"{round(share * c.n_seeds)}/{int(c.n_seeds)}")
            rows.append(row)
        lines += [f"## {task} (trained on 1..{train} digits)", "",
                  *markdown_table(["method"] + [f"length {n} ({n / train:.2g}×)" for n in lengths]
                                  + ["generalization length", f"seeds that hold 2× ({2 * train})"], rows),
                  "", "Cells list each seed's exact match (%), seeds in order (a failed seed has none). "
                  "Generalization length: each seed's longest evaluated length up to which every evaluated length "
                  "scores ≥ 90%; a seed holds 2× when "
                  f"that length is at least {2 * train} (so every evaluated length through the first one at or "
                  f"past {2 * train} scores ≥ 90%).", "",
                  *_coupled_versus_others(records, task, family), ""]
    return "\n".join(lines) + "\n"


def _coupled_versus_others(records: list[RunRecord], task: str, family: ComparisonFamily) -> list[str]:
    """Cho et al.'s claim, tested: `coupled` against each other method on the
    test band's exact match, where both fit (one task: not testable, shown)."""
    runs = runs_frame(records)
    runs = runs[(runs.task == task) & (runs.status.isin(["ok", "diverged"]))]
    keep = judged_runs(records)
    runs = runs.sort_values("seed")  # each method's seeds in order
    score = runs.assign(ood=runs.ood_exact_match.where(~runs.failed, 0.0))
    seeds = {m: list(cell.ood) for m, cell in score.groupby("method")}
    coupled = transformer_method("coupled")
    if coupled not in seeds:
        return []
    rows = []
    for method in method_order(m for m in seeds if m != coupled):
        if (task, coupled) not in keep or (task, method) not in keep:
            rows.append([f"`{method}`", "", "", "", NOT_FIT])
            continue
        rows.append([f"`{method}`", *family.row({task: seeds[coupled]}, {task: seeds[method]}, ("coupled", method),
                                                better=("coupled better", "coupled worse"))])
    return ["`coupled` against each method in test-band exact match (points), cells where both fit. One task "
            f"never decides: the rows show the numbers. {FAMILY_RULE}", "",
            *markdown_table(["versus", *comparison_headers("coupled", "other")], rows)]


register_study(Study(
    name="coupling",
    rank=40,
    about="does coupling the positions of digits of one significance let addition generalize far (Cho et al. 2024)",
    presets=("coupling", "horizon-coupling", "coupling-paper"),
    records="leaderboard/reference/full/records",
    sources=(CHO,),
    protocol=PROTOCOL,
    report=coupling_report,
))
