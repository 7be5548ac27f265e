"""What ``lengthbench submit`` prints and writes about a new encoding."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.files import write_csv


def ranking_text(board: pd.DataFrame, names: list[str]) -> str:
    """Rank of each submitted encoding per task and overall (mean rank)."""
    ran = board[board.status == "ok"]
    n_encodings = ran.groupby("task")["encoding"].nunique()
    mean_rank = ran.groupby("encoding")["rank"].mean().sort_values()
    lines = []
    for name in names:
        mine = ran[ran.encoding == name]
        lines.append(f"{name}: rank per task (1 = best OOD exact match):")
        for _, row in mine.iterrows():
            lines.append(f"  {row.task:28s} {int(row['rank'])} of {n_encodings[row.task]}  "
                         f"(OOD exact match {100 * row.ood_exact_match_mean:.1f}%)")
        if name in mean_rank.index:
            overall = list(mean_rank.index).index(name) + 1
            lines.append(f"  overall: mean rank {mean_rank[name]:.2f}, "
                         f"{overall} of {len(mean_rank)} encodings")
    return "\n".join(lines)


def write_submission(board: pd.DataFrame, name: str, out_dir: Path) -> Path:
    """The submitted encoding's leaderboard rows (same schema as
    leaderboard.csv, so ``lengthbench compare`` reads it)."""
    return write_csv(Path(out_dir) / f"submission-{name}.csv", board[board.encoding == name])
