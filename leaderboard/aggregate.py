"""From run records to tables: one row per run, per length, and per
(task, method) cell of the leaderboard."""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
import pandas as pd

from lengthbench.benchmark.config import LATER_FIELDS
from lengthbench.benchmark.files import as_written
from lengthbench.benchmark.records import (
    SUMMARY_FIELDS,
    RunRecord,
    distinct_runs,
    length_frame,
)
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.chance import METRICS as CHANCE, band_chance
from lengthbench.leaderboard.schema import COLUMN_NAMES, METRICS, SCHEMA_VERSION
from lengthbench.leaderboard.statistics import (
    GENERALIZE_THRESHOLD,
    REACH_FACTORS,
    generalization_length,
    interquartile_mean,
    log_length_area,
    t_interval,
)
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES
from lengthbench.tasks import TASKS
from lengthbench.tasks.base import LEVELS
from lengthbench.tasks.cells import cell_name, method_name, split_label
from lengthbench.tasks.formats import label_not_applicable, task_order_key


class MixedConfigError(InputError):
    """Records of one (task, method) cell were produced by different settings
    (the CLI: one line naming the cells, exit 2)."""


def _level(task: str) -> str:
    entry = TASKS.get(split_label(task)[0])
    return entry.level if entry is not None else "unknown"


# A cell's protocol: every config field but those that name the cell (task, method) or the run (seed).
PROTOCOL_EXCLUDES = ("task", "encoding", "family", "family_source", "task_source", "seed")
# Config fields added after boards had a protocol column: left out while at their defaults, so the
# protocol text of a board made before them stays as it was.
LATER_PROTOCOL_FIELDS = ("test_points", "fit_from", "fit_unseen")


def test_band_chance(r: RunRecord, metric: str = "exact_match") -> float:
    """The chance level of a run's test band in ``metric`` (exact match or
    token accuracy: ``leaderboard.chance``); none for a format that cannot write its task."""
    if r.status == "not_applicable" and label_not_applicable(r.task) is not None:
        return float("nan")
    test_lengths = tuple(n for n in r.config.eval_lengths() if r.config.split(n) == "ood")
    return band_chance(r.task, test_lengths, r.config.eval_samples, metric)


def runs_frame(records: list[RunRecord]) -> pd.DataFrame:
    """One row per distinct run with its status and summary metrics (the
    metric columns exist, empty, even when no run finished)."""
    rows = []
    for r in distinct_runs(records):
        config = r.config.to_dict()
        signature = {k: v for k, v in config.items() if k != "seed"}
        settings = {k: v for k, v in r.config.as_fields().items() if k not in PROTOCOL_EXCLUDES
                    and not (k in LATER_PROTOCOL_FIELDS and v == LATER_FIELDS[k])}
        rows.append({
            "task": r.task, "method": r.method, "model": r.config.family,
            "encoding": r.encoding, "seed": r.seed, "status": r.status,
            "train_length": r.config.train_length, "validation_length": r.config.validation_length,
            "test_length": r.config.test_length, "fit_threshold": r.config.fit_threshold,
            "steps_done": (r.training or {}).get("steps_done"), "n_parameters": r.n_parameters,
            "signature": json.dumps(signature, sort_keys=True),
            "protocol": json.dumps(settings, sort_keys=True, separators=(",", ":")),
            "run_id": r.run_id, "failed": r.failed, **{k: (r.summary or {}).get(k) for k in SUMMARY_FIELDS},
            "fit_score": fit_score(r.summary),
            **{f"chance_{metric}": test_band_chance(r, metric) for metric in CHANCE},
            **selection_texts(r.selection),
        })
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


RUN_COLUMNS = ["task", "method", "model", "encoding", "seed", "status", "train_length", "validation_length",
               "test_length", "fit_threshold", "steps_done", "n_parameters", "signature", "protocol", "run_id",
               "failed", *SUMMARY_FIELDS, "fit_score", *(f"chance_{m}" for m in CHANCE), "selected",
               "selection_evidence"]


def fit_score(summary: dict | None):
    """What a seed's fit is judged on: the least exact match over its fit
    lengths where the run judges the fit there (``fit_from``), else its mean
    in-distribution exact match."""
    summary = summary or {}
    return summary["fit_exact_match"] if summary.get("fit_exact_match") is not None else summary.get("id_exact_match")


def selection_texts(selection: dict | None) -> dict:
    """A record's ``run --select`` choice as the leaderboard's two text columns."""
    if not selection:
        return {"selected": "", "selection_evidence": ""}
    scores = ", ".join(f"{v}: {'-' if s is None else f'{100 * s:.1f}%'}" for v, s in selection["scores"].items())
    return {"selected": f"{selection['field']}={selection['chosen']:g}",
            "selection_evidence": f"{scores} (validation-band exact match, seeds "
                                  f"{','.join(map(str, selection['seeds']))})"}


def fits_training(runs: pd.DataFrame) -> pd.Series:
    """Whether each run of ``runs_frame`` fit its training lengths (its fit score reaches its threshold)."""
    return runs.fit_score.astype(float) >= runs.fit_threshold


def fit_status(n_fit: int, n_seeds: int) -> str:
    """``fit`` (every seed fit its training lengths), ``partly_fit`` or ``not_fit``."""
    return "fit" if n_fit == n_seeds else ("partly_fit" if n_fit else "not_fit")


def judged(board: pd.DataFrame) -> pd.Series:
    """THE rule for cells that did not fit, used by every rank, mean and
    verdict: a cell is judged on length generalization only when it ran
    (status ok) and at least half of its seeds fit their training lengths
    (held-out ID exact match >= the preset's ``fit_threshold``). A cell that
    did not fit keeps its numbers, flagged, but is never read as a failure to
    generalize: it has no rank and enters no mean rank, level mean, ranking
    or reproduction verdict. (A board migrated from before fit was recorded
    has fit ``unknown``: judged as it was.)"""
    return (board.status == "ok") & ((2 * board.n_fit >= board.n_seeds) | (board.fit_status == "unknown"))


def _check_single_config(runs: pd.DataFrame) -> None:
    mixed = runs.groupby(["task", "method"])["signature"].nunique()
    mixed = mixed[mixed > 1]
    if len(mixed):
        task, method = mixed.index[0]
        cell = runs[(runs.task == task) & (runs.method == method)]
        ids = cell["run_id"].tolist()
        others = [cell_name(t, m) for t, m in mixed.index[1:]]
        more = (f" (and {len(others)} more cell(s): {', '.join(others[:5])}{', ...' if len(others) > 5 else ''})"
                if others else "")
        versions = {json.dumps(json.loads(sig).get("code_versions", {}), sort_keys=True) for sig in cell.signature}
        if len(versions) > 1:
            raise MixedConfigError(
                f"runs of {cell_name(task, method)}{more} were made by different code versions "
                f"({', '.join(sorted(versions))}; {', '.join(ids)}); move the stale records out of the folder, or "
                "rerun the grid"
            )
        raise MixedConfigError(
            f"runs of {cell_name(task, method)}{more} use different settings ({', '.join(ids)}); "
            "keep one preset's records per results folder"
        )


def _metric_stats(scored: pd.DataFrame, lengths: pd.DataFrame, metric: str, train_length: int) -> dict:
    """``scored``: one row per seed that counts (failed ones with their metrics 0);
    ``lengths``: the per-length rows of the seeds that did not fail."""
    ood = scored[f"ood_{metric}"].astype(float)
    low, high = t_interval(ood)
    clean = lengths.seed.nunique()
    curve = (lengths.groupby("length")[metric].mean() * (clean / len(scored)) if len(lengths)  # failed seeds: 0
             else pd.Series(dtype=float))
    gen = generalization_length(curve.index, curve.to_numpy())
    seeds, sizes, values = lengths.seed.to_numpy(), lengths.length.to_numpy(), lengths[metric].to_numpy(dtype=float)
    is_test = (lengths.split == "ood").to_numpy()
    per_seed = [seeds == seed for seed in np.unique(seeds)]  # each seed's rows (numpy: pandas per seed is slow)
    missing = len(scored) - len(per_seed)  # failed seeds: 0 at every length
    areas = [log_length_area(sizes[rows & is_test], values[rows & is_test]) for rows in per_seed
             if (rows & is_test).any()] + [0.0] * missing
    reach = [generalization_length(sizes[rows], values[rows]) for rows in per_seed] + [0] * missing
    test_length = int(scored.test_length.iloc[0]) if len(scored) else 0
    return {
        f"ood_{metric}_mean": float(ood.mean()) if len(ood) else np.nan,
        f"ood_{metric}_std": float(ood.std(ddof=1)) if len(ood) > 1 else np.nan,
        f"ood_{metric}_ci_low": low,
        f"ood_{metric}_ci_high": high,
        f"ood_{metric}_max": float(ood.max()) if len(ood) else np.nan,
        f"id_{metric}_mean": float(scored[f"id_{metric}"].mean()) if len(scored) else np.nan,
        f"val_{metric}_mean": float(scored[f"val_{metric}"].astype(float).mean()) if len(scored) else np.nan,
        f"frac_seeds_generalize_{metric}": float((ood >= GENERALIZE_THRESHOLD).mean()) if len(ood) else np.nan,
        f"generalization_length_{metric}": gen,
        f"extrapolation_ratio_{metric}": gen / train_length,
        f"ood_{metric}_iqm": interquartile_mean(ood),
        f"ood_{metric}_area": float(np.mean(areas)) if is_test.any() else np.nan,
        **{f"frac_seeds_reach_{k}x_{metric}": (float(np.mean([n >= k * train_length for n in reach]))
                                               if reach and test_length >= k * train_length else np.nan)
           for k in REACH_FACTORS},
    }


def leaderboard_frame(records: list[RunRecord]) -> pd.DataFrame:
    """One row per (task, method) in the ``leaderboard.schema`` layout.

    A seed *fits* when its held-out ID exact match reaches the run's
    ``fit_threshold`` (a failed seed does not); ``judged`` says which cells
    are read as evidence about length generalization.

    The one rule for seeds that did not give a clean result: a seed whose
    method *failed* (training diverged, or non-finite outputs at an evaluated
    length) counts as 0 in every statistic of its cell and in ``n_failed``; a
    seed whose run raised (a harness error, retried by the next run) is not
    scored and counts in ``n_errors``. A cell without one clean seed is
    ``failed``."""
    runs = runs_frame(records)
    if runs.empty:
        return pd.DataFrame(columns=list(COLUMN_NAMES))
    _check_single_config(runs)
    per_length = length_frame(records)
    lengths_of = {key: rows for key, rows in per_length.groupby(["task", "method"], sort=False)}
    rows = []
    for (task, method), cell in runs.groupby(["task", "method"], sort=False):
        clean = cell[(cell.status == "ok") & ~cell.failed]
        failed = cell[cell.failed]
        scored = pd.concat([clean, failed.assign(**{k: 0.0 for k in (*SUMMARY_FIELDS, "fit_score") if clean[k].notna().any()})]) if len(clean) else clean
        na = (cell.status == "not_applicable").all()
        train_length = int(cell.train_length.iloc[0])
        n_fit = int(fits_training(scored).sum()) if len(scored) else 0
        row = {
            "schema_version": SCHEMA_VERSION, "task": task, "format": split_label(task)[1], "level": _level(task),
            "method": method, "model": cell.model.iloc[0], "encoding": cell.encoding.iloc[0],
            "status": "not_applicable" if na else ("ok" if len(clean) else "failed"),
            "n_seeds": len(scored), "n_failed": len(failed), "n_errors": int((cell.status == "error").sum()),
            "train_length": train_length, "validation_length": int(cell.validation_length.iloc[0]),
            "test_length": int(cell.test_length.iloc[0]),
            "fit_threshold": float(cell.fit_threshold.iloc[0]), "n_fit": n_fit,
            **{f"chance_{m}": float(cell[f"chance_{m}"].iloc[0]) for m in CHANCE},
            "fit_status": fit_status(n_fit, len(scored)) if len(clean) else "",
            "n_parameters": _parameters(cell),
            "steps_mean": float(scored.steps_done.astype(float).mean()) if len(scored) else np.nan,
            "selected": cell.selected.iloc[0], "selection_evidence": cell.selection_evidence.iloc[0],
            "protocol": cell.protocol.iloc[0],
        }
        lengths = lengths_of.get((task, method), per_length.iloc[:0])
        lengths = lengths[lengths.seed.isin(clean.seed)]
        for metric in METRICS:
            row.update(_metric_stats(scored, lengths, metric, train_length))
        rows.append(row)
    return ranked(pd.DataFrame(rows))


def _parameters(cell: pd.DataFrame):
    """The cell's parameter count (its runs' model; NA where no run recorded one)."""
    counts = cell.n_parameters.dropna()
    return int(counts.iloc[0]) if len(counts) else pd.NA


def ranked(board: pd.DataFrame) -> pd.DataFrame:
    """``board`` with each task's ranks over its judged cells (ties share the
    average rank) and its rows in leaderboard order."""
    board = board.assign(n_parameters=board.n_parameters.astype("Int64"),
                         rank=as_written(board.ood_exact_match_mean.where(judged(board)))
                         .groupby(board.task).rank(ascending=False, method="average"))[list(COLUMN_NAMES)]
    methods = method_order(board.method.unique())
    return board.iloc[sorted(range(len(board)), key=lambda i: _row_key(board.iloc[i], methods))].reset_index(drop=True)


def method_order(names) -> list[str]:
    """The methods of each family that takes an encoding (the transformer, then
    the looped one), each in encoding registry order (built-ins first, then
    plugins), then the other families in registry order, unknown names last."""
    known = [method_name(name, e) for name, entry in FAMILIES.items() if entry.takes_encoding for e in ENCODINGS]
    known += [name for name, entry in FAMILIES.items() if not entry.takes_encoding]
    names = set(names)
    return [m for m in known if m in names] + sorted(names - set(known))


def _row_key(row: pd.Series, methods: list[str]) -> tuple:
    return (task_order_key(row.task), methods.index(row.method))


class Block(NamedTuple):
    """Methods × tasks on which overall scores and ranks compare like with like."""

    methods: list[str]  # each ran (status ok) on every task of the block
    tasks: list[str]  # every method of the block is judged (fit) on each
    unfit: tuple[str, ...]  # tasks its methods ran, left out because one of them did not fit there
    few_ran: tuple[str, ...] = ()  # tasks left out because fewer methods ran them (a grid that cut them)


def complete_block(board: pd.DataFrame) -> Block:
    """The complete block a board's overall scores and ranks are taken on
    (averaging each method over its own fitted tasks would reward failing to
    fit the hard ones). Candidates are nested, one per count c of methods
    that ran a task: the tasks at least c methods ran, the methods that ran
    all of them, those tasks where each of the methods fit; the block is the
    candidate with the most method × task cells (ties: more tasks), so a task
    that a grid ran for only a few methods (a cut) does not push every other
    method out of the ranking. Only which methods ran and fit decide it, never
    a test score."""
    ok = board[board.status == "ok"]
    tasks = list(dict.fromkeys(board.task))
    methods = list(dict.fromkeys(board.method))
    ran = {m: set(ok[ok.method == m].task) for m in methods}
    coverage = {t: sum(t in ran[m] for m in methods) for t in tasks}
    best, best_size = Block([], [], ()), (-1, -1)
    for count in sorted(set(coverage.values()), reverse=True):
        chosen = [t for t in tasks if coverage[t] >= count]
        every = [m for m in methods if ran[m] >= set(chosen)]
        part = board[board.method.isin(every) & board.task.isin(chosen)]
        unfit = tuple(dict.fromkeys(part[~judged(part)].task))
        fit = [t for t in chosen if t not in unfit]
        size = (len(every) * len(fit) if len(every) >= 2 and len(fit) >= 2 else 0, len(fit))
        if size >= best_size:  # a tie goes to more tasks run (without a block of 2 x 2: all of them)
            best_size = size
            best = Block(every, fit, unfit, tuple(t for t in tasks if t not in chosen))
    return best


def level_summary(board: pd.DataFrame) -> pd.DataFrame:
    """Per method of the complete block (``complete_block``): mean OOD exact
    match over its tasks of each level and overall, and mean rank within
    the block, all over the same tasks; empty without a block of two
    methods on at least one task. Methods outside the block get no overall
    score or rank (the ranking section names them)."""
    methods, tasks, *_ = complete_block(board)
    ran = board[board.method.isin(methods) & board.task.isin(tasks)]
    if len(methods) < 2 or ran.empty:
        return pd.DataFrame()
    table = ran.pivot_table(index="method", columns="level", values="ood_exact_match_mean", aggfunc="mean")
    levels = [lv for lv in LEVELS if lv in table.columns]
    table = table[levels]
    scores = ran.pivot(index="task", columns="method", values="ood_exact_match_mean")
    table["overall"] = scores.mean()
    table["mean_rank"] = scores.apply(as_written).rank(axis=1, ascending=False, method="average").mean()
    table["n_tasks"] = len(tasks)
    return table.reindex(method_order(table.index)).reset_index()
