"""Writing and printing leaderboard tables (CSV and markdown)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from lengthbench.benchmark.files import write_csv, write_text
from lengthbench.leaderboard.aggregate import level_summary, method_order
from lengthbench.leaderboard.ranking import board_ranking, ranking_text
from lengthbench.tasks.base import LEVEL_TITLES

LEVELS_SPELLED = ("Levels: " + ", ".join(f"{short} {LEVEL_TITLES[short]}" for short in ("R", "DCF", "CS"))
                  + " (the Chomsky hierarchy); arithmetic, sequence and state (state tracking) are task families.")


def seeds_note(row: pd.Series) -> str:
    """What a cell lost, in words ("1 of 3 failed, 1 error, did not fit"), or
    "" for a clean cell that fit."""
    parts = []
    if row["n_failed"]:
        parts.append(f"{int(row['n_failed'])} of {int(row['n_seeds']) or int(row['n_failed'])} failed")
    if row["n_errors"]:
        parts.append(f"{int(row['n_errors'])} error" + ("s" if row["n_errors"] > 1 else ""))
    fit = fit_note(row)
    return ", ".join(parts + ([fit] if fit else []))


def fit_note(row: pd.Series) -> str:
    """"did not fit" / "2 of 3 fit" / "" (every seed fit, or fit unknown)."""
    if row["fit_status"] == "not_fit":
        return "did not fit"
    if row["fit_status"] == "partly_fit":
        return f"{int(row['n_fit'])} of {int(row['n_seeds'])} fit"
    return ""


def bands(row: pd.Series) -> str:
    """A task's length bands, ``1..8 / 9..10 / 11..16`` (train / validation / test)."""
    train, val, test = int(row["train_length"]), int(row["validation_length"]), int(row["test_length"])
    if not val:
        return f"1..{train} / {train + 1}..{test}"
    return f"1..{train} / {train + 1}..{val} / {val + 1}..{test}"


FIT_RULE = ("A seed fits when its in-distribution exact match on held-out examples reaches the preset's "
            "threshold; a cell that did not fit (fewer than half its seeds fit) keeps its number and its "
            "flag but is not judged on length generalization: it has no rank and enters no mean, rank or "
            "verdict.")


def cell_text(row: pd.Series) -> str:
    if row["status"] == "not_applicable":
        return "n/a"
    note = seeds_note(row)
    if row["status"] != "ok":
        return "failed" + (f" ({note})" if note else "")
    text = f"{100 * row['ood_exact_match_mean']:.1f}"
    if row["n_seeds"] > 1 and not np.isnan(row["ood_exact_match_std"]):
        text += f" ± {100 * row['ood_exact_match_std']:.1f}"
    return text + (f" ({note})" if note else "")


def pivot_table(board: pd.DataFrame) -> pd.DataFrame:
    """Methods as rows, tasks as columns, OOD exact match (%) as text."""
    texts = board.assign(cell=board.apply(cell_text, axis=1))
    table = texts.pivot(index="method", columns="task", values="cell")
    tasks = list(dict.fromkeys(board["task"]))
    return table.reindex(index=method_order(table.index), columns=tasks).fillna("")


def markdown_cell(text) -> str:
    """One table cell's text, escaped for Markdown: a ``|`` or a line break
    cannot split the table, and nothing in it opens an HTML tag or comment."""
    text = re.sub(r"\s*[\r\n]+\s*", " ", str(text)).replace("|", "\\|")
    return re.sub(r"<(?=[A-Za-z!/?])", "&lt;", text)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(map(markdown_cell, r)) + " |" for r in rows]


def to_markdown(board: pd.DataFrame) -> str:
    table = pivot_table(board)
    lengths = board.drop_duplicates("task").set_index("task")
    header = ["method"] + [f"{t} ({bands(lengths.loc[t])})" for t in table.columns]
    rows = [[f"`{enc}`"] + list(row) for enc, row in table.iterrows()]
    chance = board.dropna(subset=["chance_exact_match"]).drop_duplicates("task").set_index("task").chance_exact_match
    if len(chance):
        rows.append(["*chance*"] + [_pct(chance.get(t)) for t in table.columns])
    threshold = board.fit_threshold.dropna()
    parts = [
        "OOD exact match (%), mean over seeds (± sample std when more than one seed), averaged over every "
        "length of the test band; column headers give the train / validation / test bands."
        + (" The last row, *chance*, is each task's chance level on its test band: the expected score of the best "
           "predictor that ignores its input, under the task's distribution (at each length its most probable "
           "answer), averaged over the band." if len(chance) else "")
        + (" A seed on which the method failed (diverged, or non-finite outputs) counts as 0, as the cell says; "
           "a seed whose run raised is not counted (the next run retries it)."
           if (board.n_failed.sum() + board.n_errors.sum()) else "")
        + (f" {FIT_RULE} Threshold: {100 * threshold.iloc[0]:.0f}% in-distribution exact match."
           if len(threshold) else "")
        + (" A blank cell has no record: the method did not run on that task here (a grid that leaves the cell "
           "out, or a run still to come), unlike n/a, a cell that cannot run." if (table == "").any().any() else ""),
        "",
        *markdown_table(header, rows),
    ]
    levels = level_summary(board)
    if not levels.empty:
        cols = [c for c in levels.columns if c not in ("method", "mean_rank", "n_tasks")]
        rows = [[f"`{r.method}`"] + [_pct(r[c]) for c in cols] + [f"{r.mean_rank:.2f}", str(int(r.n_tasks))]
                for _, r in levels.iterrows()]
        parts += ["", f"Mean OOD exact match (%) per level / family and overall, and mean rank within tasks "
                  f"(1 = best), over the same {int(levels.n_tasks.iloc[0])} tasks for every method listed: tasks "
                  "that every one of them ran and fit (a method averaged over only the tasks it fit would gain "
                  "from failing the hard ones), the block of methods × tasks with the most cells; the ranking "
                  "below names the methods and tasks left out.", "",
                  *markdown_table(["method"] + cols + ["mean rank", "tasks"], rows), "", LEVELS_SPELLED]
    chosen = board[board.selected.fillna("") != ""]
    if len(chosen):
        rows = [[r.task, f"`{r.method}`", r.selected, r.selection_evidence] for r in chosen.itertuples()]
        parts += ["", "Settings chosen per cell on the validation band (`run --select`); every number above is "
                  "the chosen setting's:", "", *markdown_table(["task", "method", "chosen", "evidence"], rows)]
    ranking = board_ranking(board)
    if ranking is not None:
        parts += ["", ranking_text(ranking).rstrip("\n")]
    return "\n".join(parts) + "\n"


def _pct(value: float) -> str:
    return "" if pd.isna(value) else f"{100 * value:.1f}"


def write_tables(board: pd.DataFrame, out_dir: Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / "leaderboard.csv", "md": out_dir / "leaderboard.md",
             "levels_csv": out_dir / "leaderboard_levels.csv"}
    write_csv(paths["csv"], board)
    write_text(paths["md"], to_markdown(board))
    write_csv(paths["levels_csv"], level_summary(board))
    return paths
