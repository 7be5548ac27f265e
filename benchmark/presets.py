"""The named presets (plain data; ``lengthbench list presets`` prints them).

Every preset splits lengths into three disjoint bands: training (1..L_train),
validation (L_train+1..validation_length: where any choice is made) and the
reported test band (the rest, up to L_test). No setting here was chosen on a
test length.

* ``smoke``: CI-sized, the whole grid in well under a minute on 2 cores;
  checks the machinery, its numbers mean nothing.
* ``quick``: the README's main job: four tasks the founding papers study
  (copy, reverse, parity, addition) x the five core encodings, one seed, one
  model and schedule for every task (the project's laptop defaults, as in
  ``full``; nothing tuned per task or method, nothing read on a test length).
* ``arithmetic``: addition only, 2000 steps of 128 with a one-layer, 4-head
  model (Cho et al.'s shape at half their width); it chooses its learning
  rate per method on the validation band (``select``: lr 5e-4, 1e-3 or 2e-3).
* ``full``: the complete reference: every task x every built-in encoding,
  the recurrent families and the state-space baseline (widths matched to the
  transformer's parameter count) x 3 seeds, each run trained until it fits (at most 1500 steps), one
  model and schedule for all.
* ``suite``: ``full``'s 8 most-studied encodings (the five core ones, xpos,
  cope, abacus) on every task; its cells are ``full``'s cells.
* ``horizon-pilot`` and ``horizon``: protocol v2 (train 1..16, test to 64): the pilot, whose
  unreported seed chooses the budget, and the reference, every method trained 4000 steps on every
  task, 3 seeds, with its cuts (``Cut``: cells left out, each with its reason).
* ``horizon-formats`` and ``horizon-looped``: the data-format cells and the
  looped transformer's under the same protocol; their plain and fixed-depth
  cells are ``horizon``'s own runs.
* ``standard``: every task and every built-in encoding, 3 seeds, train
  lengths 1..20 and test to 60; sized for a GPU (hours), days on a laptop.

Reproductions of the founding papers (``leaderboard/reference/<paper>/``):
a CPU variant whose cells are ``full``'s (its records are shipped), and a
``-paper`` variant that follows the published protocol, for a GPU.

* ``chomsky``: the 15 Chomsky-hierarchy tasks (Deletang et al. 2023) x the
  five encodings they and Ruoss et al. 2023 compare and the randomized
  variants of four, and the recurrent baselines, 3 seeds.
* ``nope``: Kazemnejad et al. 2023's encodings (NoPE, T5 bias, ALiBi, RoPE,
  sinusoidal APE) on copy, reverse, addition and parity.
* ``coupling``: Cho et al. 2024's tasks (addition, N x 2 multiplication) x
  every encoding.
* ``chomsky-paper``, ``nope-paper``, ``coupling-paper``: the published protocols.
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.config import Cut, Preset
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import ModelSize
from lengthbench.core.registry import Registry
from lengthbench.tasks import get_task
from lengthbench.tasks.formats import task_labels

CORE_TASKS = ("copy", "reverse_string", "parity_check", "addition")
CORE_ENCODINGS = ("nope", "rope", "alibi", "randomized-rope", "coupled")

# `arithmetic`'s model: Cho et al.'s shape (one layer, 4 heads, no weight decay) at half their width
# (d=256 for a 2-core CPU). Its width was first read, in early calibration runs of `coupled` that kept
# no records, at 16 digits, which is now a test length: a reader should take the width as given, not as
# chosen; the learning rate is chosen per method on the validation band (`select` below, its 15 runs in
# leaderboard/reference/arithmetic/records/selection/). No other preset uses it.
ADDITION_SETTINGS = dict(model=dict(d_model=256, n_layers=1, n_heads=4, d_ff=512), weight_decay=0.0)
# Abacus offsets: McLeish et al. draw k < 100 for tests to 100 digits; at this budget a table that
# wide trains each row too rarely to fit even the training lengths (suite, first run: 5% exact match
# in distribution), so the table covers the largest training id plus an offset below 16.
# The `arithmetic` preset's learning rate: chosen per (task, method) on the validation band from
# ARITHMETIC_SELECT (the preset's own `--select`); ARITHMETIC_LR is the one a run without it uses.
ARITHMETIC_LR = 1e-3
ARITHMETIC_SELECT = "lr=5e-4,1e-3,2e-3"
QUICK_ENCODING_PARAMS = {"randomized-rope": {"max_len": 64}, "coupled": {"max_positions": 24},
                         "abacus": {"max_positions": 40, "max_offset": 16}}


def randomized_range(max_len: int) -> dict:
    """``max_len`` for every randomized encoding. Our rule, after Ruoss et al. (positions from
    [0, 2048) for test lengths up to 500): about 4x the preset's longest test length, and at
    least its longest sequence. A far wider range spreads neighbours so far apart that distance
    biases saturate (``python -m lengthbench.benchmark.tools.saturation`` measures it); the same range serves
    every base."""
    return {name: {"max_len": max_len} for name, entry in ENCODINGS.items() if entry.base is not None}


# The suite and the zoo the shipped references (`full`, `horizon` and their views) were built from: the
# 2025-26 mechanisms and state-tracking tasks join them in `horizon-zoo` (below), so those grids stay as built.
ZOO_ENCODINGS = ("forget", "stick-breaking", "path", "ssmax", "ssmax-rope", "rnope")
STATIC_ENCODINGS = tuple(name for name in ENCODINGS.names() if name not in ZOO_ENCODINGS)
STATE_TASKS = tuple(name for name in task_labels() if get_task(name).level == "state")
SUITE_TASKS = tuple(name for name in task_labels() if name not in STATE_TASKS)

PRESETS: Registry[Preset] = Registry("preset")


def register_preset(preset: Preset) -> Preset:
    """Add a preset (``lengthbench run --preset NAME`` then runs it)."""
    return PRESETS.add(preset.name, preset)


register_preset(Preset(
    name="smoke",
    description="CI-sized check of the whole pipeline (numbers are meaningless)",
    tasks=CORE_TASKS,
    encodings=CORE_ENCODINGS,
    seeds=(0,),
    model=ModelSize(d_model=32, n_layers=1, n_heads=2, d_ff=64),
    settings=dict(train_length=5, validation_length=7, test_length=10, eval_stride=1, eval_samples=32, steps=30,
                  batch_size=32, lr=1e-3,
                  weight_decay=0.01, warmup_steps=5, grad_clip=1.0),
    encoding_params=randomized_range(64) | {"coupled": {"max_positions": 32}},
))
register_preset(Preset(
    name="quick",
    description="the README main job: 4 tasks x 5 encodings x 1 seed, one model and schedule for all",
    tasks=CORE_TASKS,
    encodings=CORE_ENCODINGS,
    seeds=(0,),
    model=ModelSize(d_model=64, n_layers=2, n_heads=4, d_ff=256),
    settings=dict(train_length=8, validation_length=10, test_length=16, eval_stride=1, eval_samples=256,
                  steps=2000, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_steps=100, grad_clip=1.0),
    encoding_params=QUICK_ENCODING_PARAMS,
))
register_preset(Preset(
    name="arithmetic",
    description="addition x 5 encodings at a larger budget than quick, lr chosen per method on the validation band "
                "from 5e-4, 1e-3, 2e-3 (~55 min on 2 cores)",
    tasks=("addition",),
    encodings=CORE_ENCODINGS,
    seeds=(0,),
    model=ModelSize(d_model=64, n_layers=2, n_heads=4, d_ff=256),
    settings=dict(train_length=8, validation_length=10, test_length=16, eval_stride=1, eval_samples=256,
                  warmup_steps=100, grad_clip=1.0),
    task_settings={"addition": ADDITION_SETTINGS | dict(steps=2000, batch_size=128, lr=ARITHMETIC_LR)},
    encoding_params=QUICK_ENCODING_PARAMS,
    select=ARITHMETIC_SELECT,
))
register_preset(Preset(
    name="standard",
    description="every task x every built-in encoding x 3 seeds (GPU-sized: hours on one GPU)",
    tasks=tuple(task_labels()),
    encodings=tuple(ENCODINGS.names()),
    seeds=(0, 1, 2),
    model=ModelSize(d_model=128, n_layers=4, n_heads=8, d_ff=512),
    settings=dict(train_length=20, validation_length=25, test_length=60, eval_stride=1, eval_samples=512,
                  steps=10000, batch_size=128,
                  lr=5e-4, weight_decay=0.01, warmup_steps=500, grad_clip=1.0),
    encoding_params=randomized_range(256) | {"coupled": {"max_positions": 192}},
))
# Deletang et al.'s recurrent baselines.
RECURRENT_FAMILIES = ("rnn", "lstm", "stack-rnn", "tape-rnn")
# Widths that give each family without encodings about the transformer's parameter count at the
# laptop budget (~101k at d_model 64, 2 layers): rnn, stack-rnn and tape-rnn 104-109k at 224, lstm
# ~103k at 112 (the paper: 256 for all, which gives the LSTM 5x the transformer's parameters), the
# state-space baseline ~106k at 88 with the transformer's 2 layers.
MATCHED_SIZES = {"rnn": 224, "lstm": 112, "stack-rnn": 224, "tape-rnn": 224, "ssm": 88}
# Ruoss et al. sample from [0, 2048) for test lengths up to 500 (about 4x); at test length 16
# the same ratio gives 64, which also covers the longest sequence (3N+3 = 51 tokens).
LAPTOP_RANDOMIZED_MAX_LEN = 64

register_preset(Preset(
    name="full",
    description="the complete reference: every task x every built-in encoding, the recurrent families and the "
                "state-space baseline x 3 seeds, trained until fit (at most 1500 steps) at a laptop budget (--plan on 2 idle "
                "CPU cores: at most 6.5 h)",
    tasks=SUITE_TASKS,
    encodings=STATIC_ENCODINGS,
    seeds=(0, 1, 2),
    model=ModelSize(d_model=64, n_layers=2, n_heads=4, d_ff=256),
    # One model and schedule for every task and method: nothing here was tuned per task or method. The
    # learning rate and budget are the project's laptop defaults (quick's), not chosen on any length.
    # Train 1..8, choose on 9..10, report 11..16; a run stops once it fit (held-out ID exact match
    # >= 0.9) at two checks in a row, 250 steps apart.
    settings=dict(train_length=8, validation_length=10, test_length=16, eval_stride=1, eval_samples=128,
                  steps=1500, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_steps=100, grad_clip=1.0,
                  fit_threshold=0.9, fit_check_every=250, fit_patience=2),
    encoding_params=randomized_range(LAPTOP_RANDOMIZED_MAX_LEN) | QUICK_ENCODING_PARAMS,
    families=("transformer", *RECURRENT_FAMILIES, "ssm"),
    family_settings={f: {"model": {"d_model": size}} for f, size in MATCHED_SIZES.items()},
))


def _part_of_full(name: str, description: str, tasks, encodings, families=("transformer",)) -> Preset:
    """A preset whose every cell is a cell of ``full`` (the same config, so the same record)."""
    return replace(PRESETS["full"], name=name, description=description, tasks=tuple(tasks),
                   encodings=tuple(encodings), families=tuple(families))


register_preset(_part_of_full(
    "suite", "every task x 8 encodings (the 5 core ones, xpos, cope, abacus) x 3 seeds: part of `full` "
    "(hours on 2 CPU cores: --plan)", SUITE_TASKS, (*CORE_ENCODINGS, "xpos", "cope", "abacus")))
CHOMSKY_TASKS = tuple(name for name in task_labels() if get_task(name).level in ("R", "DCF", "CS"))
# Deletang et al.'s five encodings ("relative" there is Transformer-XL's; we have none of that
# family, so learned absolute positions stand in, as in Ruoss et al.'s list) and Ruoss et al.'s
# randomized versions of those that have positions to randomize.
CHOMSKY_ENCODINGS = ("nope", "sinusoidal", "rope", "alibi", "learned",
                     "randomized-sinusoidal", "randomized-rope", "randomized-alibi", "randomized-learned")
NOPE_PAPER_ENCODINGS = ("nope", "t5", "alibi", "rope", "sinusoidal")
NOPE_TASKS = ("copy", "reverse_string", "addition", "parity_check")
register_preset(_part_of_full(
    "chomsky", "Deletang/Ruoss reproduction at the laptop budget: 15 Chomsky tasks x (9 encodings + rnn, lstm, "
    "stack-rnn, tape-rnn) x 3 seeds: part of `full`", CHOMSKY_TASKS, CHOMSKY_ENCODINGS,
    ("transformer", *RECURRENT_FAMILIES)))
register_preset(_part_of_full(
    "nope", "Kazemnejad et al. reproduction at the laptop budget: 4 tasks x their 5 encodings x 3 seeds: part "
    "of `full`", NOPE_TASKS, NOPE_PAPER_ENCODINGS))
# The tasks whose output is their input, or the input rearranged by position (copying from the context), for
# Jelassi et al.'s question: are transformers better than state-space models at copying?
COPY_TASKS = ("copy", "duplicate_string", "reverse_string")
register_preset(_part_of_full(
    "copying", "Jelassi et al. 2024's question at the laptop budget: the copying tasks x every encoding, the recurrent "
    "families and the state-space baseline x 3 seeds: part of `full`", COPY_TASKS, STATIC_ENCODINGS,
    ("transformer", *RECURRENT_FAMILIES, "ssm")))
register_preset(_part_of_full(
    "coupling", "Cho et al. reproduction at the laptop budget: addition and Nx2 multiplication x every encoding x "
    "3 seeds: part of `full`", ("addition", "multiplication"), STATIC_ENCODINGS))


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
        methods=tuple(f"transformer/{name}" for name in OWN_RANDOMIZED)),
    Cut("the recurrent families' published claims (Deletang et al.) are about the Chomsky tasks",
        methods=RECURRENT_FAMILIES, tasks=NON_CHOMSKY_TASKS),
    Cut("the state-space claim (Jelassi et al.) is about copying", methods=("ssm",),
        tasks=tuple(name for name in SUITE_TASKS if name not in COPY_TASKS)),
    Cut("no pilot method fit it (nope, rope, alibi: 0 exact match at lengths 13-16 after 4000 steps), a run "
        "costs about 10 minutes, and index hints are a data format of addition, not a task of their own",
        methods=(), tasks=("addition-index-hints",), only=True),
    Cut("no pilot method fit it (nope, rope, alibi: 0 exact match after 4000 steps) and a run costs about 20 "
        "minutes: only the methods of Cho et al.'s claim (coupled positions against NoPE and rotary) and abacus",
        methods=tuple(f"transformer/{name}" for name in ("coupled", "abacus", "nope", "rope")),
        tasks=("multiplication",), only=True),
    Cut("no pilot method fit it (at most 0.31 exact match after 4000 steps) and a transformer run costs about 16 "
        "minutes: only the recurrent families of Deletang et al.'s claim and two transformer baselines",
        methods=(*RECURRENT_FAMILIES, "transformer/nope", "transformer/rope"), tasks=("binary_multiplication",),
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
              methods=tuple(f"transformer/{name}" for name in ("nope", "coupled", "abacus")), tasks=FORMATTED_TASKS),),
))
# Multiplication is left out of the format cells: no pilot method fit it in the plain format and a run
# costs about 20 minutes, so its four formats alone would be about a day here.

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

# The views of `horizon`, as `full` has them: each cell is a cell of `horizon` (its cuts included), so
# `--preset horizon-chomsky` reads the Chomsky reproduction's records out of the reference's folder.
SUITE_ENCODINGS = (*CORE_ENCODINGS, "xpos", "cope", "abacus")


def _part_of_horizon(name: str, about: str, tasks, encodings, families=("transformer",)) -> Preset:
    """A preset whose every cell is a cell of ``horizon`` (the same config, so the same record)."""
    return replace(PRESETS["horizon"], name=name, description=f"{about}: part of `horizon` (protocol v2)",
                   tasks=tuple(tasks), encodings=tuple(encodings), families=tuple(families))


for _view in (
        _part_of_horizon("horizon-suite", "every task x 8 encodings (the 5 core ones, xpos, cope, abacus) x 3 seeds",
                         SUITE_TASKS, SUITE_ENCODINGS),
        _part_of_horizon("horizon-chomsky", "the Deletang/Ruoss reproduction: 15 Chomsky tasks x (9 encodings + "
                         "rnn, lstm, stack-rnn, tape-rnn) x 3 seeds", CHOMSKY_TASKS, CHOMSKY_ENCODINGS,
                         ("transformer", *RECURRENT_FAMILIES)),
        _part_of_horizon("horizon-nope", "the Kazemnejad et al. reproduction: 4 tasks x their 5 encodings x 3 seeds",
                         NOPE_TASKS, NOPE_PAPER_ENCODINGS),
        _part_of_horizon("horizon-coupling", "the Cho et al. reproduction: addition and Nx2 multiplication x every "
                         "encoding x 3 seeds", ("addition", "multiplication"), STATIC_ENCODINGS),
        _part_of_horizon("horizon-copying", "Jelassi et al.'s question: the copying tasks x every encoding, the "
                         "recurrent families and ssm x 3 seeds", COPY_TASKS, STATIC_ENCODINGS,
                         ("transformer", *RECURRENT_FAMILIES, "ssm"))):
    register_preset(_view)

# The published protocols (GPU-sized; `run --plan` gives the cost). Differences we keep: our
# transformer is decoder-only (theirs, for the Chomsky suite, an encoder reading outputs from
# extra input slots), the learning rate decays on a cosine (theirs is constant), no dropout (so
# runs can be trained as stacked groups), one learning rate (Deletang et al. take the max over
# three), and data is drawn fresh each step (Cho et al. use a fixed set of 1M examples).
register_preset(Preset(
    name="chomsky-paper",
    description="Deletang et al. 2023 / Ruoss et al. 2023 protocol: train 1..40, test to 500, 10 seeds (GPU)",
    tasks=CHOMSKY_TASKS,
    encodings=CHOMSKY_ENCODINGS,
    seeds=tuple(range(10)),
    model=ModelSize(d_model=64, n_layers=5, n_heads=8, d_ff=256),
    settings=dict(train_length=40, validation_length=50, test_length=500, eval_stride=1, eval_samples=512,
                  steps=1_000_000, batch_size=128, lr=3e-4, weight_decay=0.0, warmup_steps=0, grad_clip=1.0),
    encoding_params=randomized_range(2048),
    families=("transformer", *RECURRENT_FAMILIES),
    family_settings={f: {"model": {"d_model": 256}} for f in RECURRENT_FAMILIES},  # their hidden size
))
register_preset(Preset(
    name="nope-paper",
    description="Kazemnejad et al. 2023 protocol: ~110M decoder, 40k steps of 64, lengths L -> 2L, 3 seeds (GPU)",
    tasks=NOPE_TASKS,
    encodings=NOPE_PAPER_ENCODINGS,
    seeds=(0, 1, 2),
    model=ModelSize(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
    settings=dict(train_length=20, validation_length=25, test_length=40, eval_stride=1, eval_samples=512,
                  steps=40_000, batch_size=64, lr=3e-5, weight_decay=0.0, warmup_steps=500, grad_clip=1.0),
    task_settings={"addition": dict(train_length=8, validation_length=10, test_length=16)},
))
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
    encoding_params={"coupled": {"max_positions": 203}},
))
PAPER_PRESETS = ("chomsky-paper", "nope-paper", "coupling-paper")


def get_preset(name: str) -> Preset:
    return PRESETS[name]


# The 2025-26 zoo under `horizon`'s protocol (train 1..16, test 21..64, 4000 steps of 64 for every method, 3
# seeds; the same settings, so its cells already run are horizon's own records and the rest join that
# folder): the data-dependent position mechanisms on horizon's tasks, the delta-rule families on the Chomsky,
# copying and state-tracking tasks, and horizon's methods on the state-tracking tasks. The state-tracking
# tasks take horizon's one budget, the pilot's ceiling, as every task does there (no budget is chosen per
# task). Sized with `--plan` to about a third of horizon's summed run time; each cut says why.
DELTA_FAMILIES = ("deltanet", "deltanet-negative", "gated-deltanet", "gated-deltanet-negative")
# Widths matching the transformer's parameters within 10% on every task of the grid (`python -m
# lengthbench.benchmark.tools.matching --preset horizon-zoo`); S5's 120-symbol vocabulary weighs more in a recurrent
# cell's input and output layers, so the recurrent families are narrower there.
DELTA_SIZES = {"deltanet": 64, "deltanet-negative": 64, "gated-deltanet": 56, "gated-deltanet-negative": 56}
GATED_TASKS = ("parity_check", "cycle_navigation", "modular_arithmetic", *COPY_TASKS)
# No transformer encoding of horizon fit these at 13..16 (0 of 21, 3 seeds each): a data-dependent mechanism's
# length generalization cannot be read there, and report 3 compares mechanisms only where both fit.
UNFIT_TASKS = ("modular_arithmetic", "modular_arithmetic_brackets", "solve_equation", "compute_sqrt",
               "binary_multiplication")
ZOO_CUTS = (
    *(cut for cut in HORIZON_CUTS if cut.tasks != NON_CHOMSKY_TASKS and cut.methods != ("ssm",)),
    Cut("the recurrent families' published claims are about the Chomsky tasks (Deletang et al.) and state tracking "
        "(Merrill et al., Liu et al.)", methods=RECURRENT_FAMILIES, tasks=("addition", "multiplication", "copy")),
    Cut("the state-space claims are about copying (Jelassi et al.) and state tracking (Merrill et al.)",
        methods=("ssm",), tasks=tuple(t for t in SUITE_TASKS if t not in COPY_TASKS)),
    Cut("the delta rule's claims are about state tracking, the Chomsky tasks and copying (Grazzi et al., Yang et "
        "al.), not decimal arithmetic", methods=DELTA_FAMILIES, tasks=("addition", "multiplication")),
    Cut("no transformer encoding of horizon fit these tasks at lengths 13..16 (0 of 21, 3 seeds each): there is "
        "no length generalization of a mechanism to read", methods=tuple(f"transformer/{e}" for e in ZOO_ENCODINGS),
        tasks=UNFIT_TASKS),
    Cut("compute (a third of horizon's run time): the gated variants (Yang et al. 2025) are trained where the "
        "claims are, the state-tracking tasks, the regular tasks of Grazzi et al.'s claim (parity and modular "
        "counting) and the copying tasks; the ungated delta rule covers the other Chomsky tasks",
        methods=("gated-deltanet", "gated-deltanet-negative"),
        tasks=tuple(t for t in CHOMSKY_TASKS if t not in GATED_TASKS)),
)
register_preset(replace(
    PRESETS["horizon"],
    name="horizon-zoo",
    description="the 2025-26 zoo at protocol v2: data-dependent positions (forget, stick-breaking, path, ssmax, "
                "rnope) on horizon's tasks, the delta-rule families on the Chomsky, copying and state-tracking tasks, "
                "horizon's methods on the state-tracking tasks x 3 seeds (horizon's cells: its own records)",
    tasks=(*SUITE_TASKS, *STATE_TASKS),
    encodings=(*STATIC_ENCODINGS, *ZOO_ENCODINGS),
    families=(*HORIZON_FAMILIES, *DELTA_FAMILIES),
    family_settings={f: {"model": {"d_model": size}} for f, size in (HORIZON_SIZES | DELTA_SIZES).items()},
    cell_settings=HORIZON_WIDTHS | {"word_problem_s5": {f: {"model": {"d_model": w}} for f, w in
                                                        {"rnn": 184, "lstm": 104, "stack-rnn": 184,
                                                         "tape-rnn": 184}.items()}},
    cuts=ZOO_CUTS,
))


def _part_of_zoo(name: str, about: str, tasks, encodings, families) -> Preset:
    """A preset whose every cell is a cell of ``horizon-zoo`` (the same config, so the same record)."""
    return replace(PRESETS["horizon-zoo"], name=name, description=f"{about}: part of `horizon-zoo` (protocol v2)",
                   tasks=tuple(tasks), encodings=tuple(encodings), families=tuple(families))


# The views the zoo's three reports read (`lengthbench reproduce negative|state|mechanisms`).
for _view in (
        _part_of_zoo("horizon-negative", "Grazzi et al.'s claim: the delta rule with beta in (0, 1) and (0, 2) on "
                     "parity, modular counting and arithmetic, and the state-tracking tasks x 3 seeds",
                     ("parity_check", "cycle_navigation", "modular_arithmetic", *STATE_TASKS), (), DELTA_FAMILIES),
        _part_of_zoo("horizon-state", "Merrill et al.'s and Liu et al.'s claims: the state-tracking tasks x every "
                     "encoding and family x 3 seeds", STATE_TASKS, (*STATIC_ENCODINGS, *ZOO_ENCODINGS),
                     (*HORIZON_FAMILIES, *DELTA_FAMILIES)),
        _part_of_zoo("horizon-mechanisms", "the data-dependent mechanisms against the static encodings on horizon's "
                     "tasks x 3 seeds", SUITE_TASKS, (*STATIC_ENCODINGS, *ZOO_ENCODINGS), ("transformer",))):
    register_preset(_view)
