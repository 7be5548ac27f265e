"""``looped``: Fan et al. 2025 (ICLR): looped transformers, one block applied
once per input token read, against the fixed-depth transformer with the same
encoding, under ``horizon``'s protocol (its fixed-depth cells are horizon's).
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.config import Cut
from lengthbench.benchmark.presets import (
    PRESETS,
    register_preset,
)
from lengthbench.benchmark.records import RunRecord
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    CHANCE_COLUMN,
    by_task,
    cell_texts,
    chance_of,
    horizon_text,
    judged_seeds,
    setup_text,
)
from lengthbench.models.families import TRANSFORMER
from lengthbench.models.looped import LOOPED
from lengthbench.studies.base import Study, register_study
from lengthbench.tasks.cells import method_name, transformer_method
from lengthbench.tasks.formats import task_order_key

# The published claims, each with its source (the papers' numbers, never ours).
FAN = "Fan et al. 2025 (ICLR), Looped Transformers for Length Generalization"
LOOPED_CLAIM = ('looped transformers with an adaptive number of steps "significantly improve length generalization" '
                "over fixed-depth ones on tasks with a known iterative solution (parity, copy and addition among them)")

# Fan et al.'s looped transformer under `horizon`'s protocol, beside the fixed-depth transformer with
# the same encodings (those cells are horizon's own records): one block (`n_layers` 1) applied once
# per input token read, plus one, at the width that matches the transformer's parameters on every
# task (`python -m lengthbench.benchmark.tools.matching`). Tasks: the three of Fan et al. that lengthbench
# has (parity, copy, addition) and the Chomsky tasks closest to them, each an iterated one-symbol
# step: `cycle_navigation` (a running sum mod 5, parity's update), `binary_addition` (addition in
# binary), `duplicate_string` (copying twice). A looped run costs 9x (parity) to 19x (addition) a
# fixed-depth one (`--plan`), so it is trained on the two cheapest, which give the claim two tasks.
LOOPED_WIDTH = 104
register_preset(replace(
    PRESETS["horizon"],
    name="horizon-looped",
    description="the looped transformer at protocol v2: looped and fixed-depth x nope, rope on parity, copy, "
                "addition and three Chomsky tasks x 3 seeds; looped trained on parity and cycle_navigation "
                "(fixed-depth cells: horizon's)",
    tasks=("parity_check", "cycle_navigation", "copy", "addition", "binary_addition", "duplicate_string"),
    encodings=("nope", "rope"),
    families=("transformer", "looped"),
    family_settings={"looped": {"model": {"d_model": LOOPED_WIDTH, "n_layers": 1}}},
    cell_settings={},
    cuts=(Cut("compute: a looped run costs 27 (copy) to 86 minutes (addition) on one worker here, 13 on parity "
              "and cycle_navigation; these four tasks would take 13 hours, above the format and looped cells' "
              "fifth of the reference", methods=("looped",),
              tasks=("copy", "addition", "binary_addition", "duplicate_string")),),
))


@family_report
def looped_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    """Fan et al.'s looped transformer against the fixed-depth transformer
    with the same encoding: the task is the unit (each task's seed means)."""
    looped = {r.encoding for r in records if r.config.family == LOOPED}
    if not looped:
        raise InputError("these records hold no run of the looped transformer; run `lengthbench run --preset "
                         "horizon-looped` (into the records of `horizon`, whose fixed-depth cells it shares)")
    records = [r for r in records if r.config.family in (LOOPED, TRANSFORMER) and r.encoding in looped]
    tasks = {r.task for r in records if r.config.family == LOOPED}
    records = [r for r in records if r.task in tasks]
    board = leaderboard_frame(records)
    seeds = judged_seeds(records)
    lines = ["# Looped transformers (Fan et al. 2025)", "", setup_text(records), "", horizon_text(records), "",
             "Score: test-band exact match, mean ± std over seeds; generalization length as in the leaderboard "
             f"(the longest test length up to which every length scores ≥ 90%). {FIT_RULE} Source: {FAN}.",
             ""]
    rows = []
    for task in sorted(tasks, key=task_order_key):
        for encoding in sorted(looped):
            rows.append([task, f"`{encoding}`", *cell_texts(board, task, transformer_method(encoding)),
                         *cell_texts(board, task, method_name(LOOPED, encoding)), chance_of(board, task)])
    lines += ["## Per task", "", *markdown_table(
        ["task", "encoding", "fixed depth: seeds fit", "fixed depth (%)", "fixed depth: generalization length",
         "looped: seeds fit", "looped (%)", "looped: generalization length", CHANCE_COLUMN], rows), ""]
    rows, pooled_a, pooled_b = [], {}, {}
    for encoding in sorted(looped):
        a, b = by_task(seeds, method_name(LOOPED, encoding)), by_task(seeds, transformer_method(encoding))
        rows.append([f"`{encoding}`", *family.row(a, b, ("looped", "fixed depth"))])
        for task in (t for t in a if t in b):
            pooled_a.setdefault(task, []).extend(a[task])
            pooled_b.setdefault(task, []).extend(b[task])
    if len(looped) > 1:
        rows.append(["every encoding (seeds together per task)", *family.row(pooled_a, pooled_b,
                                                                              ("looped", "fixed depth"))])
    lines += ["## Looped against fixed depth", "",
              "Per encoding, the looped transformer minus the fixed-depth one in test exact match (points) over the "
              "tasks where both fit, and the probability that a looped seed beats a fixed-depth seed. Published: "
              f"{LOOPED_CLAIM}. {FAMILY_RULE}", "",
              *markdown_table(["encoding", *comparison_headers("looped", "fixed depth")], rows), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="looped",
    rank=70,
    about="do looped transformers generalize further than fixed-depth ones (Fan et al. 2025)",
    presets=("horizon-looped",),
    records="leaderboard/reference/horizon/records",
    sources=(FAN,),
    report=looped_report,
))
