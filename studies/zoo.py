"""``zoo``: the 2025-26 zoo under ``horizon``'s protocol: the data-dependent
position mechanisms on horizon's tasks, the delta-rule families on the
Chomsky, copying and state-tracking tasks, and horizon's methods on the
state-tracking tasks; its cells already run are horizon's own records. Its
views are the studies ``negative``, ``state`` and ``mechanisms``.
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.config import Cut, Preset
from lengthbench.benchmark.presets import (
    CHOMSKY_TASKS,
    COPY_TASKS,
    PRESETS,
    RECURRENT_FAMILIES,
    STATE_TASKS,
    STATIC_ENCODINGS,
    SUITE_TASKS,
    ZOO_ENCODINGS,
    part_of,
    register_preset,
)
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.horizon import HORIZON_CUTS, HORIZON_FAMILIES, HORIZON_SIZES, HORIZON_WIDTHS, NON_CHOMSKY_TASKS
from lengthbench.tasks.cells import transformer_method

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
        "no length generalization of a mechanism to read", methods=tuple(transformer_method(e) for e in ZOO_ENCODINGS),
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


def part_of_zoo(name: str, about: str, tasks, encodings, families) -> Preset:
    """A view of ``horizon-zoo``: every cell a cell of it (the same config, so the same record)."""
    return part_of(PRESETS["horizon-zoo"], name, f"{about}: part of `horizon-zoo` (protocol v2)", tasks, encodings,
                   families)


register_study(Study(
    name="zoo",
    rank=80,
    about="the 2025-26 mechanisms and recurrences at protocol v2 (the grid its three views' reports read; no report "
          "of its own)",
    presets=("horizon-zoo",),
    records="leaderboard/reference/horizon/records",
))
