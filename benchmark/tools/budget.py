"""A training budget per task, chosen on pilot runs (protocol v2).

Every method of a task trains for the same number of steps; that number is
chosen before any reported run, on pilot seeds that are never reported, from
training-side evidence only: each pilot run logs its fit check (exact match on
held-out examples of the trained lengths the fit is judged on) every
``fit_check_every`` steps without stopping, up to a ceiling. For each task:

* ``fit_at(s)``: how many of its pilot runs had fit at check step ``s`` (the
  ceiling's count is their final evaluation's fit);
* the **plateau**: the first checked step from which as many runs fit as at
  the ceiling (more steps fit no more of them);
* the **budget**: the plateau times ``MARGIN`` (the pilot is one seed, and a
  reported run's learning rate decays to 0 at its budget where the pilot's at
  that step is still high), rounded up to a check step, at most the ceiling.
  A task on which no pilot run fit has no plateau: its budget is the ceiling
  (no evidence that fewer steps would do), and the table says so; at this
  model size and ceiling its reported cells are expected not to fit.

``python -m lengthbench.benchmark.tools.budget --results DIR`` prints the per-task
table (markdown, the evidence a reference's README shows) and the budgets as a
Python dict for the preset.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.core.errors import InputError

MARGIN = 1.25


@dataclass(frozen=True)
class TaskBudget:
    task: str
    runs: int  # pilot runs that finished
    ceiling: int  # the pilot's steps
    fit_at_ceiling: int  # runs fit at their final evaluation
    plateau: int | None  # first checked step from which as many runs fit as at the ceiling (None: none fit)
    budget: int
    first_fit: dict  # method -> first checked step at which it fit (None: never)


def _fit_series(record: RunRecord) -> tuple[dict[int, bool], bool]:
    """A pilot run's fit at each checked step, and at its final evaluation."""
    threshold = record.config.fit_threshold
    checks = {int(step): score >= threshold for step, score in (record.training or {}).get("fit_checks") or []}
    summary = record.summary or {}
    final = summary.get("fit_exact_match", summary.get("id_exact_match"))
    return checks, final is not None and final >= threshold


def task_budget(task: str, records: list[RunRecord]) -> TaskBudget:
    """The budget of one task from its finished pilot runs (see the module's rule)."""
    ceiling = records[0].config.steps
    every = records[0].config.fit_check_every
    series = [_fit_series(r) for r in records]
    at_ceiling = sum(final for _, final in series)
    steps = list(range(every, ceiling, every))

    def fit_at(step: int) -> int:
        return sum(checks.get(step, False) for checks, _ in series)

    if at_ceiling:
        plateau = next((s for i, s in enumerate(steps) if all(fit_at(t) >= at_ceiling for t in steps[i:])), ceiling)
        budget = min(ceiling, every * math.ceil(plateau * MARGIN / every))
    else:
        plateau, budget = None, ceiling
    first_fit = {r.method: next((s for s in steps if checks.get(s)), ceiling if final else None)
                 for r, (checks, final) in zip(records, series)}
    return TaskBudget(task, len(records), ceiling, at_ceiling, plateau, budget, first_fit)


def pilot_budgets(records: list[RunRecord]) -> list[TaskBudget]:
    """Every task's budget from a pilot's records (finished runs with logged fit checks only)."""
    by_task = defaultdict(list)
    for record in records:
        if record.status == "ok" and not record.failed and record.config.fit_check_every:
            by_task[record.task].append(record)
    if not by_task:
        raise InputError("no finished pilot run with logged fit checks here (a pilot preset sets fit_check_every "
                         "with fit_patience 0: `lengthbench run --preset horizon-pilot`)")
    return [task_budget(task, runs) for task, runs in sorted(by_task.items())]


def budget_table(budgets: list[TaskBudget]) -> str:
    """The pilot's evidence as a markdown table."""
    lines = ["| task | pilot runs | fit at the ceiling | plateau (steps) | budget (steps) | first fit per method |",
             "|---|---|---|---|---|---|"]
    for b in budgets:
        firsts = ", ".join(f"{m} {s if s is not None else 'never'}" for m, s in sorted(b.first_fit.items()))
        plateau = b.plateau if b.plateau is not None else "none fit"
        lines.append(f"| {b.task} | {b.runs} | {b.fit_at_ceiling} of {b.runs} at {b.ceiling} | {plateau} | "
                     f"{b.budget} | {firsts} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lengthbench.benchmark.tools.budget",
                                     description="per-task training budgets from a pilot's records")
    parser.add_argument("--results", required=True, type=Path, help="the pilot's records folder")
    results = parser.parse_args(argv).results
    try:
        if not results.is_dir():
            raise InputError(f"--results {str(results)!r} is not a folder; give the pilot's records folder")
        budgets = pilot_budgets(ResultsFolder(results).records())
    except InputError as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    print(budget_table(budgets))
    print()
    print({b.task: b.budget for b in budgets})


if __name__ == "__main__":
    main()
