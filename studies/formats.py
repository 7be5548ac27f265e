"""``formats``: how the data is written: Zhou et al. 2024's reversed answers
and index hints on addition, Anil et al. 2022's scratchpad on parity and
addition, each format against the same task in plain with the same method,
under ``horizon``'s protocol (its plain cells are horizon's own records).
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
from lengthbench.leaderboard.aggregate import leaderboard_frame, method_order
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    CHANCE_COLUMN,
    cell_texts,
    chance_of,
    fit_shift,
    horizon_text,
    judged_runs,
    seed_fits,
    seed_scores,
    setup_text,
)
from lengthbench.studies.base import Study, register_study
from lengthbench.tasks.cells import PLAIN, split_label, task_label, transformer_method
from lengthbench.tasks.formats import Reversed, task_order_key

# The published claims, each with its source (the papers' numbers, never ours).
ZHOU = "Zhou et al. 2024, Transformers Can Achieve Length Generalization But Not Robustly"
ANIL = "Anil et al. 2022 (NeurIPS), Exploring Length Generalization in Large Language Models"
HOU = "Hou et al. 2024, Universal Length Generalization with Turing Programs"# Zhou et al.: the combination, not each part alone; their best of 10 trials.
FORMATS_ADDITION_CLAIM = ("FIRE with randomized positions, reversed answers and index hints: addition trained to 40 "
                          "digits reaches > 98% exact match at 100 digits (2.5x), the best of 10 trials, strongly "
                          "seed-dependent")
# Anil et al.'s models are pretrained language models prompted in context; Hou et al. qualify the claim.
SCRATCHPAD_CLAIM = ('scratchpad prompting "results in a dramatic improvement in length generalization" (Anil et al.); '
                    'later work finds it "not always helpful" and that its format "highly impacts" the result '
                    '(Hou et al.)')

# The data-format and looped cells under `horizon`'s protocol, sized to about a fifth of the
# reference's compute (`--plan` on 2 idle cores: 8.2 h of the reference's 41.1 h on one worker). Both
# presets keep horizon's settings, so their plain and fixed-depth cells are horizon's own records and
# the rest join that folder by running their cells; what they leave out is a `Cut` with its reason.
FORMAT_ENCODINGS = ("nope", "rope", "fire", "randomized-rope", "coupled", "abacus")
FORMATTED_TASKS = ("addition+reversed", "addition-index-hints", "addition+scratchpad", "parity_check+scratchpad",
                   "copy+reversed")
register_preset(replace(
    PRESETS["horizon"],
    name="horizon-formats",
    description="the data-format cells at protocol v2: addition x {plain, reversed, index-hints, scratchpad}, "
                "parity x {plain, scratchpad}, copy x {plain, reversed} x rope, fire, randomized-rope x 3 seeds "
                "(plain cells: horizon's, with every encoding)",
    tasks=("addition", "addition+reversed", "addition-index-hints", "addition+scratchpad", "parity_check",
           "parity_check+scratchpad", "copy", "copy+reversed"),
    encodings=FORMAT_ENCODINGS,
    families=("transformer",),
    cuts=(Cut("compute (about a fifth of the reference for the format and looped cells together): the formats are "
              "run with the encodings of Zhou et al.'s claim (FIRE, randomized positions) and rotary as the common "
              "baseline; coupled and abacus already give each digit its significance, the structure that reversal "
              "and index hints supply; NoPE stands in the looped cells",
              methods=tuple(transformer_method(name) for name in ("nope", "coupled", "abacus")), tasks=FORMATTED_TASKS),),
))
# Multiplication is left out of the format cells: no pilot method fit it in the plain format and a run
# costs about 20 minutes, so its four formats alone would be about a day here.


# The published findings on data formats, each tested as (who, task, format) against the task in plain.
DECIMAL_LSD_FIRST = ("addition", "multiplication")  # their plain answer is least significant digit first (Cho et al.)


SIGN_TURNED = ("On `addition` and `multiplication`, `plain` already writes the answer least significant digit first, "
               "the order Zhou et al. call reversed; `reversed` here writes it most significant digit first, the "
               "order a person writes, so their finding predicts `plain` above `reversed`: read that row (\"sign "
               "turned\") with its sign turned.")


FORMAT_CLAIMS = (("Zhou et al.", "addition", "reversed"), ("Zhou et al.", "addition", "index-hints"),
                 ("Anil et al.", "parity_check", "scratchpad"), ("Anil et al.", "addition", "scratchpad"))


@family_report
def formats_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    """Zhou et al.'s addition formats and Anil et al.'s scratchpad, each
    format against the same task in plain with the same method: the unit is
    the method (its seed mean) within a task, and the task across tasks."""
    formatted = {r.cell.task for r in records if r.cell.format != PLAIN}
    if not formatted:
        raise InputError("these records hold no task written in a format other than plain; run `lengthbench run "
                         "--preset horizon-formats` (into the records of `horizon`, whose plain cells it shares)")
    records = [r for r in records if r.cell.task in formatted]
    board = leaderboard_frame(records)
    seeds, fits = seed_scores(records, "ood_exact_match"), seed_fits(records)
    fit = judged_runs(records)
    lines = ["# Data formats: reversed answers, index hints, scratchpads (Zhou et al. 2024; Anil et al. 2022)", "",
             setup_text(records), "", horizon_text(records), "",
             "Score: exact match of the final answer over the test band (hint and scratch symbols are given or "
             "generated, never scored), mean ± std over seeds; generalization length: the longest test length up "
             f"to which every length scores ≥ 90% (× the longest training length). {FIT_RULE} Sources: "
             f"{ZHOU}; {ANIL}; {HOU}.", ""]
    rows = []
    for task in sorted({split_label(t) for t in board.task}, key=lambda pair: task_order_key(task_label(*pair))):
        label = task_label(*task)
        for method in method_order(board[board.task == label].method.unique()):
            rows.append([task[0], task[1], f"`{method}`", *cell_texts(board, label, method), chance_of(board, label)])
    lines += ["## Per cell", "", *markdown_table(["task", "format", "method", "seeds fit", "test exact match (%)",
                                                   "generalization length", CHANCE_COLUMN], rows), ""]

    def by_method(label: str) -> dict[str, list[float]]:
        """method -> seed scores of ``label``'s judged cells (``effect`` pairs the methods judged in both)."""
        return {m: v for (t, m), v in seeds.items() if t == label and (t, m) in fit}

    rows, pooled = [], {}
    for who, task, fmt in FORMAT_CLAIMS:
        label = task_label(task, fmt)
        if label not in set(board.task):
            continue
        a, b = by_method(label), by_method(task)
        source = f"{who} (sign turned)" if fmt == Reversed.name and task in DECIMAL_LSD_FIRST else who
        rows.append([source, task, f"`{fmt}`", fit_shift(board, fits, task, label, family),
                     *family.row(a, b, (fmt, PLAIN), tasks=1)])  # the methods of one task: one task
        both = [m for m in a if m in b]
        if fmt == "scratchpad" and both:
            pooled[task] = ([x for m in both for x in a[m]], [x for m in both for x in b[m]])
    if len(pooled) > 1:
        a, b = ({task: pair[k] for task, pair in pooled.items()} for k in (0, 1))
        rows.append(["Anil et al.", "every task above, the task as the unit", "`scratchpad`", "",
                     *family.row(a, b, ("scratchpad", PLAIN))])
    lines += ["## The published findings, tested", "",
              "Each format against the same task in `plain`, method by method where both cells fit: the methods "
              "are the units (each method's seed mean) and strata, their seeds the replicates; one task never "
              "decides, so these rows show the numbers. The last row takes the task as the unit (per task, every "
              "fit method's seeds together). Seeds fit: over the methods that ran in both formats, how many seeds "
              "fit the training lengths in plain and in the format (a format can make a task learnable at all), "
              "with the permutation p of that shift (within each method, the seeds' fit exchanged between the two "
              "formats, every way; no interval), raw → Holm over the report's fit shifts. Published: "
              f"{FORMATS_ADDITION_CLAIM} (Zhou et al.; each format is tested alone here, not their "
              f"combination); {SCRATCHPAD_CLAIM}. {SIGN_TURNED} {FAMILY_RULE}", "",
              *markdown_table(["source", "task", "format", "seeds fit: plain → format; p → Holm",
                               *comparison_headers("format", "plain")], rows), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="formats",
    rank=60,
    about="do reversed answers, index hints or a scratchpad let a task generalize further than its plain format "
          "(Zhou et al. 2024, Anil et al. 2022)",
    presets=("horizon-formats",),
    records="leaderboard/reference/horizon/records",
    sources=(ZHOU, ANIL, HOU),
    report=formats_report,
))
