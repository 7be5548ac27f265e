"""What ``lengthbench submit`` prints and writes about a new encoding."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lengthbench.benchmark.files import write_csv
from lengthbench.models.families import TRANSFORMER, method_name


def ranking_text(board: pd.DataFrame, names: list[str]) -> str:
    """Rank of each submitted encoding (its transformer method) per task and
    overall (mean rank), among every method of the board; tied methods share
    the average of the ranks they span (2.5 of 6)."""
    ran = board[board.status == "ok"]
    n_methods = ran.groupby("task")["method"].nunique()
    mean_rank = ran.groupby("method")["rank"].mean().sort_values()
    lines = []
    for name in names:
        method = method_name(TRANSFORMER, name)
        mine = ran[ran.method == method]
        lines.append(f"{name}: rank per task (1 = best OOD exact match):")
        for _, row in mine.iterrows():
            lines.append(f"  {row.task:28s} {row['rank']:g} of {n_methods[row.task]}  "
                         f"(OOD exact match {100 * row.ood_exact_match_mean:.1f}%)")
        if method in mean_rank.index:
            overall = list(mean_rank.index).index(method) + 1
            lines.append(f"  overall: mean rank {mean_rank[method]:.2f}, "
                         f"{overall} of {len(mean_rank)} methods")
    return "\n".join(lines)


def write_submission(board: pd.DataFrame, name: str, out_dir: Path) -> Path:
    """The submitted encoding's leaderboard rows (same schema as
    leaderboard.csv, so ``lengthbench compare`` reads it)."""
    return write_csv(Path(out_dir) / f"submission-{name}.csv", board[board.method == method_name(TRANSFORMER, name)])
