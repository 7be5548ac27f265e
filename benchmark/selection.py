"""Choosing a setting per (task, method) on the validation band: ``run --select lr=a,b,c``.

The Chomsky-hierarchy papers train a small learning-rate grid per method and
report the best value, chosen on the reported test lengths. Here the grid is
trained on the preset's seeds (``<results>/selection/``, one record per value
and seed), each (task, method) takes the value with the best mean
*validation-band* exact match over its seeds (a failed seed counts 0; ties go
to validation token accuracy, then to the value listed first), and the
records of the chosen value, annotated with the choice and its evidence
(``RunRecord.selection``), become the cell's records in ``<results>``. No test
length enters the choice; the test numbers reported are the chosen setting's.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from lengthbench.benchmark.config import Preset
from lengthbench.benchmark.grid import run_grid
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.store import SELECTION_FOLDER, ResultsFolder
from lengthbench.core.errors import InputError

SELECTABLE = {"lr": float, "weight_decay": float, "grad_clip": float, "steps": int, "batch_size": int,
              "warmup_steps": int}
log = logging.getLogger(__name__)
CRITERION = "val_exact_match"


@dataclass(frozen=True)
class SelectionGrid:
    """One run field and the values to try, in the user's order."""

    field: str
    values: tuple

    @classmethod
    def parse(cls, text: str) -> "SelectionGrid":
        """``"lr=5e-4,1e-3,2e-3"``; refused by name when malformed."""
        name, eq, listed = str(text).partition("=")
        name = name.strip()
        if not eq or name not in SELECTABLE:
            raise InputError(f"--select {text!r}: give FIELD=V1,V2,... with FIELD one of {', '.join(SELECTABLE)}")
        kind = SELECTABLE[name]
        values = []
        for item in (v.strip() for v in listed.split(",")):
            try:
                value = kind(item)
            except ValueError:
                raise InputError(f"--select {text!r}: {item!r} is not a {kind.__name__} value for {name}") from None
            if not np.isfinite(value) or value < 0 or (kind is int and value == 0 and name != "warmup_steps"):
                raise InputError(f"--select {text!r}: {item!r} is out of range for {name}")
            if value in values:
                raise InputError(f"--select {text!r}: {item!r} is listed twice; give each value once")
            values.append(value)
        if len(values) < 2:
            raise InputError(f"--select {text!r}: give at least two values to choose from")
        return cls(name, tuple(values))

    def describe(self) -> str:
        return f"{self.field}={','.join(f'{v:g}' for v in self.values)}"


def _score(records: list[RunRecord]) -> tuple[float, float] | None:
    """(mean validation exact match, mean validation token accuracy) over the
    seeds; a failed seed counts 0. None while a seed has no result (an error)
    or the runs have no validation band."""
    scores = []
    for r in records:
        if r.status not in ("ok", "diverged") or (r.status == "ok" and (r.summary or {}).get(CRITERION) is None):
            return None
        summary = {} if r.failed else r.summary
        scores.append((summary.get(CRITERION, 0.0), summary.get("val_token_accuracy", 0.0)))
    return tuple(float(x) for x in np.mean(scores, axis=0))


def choose(by_value: dict, grid: SelectionGrid) -> tuple[object, dict]:
    """The chosen value of one cell and the evidence: ``by_value`` maps each
    value to the cell's records at that value."""
    scored = {v: _score(records) for v, records in by_value.items()}
    ranked = sorted((v for v in grid.values if scored[v] is not None),
                    key=lambda v: (-scored[v][0], -scored[v][1], grid.values.index(v)))
    chosen = ranked[0] if ranked else None
    return chosen, {f"{v:g}": (None if scored[v] is None else round(scored[v][0], 6)) for v in grid.values}


def _report_failed_candidates(by_value: dict, grid: SelectionGrid, chosen) -> None:
    """A warning per candidate value of one cell whose runs failed (diverged,
    non-finite outputs) or raised, and what was chosen despite them: a choice
    among survivors is never silent."""
    first = next(iter(by_value.values()))[0]
    broken = {}
    for value, records in by_value.items():
        bad = [f"seed {r.seed} {'raised' if r.status == 'error' else 'failed'}" for r in records
               if r.status == "error" or r.failed]
        if bad:
            broken[value] = bad
    if not broken:
        return
    for value, bad in broken.items():
        log.warning("--select %s=%g on %s/%s: %s", grid.field, value, first.task, first.method, ", ".join(bad))
    if chosen is None:
        log.warning("--select on %s/%s: no value finished on every seed; the cell keeps %s=%g's records (its errors "
                    "are retried by the next run)", first.task, first.method, grid.field, grid.values[0])
    else:
        log.warning("--select on %s/%s: chose %s=%g on validation all the same (a failed seed counts 0; a value with "
                    "a seed that raised does not compete)", first.task, first.method, grid.field, chosen)


def run_selection(preset: Preset, grid: SelectionGrid, results: Path | ResultsFolder,
                  **run_options) -> list[RunRecord]:
    """Train ``preset`` once per value (in ``results/selection``), choose
    per (task, method), and write the chosen records, annotated, into
    ``results`` (replacing records of the same cells at other values), with
    their saved models where the runs saved them (``run --save-models``);
    returns them in grid order. A cell where no value finished on every seed
    keeps the first value's records (errors: the next run retries them)."""
    folder = ResultsFolder(results)
    trained = {v: run_grid(replace(preset, overrides={**preset.overrides, grid.field: v}),
                           folder.subfolder(SELECTION_FOLDER), **run_options) for v in grid.values}
    chosen_records = []
    first = trained[grid.values[0]]
    for i in range(0, len(first)):
        if i and (first[i].task, first[i].method) == (first[i - 1].task, first[i - 1].method):
            continue
        cell = [j for j, r in enumerate(first) if (r.task, r.method) == (first[i].task, first[i].method)]
        by_value = {v: [trained[v][j] for j in cell] for v in grid.values}
        if all(r.status == "not_applicable" for r in by_value[grid.values[0]]):
            chosen_records += by_value[grid.values[0]]
            continue
        value, scores = choose(by_value, grid)
        _report_failed_candidates(by_value, grid, value)
        evidence = {"field": grid.field, "values": list(grid.values), "chosen": value, "criterion": CRITERION,
                    "scores": scores, "seeds": [r.seed for r in by_value[grid.values[0]]]}
        for record in by_value[grid.values[0] if value is None else value]:
            chosen_records.append(replace(record, selection=evidence) if value is not None else record)
    for record in chosen_records:
        folder.replace_superseded(record, grid.field)
        saved = folder.subfolder(SELECTION_FOLDER).model_path(record.run_id)  # run --save-models: beside it too
        if (saved / "config.json").is_file():
            shutil.copytree(saved, folder.model_path(record.run_id), dirs_exist_ok=True)
    return chosen_records

