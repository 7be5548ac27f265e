"""From run records to tables: one row per run, per length, and per
(task, encoding) cell of the leaderboard."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from benchmark.records import SUMMARY_FIELDS
from leaderboard.schema import COLUMN_NAMES, METRICS, SCHEMA_VERSION
from leaderboard.statistics import GENERALIZE_THRESHOLD, bootstrap_ci, generalization_length
from models.encodings import encoding_names
from tasks import get_task, task_names
from tasks.base import LEVELS


class MixedConfigError(ValueError):
    """Records of one (task, encoding) cell were produced by different settings."""


def _level(task: str) -> str:
    try:
        return get_task(task).level
    except ValueError:
        return "unknown"


def distinct_runs(records: list[dict]) -> list[dict]:
    """Each run once: a record listed twice must not count as two seeds."""
    first: dict[str, dict] = {}
    for r in records:
        first.setdefault(r["run_id"], r)
    return list(first.values())


def runs_frame(records: list[dict]) -> pd.DataFrame:
    """One row per distinct run with its status and summary metrics (the
    metric columns exist, empty, even when no run finished)."""
    rows = []
    for r in distinct_runs(records):
        cfg = r["config"]
        signature = {k: v for k, v in cfg.items() if k != "seed"}
        rows.append({
            "task": r["task"], "encoding": r["encoding"], "seed": r["seed"], "status": r["status"],
            "train_length": cfg["train_length"], "test_length": cfg["test_length"],
            "signature": json.dumps(signature, sort_keys=True),
            "run_id": r["run_id"], **{k: (r.get("summary") or {}).get(k) for k in SUMMARY_FIELDS},
        })
    return pd.DataFrame(rows)


def per_length_frame(records: list[dict]) -> pd.DataFrame:
    """Long table of every evaluated length of every finished run."""
    rows = [
        {"task": r["task"], "encoding": r["encoding"], "seed": r["seed"],
         "train_length": r["config"]["train_length"], **m}
        for r in distinct_runs(records) if r["status"] == "ok" for m in r["per_length"]
    ]
    columns = ["task", "encoding", "seed", "train_length", "length", "status",
               "token_accuracy", "exact_match", "n_samples"]
    return pd.DataFrame(rows, columns=columns + (["reason"] if any("reason" in x for x in rows) else []))


def _check_single_config(runs: pd.DataFrame) -> None:
    mixed = runs.groupby(["task", "encoding"])["signature"].nunique()
    mixed = mixed[mixed > 1]
    if len(mixed):
        task, encoding = mixed.index[0]
        cell = runs[(runs.task == task) & (runs.encoding == encoding)]
        ids = cell["run_id"].tolist()
        versions = {json.dumps(json.loads(sig).get("code_versions", {}), sort_keys=True) for sig in cell.signature}
        if len(versions) > 1:
            raise MixedConfigError(
                f"runs of {task}/{encoding} were made by different code versions ({', '.join(sorted(versions))}; "
                f"{', '.join(ids)}); move the stale records out of the folder, or rerun the grid"
            )
        raise MixedConfigError(
            f"runs of {task}/{encoding} use different settings ({', '.join(ids)}); "
            "keep one preset's records per results folder"
        )


def _metric_stats(ok: pd.DataFrame, lengths: pd.DataFrame, metric: str, train_length: int) -> dict:
    ood = ok[f"ood_{metric}"].astype(float)
    low, high = bootstrap_ci(ood)
    curve = lengths.groupby("length")[metric].mean() if len(lengths) else pd.Series(dtype=float)
    gen = generalization_length(curve.index, curve.to_numpy())
    return {
        f"ood_{metric}_mean": float(ood.mean()) if len(ood) else np.nan,
        f"ood_{metric}_std": float(ood.std(ddof=1)) if len(ood) > 1 else np.nan,
        f"ood_{metric}_ci_low": low,
        f"ood_{metric}_ci_high": high,
        f"ood_{metric}_max": float(ood.max()) if len(ood) else np.nan,
        f"id_{metric}_mean": float(ok[f"id_{metric}"].mean()) if len(ok) else np.nan,
        f"frac_seeds_generalize_{metric}": float((ood >= GENERALIZE_THRESHOLD).mean()) if len(ood) else np.nan,
        f"generalization_length_{metric}": gen,
        f"extrapolation_ratio_{metric}": gen / train_length,
    }


def leaderboard_frame(records: list[dict]) -> pd.DataFrame:
    """One row per (task, encoding) in the ``leaderboard.schema`` layout."""
    runs = runs_frame(records)
    if runs.empty:
        return pd.DataFrame(columns=list(COLUMN_NAMES))
    _check_single_config(runs)
    per_length = per_length_frame(records)
    rows = []
    for (task, encoding), cell in runs.groupby(["task", "encoding"], sort=False):
        ok = cell[cell.status == "ok"]
        na = (cell.status == "not_applicable").all()
        train_length = int(cell.train_length.iloc[0])
        row = {
            "schema_version": SCHEMA_VERSION, "task": task, "level": _level(task),
            "encoding": encoding,
            "status": "not_applicable" if na else ("ok" if len(ok) else "failed"),
            "n_seeds": len(ok), "n_failed": int(cell.status.isin(["error", "diverged"]).sum()),
            "train_length": train_length,
            "test_length": int(cell.test_length.iloc[0]),
        }
        lengths = per_length[(per_length.task == task) & (per_length.encoding == encoding)]
        for metric in METRICS:
            row.update(_metric_stats(ok, lengths, metric, train_length))
        rows.append(row)
    board = pd.DataFrame(rows)
    board["rank"] = board.groupby("task")["ood_exact_match_mean"].rank(ascending=False, method="min")
    board = board[list(COLUMN_NAMES)]
    return board.iloc[sorted(range(len(board)), key=lambda i: _row_key(board.iloc[i]))].reset_index(drop=True)


def _row_key(row: pd.Series) -> tuple:
    """Registry order of tasks, then of encodings (plugins after built-ins)."""
    tasks, encodings = task_names(), encoding_names()
    return (tasks.index(row.task) if row.task in tasks else len(tasks), row.task,
            encodings.index(row.encoding) if row.encoding in encodings else len(encodings),
            row.encoding)


def level_summary(board: pd.DataFrame) -> pd.DataFrame:
    """Per encoding: mean OOD exact match over the tasks of each level and
    overall (cells that ran; n/a and failed cells excluded), and mean rank."""
    ran = board[board.status == "ok"]
    if ran.empty:
        return pd.DataFrame()
    table = ran.pivot_table(index="encoding", columns="level", values="ood_exact_match_mean", aggfunc="mean")
    levels = [lv for lv in LEVELS if lv in table.columns]
    table = table[levels]
    table["overall"] = ran.groupby("encoding")["ood_exact_match_mean"].mean()
    table["mean_rank"] = ran.groupby("encoding")["rank"].mean()
    table["n_tasks"] = ran.groupby("encoding")["task"].nunique()
    order = [e for e in encoding_names() if e in table.index] + sorted(set(table.index) - set(encoding_names()))
    return table.reindex(order).reset_index()
