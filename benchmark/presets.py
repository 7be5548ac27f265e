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
* ``full``: the complete reference: the suite's 19 tasks x its 21 static
  encodings (``SUITE_TASKS``, ``STATIC_ENCODINGS``: every built-in when it was built), the recurrent families and the state-space baseline (widths matched to the
  transformer's parameter count) x 3 seeds, each run trained until it fits (at most 1500 steps), one
  model and schedule for all.
* ``suite``: ``full``'s 8 most-studied encodings (the five core ones, xpos,
  cope, abacus) on every task; its cells are ``full``'s cells.
* ``standard``: every task and every built-in encoding, 3 seeds, train
  lengths 1..20 and test to 60; sized for a GPU (hours), days on a laptop.

The studies' presets (``horizon`` and its pilot and views, the founding
papers' reproductions, the 2025-26 zoo) live with their studies
(``lengthbench list studies``), installed as the ``lengthbench.presets``
entry point; ``PRESETS`` loads that group on the first lookup of a name not
here.
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.config import Preset
from lengthbench.core.entry_points import discover_presets
from lengthbench.core.registry import Registry
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import ModelSize
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
# Named here, not read from the registries: a task or encoding added since (`stick-breaking-remainder`) joins no
# shipped grid, and no study's report, until its cells run and it is added here, deliberately (`standard`
# takes every registered one). A test holds each to its registry's kind (static, state-tracking).
ZOO_ENCODINGS = ("forget", "stick-breaking", "path", "ssmax", "ssmax-rope", "rnope")
DATA_DEPENDENT_KINDS = ("data-dependent", "attention normalization", "hybrid")
STATIC_ENCODINGS = ("nope", "learned", "sinusoidal", "rope", "alibi", "t5", "kerple-log", "kerple-power", "fire",
                    "xpos", "cope", "randomized-learned", "randomized-sinusoidal", "randomized-rope",
                    "randomized-alibi", "randomized-t5", "randomized-kerple-log", "randomized-kerple-power",
                    "randomized-fire", "coupled", "abacus")
STATE_TASKS = ("word_problem_s5", "word_problem_s3", "flip_flop")
SUITE_TASKS = ("even_pairs", "parity_check", "cycle_navigation", "modular_arithmetic", "stack_manipulation",
               "reverse_string", "modular_arithmetic_brackets", "solve_equation", "duplicate_string",
               "missing_duplicate_string", "odds_first", "binary_addition", "binary_multiplication", "compute_sqrt",
               "bucket_sort", "addition", "addition-index-hints", "multiplication", "copy")

# The studies register the rest: installed entry points, loaded on the first lookup of a name not here.
PRESETS: Registry[Preset] = Registry("preset", discover=discover_presets)


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
    description="the complete reference: the suite's 19 tasks x 21 static encodings, the recurrent families and the "
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


def part_of(base: Preset, name: str, description: str, tasks, encodings, families=("transformer",)) -> Preset:
    """A preset whose every cell is a cell of ``base`` (the same config, so the same record): a view."""
    return replace(base, name=name, description=description, tasks=tuple(tasks), encodings=tuple(encodings),
                   families=tuple(families))


SUITE_ENCODINGS = (*CORE_ENCODINGS, "xpos", "cope", "abacus")
register_preset(part_of(
    PRESETS["full"], "suite", "every task x 8 encodings (the 5 core ones, xpos, cope, abacus) x 3 seeds: part of "
    "`full` (hours on 2 CPU cores: --plan)", SUITE_TASKS, SUITE_ENCODINGS))
# The task sets studies share: the Chomsky hierarchy's levels, and the tasks whose output is their input, or the
# input rearranged by position (copying from the context: Jelassi et al.'s question).
CHOMSKY_TASKS = SUITE_TASKS[:15]  # the levels R, DCF and CS: the paper's 15 tasks
COPY_TASKS = ("copy", "duplicate_string", "reverse_string")


def get_preset(name: str) -> Preset:
    return PRESETS[name]
