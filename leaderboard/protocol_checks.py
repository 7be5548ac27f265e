"""What a reviewer checks first in a reference: the protocol its records kept.

Each check is read from the records and their board, never from a preset,
so a README cannot claim a protocol its runs did not keep. The bars are
protocol v2's (docs/presets.md, "Protocol v2"): one budget per task for every method
and no stop at fit; training to at least 16 and tests to at least 4x at 6 or
more lengths; no length scored "unsupported"; at least 85% of the
non-arithmetic cells fit on every seed; baseline families within 10% of the
transformer's parameters, and every transformer encoding within 10% of NoPE's
(counted as a run can use them); at least 3 seeds per cell. A reference made under
the first protocol shows where it falls short of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lengthbench.benchmark.applicable import reachable_parameters
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.tools.matching import MATCH_TOLERANCE, REFERENCE_ENCODING
from lengthbench.models.families import TRANSFORMER
from lengthbench.tasks.cells import transformer_method

MIN_TRAIN_LENGTH = 16
MIN_HORIZON = 4.0  # the longest test length over the longest training length
MIN_TEST_LENGTHS = 6
MIN_FIT_SHARE = 0.85  # of the non-arithmetic cells that ran, fit on every seed
MIN_SEEDS = 3
SHOWN = 4  # offending tasks or cells named in a check's line


@dataclass(frozen=True)
class Check:
    name: str
    bar: str
    measured: str
    holds: bool | None  # None: nothing in the records to check (no baseline family, say)


def protocol_checks(records: list[RunRecord], board: pd.DataFrame) -> list[Check]:
    """The checks on a reference's trained records and its board (``leaderboard_frame``)."""
    ran = [r for r in records if r.per_length]
    ok = board[board.status == "ok"]
    return [_one_budget(ran), _no_early_stop(ran), _horizon(ran), _no_unsupported(ran), _fit(ok),
            _matched(ok), _encodings_matched(ran), _seeds(ok)]


def _counted(n: int, noun: str) -> str:
    """``n noun`` with the noun's plural where n is not 1 ("1 cell", "3 cells")."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _span(values) -> str:
    """``low to high``, or the one value when they are equal."""
    low, high = min(values), max(values)
    return f"{low}" if low == high else f"{low} to {high}"


def _named(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _one_budget(ran: list[RunRecord]) -> Check:
    budgets: dict[str, set] = {}
    for r in ran:
        budgets.setdefault(r.task, set()).add((r.config.steps, r.config.batch_size))
    uneven = sorted(t for t, b in budgets.items() if len(b) > 1)
    every = sorted({f"{s} steps of {b}" for b_set in budgets.values() for s, b in b_set})
    tasks = _counted(len(budgets), "task")
    measured = (f"{len(uneven)} of {tasks} give methods different budgets ({_named(uneven)})" if uneven
                else f"one per task on {tasks} ({_named(every)})")
    return Check("one budget per task", "every method of a task trains the same steps of the same batch", measured,
                 bool(budgets) and not uneven)


def _no_early_stop(ran: list[RunRecord]) -> Check:
    stopped = [r for r in ran if (r.training or {}).get("stopped") == "fit"]
    steps = [(r.training or {}).get("steps_done") for r in stopped]
    measured = (f"{len(stopped)} of {_counted(len(ran), 'run')} stopped once they fit (after {_span(steps)} steps)"
                if stopped else f"none of {_counted(len(ran), 'run')} stopped before its budget")
    return Check("no stop at fit", "every run trains its whole budget", measured, bool(ran) and not stopped)


def _horizon(ran: list[RunRecord]) -> Check:
    shortest: dict[str, tuple[int, float, int]] = {}  # task: (train length, horizon, test lengths), its worst run
    for r in ran:
        tested = [row["length"] for row in r.length_rows() if row["split"] == "ood"]
        train = r.config.train_length
        horizon = (max(tested) / train) if tested else 0.0
        shortest[r.task] = min(shortest.get(r.task, (train, horizon, len(tested))), (train, horizon, len(tested)))
    short = sorted(t for t, (train, horizon, n) in shortest.items()
                   if train < MIN_TRAIN_LENGTH or horizon < MIN_HORIZON or n < MIN_TEST_LENGTHS)
    measured = f"{len(shortest) - len(short)} of {_counted(len(shortest), 'task')}"
    if short:
        measured += "; short: " + _named([f"{t} (train {shortest[t][0]}, {shortest[t][1]:.1f}x, {shortest[t][2]} "
                                          "test lengths)" for t in short])
    return Check("horizon", f"train to >= {MIN_TRAIN_LENGTH}, test to >= {MIN_HORIZON:g}x the training length at "
                 f">= {MIN_TEST_LENGTHS} lengths", measured, bool(shortest) and not short)


def _no_unsupported(ran: list[RunRecord]) -> Check:
    cells = sorted({f"{r.task} {r.method}" for r in ran
                    if any(row["status"] == "unsupported" for row in r.per_length)})
    measured = f"{_counted(len(cells), 'cell')} ({_named(cells)})" if cells else "none"
    return Check("no unsupported length", "no evaluated length scored 'unsupported' (a silent 0)", measured,
                 not cells)


def _fit(ok: pd.DataFrame) -> Check:
    cells = ok[ok.level != "arithmetic"]
    bar = f">= {MIN_FIT_SHARE:.0%} of the non-arithmetic cells fit their training lengths on every seed"
    if cells.empty:
        return Check("fit", bar, "no non-arithmetic cell", None)
    every_seed = int((cells.n_fit == cells.n_seeds).sum())
    share = every_seed / len(cells)
    return Check("fit", bar, f"{every_seed} of {len(cells)} ({share:.0%})", share >= MIN_FIT_SHARE)


def _matched(ok: pd.DataFrame) -> Check:
    """Every baseline family's cell against the transformer with ``REFERENCE_ENCODING`` on its task."""
    target = ok[ok.method == transformer_method(REFERENCE_ENCODING)].set_index("task").n_parameters
    baselines = ok[(ok.model != TRANSFORMER) & ok.task.isin(target.index)]
    gaps = sorted(((row.n_parameters / target[row.task] - 1, f"{row.task} {row.method}")
                   for row in baselines.itertuples()), key=lambda g: -abs(g[0]))
    bar = f"within {MATCH_TOLERANCE:.0%} of `{transformer_method(REFERENCE_ENCODING)}`'s parameters on every task"
    if not gaps:
        return Check("families matched", bar, f"no baseline family beside `{transformer_method(REFERENCE_ENCODING)}`", None)
    off = [f"{name} {gap:+.0%}" for gap, name in gaps if abs(gap) > MATCH_TOLERANCE]
    measured = (f"{len(off)} of {_counted(len(gaps), 'cell')} off ({_named(off)})" if off else
                f"{_counted(len(gaps), 'cell')}, the largest gap {gaps[0][0]:+.1%} ({gaps[0][1]})")
    return Check("families matched", bar, measured, not off)


def _encodings_matched(ran: list[RunRecord]) -> Check:
    """Every transformer encoding's parameters against ``REFERENCE_ENCODING``'s on its task, counted as a run
    can use them (``benchmark.applicable.reachable_parameters``: a learned table to the longest evaluated sequence)."""
    reference = transformer_method(REFERENCE_ENCODING)
    usable: dict[tuple[str, str], int] = {}
    for r in ran:
        if r.config.family == TRANSFORMER and r.n_parameters and (r.task, r.method) not in usable:
            usable[(r.task, r.method)] = reachable_parameters(r.config, r.n_parameters)
    gaps = sorted(((n / usable[(task, reference)] - 1, task, method) for (task, method), n in usable.items()
                   if method != reference and (task, reference) in usable), key=lambda g: -abs(g[0]))
    bar = (f"transformer encodings within {MATCH_TOLERANCE:.0%} of `{reference}`'s parameters on every task "
           "(a learned table counted to the longest evaluated sequence)")
    if not gaps:
        return Check("encodings matched", bar, f"no transformer encoding beside `{reference}`", None)
    off = [(task, method, gap) for gap, task, method in gaps if abs(gap) > MATCH_TOLERANCE]
    methods = sorted({method for _, method, _ in off})
    measured = (f"{len(off)} of {_counted(len(gaps), 'cell')} off, {_counted(len(methods), 'encoding')} "
                f"({', '.join(f'`{m}`' for m in methods)}; {_named([f'{t} {m} {g:+.0%}' for t, m, g in off])})"
                if off else f"{_counted(len(gaps), 'cell')}, the largest gap {gaps[0][0]:+.1%} ({gaps[0][1]} "
                f"{gaps[0][2]})")
    return Check("encodings matched", bar, measured, not off)


def _seeds(ok: pd.DataFrame) -> Check:
    few = ok[ok.n_seeds < MIN_SEEDS]
    low, high = (int(ok.n_seeds.min()), int(ok.n_seeds.max())) if len(ok) else (0, 0)
    measured = f"{_span([low, high])} per cell" + (
        f"; {_counted(len(few), 'cell')} under {MIN_SEEDS}" if len(few) else "")
    return Check("seeds", f">= {MIN_SEEDS} seeds per cell", measured, bool(len(ok)) and few.empty)


def checks_table(checks: list[Check]) -> list[list[str]]:
    """Rows for a markdown table: check, bar, what the records show, holds (yes, **no**, or n/a)."""
    return [[c.name, c.bar, c.measured, "n/a" if c.holds is None else "yes" if c.holds else "**no**"] for c in checks]
