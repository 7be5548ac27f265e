"""``state``: Merrill et al. 2024 and Liu et al. 2023: who tracks the state
of the word problem of S5 (non-solvable), of S3 (solvable) and of the
flip-flop language past the training lengths: every encoding and family.
"""

from __future__ import annotations

from lengthbench.benchmark.presets import (
    STATE_TASKS,
    STATIC_ENCODINGS,
    ZOO_ENCODINGS,
    register_preset,
)
from lengthbench.benchmark.records import RunRecord
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import judged, leaderboard_frame, method_order
from lengthbench.leaderboard.inference import ComparisonFamily, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    CHANCE_COLUMN,
    cells_table,
    chance_of,
    horizon_text,
    judged_runs,
    pct,
    seed_scores,
    setup_text,
)
from lengthbench.models.families import TRANSFORMER
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.horizon import HORIZON_FAMILIES
from lengthbench.studies.zoo import DELTA_FAMILIES, part_of_zoo
from lengthbench.tasks import get_task
from lengthbench.tasks.cells import method_parts
from lengthbench.tasks.formats import task_order_key

# The published claims, each with its source (the papers' numbers, never ours).
MERRILL = 'Merrill et al. 2024 (ICML), "The Illusion of State in State-Space Models"'
LIU_AUTOMATA = 'Liu et al. 2023 (ICLR), "Transformers Learn Shortcuts to Automata"'
LIU_FLIPFLOP = 'Liu et al. 2023 (NeurIPS), "Exposing Attention Glitches with Flip-Flop Language Modeling"'
STATE_CLAIM = ("the word problem of S5 (non-solvable: NC1-complete) cannot be solved at arbitrary length by "
               "transformers or diagonal state-space models of fixed depth, which nonlinear RNNs solve; solvable "
               "groups have constant-depth shortcuts (their figures only: no number in the text)")
FLIPFLOP_CLAIM = ("transformers make rare, sporadic errors on flip-flop strings, more as the strings grow sparse and "
                  "long; a 1-layer LSTM makes none")
PROTOCOL = ("Merrill et al. and Liu et al. (automata): fixed lengths, the depth a model needs measured, not length "
            "generalization, the state after every prefix supervised at that prefix's own token (here the final state "
            "is the one answer: tasks/state_tracking.py says why; the tagged data format trains every prefix, and this "
            "reference has no tagged cell); Liu et al. (flip-flop): strings of 512 tokens, the "
            "sparseness of reads varied")


register_preset(part_of_zoo("horizon-state", "Merrill et al.'s and Liu et al.'s claims: the state-tracking tasks x "
                            "every encoding and family x 3 seeds", STATE_TASKS, (*STATIC_ENCODINGS, *ZOO_ENCODINGS),
                            (*HORIZON_FAMILIES, *DELTA_FAMILIES)))


STATE_GROUPS = (("transformer (every encoding)", lambda m: method_parts(m)[0] == TRANSFORMER),
                ("diagonal state space (`ssm`)", lambda m: m == "ssm"),
                ("nonlinear RNNs (`rnn`, `lstm`)", lambda m: m in ("rnn", "lstm")),
                ("RNNs with a stack or tape", lambda m: m in ("stack-rnn", "tape-rnn")),
                ("delta rule, beta in (0, 1)", lambda m: m in ("deltanet", "gated-deltanet")),
                ("delta rule, beta in (0, 2)", lambda m: m in ("deltanet-negative", "gated-deltanet-negative")))


@family_report
def state_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    """Merrill et al. / Liu et al.: on the word problem of S5 (and of S3,
    the solvable contrast) and the flip-flop language, which methods track
    the state past the training lengths: per method, then per group of
    families, and the nonlinear RNNs against each group with one task the
    stratum (its seeds are the replicates)."""
    tasks = sorted({r.task for r in records if r.status != "not_applicable"  # a format that cannot write it
                    and get_task(r.config.cell.task).level == "state"}, key=task_order_key)
    if not tasks:
        raise InputError("these records hold no state-tracking task (word_problem_s5, word_problem_s3, flip_flop); run "
                         "`lengthbench run --preset horizon-state` (into the records of `horizon`)")
    records = [r for r in records if r.task in tasks]
    board = leaderboard_frame(records)
    methods = method_order(board.method.unique())
    train = max(r.config.train_length for r in records)
    lines = ["# State tracking (Merrill et al. 2024; Liu et al. 2023)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             "Score: test-band exact match, mean ± std over seeds; generalization length as in the leaderboard. "
             f"{FIT_RULE} Sources: {MERRILL}; {LIU_AUTOMATA}; {LIU_FLIPFLOP}. "
             f"Published: {STATE_CLAIM}; {FLIPFLOP_CLAIM}.", "",
             "## Per task", "", *cells_table(board, tasks, methods), ""]
    ran = board[board.status == "ok"]
    rows = []
    for name, member in STATE_GROUPS:
        for task in tasks:
            cells = ran[(ran.task == task) & ran.method.map(member)]
            if cells.empty:
                continue
            fit = cells[judged(cells)]
            scores = fit.ood_exact_match_mean
            reach = fit.generalization_length_exact_match.dropna()
            rows.append([name, task, f"{len(fit)}/{len(cells)}",
                         f"{pct(scores.min())}–{pct(scores.max())}" if len(fit) else "",
                         str(int((reach >= 2 * train).sum())), chance_of(board, task)])
    unlearned = [task for task in tasks if not judged(ran[ran.task == task]).any()]
    unjudged = (f" No method that ran fit {' or '.join(unlearned)} at its training lengths at this budget: no claim "
                f"about {'it' if len(unlearned) == 1 else 'them'} is judged here. Where no method learns a task "
                f"within its training lengths, its numbers cannot say which methods fail past them."
                if unlearned else "")
    lines += ["## Who tracks the state past the training lengths", "",
              f"Per group of methods and task: the cells that fit their training lengths, the lowest and highest "
              f"test exact match among them, and how many of them score ≥ 90% at every test length up to 2× the "
              f"longest training length ({2 * train}).{unjudged}", "",
              *markdown_table(["methods", "task", "cells fit", "fit cells' test exact match (%)",
                               f"cells that reach {2 * train}", CHANCE_COLUMN], rows), ""]
    seeds = seed_scores(records, "ood_exact_match")
    fit = judged_runs(records)
    rows = []
    rnns = [m for m in methods if m in ("rnn", "lstm")]
    for task in tasks:
        mine = {task: [x for m in rnns if (task, m) in fit for x in seeds[(task, m)]]}
        for name, member in STATE_GROUPS[:2] + STATE_GROUPS[3:]:
            theirs = {task: [x for m in methods if member(m) and (task, m) in fit for x in seeds[(task, m)]]}
            ran_here = any(member(m) for m in ran[ran.task == task].method)
            if mine[task] and theirs[task]:
                rows.append([task, name, *family.row(mine, theirs, ("nonlinear RNN", "them"))[2:]])
            elif mine[task] and ran_here:  # the claim's contrast already holds at the training lengths
                rows.append([task, name, "", "none of their cells fit the training lengths: no comparison past them"])
    lines += ["## Nonlinear RNNs against each group", "",
              "On each task, the seeds of the nonlinear RNNs that fit (`rnn`, `lstm` together) against those of a "
              "group's fit cells: the probability that an RNN seed beats a group seed, with its stratified bootstrap "
              "interval (95%) and permutation p (raw → Holm over the report's comparisons); a group that ran the task "
              "but fit it nowhere is named so. One task is one stratum: these are descriptions of that task, not "
              "findings across tasks, and no verdict rests on one task."
              + ("" if rows else " No nonlinear RNN cell fit a state-tracking task here."),
              "", *(markdown_table(["task", "against", "P(nonlinear RNN > them) [95% interval]; p → Holm", "verdict"], rows)
                    if rows else []), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="state",
    rank=100,
    about="who tracks the state of S5, S3 and flip-flop strings past the training lengths (Merrill et al. 2024, Liu "
          "et al. 2023)",
    presets=("horizon-state",),
    records="leaderboard/reference/horizon/records",
    sources=(MERRILL, LIU_AUTOMATA, LIU_FLIPFLOP),
    protocol=PROTOCOL,
    report=state_report,
))
