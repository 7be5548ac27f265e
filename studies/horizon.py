"""``horizon``: protocol v2's reference, ours (no paper's claim to test, so no
report: its board is the finding, ``leaderboard/reference/horizon/``).

Train 1..16, choose on 17..20, test at 8 lengths evenly spaced in log length
from 21 to 64 (4x); one budget for every method (the pilot's ceiling), fit
judged on 13..16, the families matched in parameters per task, 3 seeds; its
breadth cut to fit a day on 2 CPU cores, each cut with its reason. Its pilot
(``horizon-pilot``: an unreported seed) chose the budget. ``horizon-suite`` is
its view of the 8 most-studied encodings; the founding papers' views of it
(``horizon-chomsky``, ...) live with their studies.
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.config import Cut, Preset
from lengthbench.benchmark.presets import (
    CHOMSKY_TASKS,
    COPY_TASKS,
    PRESETS,
    RECURRENT_FAMILIES,
    STATIC_ENCODINGS,
    SUITE_ENCODINGS,
    SUITE_TASKS,
    part_of,
    randomized_range,
    register_preset,
)
from lengthbench.models.families import ModelSize
from lengthbench.studies.base import Study, register_study
from lengthbench.tasks.cells import transformer_method

# Protocol v2, `horizon`: a reference that measures length generalization at a horizon the papers
# test (train 1..16, choose on 17..20, test at 8 lengths evenly spaced in log length from 21 to 64:
# 4x), every method trained for the same fixed budget per task (no stop at fit), the fit judged on
# the top quarter of the trained lengths (13..16, each at >= 0.9 exact match), the baseline
# families matched in parameters task by task. The per-task budgets are chosen on the pilot
# (`horizon-pilot`: seeds that are never reported, by in-training fit checks on held-out examples
# of the trained lengths only; its evidence is in the reference's README).
HORIZON_MODEL = ModelSize(d_model=64, n_layers=2, n_heads=4, d_ff=256)
HORIZON_SETTINGS = dict(train_length=16, validation_length=20, test_length=64, test_points=8, eval_stride=1,
                        eval_samples=256, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_steps=100, grad_clip=1.0,
                        fit_threshold=0.9, fit_from=13)
# Randomized positions from [0, 512): 8x the longest test length, covering every task's longest
# evaluated sequence (addition with index hints at 64 digits: 393 tokens); abacus's table covers every
# evaluated id, its offsets let training reach the longest test number's digits (McLeish et al.'s rule:
# offsets up to the test length). Coupled's table is the smallest that holds every evaluated id (Cho et
# al.'s rule, max_pos >= the operand's digits + 2): 67 rows, multiplication's largest id at 64 digits
# being 66. Its training offsets are drawn so that every row is trained, and a test starts at id 0, so
# the rows a test reads first are those training reaches least; a larger table thins them further. The
# first setting, 256 rows, left coupled unable to fit addition at lengths 1..16 in the budget (the horizon
# reference's protocol text, "Coupled's table").
HORIZON_ENCODING_PARAMS = randomized_range(512) | {"coupled": {"max_positions": 67},
                                                   "abacus": {"max_positions": 128, "max_offset": 56}}
HORIZON_FAMILIES = ("transformer", *RECURRENT_FAMILIES, "ssm")
# The families' widths: one per family, within 10% of the transformer's parameters on every task but
# addition with index hints, whose 527-token vocabulary weighs differently per family; there the
# widths `python -m lengthbench.benchmark.tools.matching --preset horizon-pilot` finds (a test holds every
# (task, family) within 10%).
HORIZON_SIZES = {"rnn": 224, "lstm": 112, "stack-rnn": 216, "tape-rnn": 216, "ssm": 88}
HORIZON_WIDTHS = {"addition-index-hints": {f: {"model": {"d_model": w}} for f, w in
                                           {"rnn": 128, "lstm": 96, "stack-rnn": 128, "tape-rnn": 128, "ssm": 80}.items()}}
# The pilot: its budget ceiling, how often it checks the fit (logged, never stopping), its seeds
# (never part of a reported grid) and the methods it trains: the families' and three of the
# encodings' (position-free, rotary, a distance bias), since the budget is a task's, not a method's.
PILOT_MAX_STEPS = 4000
PILOT_SEEDS = (100,)
PILOT_ENCODINGS = ("nope", "rope", "alibi")


register_preset(Preset(
    name="horizon-pilot",
    description="protocol v2's pilot: every task x 3 encodings and the baseline families x 1 pilot seed (never "
                "reported), 4000 steps with the fit logged every 250: chooses horizon's budget per task",
    tasks=SUITE_TASKS,
    encodings=PILOT_ENCODINGS,
    seeds=PILOT_SEEDS,
    model=HORIZON_MODEL,
    settings=HORIZON_SETTINGS | dict(steps=PILOT_MAX_STEPS, fit_check_every=250, fit_patience=0),
    encoding_params=HORIZON_ENCODING_PARAMS,
    families=HORIZON_FAMILIES,
    family_settings={f: {"model": {"d_model": size}} for f, size in HORIZON_SIZES.items()},
    cell_settings=HORIZON_WIDTHS,
))

# `horizon` itself: the pilot's protocol, seeds 0-2, every method trained for the same budget on
# every task: the pilot's ceiling. The budget tool's per-task budgets (README of the reference) rest
# on the transformer's pilot runs only; one budget for all, at the ceiling, needs no family's
# plateau and gives no method fewer steps than the pilot showed a task may need (8 of 19 tasks first
# fit at 3000 steps or later, or never). Fit checks are logged (steps to fit, a diagnostic), never stop a run.
HORIZON_STEPS = PILOT_MAX_STEPS
HORIZON_FIT_CHECK_EVERY = 500
# The full grid (19 tasks x 26 methods x 3 seeds) is about 120 hours on one worker here; the
# reference keeps the protocol and cuts breadth, each cut with its reason (the reference's README
# lists them): the randomized variants no published claim is about, the families on the tasks no
# claim about them concerns, and the costliest tasks that no pilot method fit, down to the methods a
# claim names.
OWN_RANDOMIZED = ("randomized-t5", "randomized-kerple-log", "randomized-kerple-power", "randomized-fire")
NON_CHOMSKY_TASKS = tuple(name for name in SUITE_TASKS if name not in CHOMSKY_TASKS)
HORIZON_CUTS = (
    Cut("randomized variants that no published claim is about (Ruoss et al. randomize sinusoidal, learned, "
        "rotary, ALiBi and Transformer-XL's relative positions, not T5's buckets, KERPLE or FIRE)",
        methods=tuple(transformer_method(name) for name in OWN_RANDOMIZED)),
    Cut("the recurrent families' published claims (Deletang et al.) are about the Chomsky tasks",
        methods=RECURRENT_FAMILIES, tasks=NON_CHOMSKY_TASKS),
    Cut("the state-space claim (Jelassi et al.) is about copying", methods=("ssm",),
        tasks=tuple(name for name in SUITE_TASKS if name not in COPY_TASKS)),
    Cut("no pilot method fit it (nope, rope, alibi: 0 exact match at lengths 13-16 after 4000 steps), a run "
        "costs about 10 minutes, and index hints are a data format of addition, not a task of their own",
        methods=(), tasks=("addition-index-hints",), only=True),
    Cut("no pilot method fit it (nope, rope, alibi: 0 exact match after 4000 steps) and a run costs about 20 "
        "minutes: only the methods of Cho et al.'s claim (coupled positions against NoPE and rotary) and abacus",
        methods=tuple(transformer_method(name) for name in ("coupled", "abacus", "nope", "rope")),
        tasks=("multiplication",), only=True),
    Cut("no pilot method fit it (at most 0.31 exact match after 4000 steps) and a transformer run costs about 16 "
        "minutes: only the recurrent families of Deletang et al.'s claim and two transformer baselines",
        methods=(*RECURRENT_FAMILIES, transformer_method("nope"), transformer_method("rope")), tasks=("binary_multiplication",),
        only=True),
)

# The tasks whose fit is judged on inputs the run never trained on (`benchmark.unseen`): those whose
# training draws at least 5% of the examples the fit lengths are scored on (seed 0, 4000 steps:
# `python -m lengthbench.benchmark.unseen --preset horizon`; 22-100% at length 13). On the others
# training draws at most 2% of them (cycle_navigation 1%, stack_manipulation 2%, the rest 0%).
UNSEEN_FIT_TASKS = ("even_pairs", "parity_check", "reverse_string", "modular_arithmetic_brackets", "solve_equation",
                    "duplicate_string", "missing_duplicate_string", "odds_first", "binary_addition",
                    "binary_multiplication", "compute_sqrt")


register_preset(replace(
    PRESETS["horizon-pilot"],
    name="horizon",
    task_settings={task: {"fit_unseen": True} for task in UNSEEN_FIT_TASKS},
    description="protocol v2's reference: train 1..16, test 21..64 (4x), one budget (4000 steps) for every method, "
                "3 seeds, families matched in parameters per task; breadth cut to fit a day on 2 CPU cores "
                "(cuts listed)",
    encodings=STATIC_ENCODINGS,
    seeds=(0, 1, 2),
    settings=HORIZON_SETTINGS | dict(steps=HORIZON_STEPS, fit_check_every=HORIZON_FIT_CHECK_EVERY, fit_patience=0),
    cuts=HORIZON_CUTS,
))


def part_of_horizon(name: str, about: str, tasks, encodings, families=("transformer",)) -> Preset:
    """A view of ``horizon``: every cell a cell of it (its cuts included), so the view reads its records out
    of the reference's folder."""
    return part_of(PRESETS["horizon"], name, f"{about}: part of `horizon` (protocol v2)", tasks, encodings, families)


register_preset(part_of_horizon("horizon-suite", "every task x 8 encodings (the 5 core ones, xpos, cope, abacus) x 3 "
                                "seeds", SUITE_TASKS, SUITE_ENCODINGS))


register_study(Study(
    name="horizon",
    rank=10,
    about="protocol v2's reference: can each method, trained on 1..16 with one budget, reach 4x? (the board; no "
          "published claim, no report)",
    presets=("horizon", "horizon-pilot", "horizon-suite"),
    records="leaderboard/reference/horizon/records",
))
