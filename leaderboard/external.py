"""A leaderboard row for a model lengthbench did not train (``score --method``).

The scored lengths of predictions (``lengthbench score``) become one row in
the leaderboard schema, so ``compare`` reads it beside ours: the length
bands (which lengths count as trained, validation and test) and the fit rule
are a preset's for the task (the instances ``generate`` writes by default are
that preset's), and every statistic is the one a lengthbench run gets,
computed by the same code from the same per-length rows. The row says what it
is: method ``external/<name>`` (model ``external``), one seed, and a protocol
naming the bands and the instances, marked ``external`` (nothing about how
the model was trained is known, so ``compare`` sees it differ from any
lengthbench protocol).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.files import ensure_output_dir, write_csv
from lengthbench.benchmark.records import RunRecord, summarize
from lengthbench.core.errors import InputError
from lengthbench.core.registry import name_problem
from lengthbench.leaderboard.aggregate import fit_score, leaderboard_frame, ranked
from lengthbench.tasks.cells import cell_name, method_name

EXTERNAL = "external"


def external_row(scores: pd.DataFrame, method: str, config: RunConfig) -> pd.DataFrame:
    """``scores`` (``score``'s per-length table: length, exact_match,
    token_accuracy, n_samples, eval_seed) as one leaderboard row for
    ``method``, judged under ``config``'s bands and fit rule."""
    problem = name_problem(method)  # the one rule for names: what a leaderboard, compare and submit accept
    if problem:
        raise InputError(f"--method {problem}, e.g. my-llm")
    seeds, samples = set(scores.eval_seed), set(scores.n_samples)
    if len(seeds) != 1:
        raise InputError(f"the predictions answer instances of several evaluation seeds ({sorted(seeds)}); score "
                         "one seed's instances for a leaderboard row")
    lengths = [int(n) for n in scores.length]
    config = replace(config, eval_seed=int(seeds.pop()), eval_samples=int(max(samples)),
                     test_length=max(config.test_length, max(lengths)))
    if not [n for n in lengths if config.split(n) == "ood"]:
        raise InputError(f"no scored length is in {config.task}'s test band (from {config.test_start}); a leaderboard "
                         f"row needs one: score instances there (lengthbench generate or evaluate {config.task} "
                         "--lengths)")
    per_length = [{"length": int(r.length), "status": "ok", "exact_match": float(r.exact_match),
                   "token_accuracy": float(r.token_accuracy), "n_samples": int(r.n_samples)}
                  for r in scores.itertuples()]
    record = RunRecord(config, EXTERNAL, "", EXTERNAL, {}, "", status="ok", per_length=per_length,
                       summary=summarize(per_length, config))
    row = leaderboard_frame([record])
    if fit_score(record.summary) is None:
        row = row.assign(fit_status="unknown", n_fit=0, rank=1.0)  # no trained length scored: fit not known, judged
    protocol = {EXTERNAL: True, "train_length": config.train_length, "validation_length": config.validation_length,
                "fit_threshold": config.fit_threshold, "fit_from": config.fit_from, "eval_seed": config.eval_seed,
                "eval_samples": config.eval_samples, "lengths": lengths}
    return row.assign(method=method_name(EXTERNAL, method), model=EXTERNAL, encoding=method, steps_mean=float("nan"),
                      protocol=json.dumps(protocol, sort_keys=True, separators=(",", ":")))


def with_external(board: pd.DataFrame, rows: pd.DataFrame, where: str) -> pd.DataFrame:
    """``board`` with external rows (``score --method``'s ``leaderboard.csv``,
    read from ``where``) among its own, ranked with them (``leaderboard
    --external``: the page and the tables show them). Refused, naming the
    row: a row that is not external, one of a task the board does not hold,
    one judged by other length bands than the board's cells of its task (its
    numbers would mean another thing), or a method the board already has."""
    for i, row in enumerate(rows.itertuples(), 1):
        at = f"{where}, row {i} ({cell_name(row.task, row.method)})"
        if row.model != EXTERNAL:
            raise InputError(f"{at}: model {row.model!r}, not an external row (lengthbench score --method writes "
                             "those); a lengthbench board joins another with compare")
        cells = board[board.task == row.task]
        if cells.empty:
            raise InputError(f"{at}: this board has no task {row.task!r}; valid: {', '.join(board.task.unique())}")
        ours = cells.iloc[0]
        if any(getattr(row, b) != ours[b] for b in ("train_length", "validation_length", "test_length")):
            raise InputError(f"{at}: judged by the bands 1..{row.train_length} / ..{row.validation_length} / "
                             f"..{row.test_length}, where the board's {row.task} cells have 1..{ours.train_length} / "
                             f"..{ours.validation_length} / ..{ours.test_length}: score it with --preset of this board")
        if row.method in set(board.method):
            raise InputError(f"{at}: the board already has a row for {row.method!r}")
    return ranked(pd.concat([board, rows], ignore_index=True))


def scored_table(task: str, table: pd.DataFrame, out, method: str | None, config: RunConfig,
                 seed: int | None = None) -> pd.DataFrame:
    """A per-length score table (``score``'s, ``evaluate``'s: of evaluation seed ``seed`` when it has no
    ``eval_seed`` column) with its task; with ``out``, written there as ``score.csv``, and with ``method``
    too, as one leaderboard row judged by ``config``'s bands and fit rule (``leaderboard.csv``; ``attrs["row"]``)."""
    seeded = table if "eval_seed" in table else table.assign(eval_seed=seed)
    row = None if method is None else external_row(seeded, method, config)
    table.insert(0, "task", task)
    if out is not None:
        folder = ensure_output_dir(out, "--out")
        table.attrs["written"] = {"csv": write_csv(folder / "score.csv", table)}
        if row is not None:
            table.attrs["written"]["leaderboard"] = write_csv(folder / "leaderboard.csv", row)
    table.attrs["row"] = row
    return table
